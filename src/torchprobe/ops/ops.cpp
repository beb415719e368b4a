#include "torchprobe/ops/ops.h"

#include <ATen/Context.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include <algorithm>
#include <memory>

#include "torchprobe/device_spec.h"
#include "torchprobe/error.h"
#include "torchprobe/models/registry.h"
#include "torchprobe/units.h"

namespace torchprobe::ops {
namespace {

const std::vector<std::int64_t> kSquareSizes = {256, 512, 1024, 2048, 4096, 8192};
const std::vector<std::int64_t> kCopyMiB = {1, 4, 16, 64, 256, 1024};
constexpr std::int64_t kCoreCopyMiB = 64;
constexpr std::int64_t kClasses = 10;
using units::kMiB;

torch::TensorOptions options_for(const torch::Device& device, DType dtype) {
  return torch::TensorOptions().device(device).dtype(storage_type(dtype));
}

std::int64_t element_size(DType dtype) { return dtype == DType::kBf16 || dtype == DType::kFp16 ? 2 : 4; }

double numel(const std::vector<std::int64_t>& shape) {
  double n = 1.0;
  for (const auto d : shape) n *= static_cast<double>(d);
  return n;
}

using Params = std::vector<std::pair<std::string, std::string>>;

std::string shape_text(const std::vector<std::int64_t>& shape) { return fmt::format("{}", fmt::join(shape, "x")); }

struct Planner {
  const OpSelection& selection;
  std::vector<OpCase>& out;

  bool wanted(const std::string& op) const {
    return selection.ops.empty() || std::find(selection.ops.begin(), selection.ops.end(), op) != selection.ops.end();
  }
  void add(OpCase c) {
    if ((selection.all || c.core) && wanted(c.op)) out.push_back(std::move(c));
  }
};

OpCase base_case(const std::string& op, const torch::Device& device, DType dtype, Params params, bool with_dtype) {
  OpCase c;
  c.op = op;
  c.device = device;
  c.dtype = dtype;
  c.params = std::move(params);
  if (with_dtype) c.params.emplace_back("dtype", dtype_name(dtype));
  return c;
}

// y = a @ b for a (m, k); b (k, n) as a transposed (n, k) weight when `linear`, as nn::Linear stores it.
OpCase matmul_case(const torch::Device& device, DType dtype, std::int64_t m, std::int64_t k, std::int64_t n, Params params,
                   bool linear) {
  OpCase c = base_case("matmul", device, dtype, std::move(params), true);
  c.flops = matmul_flops(m, k, n);
  c.bytes = matmul_bytes(m, k, n, element_size(dtype));
  c.make_inputs = [=] {
    const auto o = options_for(device, dtype);
    torch::Tensor b = linear ? torch::randn({n, k}, o).t() : torch::randn({k, n}, o);
    return OpInputs{{torch::randn({m, k}, o), b}};
  };
  c.run = [](OpInputs& in) { return torch::mm(in.tensors[0], in.tensors[1]); };
  return c;
}

OpCase conv_case(const torch::Device& device, DType dtype, const ConvShape& s, bool backward, bool channels_last,
                 const std::string& model) {
  OpCase c = base_case("conv2d", device, dtype,
                       {{"model", model},
                        {"input", shape_text({s.batch, s.in_channels, s.height, s.width})},
                        {"out", std::to_string(s.out_channels)},
                        {"kernel", std::to_string(s.kernel)},
                        {"stride", std::to_string(s.stride)},
                        {"pad", std::to_string(s.padding)},
                        {"pass", backward ? "fwdbwd" : "fwd"},
                        {"layout", channels_last ? "cl" : "nchw"}},
                       true);
  c.flops = conv2d_flops(s, backward);
  c.bytes = conv2d_bytes(s, backward, element_size(dtype));
  c.make_inputs = [=] {
    const auto o = options_for(device, dtype);
    const auto format = channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
    auto x = torch::randn({s.batch, s.in_channels, s.height, s.width}, o).contiguous(format);
    auto w = (torch::randn({s.out_channels, s.in_channels, s.kernel, s.kernel}, o) * 0.1).contiguous(format);
    OpInputs in{{x.requires_grad_(backward), w.requires_grad_(backward)}};
    if (backward) {
      in.tensors.push_back(torch::randn({s.batch, s.out_channels, s.out_height(), s.out_width()}, o).contiguous(format));
    }
    return in;
  };
  c.run = [s, backward](OpInputs& in) {
    auto y = torch::conv2d(in.tensors[0], in.tensors[1], /*bias=*/{}, /*stride=*/s.stride, /*padding=*/s.padding);
    if (!backward) return y;
    // Both gradients, without accumulating into .grad (which would add a kernel per call).
    return torch::autograd::grad({y}, {in.tensors[0], in.tensors[1]}, {in.tensors[2]})[0];
  };
  return c;
}

void plan_device(const torch::Device& device, Planner& planner) {
  const bool gpu = device.is_cuda();
  const auto dtypes = supported_dtypes(device);
  const std::int64_t core_square = gpu ? 4096 : 1024;
  const std::int64_t core_batch = planner.selection.batch_sizes.empty() ? 64 : planner.selection.batch_sizes.front();

  for (const DType dtype : dtypes) {
    for (const auto n : kSquareSizes) {
      OpCase c = matmul_case(device, dtype, n, n, n, {{"n", std::to_string(n)}}, false);
      c.core = n == core_square && (dtype == DType::kFp32 || dtype == DType::kBf16);
      planner.add(std::move(c));
    }
    for (const auto batch : planner.selection.batch_sizes) {
      for (const std::string model : {"net", "resnet18"}) {
        for (const auto& [in, out] : model_linear_shapes(model)) {
          planner.add(matmul_case(device, dtype, batch, in, out,
                                  {{"model", model}, {"m", std::to_string(batch)}, {"k", std::to_string(in)},
                                   {"n", std::to_string(out)}},
                                  true));
        }
      }
    }
  }
  for (const auto batch : planner.selection.batch_sizes) {
    for (const std::string model : {"net", "resnet18"}) {
      for (ConvShape s : model_conv_shapes(model)) {
        s.batch = batch;
        for (const bool backward : {false, true}) {
          for (const bool cl : {false, true}) {
            for (const DType dtype : dtypes) {
              OpCase c = conv_case(device, dtype, s, backward, cl, model);
              // Core: resnet18's most frequent shape (layer1, 64 -> 64 at 32x32), forward, NCHW.
              c.core = model == "resnet18" && s.in_channels == 64 && s.out_channels == 64 && batch == core_batch &&
                       !backward && !cl && (dtype == DType::kFp32 || dtype == DType::kBf16);
              planner.add(std::move(c));
            }
          }
        }
      }
    }
  }

  for (const auto batch : planner.selection.batch_sizes) {
    const bool core = batch == core_batch;
    const std::vector<std::int64_t> act = {batch, 64, 32, 32};  // resnet18's stem / layer1 activations
    const double n_act = numel(act);
    const auto fp32 = options_for(device, DType::kFp32);
    const Params act_params = {{"input", shape_text(act)}};

    OpCase relu = base_case("relu", device, DType::kFp32, act_params, true);
    relu.flops = n_act;
    relu.bytes = 2 * n_act * 4;
    relu.make_inputs = [=] { return OpInputs{{torch::randn(act, fp32)}}; };
    relu.run = [](OpInputs& in) { return torch::relu(in.tensors[0]); };
    relu.core = core;
    planner.add(std::move(relu));

    const std::vector<std::int64_t> pool_in = {batch, 6, 28, 28};  // net's first pooling
    OpCase pool = base_case("max_pool2d", device, DType::kFp32, {{"input", shape_text(pool_in)}, {"kernel", "2"}, {"stride", "2"}}, true);
    pool.flops = numel(pool_in);  // k*k = 4 comparisons per output, a quarter as many outputs as inputs
    pool.bytes = (numel(pool_in) + numel(pool_in) / 4) * 4;
    pool.make_inputs = [=] { return OpInputs{{torch::randn(pool_in, fp32)}}; };
    pool.run = [](OpInputs& in) { return torch::max_pool2d(in.tensors[0], /*kernel_size=*/{2, 2}, /*stride=*/{2, 2}); };
    pool.core = core;
    planner.add(std::move(pool));

    OpCase bn = base_case("batch_norm", device, DType::kFp32, act_params, true);
    bn.params.insert(bn.params.begin() + 1, {"mode", "train"});
    bn.flops = 8 * n_act;  // mean 1, variance 3, normalise and affine 4 per element
    bn.bytes = (2 * n_act + 4 * 64) * 4;
    bn.make_inputs = [=] {
      return OpInputs{{torch::randn(act, fp32), torch::ones({64}, fp32), torch::zeros({64}, fp32), torch::zeros({64}, fp32),
                       torch::ones({64}, fp32)}};
    };
    bn.run = [](OpInputs& in) {
      return torch::batch_norm(in.tensors[0], in.tensors[1], in.tensors[2], in.tensors[3], in.tensors[4],
                               /*training=*/true, /*momentum=*/0.1, /*eps=*/1e-5, /*cudnn_enabled=*/true);
    };
    bn.core = core;
    planner.add(std::move(bn));

    OpCase ce = base_case("cross_entropy", device, DType::kFp32, {{"input", shape_text({batch, kClasses})}}, true);
    ce.flops = 5.0 * static_cast<double>(batch * kClasses) + static_cast<double>(batch);
    ce.bytes = static_cast<double>(batch * kClasses * 4 + batch * 8 + 4);
    ce.make_inputs = [=] {
      return OpInputs{{torch::randn({batch, kClasses}, fp32),
                       torch::randint(kClasses, {batch}, torch::TensorOptions().device(device).dtype(torch::kInt64))}};
    };
    ce.run = [](OpInputs& in) { return torch::nll_loss(torch::log_softmax(in.tensors[0], /*dim=*/1), in.tensors[1]); };
    ce.core = core;
    planner.add(std::move(ce));

    OpCase add = base_case("add", device, DType::kFp32, act_params, true);
    add.flops = n_act;
    add.bytes = 3 * n_act * 4;
    add.make_inputs = [=] { return OpInputs{{torch::randn(act, fp32), torch::randn(act, fp32)}}; };
    add.run = [](OpInputs& in) { return torch::add(in.tensors[0], in.tensors[1]); };
    add.core = core;
    planner.add(std::move(add));

    OpCase sum = base_case("sum", device, DType::kFp32, act_params, true);
    sum.flops = n_act;
    sum.bytes = n_act * 4 + 4;
    sum.make_inputs = [=] { return OpInputs{{torch::randn(act, fp32)}}; };
    sum.run = [](OpInputs& in) { return torch::sum(in.tensors[0]); };
    sum.core = core;
    planner.add(std::move(sum));
  }

  // Copies: device-local (read + write) everywhere; host<->device from pageable and pinned memory on GPUs.
  struct CopyKind {
    std::string name;
    bool to_device, from_device, pinned;
  };
  std::vector<CopyKind> kinds = {{"d2d", true, true, false}};
  if (gpu) {
    kinds.push_back({"h2d_pageable", true, false, false});
    kinds.push_back({"h2d_pinned", true, false, true});
    kinds.push_back({"d2h_pageable", false, true, false});
    kinds.push_back({"d2h_pinned", false, true, true});
  }
  for (const auto& kind : kinds) {
    for (const auto mib : kCopyMiB) {
      OpCase c = base_case("copy", device, DType::kFp32, {{"kind", kind.name}, {"mib", std::to_string(mib)}}, false);
      const std::int64_t floats = mib * kMiB / 4;
      const bool local = kind.to_device && kind.from_device;
      c.bytes = static_cast<double>(mib * kMiB) * (local ? 2.0 : 1.0);
      c.bandwidth_roof = local;
      c.core = mib == kCoreCopyMiB;
      c.make_inputs = [=] {
        const auto host = torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(kind.pinned && gpu);
        const auto src_options = kind.from_device ? options_for(device, DType::kFp32) : host;
        const auto dst_options = kind.to_device ? options_for(device, DType::kFp32) : host;
        return OpInputs{{torch::empty({floats}, dst_options), torch::randn({floats}, src_options)}};
      };
      const bool non_blocking = kind.pinned;
      c.run = [non_blocking](OpInputs& in) { return in.tensors[0].copy_(in.tensors[1], non_blocking); };
      planner.add(std::move(c));
    }
  }

  // Moving a whole model with module->to(device), as the tutorials' .cuda() / .to(device) do.
  if (gpu) {
    for (const std::string model : {"net", "resnet18"}) {
      OpCase c = base_case("model_to", device, DType::kFp32, {{"model", model}}, false);
      c.bandwidth_roof = false;
      double bytes = 0.0;
      auto module = std::make_shared<models::Classifier>(models::make_model(model));
      for (const auto& p : (*module)->parameters()) bytes += static_cast<double>(p.numel() * p.element_size());
      for (const auto& b : (*module)->buffers()) bytes += static_cast<double>(b.numel() * b.element_size());
      c.bytes = bytes;
      c.core = model == "resnet18";
      c.make_inputs = [] { return OpInputs{}; };
      c.reset = [module](OpInputs&) { (*module)->to(torch::kCPU); };
      c.run = [module, device](OpInputs&) {
        (*module)->to(device);
        return (*module)->parameters().front();
      };
      planner.add(std::move(c));
    }
  }
}

}  // namespace

std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFp32: return "fp32";
    case DType::kTf32: return "tf32";
    case DType::kBf16: return "bf16";
    case DType::kFp16: return "fp16";
  }
  return "?";
}

torch::ScalarType storage_type(DType dtype) {
  switch (dtype) {
    case DType::kBf16: return torch::kBFloat16;
    case DType::kFp16: return torch::kFloat16;
    default: return torch::kFloat32;
  }
}

std::vector<DType> supported_dtypes(const torch::Device& device) {
  if (device.is_cuda()) return {DType::kFp32, DType::kTf32, DType::kBf16, DType::kFp16};
  return {DType::kFp32};
}

std::vector<DType> roof_dtypes(const torch::Device& device) {
  if (device.is_cuda()) return supported_dtypes(device);
  return {DType::kFp32, DType::kBf16};
}

std::string OpCase::name() const {
  std::string text = fmt::format("op/{}/{}", op, device_string(device));
  for (const auto& [k, v] : params) text += "/" + k + ":" + v;
  return text;
}

std::vector<std::string> op_names() {
  // The ops plan_device has a case of, on the CPU or a GPU, in the order it plans them: a name cannot be known
  // without a case, nor a case go unnamed.
  static const std::vector<std::string> names = [] {
    OpSelection every;
    every.all = true;
    std::vector<OpCase> plan;
    Planner planner{every, plan};
    for (const auto& device : {torch::Device(torch::kCPU), torch::Device(torch::kCUDA, 0)})
      plan_device(device, planner);
    std::vector<std::string> out;
    for (const auto& c : plan) {
      if (std::find(out.begin(), out.end(), c.op) == out.end()) out.push_back(c.op);
    }
    return out;
  }();
  return names;
}

std::vector<OpCase> plan_ops(const std::vector<torch::Device>& devices, const OpSelection& selection) {
  const auto known = op_names();
  for (const auto& op : selection.ops) {
    if (std::find(known.begin(), known.end(), op) == known.end()) {
      throw InputError(fmt::format("unknown op '{}' (known: {})", op, fmt::join(known, ", ")));
    }
  }
  for (const auto b : selection.batch_sizes) {
    if (b < 1) throw InputError(fmt::format("op batch size must be >= 1, got {}", b));
  }
  std::vector<OpCase> plan;
  Planner planner{selection, plan};
  for (const auto& device : devices) plan_device(device, planner);
  // An op asked for by name that times nothing here is said, not silently dropped (model_to on the CPU, an op
  // with no case in the core set).
  for (const auto& op : selection.ops) {
    const auto has_op = [&](const std::vector<OpCase>& cases) {
      return std::any_of(cases.begin(), cases.end(), [&](const OpCase& c) { return c.op == op; });
    };
    if (has_op(plan)) continue;
    // The hint only where the full sweep would time it (model_to on the CPU has no case in any set).
    OpSelection every = selection;
    every.all = true;
    std::vector<OpCase> full;
    Planner full_planner{every, full};
    for (const auto& device : devices) plan_device(device, full_planner);
    std::vector<std::string> names;
    for (const auto& d : devices) names.push_back(device_string(d));
    throw InputError(fmt::format("op '{}' has no benchmark on {}{}", op, fmt::join(names, ", "),
                                 !selection.all && has_op(full) ? " in the core set (--op-set all times more)" : ""));
  }
  return plan;
}

MathModeGuard::MathModeGuard(DType dtype) {
  const bool tf32 = dtype == DType::kTf32;
  at::globalContext().setAllowTF32CuBLAS(tf32);
  at::globalContext().setAllowTF32CuDNN(tf32);
}

MathModeGuard::~MathModeGuard() {
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(true);
}

}  // namespace torchprobe::ops
