#pragma once
// Helpers shared by the test files.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

/// Expects `statement` to throw `type` whose what() contains `substring` (fmt's EXPECT_THROW_MSG).
#define EXPECT_THROW_WITH(statement, type, substring)                                        \
  do {                                                                                       \
    try {                                                                                    \
      statement;                                                                             \
      ADD_FAILURE() << "expected " #type " containing '" << (substring) << "', got nothing"; \
    } catch (const type& e) {                                                                \
      EXPECT_NE(std::string(e.what()).find(substring), std::string::npos)                    \
          << "message was: " << e.what();                                                    \
    }                                                                                        \
  } while (0)

/// A fresh temporary directory, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "torchprobe-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};
