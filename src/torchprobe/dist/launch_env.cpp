// The launcher's environment: what torchrun, scripts/launch.sh or srun tell a rank (DistEnv), and the device a
// rank runs on. Split from process_group.cpp, which builds the process group from it.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "torchprobe/backend.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/dist/process_group.h"
#include "torchprobe/input_error.h"

namespace torchprobe::dist {
namespace {

const char* kTorchrunVariables = "torchrun sets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE and LOCAL_RANK";

int integer_variable(const std::function<const char*(const char*)>& get, const char* name, int min, int max,
                     std::optional<int> fallback) {
  const char* text = get(name);
  if (text == nullptr || *text == '\0') {
    if (fallback) return *fallback;
    throw InputError(fmt::format("{} is not set ({}; scripts/launch.sh N does too)", name, kTorchrunVariables));
  }
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < min || value > max) {
    throw InputError(fmt::format("{}={} is not an integer in [{}, {}]", name, text, min, max));
  }
  return static_cast<int>(value);
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  const auto malformed = [&](const char* why) {
    return InputError(fmt::format("SLURM_NODELIST={} is not a SLURM host list ({})", nodelist, why));
  };
  // The first entry: up to the first comma outside brackets.
  std::string entry;
  int depth = 0;
  for (const char c : nodelist) {
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0) throw malformed("a ']' without its '['");
    if (c == ',' && depth == 0) break;
    entry += c;
  }
  if (depth != 0) throw malformed("a '[' without its ']'");
  // Each bracketed range list stands for its first value, zero padding kept: [07-09,12] -> 07.
  std::string host;
  for (size_t i = 0; i < entry.size(); ++i) {
    if (entry[i] != '[') {
      host += entry[i];
      continue;
    }
    const size_t close = entry.find(']', i);
    const std::string first = entry.substr(i + 1, entry.find_first_of(",-]", i + 1) - i - 1);
    if (first.empty() || first.find_first_not_of("0123456789") != std::string::npos)
      throw malformed("a range that is not numbers");
    host += first;
    i = close;
  }
  if (host.empty()) throw malformed("no host");
  return host;
}

int slurm_default_port(const char* job_id) {
  if (job_id == nullptr || *job_id == '\0') return 29500;
  const std::string id = job_id;
  const std::string digits = id.substr(id.size() > 4 ? id.size() - 4 : 0);
  if (digits.find_first_not_of("0123456789") != std::string::npos) {
    throw InputError(fmt::format("SLURM_JOB_ID={} is not a number (set MASTER_PORT)", id));
  }
  return 15000 + std::stoi(digits);
}

DistEnv env_from(const std::function<const char*(const char*)>& get) {
  DistEnv env;
  const auto set = [&](const char* name) { return get(name) != nullptr && *get(name) != '\0'; };
  if (!set("RANK") && set("SLURM_PROCID")) {
    // srun starts every rank itself: its variables say who and where.
    env.launcher = "slurm";
    const char* list_name = set("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST"
                            : set("SLURM_NODELIST")    ? "SLURM_NODELIST"
                                                       : "SLURM_JOB_NODELIST";
    if (set("MASTER_ADDR")) {
      env.master_addr = get("MASTER_ADDR");
    } else if (set(list_name)) {
      env.master_addr = first_slurm_host(get(list_name));
    } else {
      throw InputError(
          "under SLURM (SLURM_PROCID is set) neither MASTER_ADDR nor SLURM_NODELIST is set: start the ranks "
          "with srun, or export MASTER_ADDR=the first node's address");
    }
    env.master_port = set("MASTER_PORT") ? integer_variable(get, "MASTER_PORT", 1, 65535, std::nullopt)
                                         : slurm_default_port(get("SLURM_JOB_ID"));
    env.world_size =
        integer_variable(get, set("SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS", 1, 1 << 20, std::nullopt);
    env.rank = integer_variable(get, "SLURM_PROCID", 0, env.world_size - 1, std::nullopt);
    env.local_rank = integer_variable(get, "SLURM_LOCALID", 0, 1 << 20, 0);
    return env;
  }
  const char* addr = get("MASTER_ADDR");
  if (addr == nullptr || *addr == '\0') {
    throw InputError(
        fmt::format("MASTER_ADDR is not set ({}; scripts/launch.sh N does too; under SLURM, srun sets "
                    "SLURM_PROCID, SLURM_NTASKS and SLURM_NODELIST)",
                    kTorchrunVariables));
  }
  env.master_addr = addr;
  env.master_port = integer_variable(get, "MASTER_PORT", 1, 65535, std::nullopt);
  env.world_size = integer_variable(get, "WORLD_SIZE", 1, 1 << 20, std::nullopt);
  env.rank = integer_variable(get, "RANK", 0, env.world_size - 1, std::nullopt);
  env.local_rank = integer_variable(get, "LOCAL_RANK", 0, 1 << 20, env.rank);
  if (set("TORCHELASTIC_RUN_ID") || set("TORCHELASTIC_RESTART_COUNT")) {
    env.launcher = "torchrun";
    env.restart_count = integer_variable(get, "TORCHELASTIC_RESTART_COUNT", 0, 1 << 20, 0);
    env.max_restarts = integer_variable(get, "TORCHELASTIC_MAX_RESTARTS", 0, 1 << 20, 0);
  }
  // torchrun's agent hosts the store on MASTER_PORT itself (its static and c10d rendezvous both do).
  env.agent_store = set("TORCHELASTIC_USE_AGENT_STORE") && std::string(get("TORCHELASTIC_USE_AGENT_STORE")) == "True";
  return env;
}

std::vector<std::pair<std::string, std::string>> launch_context(const DistEnv& env) {
  std::vector<std::pair<std::string, std::string>> out = {{"launcher", env.launcher}};
  if (env.launcher == "torchrun") {
    out.emplace_back("torchelastic_restart_count", std::to_string(env.restart_count));
    out.emplace_back("torchelastic_max_restarts", std::to_string(env.max_restarts));
  }
  return out;
}

std::string restart_note(const DistEnv& env) {
  if (env.restart_count == 0) return "";
  return fmt::format(
      "  (torchrun restarted this group {} time{} (of at most {}): an earlier attempt failed; these are the "
      "restarted group's figures)\n",
      env.restart_count, env.restart_count == 1 ? "" : "s", env.max_restarts);
}

DistEnv env_from_environment() {
  return env_from([](const char* name) { return std::getenv(name); });
}

torch::Device rank_device(const DistEnv& env, const std::string& text) {
  const int count = backend::cuda_device_count();
  if (text == "cuda" && count > 0 && env.local_rank >= count) {
    throw InputError(fmt::format("LOCAL_RANK={} but this host has {} CUDA device{}: start at most {} rank{} per host",
                                 env.local_rank, count, count == 1 ? "" : "s", count, count == 1 ? "" : "s"));
  }
  DeviceQuery query;
  query.list = false;
  query.cuda_index = env.local_rank;
  return parse_devices(text, query).front();
}

}  // namespace torchprobe::dist
