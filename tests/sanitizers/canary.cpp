// The asan flavour's canary: a heap overflow and a leak that the sanitizers must report. CTest expects
// the reports (tests/CMakeLists.txt), so a build or a test environment that silently lost its
// instrumentation or its options fails here instead of passing everything.
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  if (std::strcmp(what, "overflow") == 0) {
    char* buffer = static_cast<char*>(std::malloc(8));
    volatile int at = 8;
    buffer[at] = 1;  // one past the end
    std::printf("not detected\n");
    std::free(buffer);
    return 0;
  }
  if (std::strcmp(what, "leak") == 0) {
    void* volatile lost = std::malloc(4096);
    lost = nullptr;
    (void)lost;
    return 0;
  }
  std::fprintf(stderr, "usage: sanitizer_canary overflow|leak\n");
  return 2;
}
