#include "diagnostics/explanations.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include "diagnostics/classify_patterns.h"

namespace torchprobe::diagnostics::detail {

// ---- Explanations -----------------------------------------------------------------------------------------------

std::string join(const std::vector<std::string>& items, const std::string& last_sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? last_sep : ", ") + items[i];
  return out;
}

namespace {

void explain_gpu_memory(Diagnosis& d) {
  const std::string& a = d.allocator;
  std::string what;
  if (contains(a, "caching allocator")) {
    what =
        "The GPU's caching allocator could not find the bytes requested. The batch (activations grow with it), the "
        "model with its gradients and optimizer state, and cached-but-free blocks all count. Activations grow "
        "linearly with the batch: torchprobe-bench's peak_mem_mib at two batch sizes gives the slope.";
  } else if (contains(a, "cuBLAS")) {
    what =
        "cuBLAS could not allocate its handle or workspace: it asks the GPU for memory outside LibTorch's allocator "
        "(at the first matmul on each thread and device), and the GPU was full, typically because LibTorch's cache "
        "or another process already held it.";
  } else if (contains(a, "cuDNN")) {
    what =
        "cuDNN could not get memory for its handle or a convolution's workspace, outside LibTorch's allocator; the "
        "GPU was full, typically because LibTorch's cache or another process already held it.";
  } else if (contains(a, "NCCL")) {
    what =
        "NCCL could not allocate its communication buffers on the GPU (a CUDA call inside NCCL ran out of memory): "
        "the model, activations and LibTorch's cache left too little for them.";
  } else if (contains(a, "CUDA runtime")) {
    what =
        "A CUDA call outside LibTorch's caching allocator ran out of device memory: often the CUDA context itself "
        "cannot be created because another process already holds the GPU's memory, or a library allocated past "
        "what was free.";
  } else if (contains(a, "every batch size")) {
    what =
        "The automatic batch-size finder (Accelerate's find_executable_batch_size) halved the batch after each "
        "out-of-memory error until nothing was left: even small batches did not fit, so something else holds the "
        "memory (another process, a leak, a model too large for this GPU).";
  } else {
    what = "The accelerator's allocator (" + a + ") could not find the bytes requested.";
  }
  if (d.confidence == "likely") {
    d.explanation =
        "Likely out of memory: this status code says a library failed to initialise or run, and when it "
        "appears at a growing batch or on a busy GPU the cause is almost always exhausted memory. " +
        what +
        " To confirm: watch `nvidia-smi` while it runs, retry with half the batch, and run with "
        "CUDA_LAUNCH_BLOCKING=1 to see the call that really failed. Other causes: a CUDA/cuDNN install that does "
        "not match the driver, or an earlier asynchronous error.";
  } else {
    d.explanation = what;
  }
  d.fix_cpp =
      "// smaller batch; hand cached blocks back before the library needs memory of its own:\n"
      "c10::cuda::CUDACachingAllocator::emptyCache();\n"
      "// fragmentation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; another process: CUDA_VISIBLE_DEVICES";
  d.fix_python =
      "batch_size //= 2\n"
      "torch.cuda.empty_cache()\n"
      "# fragmentation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; another process: nvidia-smi, "
      "CUDA_VISIBLE_DEVICES";
  if (contains(a, "cuDNN")) {
    d.fix_cpp += "\nat::globalContext().setBenchmarkCuDNN(false);   // autotuning tries workspace-hungry algorithms";
    d.fix_python += "\ntorch.backends.cudnn.benchmark = False  # autotuning tries workspace-hungry algorithms";
  }
  if (contains(a, "NCCL")) {
    d.fix_cpp += "\n// NCCL_BUFFSIZE=1048576 shrinks NCCL's buffers";
    d.fix_python += "\n# NCCL_BUFFSIZE=1048576 shrinks NCCL's buffers";
  }
}

void explain_cpu_memory(Diagnosis& d) {
  const std::string& a = d.allocator;
  if (contains(a, "OpenBLAS")) {
    d.explanation =
        "OpenBLAS could not allocate its work buffers for a matrix multiply and ended the process (it does "
        "not raise an error LibTorch could catch): the host or the process's memory limit had no room left.";
  } else if (contains(a, "Python")) {
    d.explanation =
        "Python (NumPy) could not allocate an array: the host or the process's memory limit had no room "
        "for it. Arrays built from a whole dataset are the usual cause.";
  } else if (contains(a, "shared memory")) {
    d.explanation =
        "The DataLoader's worker processes hand each batch to the training process through shared memory "
        "(/dev/shm), and it ran out: a container gets 64 MB of it unless told otherwise, and every worker holds "
        "batches in flight.";
  } else if (contains(a, "operator new")) {
    d.explanation =
        "A C++ allocation failed (std::bad_alloc): likely out of host memory, or a size so large it cannot be "
        "allocated (a corrupt length read from a file, a negative size cast to unsigned).";
  } else {
    d.explanation =
        "The host could not allocate the memory asked for (the process hit RAM, swap or an address-space "
        "limit). Batch size and any tensor built from the whole dataset are the usual causes.";
  }
  if (d.confidence == "likely") d.explanation = "Likely out of memory. " + d.explanation;
  if (contains(a, "shared memory")) {
    d.fix_cpp = "// docker run --shm-size=8g (or --ipc=host); fewer DataLoader workers or smaller batches";
    d.fix_python =
        "# docker run --shm-size=8g (or --ipc=host); or fewer workers:\n"
        "loader = DataLoader(dataset, batch_size=batch_size, num_workers=2)\n"
        "torch.multiprocessing.set_sharing_strategy('file_system')  # files instead of /dev/shm";
    return;
  }
  d.fix_cpp = "// smaller batch; stream the data in batches instead of one giant tensor; check ulimit -v";
  d.fix_python = "batch_size //= 2  # and load data lazily (a Dataset + DataLoader) instead of all at once";
}

}  // namespace

/// A device mismatch whose wording says where it comes from, with the fix for that case.
struct Situation {
  const RE2& pattern;
  const char* explanation;
  const char* fix_cpp;
  const char* fix_python;
};

const std::vector<Situation>& mismatch_situations() {
  static const std::vector<Situation> situations = {
      {compile(R"((?i)indices should be either on cpu or on the same device)"),
       "Here the tensor of indices (x[idx], index_select, gather) is on another device than the tensor it indexes: "
       "move the indices to the indexed tensor's device (the CPU also works, at the price of a copy).",
       "auto picked = x.index({idx.to(x.device())});           // the indices on the indexed tensor's device\n"
       "auto rows = torch::index_select(x, 0, idx.to(x.device()));",
       "picked = x[idx.to(x.device)]   # the indices on the indexed tensor's device\n"
       "rows = torch.index_select(x, 0, idx.to(x.device))"},
      {compile(R"(\bweight\b.*\b(?:nll_loss|cross_entropy))"),
       "Here the loss function was built with class weights that stayed on the CPU (CrossEntropyLoss(weight=w) and "
       "NLLLoss keep w as a buffer): the loss module must be moved to the device of the logits too.",
       "auto loss_fn = torch::nn::CrossEntropyLoss(\n"
       "    torch::nn::CrossEntropyLossOptions().weight(class_weights.to(device)));   // the weights on the device\n"
       "auto loss = loss_fn(model->forward(x.to(device)), y.to(device));",
       "loss_fn = nn.CrossEntropyLoss(weight=class_weights).to(device)   # moves the class weights\n"
       "loss = loss_fn(model(x.to(device)), y.to(device))"},
      {compile(R"(module must have its parameters and buffers on device)"),
       "Here nn.DataParallel found a parameter or buffer that is not on device_ids[0]: it replicates the model from "
       "that device to the others at every forward, so the model must be moved there before it is wrapped.",
       "model->to(torch::Device(torch::kCUDA, 0));               // devices[0], before replicating\n"
       "auto y = torch::nn::parallel::data_parallel(model, x.to(torch::Device(torch::kCUDA, 0)), devices);",
       "model = model.to('cuda:0')                                # device_ids[0], before wrapping\n"
       "model = torch.nn.DataParallel(model, device_ids=[0, 1])\n"
       "y = model(x.to('cuda:0'))"},
      {compile(R"(DistributedDataParallel device_ids and output_device arguments only work with)"),
       "Here DistributedDataParallel was given device_ids while the model's parameters were on the CPU or spread over "
       "several devices: with device_ids=[i] the whole model must be on cuda:i before it is wrapped (a CPU or "
       "multi-device model takes device_ids=None).",
       "torch::Device device(torch::kCUDA, local_rank);\n"
       "model->to(device);   // every parameter on this rank's GPU before the first collective\n"
       "// then all-reduce the gradients over c10d::ProcessGroupNCCL (LibTorch has no DDP wrapper)",
       "torch.cuda.set_device(local_rank)\n"
       "model = model.to(local_rank)                               # before wrapping\n"
       "model = DDP(model, device_ids=[local_rank], output_device=local_rank)"},
      {compile(R"(Input and hidden tensors are not at the same device)"),
       "Here the RNN's initial hidden state (h0, and c0 for an LSTM) is on another device than its input: it was "
       "created without a device, so on the CPU.",
       "auto h0 = torch::zeros({num_layers, batch, hidden_size}, x.options());   // the input's device\n"
       "auto [out, h] = gru->forward(x, h0);",
       "h0 = torch.zeros(num_layers, batch, hidden_size, device=x.device)   # the input's device\n"
       "out, h = rnn(x, h0)"},
      {compile(R"(tensor to numpy)"),
       "Here a GPU tensor was converted to NumPy: NumPy arrays live in host memory, so the tensor must be copied to "
       "the CPU first (and detached when it requires grad).",
       "auto host = t.detach().to(torch::kCPU);   // host.data_ptr<float>() now points to host memory",
       "array = t.detach().cpu().numpy()"},
      {compile(R"(device type for generator)"),
       "Here a torch.Generator made for one device was given to an op that runs on another (randperm, a sampler, "
       "dropout): a generator must be on the device of the tensor it fills.",
       "auto idx = torch::randperm(n, at::globalContext().defaultGenerator(device),\n"
       "                           torch::TensorOptions().dtype(torch::kLong).device(device));",
       "g = torch.Generator(device=device)\n"
       "idx = torch.randperm(n, generator=g, device=device)"},
      {compile(R"('lengths' argument should be a 1D CPU int64 tensor)"),
       "Here pack_padded_sequence got its lengths on the GPU: since PyTorch 1.7 the lengths must be a CPU int64 tensor "
       "(they decide the packing on the host), whatever the device of the sequences.",
       "auto packed = torch::nn::utils::rnn::pack_padded_sequence(x, lengths.to(torch::kCPU, torch::kLong),\n"
       "                                                          /*batch_first=*/true, /*enforce_sorted=*/false);",
       "packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)"},
      {compile(R"(Tensors must be CUDA and dense|No backend type associated with device type)"),
       "Here a collective (all_reduce, broadcast, send) got a tensor on a device its process group has no backend for: "
       "NCCL moves only CUDA tensors, so a CPU tensor (a metric computed on the CPU, torch.tensor(x) made without a "
       "device) must be moved to this rank's GPU first, or sent over a Gloo group.",
       "std::vector<torch::Tensor> tensors{metric.to(torch::Device(torch::kCUDA, local_rank))};   // CUDA tensors "
       "only\n"
       "process_group->allreduce(tensors)->wait();",
       "t = torch.tensor(metric, device=f'cuda:{local_rank}')   # NCCL moves CUDA tensors only\n"
       "dist.all_reduce(t)\n"
       "# CPU tensors: a Gloo group, cpu_group = dist.new_group(backend='gloo'); dist.all_reduce(cpu_t, "
       "group=cpu_group)"},
      {compile(R"(Placeholder storage has not been allocated on MPS)"),
       "Here, on Apple's MPS backend, an op got a tensor still on the CPU: the model or an input was not moved to "
       "'mps'.",
       "torch::Device device(torch::kMPS);\nmodel->to(device);\nauto y = model->forward(x.to(device));",
       "device = torch.device('mps')\nmodel.to(device)\ny = model(x.to(device))"},
  };
  return situations;
}

void explain_mismatch(Diagnosis& d) {
  const std::string devices = d.devices.empty() ? "more than one device" : join(d.devices, " and ");
  const std::string op = d.op.empty() ? "An op" : "The op `" + d.op + "`";
  d.explanation = fmt::format(
      "{} received tensors on different devices ({}). PyTorch never moves data between devices on its own: every "
      "tensor one op uses (the inputs, the targets, the module's parameters and buffers, a loss's class weights, any "
      "tensor created inside forward()) must be on the same device.",
      op, devices);
  if (d.argument) {
    static const RE2& placed = compile(R"(but got (\w+) is on (\S+?), different from other tensors on (\S+?)[ .!(])");
    std::string name, on, others;
    if (RE2::PartialMatch(d.message, placed, &name, &on, &others)) {
      d.explanation += fmt::format(" `{}` is on {} while the other tensors are on {}.", name, on, others);
    } else {
      d.explanation += fmt::format(" The check failed on the argument `{}`.", *d.argument);
    }
  }
  for (const auto& s : mismatch_situations()) {
    if (RE2::PartialMatch(d.message, s.pattern)) {
      d.explanation += std::string(" ") + s.explanation;
      d.fix_cpp = s.fix_cpp;
      d.fix_python = s.fix_python;
      return;
    }
  }
  d.fix_cpp =
      "torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);\n"
      "model->to(device);                                          // parameters and buffers\n"
      "for (auto& batch : *loader) {\n"
      "  auto x = batch.data.to(device, /*non_blocking=*/true);    // the inputs\n"
      "  auto y = batch.target.to(device, /*non_blocking=*/true);  // and the targets\n"
      "  auto mask = torch::ones({x.size(0)}, x.options());        // new tensors: on the input's device\n"
      "  auto loss = torch::nll_loss(model->forward(x), y);\n"
      "}\n"
      "// in a module: register_buffer(\"name\", t) so that module->to(device) moves it;\n"
      "// torchprobe::diagnostics::audit_devices(*model, {x}, device) names any tensor left behind";
  d.fix_python =
      "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
      "model.to(device)                      # parameters and buffers\n"
      "loss_fn.to(device)                    # a loss built with class weights holds a tensor too\n"
      "for x, y in loader:\n"
      "    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)   # inputs and targets\n"
      "    mask = torch.ones(x.size(0), device=x.device)   # new tensors: on the input's device\n"
      "    loss = loss_fn(model(x), y)\n"
      "# in a module: self.register_buffer('name', t) so that model.to(device) moves it";
}

void explain_not_a_tensor(Diagnosis& d) {
  static const RE2& object = compile(R"('([\w.]+)' object has no attribute '(\w+)')");
  std::string type, method;
  RE2::PartialMatch(d.message, object, &type, &method);
  std::string what;
  if (type == "collections.OrderedDict") {
    what =
        "an OrderedDict: almost always a state_dict, i.e. torch.load returned a checkpoint's weights, not a model. "
        "Build the model, load_state_dict the weights into it, then move the model.";
  } else if (type == "dict") {
    what =
        "a dict: a dict batch (a tokenizer's or a collate function's output) whose values must each be moved, or a "
        "checkpoint (a state_dict is a dict of tensors, not a model) to load into a model with load_state_dict.";
  } else if (type == "numpy.ndarray") {
    what =
        "a NumPy array: arrays live in host memory and have no device; make a tensor of it first "
        "(torch.from_numpy), then move that.";
  } else if (type == "NoneType") {
    what =
        "None: the value was never set (a function or a Dataset's __getitem__ returned nothing, an optional input "
        "was left out). Find where the tensor should have been made.";
  } else if (type == "str") {
    what = "a string (a path or a name where a tensor was expected).";
  } else {
    what = "a " + (type.empty() ? std::string("container") : "`" + type + "`") +
           ": typically the batch a DataLoader returned ([images, labels]) or a list of tensors. A container has no "
           "device: move each tensor in it, or stack them into one tensor first, as the classic training loop does.";
  }
  d.explanation = fmt::format(
      "`.{}()` was called on a Python object that is not a tensor; only tensors and modules have a "
      "device. Here it is {}",
      method.empty() ? "cuda" : method, what);
  d.fix_cpp =
      "for (auto& batch : *loader) {                        // a torch::data::Example: move its tensors\n"
      "  auto images = batch.data.to(device), labels = batch.target.to(device);\n"
      "}\n"
      "auto x = torch::stack(tensors).to(device);           // a std::vector<torch::Tensor>: stack it first,\n"
      "for (auto& t : tensors) t = t.to(device);            // or move each";
  d.fix_python =
      "for images, labels in loader:                        # the classic loop: unpack the batch, move each tensor\n"
      "    images, labels = images.to(device), labels.to(device)\n"
      "x = torch.stack(tensors).to(device)                  # a list of same-shaped tensors: stack it first\n"
      "batch = {k: v.to(device) for k, v in batch.items()}  # a dict batch: each value\n"
      "x = torch.from_numpy(array).to(device)               # a NumPy array: a tensor first\n"
      "model = Net(); model.load_state_dict(torch.load('model.pt', map_location=device)); model.to(device)  # a "
      "state_dict";
}

void explain_state_dict(Diagnosis& d) {
  // torch.compile's OptimizedModule holds the model as `_orig_mod`; DataParallel and DDP hold it as `module`.
  static const RE2& compiled = compile(R"((?:^|[\s"'.])_orig_mod\.)");
  static const RE2& prefixed_checkpoint = compile(
      R"((?i)unexpected key(?:\(s\)|s)? in state_dict:? ["'][\w.]*(?:module|_orig_mod)\.|unexpected key "[\w.]*module\.)");
  const bool by_compile = RE2::PartialMatch(d.message, compiled);
  d.explanation =
      by_compile
          ? "The checkpoint's keys and the model's differ by the `_orig_mod.` prefix that torch.compile puts before "
            "every parameter name: a checkpoint saved from a compiled model (compiled.state_dict() instead of "
            "compiled._orig_mod.state_dict()) is loaded into a plain model, or a plain checkpoint into a compiled one. "
            "The weights are all there; only their names differ."
          : "The checkpoint's keys and the model's differ by the `module.` prefix that nn.DataParallel and "
            "DistributedDataParallel put before every parameter name: a checkpoint saved from a wrapped model "
            "(model.state_dict() instead of model.module.state_dict()) is loaded into a plain model, or a plain "
            "checkpoint into a wrapped one. The weights are all there; only their names differ.";
  d.explanation += RE2::PartialMatch(d.message, prefixed_checkpoint)
                       ? " Here the checkpoint has the prefix and the model does not: strip it when loading."
                   : by_compile ? " Here the model is compiled and the checkpoint is not: load into "
                                  "model._orig_mod (or add the prefix)."
                                : " Here the model is wrapped and the checkpoint is not: load into model.module "
                                  "(or add the prefix).";
  d.fix_cpp =
      "// a Python state_dict read in C++ (torch::pickle_load): match its names without DataParallel's prefix\n"
      "std::ifstream file(\"model.pt\", std::ios::binary);\n"
      "std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());\n"
      "auto weights = torch::pickle_load(bytes).toGenericDict();\n"
      "torch::NoGradGuard no_grad;\n"
      "auto params = model->named_parameters(), buffers = model->named_buffers();\n"
      "for (const auto& item : weights) {\n"
      "  std::string name = item.key().toStringRef();\n"
      "  if (name.rfind(\"module.\", 0) == 0) name = name.substr(7);   // strip the prefix (or add it: \"module.\" + "
      "name)\n"
      "  if (auto* p = params.find(name)) p->copy_(item.value().toTensor());\n"
      "  else if (auto* b = buffers.find(name)) b->copy_(item.value().toTensor());\n"
      "}";
  d.fix_python =
      "state = torch.load('model.pt', map_location='cpu')\n"
      "state = state.get('state_dict', state)          # some checkpoints wrap it\n"
      "# saved from DataParallel/DDP (or torch.compile: '_orig_mod.'), loaded into a plain model: strip the prefix\n"
      "state = {(k[len('module.'):] if k.startswith('module.') else k): v for k, v in state.items()}\n"
      "model.load_state_dict(state)\n"
      "# a plain checkpoint into a wrapped model: model.module.load_state_dict(state) (compiled: model._orig_mod)\n"
      "# and save without the prefix from now on: torch.save(model.module.state_dict(), 'model.pt')";
}

namespace {

void explain_invalid_device(Diagnosis& d) {
  const std::string device = d.devices.empty() ? "" : "`" + d.devices.front() + "`";
  if (contains(d.message, "device string")) {
    d.explanation = fmt::format(
        "{} is not a device string PyTorch accepts: a device type (cpu, cuda, mps, ...) optionally followed by "
        "`:index`, such as `cuda:0`.",
        device.empty() ? "The string" : device);
    if (contains(d.message, "None")) {
      d.explanation += " Here the index was None: the variable it came from (a local rank, a GPU id) was never set.";
    }
  } else if (contains(d.message, "must be cuda device")) {
    d.explanation =
        "A CUDA-only call (torch.cuda.set_device, torch.cuda.device, .cuda(device)) was given a device that "
        "is not a CUDA one, such as 'cpu' or 'mps'.";
  } else {
    d.explanation = fmt::format(
        "The device {} does not exist on this host. CUDA numbers the visible GPUs from 0 to the device count minus 1 "
        "(CUDA_VISIBLE_DEVICES renumbers them): use an index below the device count. `torchprobe devices` lists what "
        "this host has.",
        device.empty() ? "index" : device);
    if (contains(d.message, "deserialize")) {
      d.explanation +=
          " Here a checkpoint saved on another host's GPU is loaded: map its tensors to a device this host has.";
    }
  }
  d.fix_cpp =
      "const int count = static_cast<int>(torch::cuda::device_count());\n"
      "const int index = wanted < count ? wanted : 0;              // an index below the device count\n"
      "torch::Device device = count > 0 ? torch::Device(torch::kCUDA, index) : torch::Device(torch::kCPU);\n"
      "torch::load(model, \"model.pt\", device);                    // a checkpoint from another GPU: onto this one";
  d.fix_python =
      "count = torch.cuda.device_count()\n"
      "index = wanted if wanted < count else 0                       # an index below the device count\n"
      "device = torch.device(f'cuda:{index}' if count else 'cpu')\n"
      "state = torch.load('model.pt', map_location=device)           # a checkpoint from another GPU: onto this one";
}

void explain_cuda_unavailable(Diagnosis& d) {
  d.explanation =
      "CUDA was asked for, but this process cannot use it: the PyTorch build has no CUDA (a CPU-only build such as "
      "Debian's libtorch or a +cpu wheel), no NVIDIA driver is loaded, or no GPU is visible (CUDA_VISIBLE_DEVICES). "
      "Run `torchprobe devices` to see which.";
  if (contains(d.message, "deserialize") || contains(d.message, "is_available() is False")) {
    d.explanation +=
        " Here a checkpoint saved from GPU tensors is being loaded where there is no GPU: load it onto a "
        "device you have.";
  }
  if (contains(d.message, "ATen_cuda") || contains(d.message, "DeviceGuardImpl for cuda") ||
      contains(d.message, "not linked with support for cuda")) {
    d.explanation +=
        " Here a C++ program runs without LibTorch's CUDA library: the linker dropped libtorch_cuda.so "
        "because no symbol of it is used directly. Link with -Wl,--no-as-needed, as Torch's CMake "
        "package (${TORCH_LIBRARIES}) does.";
  }
  d.fix_cpp =
      "auto device = torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);\n"
      "torch::load(model, \"model.pt\", device);   // checkpoints: load onto a device this host has";
  d.fix_python =
      "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
      "state = torch.load('model.pt', map_location=device)";
}

void explain_meta(Diagnosis& d) {
  d.explanation =
      "A tensor on the meta device took part in real compute or was read. Meta tensors have shapes and dtypes but no "
      "data (a model built on device 'meta', an init-empty-weights loader, an unfilled parameter): they must be "
      "materialised on a real device and given values before use. Note that ops on meta tensors alone do not fail; "
      "they return meta results silently.";
  d.fix_cpp =
      "// a meta parameter has no data to move: build the module on a real device, then load its weights\n"
      "Net model;\n"
      "model->to(device);\n"
      "torch::load(model, \"weights.pt\", device);";
  d.fix_python =
      "model = model.to_empty(device=device)   # real (uninitialised) storage on the device\n"
      "model.load_state_dict(torch.load('weights.pt', map_location=device))";
}

}  // namespace

void explain(Diagnosis& d) {
  switch (d.kind) {
    case ErrorKind::kDeviceMismatch:
      explain_mismatch(d);
      if (d.confidence == "likely") {
        d.explanation =
            "Likely a device mismatch: the message is not one of PyTorch's or a library's checks, but it "
            "names two devices for the tensors of one operation. " +
            d.explanation;
      }
      break;
    case ErrorKind::kCudaUnavailable:
      explain_cuda_unavailable(d);
      break;
    case ErrorKind::kInvalidDevice:
      explain_invalid_device(d);
      break;
    case ErrorKind::kMetaTensor:
      explain_meta(d);
      break;
    case ErrorKind::kOutOfMemoryGpu:
      explain_gpu_memory(d);
      break;
    case ErrorKind::kOutOfMemoryCpu:
      explain_cpu_memory(d);
      break;
    case ErrorKind::kNotATensor:
      explain_not_a_tensor(d);
      break;
    case ErrorKind::kStateDictPrefix:
      explain_state_dict(d);
      break;
    case ErrorKind::kUnknown:
      d.explanation = "Not a device or memory error torchprobe recognises.";
      break;
  }
}

}  // namespace torchprobe::diagnostics::detail
