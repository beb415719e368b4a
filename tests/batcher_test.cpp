#include "torchprobe/data/batcher.h"

#include <gtest/gtest.h>

#include <set>

#include "test_util.h"
#include "torchprobe/error.h"

using namespace torchprobe;
using namespace torchprobe::data;

TEST(Batcher, NormalisesWithMeanHalfStdHalf) {
  auto ds = std::make_shared<Dataset>();
  ds->images = torch::zeros({1, 3, 32, 32}, torch::kUInt8);
  ds->images[0][0][0][0] = 255;
  ds->images[0][1][0][0] = 51;  // 0.2 -> (0.2 - 0.5) / 0.5 = -0.6
  ds->labels = torch::tensor({4}, torch::kInt64);
  Batcher batcher(ds, /*batch_size=*/1, /*pinned=*/false, /*seed=*/0);
  HostBatch& batch = batcher.next();
  EXPECT_FLOAT_EQ(batch.images[0][0][0][0].item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(batch.images[0][0][0][1].item<float>(), -1.0f);
  EXPECT_NEAR(batch.images[0][1][0][0].item<float>(), -0.6f, 1e-6);
  EXPECT_EQ(batch.labels[0].item<std::int64_t>(), 4);
}

TEST(Batcher, AnEpochVisitsEveryImageOnceAndMatchesItsLabel) {
  auto ds = std::make_shared<const Dataset>(make_synthetic(60, 9));
  Batcher batcher(ds, /*batch_size=*/12, /*pinned=*/false, /*seed=*/3);
  std::set<std::int64_t> seen;
  const torch::Tensor all = normalize_images(ds->images).flatten(1);
  for (int b = 0; b < 5; ++b) {
    HostBatch& batch = batcher.next();
    for (int i = 0; i < 12; ++i) {
      // Find which dataset image this row is, then check its label came along with it.
      const torch::Tensor row = batch.images[i].flatten();
      const auto match = (all - row).abs().sum(/*dim=*/1).argmin().item<std::int64_t>();
      EXPECT_TRUE(torch::equal(all[match], row));
      EXPECT_EQ(batch.labels[i].item<std::int64_t>(), ds->labels[match].item<std::int64_t>());
      seen.insert(match);
    }
  }
  EXPECT_EQ(seen.size(), 60u);
}

TEST(Batcher, ReusesItsRingOfBuffers) {
  auto ds = std::make_shared<const Dataset>(make_synthetic(64, 1));
  Batcher batcher(ds, /*batch_size=*/8, /*pinned=*/false, /*seed=*/1, /*ring_size=*/2);
  const void* first = batcher.next().images.data_ptr();
  const void* second = batcher.next().images.data_ptr();
  EXPECT_NE(first, second);
  EXPECT_EQ(batcher.next().images.data_ptr(), first);
}

TEST(Batcher, RejectsBatchZero) {
  auto ds = std::make_shared<const Dataset>(make_synthetic(4, 1));
  EXPECT_THROW_WITH(Batcher(ds, 0, false, 1), InputError, "batch size must be >= 1, got 0");
}
