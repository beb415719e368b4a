#pragma once
// Helpers shared by the test files.
#include <gtest/gtest.h>
#include <string>

#include "torchprobe/temp_dir.h"

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

using torchprobe::TempDir;
