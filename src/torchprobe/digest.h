#pragma once
// Digests of text we write, e.g. the hash sources of a Content-Security-Policy.
#include <string>
#include <string_view>

namespace torchprobe {

/// SHA-256 (FIPS 180-4) of `data`: its 32 bytes.
std::string sha256(std::string_view data);

/// Base64 (RFC 4648, standard alphabet, = padding) of `bytes`.
std::string base64(std::string_view bytes);

}  // namespace torchprobe
