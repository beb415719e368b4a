#pragma once
// Files, read whole and replaced whole: nothing half-written is ever left under a file's name.
#include <string>

namespace torchprobe::io {

/// Reads a whole file. Throws InputError naming the path and the reason (errno text).
std::string read_text_file(const std::string& path);

/// Replaces `path` with `text` atomically: a uniquely named temporary file in the same directory,
/// written, flushed to disk (fsync) and renamed over `path`; missing parent directories are created.
/// On any failure the temporary file is removed and the old file is untouched. Throws
/// std::runtime_error naming the path and the reason (errno text, e.g. "No space left on device").
void write_text_file(const std::string& path, const std::string& text);

}  // namespace torchprobe::io
