#pragma once
// Files, read whole and replaced whole: nothing half-written is ever left under a file's name.
#include <cstddef>
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

/// How much is read from a pipe before giving up (a regular file is read whole).
constexpr size_t kMaxPipeBytes = size_t{256} << 20;

/// Reads a whole file or named pipe as UTF-8 text (see decode_text). A directory, a device or a socket
/// is refused before it is opened, and a pipe giving more than `pipe_limit` bytes is refused: nothing
/// reads forever. Throws InputError naming the path and the reason (errno text).
std::string read_text_file(const std::string& path, size_t pipe_limit = kMaxPipeBytes);

/// Reads everything from an open descriptor (e.g. 0, stdin) the same way; `name` names it in messages
/// ("stdin"). A directory or a block device is refused; a pipe, a terminal or another device is read
/// up to `limit` bytes (/dev/zero ends there with an InputError).
std::string read_stream(int fd, const std::string& name, size_t limit = kMaxPipeBytes);

/// Text as UTF-8: a UTF-8 byte-order mark is dropped, UTF-16 with its mark (PowerShell's default) is
/// converted; anything else is returned as it is.
std::string decode_text(std::string bytes);

/// Replaces `path` with `text` atomically: a uniquely named temporary file in the same directory,
/// written, flushed to disk (fsync) and renamed over `path`; missing parent directories are created.
/// On any failure the temporary file is removed and the old file is untouched. Only regular files are
/// ever replaced: a symbolic link is followed (the link stays), a character device or a named pipe
/// (/dev/null, /dev/stdout, a FIFO) is written to in place, a directory, block device or socket is
/// refused. Throws WriteError naming the path and the reason (errno text, e.g. "No space left on device").
void write_text_file(const std::string& path, const std::string& text);

/// Whether write_text_file(path, ...) replaces `path` whole (a regular file, a new one, a link to one)
/// rather than writing into what is there (a device, a named pipe, /dev/stdout): a program that
/// rewrites a file as it goes writes such a path once, at the end.
bool replaces_whole(const std::string& path);

/// Replaces a set of files in `dir` together, e.g. a report: each (name, text) is first written in full
/// and flushed in a uniquely named staging directory inside `dir`, and only then are they renamed into
/// place, so a failure while writing (a full disk) leaves every old file of the set as it was and no
/// temporary file behind. Throws WriteError naming the file and the reason.
void write_file_set(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files);

/// Throws WriteError unless `path` could be written now: its directory exists (or can be created)
/// and takes a new file. For outputs checked before a long run, so it fails at once.
void check_writable(const std::string& path);

}  // namespace torchprobe::io
