#pragma once
// Files, read whole and replaced whole: nothing half-written is ever left under a file's name.
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

/// Replaces a set of files in `dir` together, e.g. a report: each (name, text) is first written in full
/// and flushed in a uniquely named staging directory inside `dir`, and only then are they renamed into
/// place, so a failure while writing (a full disk) leaves every old file of the set as it was and no
/// temporary file behind. Throws WriteError naming the file and the reason.
void write_file_set(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files);

/// Throws WriteError unless `path` could be written now: its directory exists (or can be created)
/// and takes a new file. For outputs checked before a long run, so it fails at once.
void check_writable(const std::string& path);

}  // namespace torchprobe::io
