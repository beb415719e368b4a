# Included by ctest itself (TEST_INCLUDE_FILES) in a TORCHPROBE_SANITIZE build: every test, and every
# program a test starts, runs with the options of options.cmake. Read by ctest before any test is
# listed or run (gtest_discover_tests lists the GoogleTest cases by running each executable).
include("${CMAKE_CURRENT_LIST_DIR}/options.cmake")
set(ENV{ASAN_OPTIONS} "${TORCHPROBE_ASAN_OPTIONS}")
set(ENV{LSAN_OPTIONS} "${TORCHPROBE_LSAN_OPTIONS}")
set(ENV{UBSAN_OPTIONS} "${TORCHPROBE_UBSAN_OPTIONS}")
if(EXISTS /usr/bin/llvm-symbolizer)
  set(ENV{ASAN_SYMBOLIZER_PATH} /usr/bin/llvm-symbolizer)
endif()
