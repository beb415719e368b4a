#include "torchprobe/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "torchprobe/input_error.h"
#include "torchprobe/interrupt.h"

namespace torchprobe::io {
namespace {

namespace fs = std::filesystem;

fs::path directory_of(const std::string& path) {
  const fs::path target(path);
  return target.has_parent_path() ? target.parent_path() : fs::path(".");
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
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write", errno);
    if (n == 0) fail("write", EIO);
    done += static_cast<size_t>(n);
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

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputError(fmt::format("{}: is a directory, not a file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the file: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("{}: read error: {}", path, std::strerror(errno)));
  return text.str();
}

void write_text_file(const std::string& path, const std::string& text) {
  std::string temporary;
  const int fd = create_beside(path, temporary);
  // Stopped at once (a second Ctrl-C) while writing: no temporary file is left behind.
  const int cleanup = interrupt::add_cleanup([temporary] { unlink(temporary.c_str()); });
  try {
    write_and_close(fd, temporary, path, text);
  } catch (...) {
    interrupt::remove_cleanup(cleanup);
    throw;
  }
  const int renamed = rename(temporary.c_str(), path.c_str());
  const int saved = errno;
  if (renamed != 0) unlink(temporary.c_str());
  interrupt::remove_cleanup(cleanup);
  if (renamed != 0) throw WriteError(fmt::format("cannot replace {}: {}", path, std::strerror(saved)));
  sync_directory(directory_of(path));
}

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

void check_writable(const std::string& path) {
  std::string probe;
  close(create_beside(path, probe));
  unlink(probe.c_str());
}

}  // namespace torchprobe::io
