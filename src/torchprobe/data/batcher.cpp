#include "torchprobe/data/batcher.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <numeric>

#include "torchprobe/error.h"

namespace torchprobe::data {
namespace {

// (x / 255 - 0.5) / 0.5 for every byte value, so assembly is a table lookup per pixel.
const std::array<float, 256>& normalize_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) t[v] = (static_cast<float>(v) / 255.0f - 0.5f) / 0.5f;
    return t;
  }();
  return table;
}

void normalize_into(const std::uint8_t* src, float* dst, std::int64_t count) {
  const auto& table = normalize_table();
  for (std::int64_t i = 0; i < count; ++i) dst[i] = table[src[i]];
}

std::uint64_t next_random(std::uint64_t* state) {  // splitmix64
  std::uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Batcher::Batcher(std::shared_ptr<const Dataset> dataset, std::int64_t batch_size, bool pinned,
                 std::uint64_t seed, int ring_size, bool shuffle)
    : dataset_(std::move(dataset)), batch_size_(batch_size), shuffle_(shuffle), rng_state_(seed) {
  if (!dataset_ || dataset_->size() == 0) throw InputError("cannot make batches: the dataset is empty");
  if (batch_size_ < 1) throw InputError(fmt::format("batch size must be >= 1, got {}", batch_size_));
  if (ring_size < 1) throw std::invalid_argument("Batcher: ring_size must be >= 1");
  const auto float_opts = torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(pinned);
  const auto label_opts = torch::TensorOptions().dtype(torch::kInt64).pinned_memory(pinned);
  ring_.resize(static_cast<size_t>(ring_size));
  for (auto& slot : ring_) {
    slot.images = torch::empty({batch_size_, kChannels, kSide, kSide}, float_opts);
    slot.labels = torch::empty({batch_size_}, label_opts);
  }
  order_.resize(static_cast<size_t>(dataset_->size()));
  std::iota(order_.begin(), order_.end(), 0);
  if (shuffle_) reshuffle();
}

void Batcher::reshuffle() {
  for (size_t i = order_.size(); i > 1; --i) {  // Fisher-Yates
    std::swap(order_[i - 1], order_[next_random(&rng_state_) % i]);
  }
}

HostBatch& Batcher::next() {
  HostBatch& slot = ring_[next_slot_];
  next_slot_ = (next_slot_ + 1) % ring_.size();
  if (slot.in_flight) {
    slot.in_flight->wait();  // an async copy may still be reading this buffer
    slot.in_flight.reset();
  }
  const auto* images = dataset_->images.data_ptr<std::uint8_t>();
  const auto* labels = dataset_->labels.data_ptr<std::int64_t>();
  auto* dst_images = slot.images.data_ptr<float>();
  auto* dst_labels = slot.labels.data_ptr<std::int64_t>();
  for (std::int64_t b = 0; b < batch_size_; ++b) {
    if (position_ == order_.size()) {
      position_ = 0;
      if (shuffle_) reshuffle();
    }
    const std::int64_t index = order_[position_++];
    dst_labels[b] = labels[index];
    normalize_into(images + index * kImageBytes, dst_images + b * kImageBytes, kImageBytes);
  }
  return slot;
}

torch::Tensor normalize_images(const torch::Tensor& images_u8) {
  const torch::Tensor src = images_u8.contiguous();
  torch::Tensor out = torch::empty(src.sizes(), torch::kFloat32);
  normalize_into(src.data_ptr<std::uint8_t>(), out.data_ptr<float>(), src.numel());
  return out;
}

}  // namespace torchprobe::data
