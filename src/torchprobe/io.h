#pragma once
// Files, read whole and replaced whole: nothing half-written is ever left under a file's name.
#include <stdexcept>
#include <string>

namespace torchprobe::io {

/// A file could not be written; the message names it and the reason. The CLI exits 2 on it.
class WriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Reads a whole file. Throws InputError naming the path and the reason (errno text).
std::string read_text_file(const std::string& path);

/// Replaces `path` with `text` atomically: a uniquely named temporary file in the same directory,
/// written, flushed to disk (fsync) and renamed over `path`; missing parent directories are created.
/// On any failure the temporary file is removed and the old file is untouched. Throws WriteError
/// naming the path and the reason (errno text, e.g. "No space left on device").
void write_text_file(const std::string& path, const std::string& text);

/// Throws WriteError unless `path` could be written now: its directory exists (or can be created)
/// and takes a new file. For outputs checked before a long run, so it fails at once.
void check_writable(const std::string& path);

}  // namespace torchprobe::io
