#include "torchprobe/data/cifar10.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <fstream>

#include "test_util.h"
#include "torchprobe/error.h"

using namespace torchprobe;
using namespace torchprobe::data;

namespace {

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST(Cifar10, WriterProducesTheOfficialRecordLayout) {
  TempDir dir;
  Dataset ds;
  ds.images = torch::zeros({2, 3, 32, 32}, torch::kUInt8);
  ds.images[1][2][31][31] = 200;  // last pixel of the blue plane of record 1
  ds.images[0][0][0][1] = 7;      // second pixel of the red plane of record 0
  ds.labels = torch::tensor({3, 9}, torch::kInt64);
  write_cifar10_file(dir.file("b.bin"), ds);
  const auto bytes = read_bytes(dir.file("b.bin"));
  ASSERT_EQ(bytes.size(), 2u * 3073u);
  EXPECT_EQ(bytes[0], 3);
  EXPECT_EQ(bytes[1 + 1], 7);
  EXPECT_EQ(bytes[3073], 9);
  EXPECT_EQ(bytes[3073 + 3072], 200);
}

TEST(Cifar10, RoundTripKeepsEveryByteAndLabel) {
  TempDir dir;
  const Dataset original = make_synthetic(37, /*seed=*/5);
  write_cifar10_file(dir.file("data_batch_1.bin"), original);
  const Dataset back = read_cifar10_file(dir.file("data_batch_1.bin"));
  ASSERT_EQ(back.size(), 37);
  EXPECT_TRUE(torch::equal(back.images, original.images));
  EXPECT_TRUE(torch::equal(back.labels, original.labels));
  EXPECT_EQ(back.source, dir.file("data_batch_1.bin"));
}

TEST(Cifar10, LoadsTheSplitsFromADirectoryOrTheArchiveSubdirectory) {
  TempDir dir;
  const auto sub = dir.path() / "cifar-10-batches-bin";
  std::filesystem::create_directory(sub);
  std::int64_t expected_first_label = -1;
  int i = 0;
  for (const auto& name : split_file_names(Split::kTrain)) {
    const Dataset part = make_synthetic(10 + i, /*seed=*/static_cast<std::uint64_t>(i));
    if (i == 0) expected_first_label = part.labels[0].item<std::int64_t>();
    write_cifar10_file((sub / name).string(), part);
    ++i;
  }
  write_cifar10_file((sub / "test_batch.bin").string(), make_synthetic(4, 99));
  const Dataset train = load_cifar10(dir.path().string(), Split::kTrain);
  EXPECT_EQ(train.size(), 10 + 11 + 12 + 13 + 14);
  EXPECT_EQ(train.labels[0].item<std::int64_t>(), expected_first_label);
  EXPECT_EQ(load_cifar10(sub.string(), Split::kTest).size(), 4);
}

TEST(Cifar10, FilesLongerThanOneReadKeepEveryRecordInOrder) {
  // The reader reads a few hundred records at a time straight into the dataset: records on either side of those
  // reads, and of the files' boundary, land in their own rows.
  TempDir dir;
  const Dataset first = make_synthetic(600, /*seed=*/11), second = make_synthetic(301, /*seed=*/12);
  write_cifar10_file(dir.file("a.bin"), first);
  write_cifar10_file(dir.file("b.bin"), second);
  const Dataset both = read_cifar10_files({dir.file("a.bin"), dir.file("b.bin")});
  ASSERT_EQ(both.size(), 901);
  EXPECT_TRUE(torch::equal(both.images, torch::cat({first.images, second.images})));
  EXPECT_TRUE(torch::equal(both.labels, torch::cat({first.labels, second.labels})));
  EXPECT_EQ(both.source, dir.file("a.bin") + "," + dir.file("b.bin"));

  std::vector<unsigned char> bytes(3073 * 600, 0);
  bytes[3073 * 517] = 12;  // past the first read
  write_bytes(dir.file("bad.bin"), bytes);
  EXPECT_THROW_WITH(read_cifar10_files({dir.file("a.bin"), dir.file("bad.bin")}), InputError,
                    dir.file("bad.bin") + ": record 517 has label 12 (labels must be 0..9)");
}

TEST(Cifar10, MissingFileIsNamed) {
  TempDir dir;
  write_cifar10_file(dir.file("data_batch_1.bin"), make_synthetic(2, 1));
  write_cifar10_file(dir.file("data_batch_2.bin"), make_synthetic(2, 1));
  EXPECT_THROW_WITH(load_cifar10(dir.path().string(), Split::kTrain), InputError,
                    dir.file("data_batch_3.bin") + ": missing");
}

TEST(Cifar10, SizeNotAMultipleOfTheRecordIsRejected) {
  TempDir dir;
  write_bytes(dir.file("bad.bin"), std::vector<unsigned char>(3073 * 2 + 100, 1));
  EXPECT_THROW_WITH(read_cifar10_file(dir.file("bad.bin")), InputError,
                    dir.file("bad.bin") + ": size 6246 bytes is not a multiple of the 3073-byte record");
}

TEST(Cifar10, LabelOutOfRangeNamesTheRecord) {
  TempDir dir;
  std::vector<unsigned char> bytes(3073 * 3, 0);
  bytes[3073 * 2] = 10;
  write_bytes(dir.file("bad.bin"), bytes);
  EXPECT_THROW_WITH(read_cifar10_file(dir.file("bad.bin")), InputError,
                    dir.file("bad.bin") + ": record 2 has label 10 (labels must be 0..9)");
}

TEST(Cifar10, EmptyFileAndDirectoryAreRejected) {
  TempDir dir;
  write_bytes(dir.file("empty.bin"), {});
  EXPECT_THROW_WITH(read_cifar10_file(dir.file("empty.bin")), InputError, ": empty");
  EXPECT_THROW_WITH(load_cifar10(dir.file("nothing-here"), Split::kTrain), InputError, "not a directory");
}

TEST(Cifar10, SymbolicLinkLoopIsNamedAsSuch) {
  TempDir dir;
  std::filesystem::create_symlink(dir.file("b.bin"), dir.file("a.bin"));
  std::filesystem::create_symlink(dir.file("a.bin"), dir.file("b.bin"));
  EXPECT_THROW_WITH(read_cifar10_file(dir.file("a.bin")), InputError,
                    dir.file("a.bin") + ": Too many levels of symbolic links");
  std::filesystem::create_symlink(dir.file("loop"), dir.file("loop"));
  EXPECT_THROW_WITH(load_cifar10(dir.file("loop"), Split::kTrain), InputError, "Too many levels of symbolic links");
}

TEST(Cifar10, HugeFileIsRefusedByItsSizeBeforeReading) {
  TempDir dir;
  const std::string path = dir.file("data_batch_1.bin");
  write_bytes(path, {});
  std::filesystem::resize_file(path, 51'000'000'000);  // sparse: no disk used
  EXPECT_THROW_WITH(read_cifar10_file(path), InputError,
                    path + ": 51000000000 bytes is more than any CIFAR-10 file holds");
}

TEST(Cifar10, ParsesRecordsFromMemory) {
  std::vector<std::uint8_t> bytes(3073 * 2, 7);
  bytes[0] = 3;
  bytes[3073] = 9;
  const Dataset d = parse_cifar10(bytes.data(), bytes.size(), "memory");
  ASSERT_EQ(d.size(), 2);
  EXPECT_EQ(d.labels[0].item<std::int64_t>(), 3);
  EXPECT_EQ(d.labels[1].item<std::int64_t>(), 9);
  EXPECT_EQ(d.images[1][2][31][31].item<std::uint8_t>(), 7);
  EXPECT_THROW_WITH(parse_cifar10(bytes.data(), 100, "memory"), InputError, "memory: size 100 bytes");
}

TEST(Cifar10, SyntheticIsDeterministicAndCoversEveryClass) {
  const Dataset a = make_synthetic(500, 42), b = make_synthetic(500, 42), c = make_synthetic(500, 43);
  EXPECT_TRUE(torch::equal(a.images, b.images));
  EXPECT_TRUE(torch::equal(a.labels, b.labels));
  EXPECT_FALSE(torch::equal(a.images, c.images));
  const auto counts = torch::bincount(a.labels, /*weights=*/{}, /*minlength=*/10);
  ASSERT_EQ(counts.size(0), 10);
  EXPECT_GT(counts.min().item<std::int64_t>(), 20);
  EXPECT_EQ(a.source, "synthetic (seed 42)");
}

TEST(Cifar10, SyntheticClassesDifferOnAverage) {
  // Learnability precondition: per-class mean colours are distinct (the training test
  // checks that a model really learns them).
  const Dataset ds = make_synthetic(2000, 3);
  const torch::Tensor images = ds.images.to(torch::kFloat32);
  std::vector<torch::Tensor> means;
  for (int c = 0; c < kClasses; ++c) means.push_back(images.index({ds.labels == c}).mean(/*dim=*/{0, 2, 3}));
  for (int i = 0; i < kClasses; ++i) {
    for (int j = i + 1; j < kClasses; ++j) {
      EXPECT_GT((means[i] - means[j]).abs().max().item<float>(), 10.0f) << "classes " << i << " and " << j;
    }
  }
}
