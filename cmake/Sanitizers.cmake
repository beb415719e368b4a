# TORCHPROBE_SANITIZE=ON: AddressSanitizer + UndefinedBehaviorSanitizer on everything torchprobe builds
# (scripts/test.sh --flavour asan; clang). LibTorch itself is not instrumented; ASan still sees every
# allocation it makes, since it replaces malloc. What LibTorch's own code reports is suppressed at run
# time (tests/sanitizers/), each entry with its reason.
# TORCHPROBE_ENABLE_FUZZ=ON (clang; with TORCHPROBE_SANITIZE): libFuzzer targets in tests/fuzz, and
# coverage instrumentation on our code so the fuzzers are guided by it.
option(TORCHPROBE_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(TORCHPROBE_ENABLE_FUZZ "Build the libFuzzer targets (clang, with TORCHPROBE_SANITIZE)" OFF)

if(TORCHPROBE_SANITIZE)
  set(torchprobe_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # -fsanitize=function checks calls through function pointers against the callee's type; LibTorch's
    # dispatcher calls every kernel through a type-erased pointer by design (KernelFunction, inlined into
    # our code from its headers), so each op call would be reported.
    list(APPEND torchprobe_sanitizers -fno-sanitize=function)
  endif()
  add_compile_options(${torchprobe_sanitizers})
  add_link_options(-fsanitize=address,undefined)
endif()

if(TORCHPROBE_ENABLE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang" OR NOT TORCHPROBE_SANITIZE)
    message(FATAL_ERROR "TORCHPROBE_ENABLE_FUZZ needs clang and TORCHPROBE_SANITIZE=ON (libFuzzer)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
