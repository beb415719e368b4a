# The sanitizer options of the asan flavour, read both when configuring (per-test overrides in
# tests/CMakeLists.txt) and by ctest itself (sanitizer_env.cmake). Why each one:
#   halt_on_error / abort_on_error=0: the first report ends the process with exit code 1, which fails
#     the test; no core dumps.
#   allocator_may_return_null=1: torchprobe provokes allocation failures on purpose (diagnose memory,
#     the OOM tests cap RLIMIT_AS and then ask for more than fits); with it, ASan's allocator returns
#     NULL, as glibc's would, and LibTorch turns that into its own out-of-memory error. Without it,
#     ASan reports the deliberate failure as a fatal "out of memory".
#   detect_leaks=1 with lsan.supp: leaks fail the test, except the suppressed ones, each justified there.
#   check_initialization_order, strict_string_checks: the stricter checks, cheap here.
set(TORCHPROBE_ASAN_OPTIONS "halt_on_error=1:abort_on_error=0:detect_leaks=1:allocator_may_return_null=1:strict_string_checks=1:check_initialization_order=1:disable_coredump=1")
set(TORCHPROBE_LSAN_OPTIONS "suppressions=${CMAKE_CURRENT_LIST_DIR}/lsan.supp:print_suppressions=0")
set(TORCHPROBE_UBSAN_OPTIONS "halt_on_error=1:print_stacktrace=1:suppressions=${CMAKE_CURRENT_LIST_DIR}/ubsan.supp")
# For the tests of the memory probe only: ASan's quarantine keeps up to 256 MiB of freed memory mapped
# (to catch a use after free), so under the probe's address-space cap nothing freed after an OOM could
# be used again and every recovery would fail. Use after free is still caught until a block is reused.
set(TORCHPROBE_ASAN_OPTIONS_UNDER_A_CAP "${TORCHPROBE_ASAN_OPTIONS}:quarantine_size_mb=0")
