#pragma once
// The CIFAR-10 binary format (https://www.cs.toronto.edu/~kriz/cifar.html, "binary version"):
// each record is 1 label byte followed by 3072 pixel bytes, channel-major 3x32x32 (R, G, B planes).
#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

namespace torchprobe::data {

constexpr int kClasses = 10;
constexpr int kChannels = 3;
constexpr int kSide = 32;
constexpr std::int64_t kImageBytes = kChannels * kSide * kSide;  // 3072
constexpr std::int64_t kRecordBytes = 1 + kImageBytes;          // 3073
constexpr std::int64_t kTrainImages = 50000;
/// The most records read from one file (60 times a training file): a larger file is refused by its
/// size before anything is read, so a huge or sparse file cannot become an allocation failure.
constexpr std::int64_t kMaxFileRecords = 600000;

/// Images as stored: uint8 [N, 3, 32, 32]; labels int64 [N] in 0..9.
struct Dataset {
  torch::Tensor images;
  torch::Tensor labels;
  std::string source;  ///< where it came from: file paths or "synthetic (seed S)"
  std::int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

enum class Split { kTrain, kTest };

/// Reads one binary batch file. Throws InputError naming the file and the problem (missing, a symbolic
/// link loop, unreadable, empty, too large, size not a multiple of 3073, label >= 10 at record K).
Dataset read_cifar10_file(const std::string& path);
/// Parses records already in memory (`size` bytes); `source` names them in errors. The reader's core,
/// on its own for the fuzzer.
Dataset parse_cifar10(const std::uint8_t* data, size_t size, const std::string& source);
/// Reads several files into one dataset, in order.
Dataset read_cifar10_files(const std::vector<std::string>& paths);
/// The split from a directory holding data_batch_1..5.bin / test_batch.bin, either directly
/// or in the archive's cifar-10-batches-bin/ subdirectory.
Dataset load_cifar10(const std::string& dir, Split split);
/// The file names of a split, in the official order.
std::vector<std::string> split_file_names(Split split);

/// Writes records in the same binary format (the inverse of read_cifar10_file).
void write_cifar10_file(const std::string& path, const Dataset& dataset);

/// A deterministic synthetic dataset with learnable classes: each class has its own colour
/// cast and stripe orientation/frequency, with per-image phase, brightness and pixel noise.
/// The same (count, seed) gives the same bytes on every platform.
Dataset make_synthetic(std::int64_t count, std::uint64_t seed);

}  // namespace torchprobe::data
