// libFuzzer target: the CIFAR-10 binary reader's core on arbitrary bytes. Every input either parses or
// is refused with an InputError; anything else (a crash, a leak, another exception) is a finding.
#include <cstddef>
#include <cstdint>

#include "torchprobe/data/cifar10.h"
#include "torchprobe/input_error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, size_t size) {
  try {
    const auto dataset = torchprobe::data::parse_cifar10(data, size, "fuzz input");
    if (dataset.size() * torchprobe::data::kRecordBytes != static_cast<std::int64_t>(size)) __builtin_trap();
  } catch (const torchprobe::InputError&) {
  }
  return 0;
}
