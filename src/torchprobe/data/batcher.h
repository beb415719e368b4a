#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "torchprobe/backend.h"
#include "torchprobe/data/cifar10.h"

namespace torchprobe::data {

/// One assembled batch in host memory: float32 [B,3,32,32] normalised with mean 0.5 and
/// std 0.5 per channel (the tutorial's transform), int64 labels [B].
struct HostBatch {
  torch::Tensor images;
  torch::Tensor labels;
  /// Set by whoever starts an asynchronous copy from these buffers; waited on before reuse.
  std::unique_ptr<backend::Fence> in_flight;
};

/// Assembles batches into a small ring of reused buffers (pinned when the target device
/// wants it, so copies can be non_blocking). Shuffles each epoch; a batch never spans
/// a reshuffle boundary unevenly: it simply continues in the next permutation.
class Batcher {
 public:
  Batcher(std::shared_ptr<const Dataset> dataset, std::int64_t batch_size, bool pinned,
          std::uint64_t seed, int ring_size = 2, bool shuffle = true);
  /// The next batch; its buffer is not touched again until ring_size more calls.
  HostBatch& next();
  std::int64_t batch_size() const { return batch_size_; }
  int ring_size() const { return static_cast<int>(ring_.size()); }

 private:
  void reshuffle();
  std::shared_ptr<const Dataset> dataset_;
  std::int64_t batch_size_;
  bool shuffle_;
  std::vector<HostBatch> ring_;
  size_t next_slot_ = 0;
  std::vector<std::int64_t> order_;
  size_t position_ = 0;
  std::uint64_t rng_state_;
};

/// Normalises uint8 images [N,3,32,32] (any N) into float32 with the batcher's transform.
torch::Tensor normalize_images(const torch::Tensor& images_u8);

}  // namespace torchprobe::data
