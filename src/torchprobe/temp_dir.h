#pragma once
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "torchprobe/interrupt.h"

namespace torchprobe {

/// A fresh directory under the system temporary directory ($TMPDIR), removed with its contents when
/// the object goes out of scope, or by the interrupt cleanups when the program is stopped at once.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "torchprobe") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a temporary directory " + pattern + ": " + std::strerror(errno));
    path_ = pattern;
    cleanup_ = interrupt::add_cleanup([path = path_] {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    });
  }
  ~TempDir() {
    interrupt::remove_cleanup(cleanup_);
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int cleanup_ = -1;
};

}  // namespace torchprobe
