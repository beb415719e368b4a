#include "diagnostics/classify_rules.h"

#include <algorithm>

#include "diagnostics/classify_facts.h"
#include "torchprobe/strings.h"

namespace torchprobe::diagnostics::detail {

// ---- The rules --------------------------------------------------------------------------------------------

namespace {

// Takes the place of a pattern RE2 rejected in a set, so that the set's indices stay the table's (the tests check
// that none is rejected).
constexpr const char* kMatchesNothing = R"([^\x00-\xff])";

}  // namespace

// Checked in order: memory first (OOM texts name GPUs), messages that say memory ran out before status codes that
// only usually mean it; then Python objects that are not tensors, checkpoint keys, missing CUDA, bad ordinals, meta,
// mismatches; last, memory running out in loose words. Each wording is one PyTorch version's (0.3 to 2.x), one
// library's, or the structure many share (tests/fixtures/explain/README.md: measured on messages never tuned on);
// none is one user's.
RuleTable::RuleTable() {
  const auto add = [this](ErrorKind k, const std::string& p, const char* confidence = "", const char* allocator = "",
                          const char* unless = nullptr) -> Rule& {
    // Status codes and allocator words are matched in any case: people retype and lower-case them.
    const std::string pattern = confidence[0] ? "(?i)" + p : p;
    rules.push_back(
        Rule{k, &compile(pattern), confidence, allocator, unless ? &compile(std::string("(?i)") + unless) : nullptr});
    // A "likely" verdict is a guess: it yields to another cause the text names.
    rules.back().yields_to_another_cause = std::string(confidence) == "likely";
    if (set.Add(pattern, nullptr) < 0) set.Add(kMatchesNothing, nullptr);
    return rules.back();
  };
  const auto gpu = ErrorKind::kOutOfMemoryGpu;
  const auto cpu = ErrorKind::kOutOfMemoryCpu;
  const auto mismatch = ErrorKind::kDeviceMismatch;
  add(gpu, R"(MPS backend out of memory)", "certain", "MPS allocator");
  add(gpu, R"(XPU out of memory)", "certain", "XPU allocator");
  add(gpu, R"(HIP out of memory|hipErrorOutOfMemory)", "certain", "LibTorch HIP caching allocator");
  // Any other back-end's allocator in the same words: "NPU out of memory", "MUSA out of memory", "MLU out of memory".
  add(gpu, R"(\b(?:NPU|MLU|MUSA|HPU|GCU|IPU|XLA|TPU|DirectML|Vulkan|Metal|GPU) out of memory)", "certain",
      "the accelerator's allocator");
  add(gpu, R"(CUDA out of (the )?memory|(cuda|torch)\.OutOfMemoryError|OutOfMemoryError: CUDA)", "certain",
      "LibTorch CUDA caching allocator");
  // The caching allocator's 2.x sentence for an allocation over the allowed memory ("Allocation on device 0 would
  // exceed allowed memory. (out of memory)"), which ComfyUI cuts to its first three words.
  add(gpu, R"(\bAllocation on device\b)", "certain", "LibTorch CUDA caching allocator");
  // The 1.x numbers pasted without the first words; not XPU's 4 GB block limit, which prints the same tail.
  add(gpu, R"(Tried to allocate [0-9.]+ ?[KMGT]i?B \(GPU \d+;)", "certain", "LibTorch CUDA caching allocator",
      R"(can NOT allocate memory block with size larger than)");
  add(gpu, R"(CUBLAS_STATUS_ALLOC_FAILED)", "certain", "cuBLAS (handle or workspace)");
  add(gpu, R"(CUDNN_STATUS_ALLOC_FAILED)", "certain", "cuDNN (handle or workspace)");
  add(gpu, R"(Cuda failure( \d+)? '?out of memory|NCCL.*out of memory)", "certain", "NCCL (its CUDA buffers)");
  // A CUDA call that failed, in any library's words, with the runtime's "out of memory": "CUDA error 2 at
  // ggml-cuda.cu:7949: out of memory", "CUDA failed with error out of memory".
  add(gpu, R"(\bCUDA (?:error|failed|failure|call failed)\b[^\n]{0,100}?\bout of memory)", "certain",
      "CUDA runtime (context or driver allocation)");
  // RAPIDS' memory manager (cuDF, cuML, beside PyTorch) throws std::bad_alloc for a failed GPU allocation:
  // "std::bad_alloc: out_of_memory: CUDA error at: .../cuda_memory_resource.hpp".
  add(gpu, R"(\bout_of_memory:? ?CUDA error\b)", "certain", "RAPIDS Memory Manager (a GPU allocation)");
  // Vulkan's and Level Zero's status codes say it too: "VkResult: ERROR_OUT_OF_DEVICE_MEMORY".
  add(gpu,
      R"(not enough (?:GPU |video |device |VRAM |graphics |dedicated )+memory|out of (?:GPU|video|device) memory|)"
      // "A VRAM out-of-memory error has occurred" (chaiNNer).
      R"(\b(?:VRAM|GPU|video|device)[- ]out[- ]of[- ]memory\b|)"
      R"(\w*OUT_OF_DEVICE_MEMORY\b|\w*OutOfDeviceMemory\b)",
      "certain", "the GPU's memory");
  add(gpu,
      R"(CUDA error: ?out of memory|cuda runtime error \(2\) ?: ?out of memory|error=2 : out of memory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation)",
      "certain", "CUDA runtime (context or driver allocation)");
  // Also by its place alone, where a paste cut the words: c10's check that the allocation returned memory.
  add(cpu,
      R"(DefaultCPUAllocator: (can't allocate memory|not enough memory)|enforce fail at [^\]\n]*\balloc_cpu\.cpp:\d+\] data\b)",
      "certain", "LibTorch CPU allocator");
  add(cpu, R"(OpenBLAS: malloc failed in)", "certain", "OpenBLAS (its work buffers)");
  // TH's CPU allocator before c10's (0.x to 1.x): "$ Torch: not enough memory: you tried to allocate 3GB. Buy new RAM!
  // at ..\aten\src\TH\THGeneral.cpp:201", the host's memory whatever else the line says.
  add(cpu, R"(\bBuy new RAM\b|\bTorch: not enough memory: you tried to allocate\b)", "certain",
      "LibTorch CPU allocator");
  // A notebook host's own notice: "Your notebook tried to allocate more memory than is available. It has restarted."
  add(cpu, R"(\btried to allocate more memory than (?:is )?available\b)", "certain", "the notebook host's memory");
  // Thrust's and CUB's scratch allocation on the GPU, often re-raised as a Python MemoryError ("MemoryError:
  // std::bad_alloc: temporary_buffer::allocate: get_temporary_buffer failed").
  add(gpu, R"(\bget_temporary_buffer failed\b)", "likely", "Thrust (its temporary buffer)");
  // The driver API's allocation on the GPU, often re-raised as a Python MemoryError (PyCUDA's
  // "pycuda._driver.MemoryError: cuMemAlloc failed: out of memory").
  add(gpu, R"(\bcuMem(?:Alloc|Create)\w*\b[^\n]{0,40}?\b(?:failed|out of memory)\b)", "certain",
      "CUDA driver (cuMemAlloc)");
  // Python's MemoryError (its type alone is the whole message), NumPy's.
  // NumPy before 1.17 gave no size: "Unable to allocate array with shape (11490542,) and data type float64".
  add(cpu, R"(\bMemoryError\b|_ArrayMemoryError\b|Unable to allocate (?:[0-9.]+ ?[KMGTP]?i?B for (?:an )?)?array\b)",
      "certain", "Python / NumPy", R"(has no attribute 'OutOfMemoryError')");
  add(cpu, R"(Cannot allocate memory)", "certain", "the operating system (ENOMEM)");
  // The host's memory named as RAM, often as a guess about a process that died ("killed by your OS due to running out
  // of RAM. ... out of RAM is likely the problem").
  add(cpu,
      R"(\b(?:ran|runs|running|run) out of (?:system |host |CPU )?RAM\b|\bout of (?:system |host |CPU )?RAM is likely\b)",
      "likely", "the host's memory (RAM)");
  // Vulkan's "vk::Device::createFenceUnique: ErrorOutOfHostMemory" (a renderer beside PyTorch), as its device twin.
  add(cpu, R"(\w*OUT_OF_HOST_MEMORY\b|\w*OutOfHostMemory\b)", "certain", "the host's memory (a driver's allocation)");
  // Slurm's cgroup killed the job for its memory: "Detected 1 oom-kill event(s) in StepId=...", "Some of your
  // processes may have been killed by the cgroup out-of-memory handler".
  add(cpu, R"(\boom[-_]kill events?\b|\bcgroup out-of-memory handler\b)", "certain",
      "the host's memory (the job's cgroup limit)");
  // The kernel's OOM killer in its own words: "Memory cgroup out of memory: Killed process 629 (onmt_train)",
  // "Out of memory: Killed process ...", "python invoked oom-killer".
  add(cpu, R"(\bMemory cgroup out of memory\b|\bOut of memory: Kill(?:ed)? process\b|\binvoked oom-killer\b)",
      "certain", "the host's memory (the kernel's OOM killer)");
  // Ray's memory monitor kills workers when the node's RAM runs low: "Task was killed due to the node running low on
  // memory", "Workers (tasks / actors) killed due to memory pressure (OOM)".
  add(cpu, R"(\bnode running low on memory\b|\bkilled due to memory pressure\b|\bRayOutOfMemoryError\b)", "certain",
      "the host's memory (Ray's memory monitor)");
  add(gpu, R"(CUBLAS_STATUS_NOT_INITIALIZED)", "likely", "cuBLAS (handle creation)");
  add(gpu,
      R"(CUDNN_STATUS_(NOT_INITIALIZED|INTERNAL_ERROR|MAPPING_ERROR|EXECUTION_FAILED)|Unable to find a valid cuDNN algorithm|)"
      R"(no valid convolution algorithms? available)",
      "likely", "cuDNN (handle or workspace)");
  add(gpu, R"(No executable batch size found)", "likely", "the GPU (every batch size tried ran out of memory)");
  // cudaMalloc that failed, or the runtime's error 2 (cudaErrorMemoryAllocation) by its number: an extension's check.
  add(gpu,
      R"(\bCuda error:? ?2\b|(?i:\bcuda runtime error \(2\))|THCudaCheck FAIL[^\n]*\berror=2\b|(?i:\bcuda\b[^\n]{0,40}?\bfailed with error 2\b)|\bcudaMalloc\w*\b[^\n]{0,60}?\b(?:fail\w*|error)\b|\b(?:fail\w*|error)\b[^\n]{0,60}?\bcudaMalloc)",
      "likely", "CUDA runtime (cudaMalloc)", R"(out of memory)");
  add(cpu, R"(posix_memalign\(.*12 vs 0)", "likely", "LibTorch CPU allocator");
  // DataLoader workers that ran out of the host's shared memory (/dev/shm; a container's default 64 MB).
  add(cpu, R"(\bout of shared memory\b|\binsufficient shared memory\b)", "likely", "shared memory (/dev/shm)");
  add(cpu, R"(std::bad_alloc)", "likely", "C++ operator new");
  // Windows' commit limit, often met loading CUDA's DLLs: "[WinError 1455] The paging file is too small for this
  // operation to complete".
  add(cpu, R"(\bpaging file is too small\b|\bWinError 1455\b)", "likely", "Windows' commit limit (RAM plus page file)");
  // Python: a device method called on something that is not a tensor (the batch a DataLoader returned is a list).
  // "object" is sometimes left out when the message is retyped ("'tuple' has no attribute 'to'"); a module without the
  // attribute is a broken install, not a batch of the wrong type.
  add(ErrorKind::kNotATensor,
      R"((?:'|‘|’|`)[\w.]+(?:'|‘|’|`) (?:object )?has no attribute (?:'|‘|’|`)(?:cuda|cpu|to|device)\b|)"
      // Retyped without its quotes: "'dict object has no attribute to'".
      R"(\b(?:list|tuple|dict|NoneType|str|int|float|ndarray) object has no attribute '?(?:cuda|cpu|to|device)\b)",
      "", "",
      // A tensor of PyTorch before 0.4, which had no .to() ("'torch.FloatTensor' object has no attribute 'to'"), is a
      // tensor: an old version, not a batch of the wrong type.
      R"(\bmodule '[\w.]+' has no attribute|'torch\.[\w.]*Tensor' (?:object )?has no attribute)");
  // load_state_dict's report (0.4 to 2.x), or 0.3's KeyError: only when the keys differ by "module.".
  add(ErrorKind::kStateDictPrefix,
      R"((?i)(?:missing|unexpected) key(?:\(s\)|s)? in state_dict|unexpected key "[^"]*" in state_dict|)"
      // A converter's own report of one key: torchtune's "Found unexpected key: "_orig_mod.tok_embeddings.weight"".
      R"((?i)\b(?:missing|unexpected) key(?:\(s\)|s)?: ["'])")
      .holds = keys_differ_by_module_prefix;
  add(ErrorKind::kCudaUnavailable,
      // PyTorch's own sentences; "Torch not compiled with CUDA enabled", "No CUDA GPUs are available", "CUDA is not
      // available" and the like are the structures below.
      R"(DeviceGuardImpl for cuda is not available|Found no NVIDIA driver|)"
      R"(CUDA driver version is insufficient|torch\.(?:cuda|xpu|mps|npu|backends\.mps)\.is_available\(\):?(?: is| returned| returns| ?==)? False|deserialize object on a CUDA device|)"
      R"(device_count\(\) is 0\b|with arguments from the 'CUDA' backend|torch\.cuda\.\w*Tensor is not enabled|)"
      R"(CUDA unknown error\b|Setting the available devices to be zero|)"
      // The container runtime's check of the driver a CUDA image needs ("nvidia-container-cli: requirement error:
      // unsatisfied condition: cuda>=12.8, please update your driver"); ZeroGPU's host process, which has no GPU.
      R"(nvidia-container-cli: (?:requirement|initiali[sz]ation) error|CUDA must not be initiali[sz]ed in the main process|)"
      // The structure, in any back-end's words: no accelerator of a kind is available/detected/found; a build
      // without a back-end; a driver that does not initialise or load; a device count of zero.
      R"((?i:\bno (?:[\w-]+ ){0,2}?(?:GPUs?|devices?|accelerators?|platforms?)\b[^.\n]{0,30}?\b(?:available|detected|found|discovered|present)\b)|)"
      R"((?i:\b(?:couldn't|could not|cannot|can't|failed to|unable to) init(?:iali[sz]e)? (?:the )?(?:CUDA|GPU|HIP|ROCm|NVML|XPU|NPU|MPS)\b)|)"
      R"((?i:\brequires an? (?:GPU|CUDA device|CUDA GPU)\b)|)"
      R"((?i:(?:\bnot|n't|\bnever)(?: be| been)? (?:compiled|linked|buil[dt]|installed) with (?:support for )?(?:GPU|CUDA|ROCm|HIP|MPS|XPU)\b)|)"
      R"((?i:\b(?:compiled|linked|buil[dt]|installed) without (?:any )?(?:GPU|CUDA|ROCm|HIP|MPS|XPU)\b)|)"
      // "GPUs requested but none are available", "No supported gpu backend found", "the accelerator is not available",
      // "But your machine only has: []".
      R"((?i:\b(?:GPU|CUDA|device|accelerator)s? (?:were |was |are |is )?requested,? but (?:none|no \w+) (?:is|are) (?:available|found)\b)|)"
      R"((?i:\bno (?:supported |usable |available |compatible |valid )?(?:GPU|CUDA|ROCm|HIP|XPU|MPS|accelerator)s? (?:backends?|devices?|platforms?) (?:is |are |was |were )?(?:available|detected|found)\b)|)"
      R"((?i:\b(?:GPU|CUDA|ROCm|HIP|MPS|XPU|TPU|NPU|accelerator)s? (?:is |are )?not available\b)|)"
      // A driver too old, missing or unreachable; the runtime failing to count devices; a container without GPUs;
      // an extension whose CUDA kernels were not built (mmcv's "implementation for device cuda:0 not found").
      R"((?i:\b(?:NVIDIA|CUDA|GPU) driver (?:on your system )?(?:is too old|was not (?:detected|found|loaded)|is not (?:detected|found|loaded|installed|running)))|)"
      R"((?i:couldn't communicate with the NVIDIA driver)|(?i:error from (?:cuda|hip)GetDeviceCount)|)"
      R"((?i:could not select device driver[^\n]*capabilities: \[\[gpu\]\])|)"
      R"((?i:\bimplementation for (?:device )?(?:cuda|hip)\S* not found)|(?i:without (?:the )?ATen_cuda library)|)"
      R"((?i:CUDA-capable devices?(?: ?\(s\))? (?:is/are|are|is) busy or unavailable)|)"
      R"((?i:\bmachine only has:? \[\])|(?i:\bCUDA setup failed\b)|)"
      // Lightning's "`MPSAccelerator` can not run on your system since the accelerator is not available".
      R"((?i:\b\w*Accelerator`? can ?not run on your system\b)|)"
      R"((?i:\b(?:CUDA|HIP|XPU) driver initiali[sz]ation failed)|libcuda\.so(?:\.\d+)?: cannot open shared object file|)"
      R"((?i:\bis not able to use (?:the )?GPU\b)|(?i:device_count\(\) *(?:=|==) *0\b)|(?i:\b(?:MPS|XPU) backend is (?:not available|supported on))|)"
      // Other stacks' words for the same: JAX's and XLA's back-ends, ONNX Runtime's providers, a back-end that does
      // not start, a driver that does not initialise or does not match its library (NVML), the CUDA runtime or driver
      // library missing (not cuDNN's or a package's own: the GPU works then), a device count of zero.
      R"((?i:\bunknown backend:? '?(?:gpu|cuda|rocm|tpu)\b)|(?i:\bno platforms that are instances of (?:gpu|cuda|rocm|tpu)\b)|)"
      R"((?i:\bunable to initiali[sz]e backend '?(?:gpu|cuda|rocm|tpu|metal)\b)|)"
      R"((?i:\b(?:CUDA|GPU|TPU|NPU|XPU|HIP|ROCm|accelerator) (?:initiali[sz]ation|init) failed\b)|)"
      R"((?i:\bfailed to create (?:CUDA|TensorRT|ROCM|MIGraphX|DML)ExecutionProvider\b)|(?i:\bGPU dependencies are not loaded\b)|)"
      R"((?i:\bfailed to infer device type\b)|(?i:\bfailed to initiali[sz]e NVML\b)|(?i:\bdriver/library version mismatch\b)|)"
      R"((?i:\bdriver (?:is |was )?not (?:initiali[sz]ed|loaded)\b)|\bCUDA_ERROR_NO_DEVICE\b|\b(?:cuda|hip)ErrorNoDevice\b|)"
      R"(\b\w*_DEVICE_NOT_(?:FOUND|AVAILABLE)\b|(?i:\b(?:an? )?(?:CUDA[- ]capable )?(?:GPU|CUDA device)s? (?:is|are) (?:required|needed)\b)|)"
      R"((?i:\b(?:CUDA|GPU|XPU|HIP|NPU|MPS) device count is (?:zero|0)\b)|)"
      R"(\blib(?:cudart|nvidia-ml)\.so(?:\.\d+)*: cannot open shared object file|)"
      // "GPU not detected", "could not find any CUDA device", "CUDA unavailable", "a CPU-only build of PyTorch".
      R"((?i:\b(?:GPUs?|CUDA(?: devices?)?|CUDA-capable devices?|accelerators?) (?:was |were |is |are )?(?:not|never) (?:found|detected|recogni[sz]ed|visible|usable)\b)|)"
      R"((?i:\b(?:can ?not|can't|could not|couldn't|failed to|unable to) (?:find|detect|locate|see|use) (?:a |any |an |the )?(?:usable |available |compatible |supported )?(?:[\w-]+ )?(?:GPUs?|CUDA devices?|accelerators?)\b)|)"
      // A build, a library or a machine without the back-end, in more words: "this PyTorch installation does not
      // support CUDA", "Device API cuda is not enabled. Please install the cuda version of dgl", "has no usable HIP
      // accelerator", "the CUDA video backend is not available", "CUDA is not installed properly".
      R"((?i:\b(?:installation|install|build|wheel|binary|version) (?:of [\w.-]+ )?(?:does not|doesn't|do not) support (?:GPU|CUDA|ROCm|HIP|MPS|XPU)\b)|)"
      R"((?i:\b(?:device API|backend|support) (?:for )?'?(?:cuda|gpu|rocm|hip)'? (?:is )?not enabled\b)|(?i:\binstall the (?:cuda|gpu|rocm) (?:version|build)\b)|)"
      R"((?i:\bno (?:usable|working|functional|compatible|supported|available) (?:[\w-]+ )?(?:GPUs?|accelerators?|CUDA devices?)\b)|)"
      R"((?i:\b(?:GPU|CUDA|ROCm|HIP|MPS|XPU|NPU)(?: \w+)? (?:backend|support|acceleration|runtime) (?:is |are )?(?:not available|unavailable)\b)|)"
      R"((?i:\b(?:CUDA|GPU|ROCm|HIP)(?: \w+)? (?:is |was )?not (?:linked|installed|set up|configured|detected) (?:properly|correctly)\b)|)"
      // torch.accelerator's "Cannot access accelerator device when none is available", Triton's "0 active drivers"
      // and "libcuda.so cannot found", the runtime's codes for a driver that cannot serve it: a stub library in a
      // container, a fabric manager not yet up, forward compatibility on a GPU that does not have it.
      R"((?i:\b(?:accelerator|GPU|CUDA|device)s?\b[^\n.]{0,30}\bnone (?:is|are) available\b)|\b0 active drivers\b|)"
      // cpp_extension's "No CUDA runtime is found", "There are not available cuda devices", a failed
      // `assert torch.cuda.is_available()` (the frame's source line, kept for it: classify_text.cpp).
      R"((?i:\bno (?:CUDA|ROCm|HIP|GPU) runtime\b[^.\n]{0,20}?\b(?:available|detected|found|installed)\b)|)"
      R"((?i:\bnot (?:any )?available (?:CUDA |GPU |NVIDIA )?(?:devices?|GPUs?)\b)|)"
      R"(^assert\s+(?:torch\.)?(?:cuda|xpu|mps|npu|backends\.mps)\.is_available\(\)|)"
      R"((?i:\blibcuda\.so\S*:? (?:cannot|can't|could not|couldn't) (?:be )?(?:found|find|open|load))|)"
      R"((?i:\bdriver is a stub library\b|cudaErrorStubLibrary|\bsystem not yet initiali[sz]ed\b|cudaErrorSystemNotReady)|)"
      // A driver older than the build needs, by its numbers ("CUDA driver version is 11020, expected at least 11040");
      // a CUDA context that could not be made ("Failed to create a PhysX CUDA Context Manager").
      R"((?i:\bdriver version is [\d.]+,? (?:but )?expected (?:at least|>=?) ?[\d.]+)|)"
      // A device that cannot be taken (Habana's "synStatus=8 [Device not found] Device acquire failed", also when
      // another process holds it); a runtime's check that found no device ("error condition !(num_devices > 0)"); none
      // left free ("requested to find 1 devices but only 0 are currently available"); the driver library missing at
      // link time ("cannot find -lcuda", as Triton's and inductor's builds say it); Ultralytics' "Invalid CUDA
      // '--device 0' requested", where one index fails only when CUDA is unavailable.
      R"((?i:\bdevice acquire failed\b)|!\((?:num_devices|device_count|num_gpus|n_gpus?)\s*>\s*0\)|)"
      R"((?i:\bbut only 0 (?:[\w-]+ )?(?:are|is|were|was) (?:currently )?(?:available|visible|found|detected)\b)|)"
      R"(\bcannot find -lcuda\b|Invalid CUDA '--device \d' requested|)"
      // A range of valid devices that ends below its start ("valid devices are 0 - -1"): a device count of zero.
      R"((?i:\bvalid (?:devices?|device ids?|GPUs?|ordinals?) (?:are|is|range is) 0 ?(?:-|to|\.\.) ?-1\b)|)"
      // The runtime's codes by number, as THC printed them (a paste cut before the words): 3 a driver that did not
      // initialise ("cuda runtime error (3) : initialization error"), 35 a driver too old, 38 and 100 no CUDA-capable
      // device.
      R"(THCudaCheck FAIL[^\n]*\berror=(?:3|35|38|100)\b|\bcuda runtime error \((?:3|35|38|100)\)|)"
      // "CUDA compatible device could not be found", "GPU could not be detected"; a back-end's own module that does not
      // import ("Failed to import torch.dml. Please ensure you have installed the PyTorch package for DirectML").
      R"((?i:\b(?:GPUs?|CUDA(?:[- ](?:compatible|capable|enabled))? (?:devices?|GPUs?)|accelerators?)\b[^.\n]{0,20}?\b(?:could not|couldn't|cannot|can't) be (?:found|detected)\b)|)"
      R"((?i:\b(?:failed to|could not|couldn't|cannot|unable to) import (?:torch[._](?:dml|directml|xpu|npu|musa|mlu)|torch_(?:directml|npu|musa|mlu))\b)|)"
      // ROCm's "Failed to get device count" at import; a feature that needs the back-end this build or host lacks
      // ("Pinned memory requires CUDA", the sentence ending there); the CUDA runtime a kernel library could not load
      // ("Library cudart is not initialized").
      R"((?i:\bfailed to get (?:the )?(?:[\w-]+ )?device count\b)|(?i:\brequires (?:CUDA|ROCm|HIP|a GPU)\s*(?:$|[.!;,)]))|)"
      R"((?i:\blibrary (?:cudart|libcudart|cuda|nvrtc)\S* is not initiali[sz]ed\b)|)"
      // A CPU-only build asked for CUDA through its internals ("module 'torch._C' has no attribute '_cuda_setDevice'",
      // Python 2's "'module' object has no attribute '_cuda_setDevice'");
      // a driver whose version cannot be read (AWS Neuron's "Unable to determine Neuron Driver version"); a machine
      // with no GPU in so many words ("This machine has no cuda devices!").
      R"(module 'torch\._C' has no attribute '_cuda_\w+'|'module' object has no attribute '_cuda_\w+'|)"
      // The same for an extension built without its CUDA kernels ("module 'torchmcubes_module' has no attribute
      // 'mcubes_cuda'. Did you mean: 'mcubes_cpu'?"): a module that lacks its CUDA entry point.
      R"(\bmodule '[\w.]+' has no attribute '(?:\w+_cuda\w*|_?cuda_\w+)'|)"
      // A program that looked for an accelerator and found none it could use: "No hardware acceleration could be
      // configured, running in CPU mode"; a renderer's "No device could be created", "Skipping NVIDIA GPU due CUDA
      // being in bad state".
      R"((?i:\bno (?:hardware |GPU |CUDA )acceleration\b[^.\n]{0,20}?\b(?:configured|available|found|detected|enabled|supported)\b)|)"
      R"((?i:\bno (?:[\w-]+ )?device could be (?:created|initiali[sz]ed|opened)\b)|(?i:\bCUDA (?:is |being )?in (?:a )?bad state\b)|)"
      R"((?i:\b(?:unable to|cannot|can't|could not|couldn't|failed to) (?:determine|find|get|read) (?:the )?(?:[\w-]+ )?driver version\b)|)"
      R"((?i:\b(?:has|have) no (?:usable |available |visible )?(?:(?:CUDA|NVIDIA|ROCm|HIP|XPU|MPS)(?:[- ]capable)? (?:GPUs?|devices?|cards?)|GPUs?)\b)|)"
      R"((?i:\b(?:failed to|could not|couldn't|unable to|cannot) create (?:a |the )?(?:[\w-]+ )?CUDA context\b)|)"
      R"((?i:\bforward compatibility was attempted on non supported HW\b|cudaErrorCompatNotSupportedOnDevice)|)"
      R"((?i:\b(?:CUDA|GPUs?|accelerators?) (?:is |are )?unavailable\b)|(?i:\bCPU[- ]only (?:build|version|install\w*|wheel|PyTorch|torch)\b)|)"
      R"((?i:\b(?:cudart64_\w+|nvcuda)\.dll\b[^\n]{0,60}?\bnot (?:found|be found|loaded)))");
  add(ErrorKind::kInvalidDevice,
      R"(invalid device ordinal|Invalid device string|device type at start of device string|torch\.cuda\.device_count\(\) is \d+|)"
      R"(Device index must (?:not be negative|be -1 or non-negative)|Invalid device id|Invalid device, must be|Expected a cuda device, but got|)"
      // c10's parser given "" (torch.device(""), an unset environment variable).
      R"(Device string must not be empty|)"
      // The parser's list of device types, where a paste cut it before "device type at start of device string"
      // ("Expected one of cpu, cuda, ipu, xpu, ..."); transformers' check of a device_map string ("the value needs to
      // be a device name (e.g. cpu, cuda:0)"); torch.load given a location it cannot place ("don't know how to restore
      // data location of torch.HalfStorage (tagged with 0)").
      R"(Expected one of cpu, cuda, |\bneeds? to be a device name\b|don't know how to restore data location of|)"
      R"(device >= 0 && device < num_gpus|CUDA device ordinal|\b(?:cuda|hip)ErrorInvalidDevice\b|)"
      // A numbered device that is not there: "The requested device for vllm (cuda:1) is not available".
      R"((?i:\b(?:cuda|xpu|npu|hip|mps|gpu):\d+\)? (?:is not available|does not exist|is invalid)\b)|)"
      // More devices asked for than there are; a visible-devices variable naming one that is not there.
      R"((?i:\bnot enough (?:CUDA |GPU |XPU |NPU )?(?:GPUs|devices)\b)|(?i:\binvalid \w*_VISIBLE_(?:DEVICES|MODULES)\b)|)"
      R"(Expected a (?:torch\.device|\w+ device) with a specified index|)"
      // The runtime's invalid-device code by number alone (10 before CUDA 10.1, 101 since), as THC printed it.
      R"(THCudaCheck FAIL[^\n]*\berror=(?:10|101)\b|\bcuda runtime error \((?:10|101)\)|)"
      // Lightning: "You requested gpu: [1] But your machine only has: [0]" (an empty list is no GPU at all).
      R"((?i:\bmachine only has:? \[[^\]\n]+\])|)"
      // A library's own check of a device string: "Invalid device: cuda:0", "Please input valid device: 'cpu', ...".
      R"((?i:\binvalid device(?: (?:string|name|id|index))?\s*[:=]\s*\S)|(?i:\b(?:input|pass|give|provide|specify) (?:a )?valid device\b)|)"
      // Ultralytics' check of its --device argument given a word that names no device ("--device gpu").
      R"(Invalid CUDA '--device [^'\d][^']*' requested)");
  add(ErrorKind::kMetaTensor,
      R"(meta tensor|with Meta tensors|from the 'Meta' backend|on device meta|\bmeta\b and|and meta\b|device='meta'|on meta\b|)"
      R"((?i:\b(?:is|was) on the meta device\b)|(?i:\bmeta device context\b)|set_default_device\('meta'\))");
  // One-sided wordings: any of them is a mismatch (names from ATen's checks, THC's, cuDNN's, the RNNs', MPS's, DDP's).
  add(mismatch,
      R"(Expected all tensors to be on the same (?:common )?device|must be on the current device|but expected (?:it |them )?to be on|)"
      // The structure, in any library's words: two devices that differ, one tensor on the wrong one.
      R"((?i:\b(?:different|mismatch(?:ed|ing)?) devices?\b|\bdevices? (?:do(?:es)? not|don't|doesn't) match\b)|)"
      R"((?i:\bexpected \w+ to be on (?:cuda|cpu|gpu|mps|xpu|npu)\b)|(?i:\b(?:be|are|is) on the same (?:GPU|CUDA|XPU|NPU|MPS)(?: device)?\b)|)"
      R"((?i:\bon a device(?: type)? different (?:than|from)\b)|)"
      // A check that only device (CUDA/XLA) tensors pass, failed: "index must be CUDA tensor", "Expected u.is_cuda() to
      // be true", "Input tensor is not an XLA tensor", Triton's "(cpu tensor?)", FSDP's "single device modules".
      R"((?i:\bmust be (?:a |an )?(?:CUDA|GPU|XLA|MPS|XPU) tensors?\b|\bis not an? (?:CUDA|GPU|XLA|MPS|XPU) tensor\b)|)"
      // "q must be on CUDA", "all tensors must be on devices[0]", "should be on the same device".
      R"((?i:\bmust be on (?:the )?(?:CUDA|GPU|XLA|MPS|XPU)\b)|must be on devices\[0\]|)"
      R"((?i:\b(?:should|need to|needs to|have to|has to) be on the same device\b)|)"
      R"((?i:\bmust be an? (?:CPU|CUDA|GPU) tensor\b[^\n]{0,40}?\b(?:currently|is|are) on (?:device )?\w+)|)"
      R"(\.is_cuda\(\) (?:to be true|INTERNAL ASSERT FAILED)|cannot be accessed from Triton \(cpu tensor\?\)|)"
      R"(only supports single[- ]device modules|Unhandled FakeTensor Device Propagation|)"
      // FSDP's CPU offloading, a module moved off the CPU: "... parameter CPU offloading enabled has parameters on
      // cuda:0".
      R"(CPU offloading enabled has parameters on|)"
      R"((?i:\bconvert (?:a |the )?(?:cuda|mps|gpu|xpu)\S* (?:device type )?tensor to (?:numpy|R\b|host))|)"
      R"(should be either on cpu or on the same device|Expected a '\w+' device type for generator|are on different devices|)"
      R"(different from other tensors on|must be on the same device|to be on (?:the )?same device|to have the same device|)"
      R"(should have (?:the )?same device|not at the same device|on (?:a )?different devices?\b|located on different GPUs|)"
      R"(\(checkGPU\)|module must have its parameters and buffers on device|Placeholder storage has not been allocated on MPS|)"
      R"(DistributedDataParallel device_ids and output_device arguments only work with|device type tensor to numpy|)"
      R"(convert CUDA tensor to numpy|legacy constructor expects device type|is not on the expected device|)"
      R"(Tensors must be CUDA and dense|No backend type associated with device type|)"
      // torch_xla's bridge given a tensor that is not on the XLA device ("aten_xla_bridge.cpp:110 : Check failed:
      // xtensor").
      R"(\bCheck failed: xtensor\b|)"
      // JAX's jit: arguments placed on different devices or platforms. A check on a tensor's device type that failed
      // (an out-of-tree back-end's "tensor.device().type() == at::DeviceType::PrivateUse1 INTERNAL ASSERT FAILED").
      R"((?i:\bincompatible devices\b)|device\(\)\.type\(\) == (?:at::|c10::)?DeviceType::\w+ INTERNAL ASSERT FAILED)");
  // Two-sided wordings: a mismatch only when the sides name different devices (else it is the dtype that differs).
  for (const char* p :
       {R"(Expected object of ((?:backend|device type) \w+) but got ((?:backend|device type) \w+))",
        R"(Expected object of type (\S+) but found type (\S+))",
        // 0.x's "expected type torch.cuda.FloatTensor but got torch.FloatTensor".
        R"((?i:expected) type (torch\.[\w.]*Tensor) but got (torch\.[\w.]*Tensor))",
        // The legacy constructors given another device's tensor: "legacy constructor for device type: cpu was passed
        // device type: cuda, but device type must be: cpu".
        R"(legacy constructor for device type: (\w+) was passed device type: (\w+))",
        R"((?i:expected) ((?:device|backend) \S+?)(?: and dtype \w+)? but got ((?:(?:device|backend) )?[\w:]+))",
        R"(Input type (\(.*?\)) and weight type (\(.*?\)))",
        R"(invalid gradient at index \d+ - expected (?:type|device) (.+?) but got (.+))",
        R"(Expected tensor to have (\w+ (?:Backend|DeviceType)), but got tensor with (\w+ (?:Backend|DeviceType)))",
        R"('lengths' argument should be a (1D CPU int64 tensor), but got (\d+D \S+ \w+ tensor))",
        // torch.compile's fake-tensor propagation and MPS/XPU checks: two devices named in one sentence.
        R"(found two different devices (\w+(?::\d+)?), (\w+(?::\d+)?))",
        // Generators: "Expected a 'cuda' device type for generator but found 'cpu'" in any case; "Cannot generate a
        // cpu tensor from a generator of type cuda"; DeepSpeed's "param is on cuda:0 and must be 'cpu'".
        R"((?i)expected a '(\w+)' device type for generator but found '(\w+)')",
        R"(Cannot generate a (\w+) tensor from a generator of type (\w+))",
        R"(\bis on (\w+(?::\d+)?) and must be '?(\w+(?::\d+)?))",
        R"(is on (\w+(?::\d+)?),? but (?:is )?expected (?:to be )?on (\w+(?::\d+)?))",
        // The legacy constructors' "expected CPU (got CUDA)" (torch.Tensor(a_cuda_tensor)).
        R"(\bexpected (\w+) \(got (\w+)\))"}) {
    add(mismatch, p).two_sides = true;
  }
  // The structure of a mismatch in any words: one sentence naming two different devices, a tensor-like thing and a
  // contrast ("the mask is on cpu while x is on cuda:0"). After every library's own wording; not a back-end's notice
  // that it falls back to, or offloads to, another device on purpose.
  // Words no check prints can be read otherwise: "likely", and quiet next to another cause (as the memory codes).
  add(mismatch, R"((?i)\b(?:cuda|cpu|mps|xpu|npu|gpu|hpu|xla)\b[^\n]*\b(?:cuda|cpu|mps|xpu|npu|gpu|hpu|xla)\b)",
      "likely", "", R"(\bfall(?:s|ing)? ?back\b|\boffload)")
      .holds = names_two_devices;
  // Last, so that any rule above that names the error wins over a framework's loose words around it ("cuda OOM,
  // exception CUDA error: invalid device ordinal").
  // Memory ran out, said in words no rule above knows ("out of memory error, increasing steps and trying again",
  // "Got an OOM, unloading all loaded models", "OOMed", XLA's "Ran out of memory in memory space"): a GPU's, as it
  // almost always is in PyTorch; not advice about what may cause one.
  add(gpu, R"(\bout of memory\b|\bran out of memory\b|\bOOM(?:ed)?\b|OutOfMemory)", "certain",
      "the GPU (the message does not say which allocator)",
      R"((?:may|might|could|can|will|to avoid|avoid|prevent\w*|reduce|risk of|in case of|if you (?:get|see|encounter|run into))\s+(?:\w+\s+){0,3}?(?:an? )?(?:OOM|out of memory|CUDA out of memory)|has no attribute '\w*OutOfMemory|)"
      // A list of what may have caused a crash, memory among them ("There are some potential root causes. (1) ... OOM
      // killer", "This could be because of several reasons").
      R"(\b(?:potential|possible) (?:root )?(?:causes?|reasons?)\b|\bcould be because\b|\bseveral reasons\b)")
      .yields_to_another_cause = true;
  // A budget or pool that ran dry, without saying it was the device's memory: a server's KV cache, an allocator's
  // status code (SYCL/Level Zero, XLA), an allocation of a size that failed.
  add(gpu,
      R"(\b(?:No available memory|Not enough memory|Insufficient memory|Memory allocation failed)\b|)"
      // "Failed to allocate memory", PhysX's "PxgCudaDeviceMemoryAllocator fail to allocate memory 100663296 bytes",
      // nnU-Net's "Prediction on device was unsuccessful, probably due to a lack of memory".
      R"((?i:\bfail(?:s|ed)? to allocate (?:\d+ bytes of )?memory\b)|(?i:\black of (?:GPU |device |video )?memory\b)|)"
      R"(OUT_OF_RESOURCES|RESOURCE_EXHAUSTED|OUT_OF_DEVICE_MEMORY|)"
      // Habana's "MODULE:PT_DEVMEM Allocation failed for size::268435456 (256)MB".
      R"((?i:\ballocation failed for (?:size\b|\d+ ?(?:bytes|[KMG]i?B)\b))|)"
      // AWS Neuron's runtime "status=4 message="Allocation Failure""; TensorRT's "Requested amount of GPU memory
      // (4294967296 bytes) could not be allocated".
      R"((?i:\ballocation failure\b)|(?i:\b(?:GPU|device) memory\b[^\n]{0,40}?\bcould not be allocated\b)|)"
      R"(\b(?:larger|more) than the available (?:[\w-]+ ){0,3}memory\b|)"
      // A start-up check that the free memory is below the share asked for (vLLM's gpu_memory_utilization).
      R"((?i:\b(?:free|available) (?:GPU |device )?memory\b[^\n]{0,60}?\bis (?:less|smaller|lower) than\b))",
      "likely", "the GPU (a memory pool or budget; the message does not say which)");
  set.Compile();
}

const RuleTable& rule_table() {
  static const RuleTable table;
  return table;
}

ContextPatterns::ContextPatterns() {
  // A status code that usually means memory ran out says so only when nothing else in the text names another
  // cause: a failed device-side assertion or a bad memory access poisons every later CUDA call, and cuDNN reports
  // version and layout problems with the same codes.
  // Not 2.x's hint under every CUDA error ("Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.").
  add(R"(device-side assert\b|Assertion `.*` failed|`[^`\n]+` failed|illegal memory access|unspecified launch failure|misaligned address|)"
      R"(cuDNN version|non-contiguous input|CUBLAS_STATUS_EXECUTION_FAILED|CUDA driver version is insufficient)");
  // A line that reports an error: an exception's type, LibTorch's what(), a library's failure report, a log level.
  add(R"(error|Error|ERROR|exception|Exception|FAIL|fail|what\(\)|terminate called|WARN)");
  const auto& rules = rule_table().rules;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (!rules[i].unless) continue;
    unless_rule.push_back(i);
    add(rules[i].unless->pattern());
  }
  set.Compile();
}

void ContextPatterns::add(const std::string& pattern) {
  each.push_back(&compile(pattern));
  if (set.Add(pattern, nullptr) < 0) set.Add(kMatchesNothing, nullptr);
}

const ContextPatterns& context_patterns() {
  static const ContextPatterns patterns;
  return patterns;
}

// RE2::Set::Match, or each pattern alone should the set's DFA run out of memory (never silently nothing).
std::vector<int> set_matches(const RE2::Set& set, const std::vector<const RE2*>& each, const StringPiece& text) {
  std::vector<int> hits;
  RE2::Set::ErrorInfo error;
  if (!set.Match(text, &hits, &error) && error.kind != RE2::Set::kNoError) {
    hits.clear();
    for (std::size_t i = 0; i < each.size(); ++i) {
      if (RE2::PartialMatch(text, *each[i])) hits.push_back(static_cast<int>(i));
    }
  }
  std::sort(hits.begin(), hits.end());
  return hits;
}

std::vector<std::string> devices_on_two_sides(const Rule& rule, const std::string& text) {
  std::string expected, found;
  if (!rule.two_sides || !RE2::PartialMatch(text, *rule.pattern, &expected, &found)) return {};
  // A side may be a bare word in any case ("expected a 'CUDA' device type for generator but found 'CPU'").
  const auto devices = [](const std::string& side) {
    auto d = devices_in(side);
    return d.empty() ? devices_in(to_lower(side)) : d;
  };
  auto a = devices(expected);
  const auto b = devices(found);
  if (a.empty() || b.empty() || a == b) return {};
  for (const auto& d : b) {
    if (std::find(a.begin(), a.end(), d) == a.end()) a.push_back(d);
  }
  return a;
}

// The rules whose pattern matches `text` and whose side conditions hold there, in table order.
std::vector<std::size_t> matching_rules(const std::string& text) {
  const RuleTable& table = rule_table();
  static const std::vector<const RE2*> each = [&table] {
    std::vector<const RE2*> v;
    for (const auto& r : table.rules) v.push_back(r.pattern);
    return v;
  }();
  std::vector<std::size_t> out;
  for (const int i : set_matches(table.set, each, text)) {
    const Rule& rule = table.rules[static_cast<std::size_t>(i)];
    if (rule.two_sides && devices_on_two_sides(rule, text).empty()) continue;
    if (rule.holds && !rule.holds(text)) continue;
    out.push_back(static_cast<std::size_t>(i));
  }
  return out;
}

}  // namespace torchprobe::diagnostics::detail
