#include "torchprobe/device_spec.h"
#include "torchprobe/inventory.h"
#include "torchprobe/run_context.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <ctime>
#include <regex>
#include <string>

#include "test_util.h"
#include "torchprobe/error.h"

using namespace torchprobe;

TEST(DeviceParsing, AllIsTheCpuPlusEveryGpu) {
  const auto none = parse_device_list("all", /*cuda_device_count=*/0);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_TRUE(none[0].is_cpu());
  const auto two = parse_device_list("all", 2);
  ASSERT_EQ(two.size(), 3u);
  EXPECT_EQ(device_string(two[1]), "cuda:0");
  EXPECT_EQ(device_string(two[2]), "cuda:1");
}

TEST(DeviceParsing, ListsKeepOrderDropDuplicatesAndExpandCuda) {
  const auto devices = parse_device_list("cuda:1, cpu,cuda,cpu", 2);
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(device_string(devices[0]), "cuda:1");
  EXPECT_EQ(device_string(devices[1]), "cpu");
  EXPECT_EQ(device_string(devices[2]), "cuda:0");
}

TEST(DeviceParsing, AbsentGpuNamesWhatTheHostHas) {
  EXPECT_THROW_WITH(parse_device_list("cuda:3", 1), InputError,
                    "device cuda:3 not found (this host has 1 CUDA device: cuda:0)");
  EXPECT_THROW_WITH(parse_device_list("cpu,cuda:2", 2), InputError,
                    "device cuda:2 not found (this host has 2 CUDA devices: cuda:0, cuda:1)");
  EXPECT_THROW_WITH(parse_device_list("cuda", 0), InputError, "device cuda not found (this host has no CUDA device");
}

TEST(DeviceParsing, CudaZeroOnThisHostWhenItHasNoGpu) {
  if (backend::cuda_device_count() > 0) GTEST_SKIP() << "this host has a CUDA device";
  EXPECT_THROW_WITH(parse_device("cuda:0"), InputError, "device cuda:0 not found (this host has no CUDA device");
  EXPECT_THROW_WITH(parse_device_list("cuda:0"), InputError, "device cuda:0 not found (this host has no CUDA device");
  if (!backend::cuda_compiled()) {
    EXPECT_THROW_WITH(parse_device("cuda"), InputError, "this LibTorch was built without CUDA support");
  }
}

TEST(DeviceParsing, MalformedStringsAreRejected) {
  for (const char* bad : {"tpu", "cuda:", "cuda:x", "cuda:-1", "CPU", "", "cpu,,cuda", "cuda:1:2"}) {
    SCOPED_TRACE(std::string("input: '") + bad + "'");
    EXPECT_THROW_WITH(parse_device_list(bad, 4), InputError, "invalid device");
  }
  EXPECT_THROW_WITH(parse_device("gpu0"), InputError, "invalid device 'gpu0' (expected one of cpu, cuda or cuda:N)");
  EXPECT_THROW_WITH(parse_device("all"), InputError, "invalid device 'all' (expected one of cpu, cuda or cuda:N)");
  EXPECT_THROW_WITH(parse_device_list("cpu,,cuda", 1), InputError, "invalid device 'cpu,,cuda' (expected cpu, cuda, cuda:N or all, comma-separated)");
}

TEST(DeviceParsing, SingleDeviceCudaMeansCudaZero) {
  EXPECT_TRUE(parse_device("cpu").is_cpu());
  if (backend::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this host";
  EXPECT_EQ(device_string(parse_device("cuda")), "cuda:0");
}

TEST(Inventory, DescribesTheCpuLibTorchAndBlas) {
  const Inventory inv = collect_inventory();
  EXPECT_FALSE(inv.libtorch_version.empty());
  EXPECT_GT(inv.cpu.logical_cores, 0);
  EXPECT_GT(inv.threads.intra_op, 0);
  EXPECT_FALSE(inv.threads.blas.vendor.empty());
  EXPECT_EQ(static_cast<int>(inv.gpus.size()), backend::cuda_device_count());
  const std::string json = inventory_json(inv);
  for (const char* key : {"\"libtorch_version\"", "\"torch_threads\"", "\"blas\"", "\"vendor\"", "\"cuda\"", "\"devices\"",
                          "\"intra_op\"", "\"inter_op\"", "\"blas_threading\"", "\"blas_threads\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key;
  }
  EXPECT_NE(inventory_text(inv).find("BLAS threading"), std::string::npos);
}

// Every figure of the inventory's JSON is its own field's: a hand-made inventory with a distinct value in each
// (no two counts alike, so a field written from its neighbour shows), read back key by key.
TEST(Inventory, EveryJsonFigureIsItsOwnFields) {
  Inventory inv;
  inv.torchprobe_version = "9.8.7";
  inv.libtorch_version = "2.11.0";
  inv.hostname = "fixture-host";
  inv.cuda_compiled = true;
  inv.cuda_driver_version = "13.0";
  inv.cuda_runtime_version = "12.9";
  inv.cudnn_usable = true;
  inv.cudnn_version = "91002";
  inv.cpu.model = "Fixture CPU";
  inv.cpu.vendor = "AuthenticAMD";
  inv.cpu.family = 25;
  inv.cpu.model_number = 17;
  inv.cpu.logical_cores = 13;
  inv.cpu.physical_cores = 7;
  inv.cpu.max_clock_mhz = 3123.0;
  inv.cpu.clock_source = "cpufreq cpuinfo_max_freq";
  inv.cpu.flags = {"avx2", "fma"};
  inv.cpu.vector_isa = "AVX2";
  inv.threads.intra_op = 3;
  inv.threads.inter_op = 5;
  inv.threads.cores = 11;
  inv.threads.blas.vendor = "OpenBLAS";
  inv.threads.blas.library_path = "/lib/libblas.so.3";
  inv.threads.blas.core_path = "/lib/libopenblas.so.0";
  inv.threads.blas.kernel = "Haswell";
  inv.threads.blas.threads = 1;
  inv.threads.blas.threading = BlasThreading::kOpenMP;
  inv.threads.blas_pinned = true;
  backend::CudaDeviceInfo gpu;
  gpu.index = 2;
  gpu.name = "Fixture GPU";
  gpu.cc_major = 9;
  gpu.cc_minor = 1;
  gpu.multiprocessors = 132;
  gpu.total_memory_bytes = 150000000000;
  gpu.l2_cache_bytes = 52428800;
  inv.gpus = {gpu};
  const auto j = nlohmann::json::parse(inventory_json(inv));
  EXPECT_EQ(j["torchprobe_version"], "9.8.7");
  EXPECT_EQ(j["libtorch_version"], "2.11.0");
  EXPECT_EQ(j["hostname"], "fixture-host");
  const auto& cpu = j["cpu"];
  EXPECT_EQ(cpu["model"], "Fixture CPU");
  EXPECT_EQ(cpu["vendor"], "AuthenticAMD");
  EXPECT_EQ(cpu["family"], 25);
  EXPECT_EQ(cpu["model_number"], 17);
  EXPECT_EQ(cpu["logical_cores"], 13);
  EXPECT_EQ(cpu["physical_cores"], 7);
  EXPECT_EQ(cpu["max_clock_mhz"], 3123.0);
  EXPECT_EQ(cpu["clock_source"], "cpufreq cpuinfo_max_freq");
  EXPECT_EQ(cpu["flags"], nlohmann::json::array({"avx2", "fma"}));
  EXPECT_EQ(cpu["torch_threads"], 3) << "LibTorch's intra-op threads, the ones that compute";
  EXPECT_EQ(cpu["vector_isa"], "AVX2");
  const auto& threads = j["threads"];
  EXPECT_EQ(threads["intra_op"], 3);
  EXPECT_EQ(threads["inter_op"], 5);
  EXPECT_EQ(threads["cores"], 11);
  EXPECT_EQ(threads["blas_threading"], blas_threading_name(BlasThreading::kOpenMP));
  EXPECT_EQ(threads["blas_threads"], 1);
  EXPECT_EQ(threads["blas_pinned"], true);
  EXPECT_EQ(threads["blas_pin_failed"], false);
  const auto& blas = j["blas"];
  EXPECT_EQ(blas["vendor"], "OpenBLAS");
  EXPECT_EQ(blas["library_path"], "/lib/libblas.so.3");
  EXPECT_EQ(blas["core_path"], "/lib/libopenblas.so.0");
  EXPECT_EQ(blas["kernel"], "Haswell");
  EXPECT_EQ(blas["threads"], 1);
  EXPECT_EQ(blas["is_reference"], false);
  const auto& cuda = j["cuda"];
  EXPECT_EQ(cuda["compiled"], true);
  EXPECT_EQ(cuda["usable"], true);
  EXPECT_EQ(cuda["driver_version"], "13.0");
  EXPECT_EQ(cuda["runtime_version"], "12.9");
  EXPECT_EQ(cuda["cudnn_usable"], true);
  EXPECT_EQ(cuda["cudnn_version"], "91002");
  ASSERT_EQ(cuda["devices"].size(), 1u);
  const auto& device = cuda["devices"][0];
  EXPECT_EQ(device["device"], "cuda:2");
  EXPECT_EQ(device["name"], "Fixture GPU");
  EXPECT_EQ(device["compute_capability"], "9.1");
  EXPECT_EQ(device["multiprocessors"], 132);
  EXPECT_EQ(device["total_memory_bytes"], 150000000000);
  EXPECT_EQ(device["l2_cache_bytes"], 52428800);
  EXPECT_NE(inventory_text(inv).find("3 intra-op, 5 inter-op"), std::string::npos) << inventory_text(inv);
}

TEST(Inventory, TellsTheCpusIsaApartFromLibTorchsKernelLevel) {
  CpuInfo spr;  // a Sapphire Rapids core under Debian's LibTorch 1.13 (flags as /proc/cpuinfo lists them)
  spr.flags = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile"};
  spr.vector_isa = "AVX2";
  EXPECT_EQ(cpu_isa(spr), "AVX-512 (VNNI, BF16, FP16) + AMX-BF16");
  EXPECT_NE(isa_gap_warning(spr).find("this CPU has AVX-512 (VNNI, BF16, FP16) + AMX-BF16 but LibTorch's own CPU kernels run at AVX2"),
            std::string::npos);
  spr.vector_isa = "AVX512";  // the PyTorch wheels' level there: no gap
  EXPECT_EQ(isa_gap_warning(spr), "");
  CpuInfo zen3;
  zen3.flags = {"sse4_2", "avx", "avx2", "fma"};
  zen3.vector_isa = "AVX2";
  EXPECT_EQ(cpu_isa(zen3), "AVX2+FMA");
  EXPECT_EQ(isa_gap_warning(zen3), "");
  CpuInfo grace;  // Neoverse V2 ("Features" on aarch64)
  grace.flags = {"asimd", "sve", "sve2", "bf16"};
  EXPECT_EQ(cpu_isa(grace), "SVE2 (BF16)");
  EXPECT_EQ(cpu_isa(CpuInfo{}), "unknown");
  // This host's inventory says both levels.
  const std::string text = inventory_text(collect_inventory());
  EXPECT_NE(text.find("CPU ISA"), std::string::npos);
  EXPECT_NE(text.find("LibTorch kernels"), std::string::npos);
}

// The date every results file records (dist's own files; Google Benchmark writes the same form): ISO 8601 with the
// offset's colon, "+05:30", which `history add` and every other reader of dates accept. A fixed zone for the test.
TEST(RunContext, TheDateIsIso8601WithTheOffsetsColon) {
  const char* was = std::getenv("TZ");
  const std::string saved = was ? was : "";
  const auto date_in = [](const char* zone) {
    setenv("TZ", zone, 1);
    tzset();
    for (const auto& [key, value] : standard_context()) {
      if (key == "date") return value;
    }
    return std::string("(no date)");
  };
  EXPECT_TRUE(std::regex_match(date_in("<+0530>-05:30"), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+05:30)")))
      << date_in("<+0530>-05:30");
  EXPECT_TRUE(std::regex_match(date_in("<-03>3"), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d-03:00)")))
      << date_in("<-03>3");
  EXPECT_TRUE(std::regex_match(date_in("UTC0"), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00)")))
      << date_in("UTC0");
  if (was) {
    setenv("TZ", saved.c_str(), 1);
  } else {
    unsetenv("TZ");
  }
  tzset();
}
