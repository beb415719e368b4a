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

namespace torchprobe::io {
namespace {

/// Creates `path`'s directory if needed and opens a new, uniquely named file beside it (mode 0600);
/// returns its descriptor and sets `temporary` to its name. Throws WriteError naming `path`.
int create_beside(const std::string& path, std::string& temporary) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) throw WriteError(fmt::format("cannot write {}: it is a directory", path));
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(dir, ec);
  if (ec) throw WriteError(fmt::format("cannot write {}: cannot create its directory {}: {}", path, dir.string(), ec.message()));
  temporary = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = mkstemp(temporary.data());
  if (fd < 0) throw WriteError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  return fd;
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(fmt::format("{}: is a directory, not a file", path));
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
  const auto fail = [&](const char* what) {
    const int saved = errno;
    close(fd);
    unlink(temporary.c_str());
    throw WriteError(fmt::format("cannot write {}: {}: {}", path, what, std::strerror(saved)));
  };
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write");
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) fail("fsync");
  // mkstemp makes the file 0600; give it the usual permissions a plain write would.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  if (close(fd) != 0) {
    const int saved = errno;
    unlink(temporary.c_str());
    throw WriteError(fmt::format("cannot write {}: close: {}", path, std::strerror(saved)));
  }
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    unlink(temporary.c_str());
    throw WriteError(fmt::format("cannot replace {}: {}", path, std::strerror(saved)));
  }
}

void check_writable(const std::string& path) {
  std::string probe;
  close(create_beside(path, probe));
  unlink(probe.c_str());
}

}  // namespace torchprobe::io
