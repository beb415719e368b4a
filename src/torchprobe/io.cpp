#include "torchprobe/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "torchprobe/input_error.h"
#include "torchprobe/interrupt.h"

namespace torchprobe::io {
namespace {

namespace fs = std::filesystem;

/// What check_writable writes (and removes) to prove an output's file system takes data now.
constexpr size_t kProbeBytes = 64 * 1024;

fs::path directory_of(const std::string& path) {
  const fs::path target(path);
  return target.has_parent_path() ? target.parent_path() : fs::path(".");
}

/// What an existing path is, in words, for messages ("a directory", "a character device", ...).
std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

/// How an output path is written. A regular file (or a new one) is replaced atomically; a character
/// device or a named pipe (/dev/null, a FIFO) is written to in place, never replaced; one of this
/// process's descriptors named as a file (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N) is
/// written to as the descriptor, as a shell does; anything else (a directory, a block device, a socket)
/// is refused. Symbolic links are followed: what they lead to gets the same rule and the links stay.
enum class Target { kReplace, kInPlace, kDescriptor };

struct Resolved {
  std::string path;  ///< the path to write: `path` itself, or what its symbolic links lead to
  Target target;
  int fd = -1;       ///< kDescriptor: the descriptor
};

/// The descriptor a path names, for /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N; else -1.
int named_descriptor(const std::string& path) {
  if (path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const size_t length = std::strlen(prefix);
    if (path.size() <= length || path.compare(0, length, prefix) != 0) continue;
    int fd = -1;
    const char* end = path.data() + path.size();
    const auto [ptr, ec] = std::from_chars(path.data() + length, end, fd);
    if (ec == std::errc() && ptr == end && fcntl(fd, F_GETFD) != -1) return fd;
  }
  return -1;
}

/// Follows `path`'s own symbolic links (not its directories'), as the kernel would: where it leads.
std::string follow_links(const std::string& path) {
  fs::path at(path);
  for (int hop = 0; hop < 40; ++hop) {
    struct stat st {};
    if (lstat(at.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return at.string();
    std::error_code ec;
    const fs::path next = fs::read_symlink(at, ec);
    if (ec) throw WriteError(fmt::format("cannot write {}: cannot follow the symbolic link {}: {}", path, at.string(), ec.message()));
    at = next.is_absolute() ? next : at.parent_path() / next;
  }
  throw WriteError(fmt::format("cannot write {}: {}", path, std::strerror(ELOOP)));
}

Resolved resolve_output(const std::string& path) {
  if (const int fd = named_descriptor(path); fd >= 0) return {path, Target::kDescriptor, fd};
  const std::string real = follow_links(path);
  if (real.compare(0, 6, "/proc/") == 0) {
    // Another magic link (/proc/PID/fd/N): it has no path to replace; write into what it holds open.
    return {path, Target::kInPlace};
  }
  struct stat st {};
  if (lstat(real.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return {real, Target::kReplace};  // new, or a file
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return {real, Target::kInPlace};
  throw WriteError(fmt::format("cannot write {}: it is {}{}, not a regular file", path, kind_of(st.st_mode),
                               real == path ? "" : " (where its symbolic link leads: " + real + ")"));
}

void write_all(int fd, const std::string& shown, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw WriteError(fmt::format("cannot write {}: write: {}", shown, std::strerror(n < 0 ? errno : EIO)));
    done += static_cast<size_t>(n);
  }
}

/// Writes `text` to an existing device, pipe or descriptor as it is: no temporary file, no rename.
void write_in_place(const std::string& shown, const Resolved& out, const std::string& text) {
  if (out.target == Target::kDescriptor) {
    std::fflush(nullptr);  // what this process printed to stdout so far comes first
    return write_all(out.fd, shown, text);
  }
  const int fd = open(out.path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | O_APPEND);
  if (fd < 0) throw WriteError(fmt::format("cannot write {}: {}", shown, std::strerror(errno)));
  try {
    write_all(fd, shown, text);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
}

void create_directory(const fs::path& dir, const std::string& path) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw WriteError(fmt::format("cannot write {}: cannot create its directory {}: {}", path, dir.string(), ec.message()));
}

/// Opens a new, uniquely named file beside `path` (mode 0600) and returns its descriptor; `temporary`
/// gets its name. Throws WriteError naming `path`.
int create_beside(const std::string& path, std::string& temporary) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw WriteError(fmt::format("cannot write {}: it is a directory", path));
  const fs::path dir = directory_of(path);
  create_directory(dir, path);
  temporary = (dir / ("." + fs::path(path).filename().string() + ".XXXXXX")).string();
  const int fd = mkstemp(temporary.data());
  if (fd < 0) throw WriteError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  return fd;
}

/// Writes `text` to the new file `fd` (named `temporary`, standing for `path`), flushes it to disk and
/// closes it; on failure removes it and throws WriteError with the reason.
void write_and_close(int fd, const std::string& temporary, const std::string& path, const std::string& text) {
  const auto fail = [&](const char* what, int saved) {
    if (fd >= 0) close(fd);
    unlink(temporary.c_str());
    throw WriteError(fmt::format("cannot write {}: {}: {}", path, what, std::strerror(saved)));
  };
  try {
    write_all(fd, path, text);
  } catch (const WriteError&) {
    close(fd);
    unlink(temporary.c_str());
    throw;
  }
  if (fsync(fd) != 0) fail("fsync", errno);
  // mkstemp makes the file 0600; give it the usual permissions a plain write would.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  const int closed = close(fd);
  fd = -1;
  if (closed != 0) fail("close", errno);
}

void sync_directory(const fs::path& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

}  // namespace

std::string decode_text(std::string bytes) {
  const auto starts = [&](const char* bom, size_t n) { return bytes.size() >= n && bytes.compare(0, n, bom, n) == 0; };
  if (starts("\xEF\xBB\xBF", 3)) return bytes.substr(3);
  const bool little = starts("\xFF\xFE", 2), big = starts("\xFE\xFF", 2);
  if (!little && !big) return bytes;
  // UTF-16 (PowerShell's `>` and Out-File write it with this mark): to UTF-8; a lone surrogate becomes U+FFFD.
  std::string out;
  out.reserve(bytes.size() / 2);
  const auto unit = [&](size_t i) {
    const auto lo = static_cast<unsigned char>(bytes[little ? i : i + 1]);
    const auto hi = static_cast<unsigned char>(bytes[little ? i + 1 : i]);
    return static_cast<std::uint32_t>(hi << 8 | lo);
  };
  const auto append = [&](std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | cp >> 6);
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | cp >> 12);
      out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | cp >> 18);
      out += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
      out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  };
  for (size_t i = 2; i + 1 < bytes.size(); i += 2) {
    const std::uint32_t u = unit(i);
    if (u >= 0xD800 && u <= 0xDBFF && i + 3 < bytes.size()) {
      const std::uint32_t low = unit(i + 2);
      if (low >= 0xDC00 && low <= 0xDFFF) {
        append(0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00));
        i += 2;
        continue;
      }
    }
    append(u >= 0xD800 && u <= 0xDFFF ? 0xFFFD : u);
  }
  return out;
}

std::string read_stream(int fd, const std::string& name, size_t limit) {
  struct stat st {};
  if (fstat(fd, &st) != 0) throw InputError(fmt::format("{}: cannot read: {}", name, std::strerror(errno)));
  if (S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode)) throw InputError(fmt::format("{}: is {}, not a file", name, kind_of(st.st_mode)));
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(fmt::format("{}: read error: {}", name, std::strerror(errno)));
    if (n == 0) break;
    if (!S_ISREG(st.st_mode) && text.size() + static_cast<size_t>(n) > limit) {
      throw InputError(fmt::format("{}: more than {} MiB from {}; save it to a file first", name, limit >> 20,
                                   S_ISFIFO(st.st_mode) ? "a pipe" : kind_of(st.st_mode)));
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  return decode_text(std::move(text));
}

std::string read_text_file(const std::string& path, size_t pipe_limit) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
    // Refused before opening: opening a device may block or have effects, reading one may never end.
    throw InputError(fmt::format("{}: is {}, not a file", path, kind_of(st.st_mode)));
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw InputError(fmt::format("{}: cannot open the file: {}", path, std::strerror(errno)));
  try {
    std::string text = read_stream(fd, path, pipe_limit);
    close(fd);
    return text;
  } catch (...) {
    close(fd);
    throw;
  }
}

void write_text_file(const std::string& shown, const std::string& text) {
  const Resolved out = resolve_output(shown);
  if (out.target != Target::kReplace) return write_in_place(shown, out, text);
  const std::string& path = out.path;
  std::string temporary;
  const int fd = create_beside(path, temporary);
  // Stopped at once (a second Ctrl-C) while writing: no temporary file is left behind.
  const int cleanup = interrupt::add_cleanup([temporary] { unlink(temporary.c_str()); });
  try {
    write_and_close(fd, temporary, shown, text);
  } catch (...) {
    interrupt::remove_cleanup(cleanup);
    throw;
  }
  const int renamed = rename(temporary.c_str(), path.c_str());
  const int saved = errno;
  if (renamed != 0) unlink(temporary.c_str());
  interrupt::remove_cleanup(cleanup);
  if (renamed != 0) throw WriteError(fmt::format("cannot replace {}: {}", shown, std::strerror(saved)));
  sync_directory(directory_of(path));
}

bool replaces_whole(const std::string& path) { return resolve_output(path).target == Target::kReplace; }

void write_file_set(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  if (files.empty()) return;
  const fs::path target(dir.empty() ? "." : dir);
  create_directory(target, (target / files.front().first).string());
  std::string staging = (target / ".torchprobe-staging-XXXXXX").string();
  if (mkdtemp(staging.data()) == nullptr) {
    throw WriteError(fmt::format("cannot write into {}: cannot create a staging directory: {}", target.string(),
                                 std::strerror(errno)));
  }
  const auto remove_staging = [staging] {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
  };
  const int cleanup = interrupt::add_cleanup(remove_staging);
  const auto finish = [&] {
    remove_staging();
    interrupt::remove_cleanup(cleanup);
  };
  try {
    for (const auto& [name, text] : files) {
      struct stat st {};
      const std::string final_path = (target / name).string();
      if (lstat(final_path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
        throw WriteError(fmt::format("cannot write {}: it is {}, not a regular file (a file set replaces regular files only)",
                                     final_path, kind_of(st.st_mode)));
      }
      const std::string staged = (fs::path(staging) / name).string();
      const int fd = open(staged.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0) throw WriteError(fmt::format("cannot write {}: {}", (target / name).string(), std::strerror(errno)));
      write_and_close(fd, staged, (target / name).string(), text);
    }
  } catch (...) {
    finish();
    throw;
  }
  // Everything is on disk: only renames within one directory's file system remain.
  std::vector<std::string> replaced;
  for (const auto& [name, text] : files) {
    const std::string final_path = (target / name).string();
    if (rename((fs::path(staging) / name).c_str(), final_path.c_str()) != 0) {
      const int saved = errno;
      finish();
      throw WriteError(fmt::format("cannot replace {}: {}{}", final_path, std::strerror(saved),
                                   replaced.empty() ? " (no file of the set was replaced)"
                                                    : fmt::format(" ({} of {} files of the set were replaced)",
                                                                  replaced.size(), files.size())));
    }
    replaced.push_back(final_path);
  }
  finish();
  sync_directory(target);
}

void check_writable(const std::string& shown) {
  const Resolved out = resolve_output(shown);
  if (out.target == Target::kDescriptor) return;
  if (out.target != Target::kReplace) {
    // A named pipe with no reader yet answers ENXIO to a non-blocking open: the reader may come later.
    const int fd = open(out.path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 && errno != ENXIO) throw WriteError(fmt::format("cannot write {}: {}", shown, std::strerror(errno)));
    if (fd >= 0) close(fd);
    return;
  }
  // Real bytes, flushed: an empty file can still be made on a full disk, a block of data cannot.
  std::string probe;
  const int fd = create_beside(out.path, probe);
  write_and_close(fd, probe, shown, std::string(kProbeBytes, '\n'));
  unlink(probe.c_str());
}

}  // namespace torchprobe::io
