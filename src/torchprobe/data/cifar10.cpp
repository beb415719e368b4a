#include "torchprobe/data/cifar10.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "torchprobe/error.h"

namespace torchprobe::data {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// splitmix64: tiny, portable, and good enough for pixel noise.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

}  // namespace

std::vector<std::string> split_file_names(Split split) {
  if (split == Split::kTest) return {"test_batch.bin"};
  return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"};
}

namespace {

// Records read per fread: ~0.8 MB, so the bytes read stay in the core's cache while they are copied out.
constexpr std::int64_t kChunkRecords = 256;

void check_record_size(size_t size, const std::string& source) {
  if (size == 0) throw InputError(fmt::format("CIFAR-10 file {}: empty", source));
  if (size % kRecordBytes != 0) {
    throw InputError(fmt::format(
        "CIFAR-10 file {}: size {} bytes is not a multiple of the 3073-byte record "
        "(1 label + 3072 pixels); {} trailing bytes: truncated or not the binary version",
        source, size, size % kRecordBytes));
  }
}

// Copies `n` records into images/labels (already sized), checking each label; `first` is the first record's index
// in its file, for the error.
void copy_records(const std::uint8_t* data, std::int64_t n, std::int64_t first, std::uint8_t* images,
                  std::int64_t* labels, const std::string& source) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint8_t* record = data + i * kRecordBytes;
    if (record[0] >= kClasses) {
      throw InputError(fmt::format("CIFAR-10 file {}: record {} has label {} (labels must be 0..9)", source, first + i,
                                   static_cast<int>(record[0])));
    }
    labels[i] = record[0];
    std::memcpy(images + i * kImageBytes, record + 1, kImageBytes);
  }
}

Dataset allocate(std::int64_t records) {
  Dataset out;
  out.images = torch::empty({records, kChannels, kSide, kSide}, torch::kUInt8);
  out.labels = torch::empty({records}, torch::kInt64);
  return out;
}

// The file's record count, every check that needs no reading done: missing, a link loop, not a regular file, too
// large, empty, a size that is not a whole number of records.
std::int64_t checked_records(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // follows links: a loop or a dangling link says so
  if (ec) {
    throw InputError(fmt::format("CIFAR-10 file {}: {}", path,
                                 ec == std::errc::no_such_file_or_directory ? "missing (no such file)" : ec.message()));
  }
  if (fs::is_directory(status)) throw InputError(fmt::format("CIFAR-10 file {}: is a directory", path));
  if (!fs::is_regular_file(status)) throw InputError(fmt::format("CIFAR-10 file {}: not a regular file", path));
  const auto bytes = static_cast<std::int64_t>(fs::file_size(path, ec));
  if (ec) throw InputError(fmt::format("CIFAR-10 file {}: cannot read its size: {}", path, ec.message()));
  // Checked before reading: a huge (or sparse) file must not become an allocation failure.
  if (bytes > kMaxFileRecords * kRecordBytes) {
    throw InputError(fmt::format("CIFAR-10 file {}: {} bytes is more than any CIFAR-10 file holds (each training file "
                                 "has 10000 images, {} bytes; at most {} images are read from one file)",
                                 path, bytes, 10000 * kRecordBytes, kMaxFileRecords));
  }
  check_record_size(static_cast<size_t>(bytes), path);
  return bytes / kRecordBytes;
}

// Reads `records` records of `path` into images/labels a chunk at a time: the file's bytes are never held whole, and
// the only memory the load touches for the first time is the dataset itself.
void read_records(const std::string& path, std::int64_t records, std::uint8_t* images, std::int64_t* labels,
                  std::vector<std::uint8_t>& chunk) {
  File file(std::fopen(path.c_str(), "rb"));
  if (!file) throw InputError(fmt::format("CIFAR-10 file {}: cannot open: {}", path, std::strerror(errno)));
  for (std::int64_t done = 0; done < records;) {
    const std::int64_t n = std::min(kChunkRecords, records - done);
    const auto bytes = static_cast<size_t>(n * kRecordBytes);
    if (std::fread(chunk.data(), 1, bytes, file.get()) != bytes) {
      throw InputError(
          fmt::format("CIFAR-10 file {}: read failed: {}", path,
                      std::ferror(file.get()) ? std::strerror(errno) : "the file got shorter while being read"));
    }
    copy_records(chunk.data(), n, done, images + done * kImageBytes, labels + done, path);
    done += n;
  }
}

}  // namespace

Dataset parse_cifar10(const std::uint8_t* data, size_t size, const std::string& source) {
  check_record_size(size, source);
  const auto n = static_cast<std::int64_t>(size / kRecordBytes);
  Dataset out = allocate(n);
  copy_records(data, n, 0, out.images.data_ptr<std::uint8_t>(), out.labels.data_ptr<std::int64_t>(), source);
  out.source = source;
  return out;
}

Dataset read_cifar10_file(const std::string& path) { return read_cifar10_files({path}); }

Dataset read_cifar10_files(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("no CIFAR-10 files given");
  // Every file checked before any is read (a missing fifth file fails at once), then each read straight into its
  // rows of the one dataset: no per-file copies to concatenate.
  std::vector<std::int64_t> records;
  std::int64_t total = 0;
  for (const auto& path : paths) total += records.emplace_back(checked_records(path));
  Dataset out = allocate(total);
  auto* images = out.images.data_ptr<std::uint8_t>();
  auto* labels = out.labels.data_ptr<std::int64_t>();
  std::vector<std::uint8_t> chunk(static_cast<size_t>(kChunkRecords * kRecordBytes));
  std::int64_t row = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    read_records(paths[i], records[i], images + row * kImageBytes, labels + row, chunk);
    row += records[i];
    out.source += (i == 0 ? "" : ",") + paths[i];
  }
  return out;
}

Dataset load_cifar10(const std::string& dir, Split split) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw InputError(fmt::format("CIFAR-10 directory {}: {}", dir, ec.message()));
  }
  if (!fs::is_directory(status)) throw InputError(fmt::format("CIFAR-10 directory {}: not a directory", dir));
  fs::path base(dir);
  const auto names = split_file_names(split);
  if (!fs::exists(base / names.front(), ec) && fs::exists(base / "cifar-10-batches-bin" / names.front(), ec)) {
    base /= "cifar-10-batches-bin";
  }
  std::vector<std::string> paths;
  for (const auto& name : names) paths.push_back((base / name).string());
  return read_cifar10_files(paths);
}

void write_cifar10_file(const std::string& path, const Dataset& dataset) {
  const torch::Tensor images = dataset.images.contiguous();
  const torch::Tensor labels = dataset.labels.to(torch::kInt64).contiguous();
  if (images.scalar_type() != torch::kUInt8 || images.dim() != 4 || images.size(1) != kChannels ||
      images.size(2) != kSide || images.size(3) != kSide || images.size(0) != labels.size(0)) {
    throw std::invalid_argument("write_cifar10_file: expected uint8 images [N,3,32,32] and N labels");
  }
  File file(std::fopen(path.c_str(), "wb"));
  if (!file) throw InputError(fmt::format("CIFAR-10 file {}: cannot create: {}", path, std::strerror(errno)));
  const auto* pixels = images.data_ptr<std::uint8_t>();
  const auto* label = labels.data_ptr<std::int64_t>();
  std::vector<std::uint8_t> record(kRecordBytes);
  for (std::int64_t i = 0; i < labels.size(0); ++i) {
    if (label[i] < 0 || label[i] > 255) throw std::invalid_argument("write_cifar10_file: label does not fit a byte");
    record[0] = static_cast<std::uint8_t>(label[i]);
    std::memcpy(record.data() + 1, pixels + i * kImageBytes, kImageBytes);
    if (std::fwrite(record.data(), 1, record.size(), file.get()) != record.size()) {
      throw InputError(fmt::format("CIFAR-10 file {}: write failed: {}", path, std::strerror(errno)));
    }
  }
  if (std::fflush(file.get()) != 0) {
    throw InputError(fmt::format("CIFAR-10 file {}: write failed: {}", path, std::strerror(errno)));
  }
}

Dataset make_synthetic(std::int64_t count, std::uint64_t seed) {
  constexpr double kPi = 3.14159265358979323846;
  // Per-class colour cast (R, G, B offsets from mid-grey).
  static const int kCast[kClasses][kChannels] = {{40, -20, -20}, {-20, 40, -20}, {-20, -20, 40}, {30, 30, -30},
                                                 {-30, 30, 30},  {30, -30, 30},  {15, 15, 15},  {-15, -15, -15},
                                                 {35, 0, -35},   {-35, 0, 35}};
  Dataset out;
  out.images = torch::empty({count, kChannels, kSide, kSide}, torch::kUInt8);
  out.labels = torch::empty({count}, torch::kInt64);
  auto* images = out.images.data_ptr<std::uint8_t>();
  auto* labels = out.labels.data_ptr<std::int64_t>();
  SplitMix64 rng{seed * 0x2545F4914F6CDD1Dull + 1};
  for (std::int64_t i = 0; i < count; ++i) {
    const int label = static_cast<int>(rng.next() % kClasses);
    labels[i] = label;
    const double angle = kPi * label / kClasses;
    const double freq = 2.0 * kPi * (2.0 + label % 3) / kSide;
    const double cx = std::cos(angle) * freq, cy = std::sin(angle) * freq;
    const double phase = 2.0 * kPi * rng.uniform();
    const double brightness = 40.0 * (rng.uniform() - 0.5);
    std::uint8_t* img = images + i * kImageBytes;
    for (int c = 0; c < kChannels; ++c) {
      for (int y = 0; y < kSide; ++y) {
        for (int x = 0; x < kSide; ++x) {
          const double stripes = 45.0 * std::sin(cx * x + cy * y + phase);
          const double noise = 80.0 * (rng.uniform() - 0.5);
          const double v = 128.0 + kCast[label][c] + brightness + stripes + noise;
          img[(c * kSide + y) * kSide + x] = static_cast<std::uint8_t>(std::lround(std::fmin(255.0, std::fmax(0.0, v))));
        }
      }
    }
  }
  out.source = fmt::format("synthetic (seed {})", seed);
  return out;
}

}  // namespace torchprobe::data
