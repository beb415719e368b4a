#pragma once
// A client of torchrun's agent store for LibTorch 1.13 builds. torchrun (PyTorch 2.x) hosts the
// rendezvous store in its agent and tells every rank to connect to it (TORCHELASTIC_USE_AGENT_STORE).
// That store speaks TCPStore's 2.x wire protocol (a validation handshake first, and query codes
// shifted by it), which LibTorch 1.13's own TCPStore client predates: the server drops or ignores it.
// On 1.13 this file holds a client of the 2.x protocol behind the c10d::Store interface, so Gloo runs
// over it as over the TCPStore; on LibTorch 2.x it is c10d's own TCPStore client. Part of the
// version seam (see backend_c10d.h): nothing else needs to know which LibTorch it is.
#include <chrono>
#include <string>

#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace torchprobe::dist {

/// A client of the agent's store at host:port (refused connections retried until `timeout`; the
/// server must answer the 2.x validation and a ping). Throws std::runtime_error saying what failed;
/// on 1.13 every later call also fails with std::runtime_error after `timeout` rather than blocking.
c10::intrusive_ptr<c10d::Store> connect_agent_store(const std::string& host, int port, std::chrono::milliseconds timeout);

}  // namespace torchprobe::dist
