// torchprobe dist allreduce|train|dataparallel: one rank of a torchrun-style job (or one data_parallel process).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "commands.h"
#include "measuring.h"
#include "torchprobe/blas.h"
#include "torchprobe/config.h"
#include "torchprobe/input_error.h"
#include "torchprobe/io.h"
#include "torchprobe/measure.h"
#include "torchprobe/run_context.h"
#include "torchprobe/units.h"
#ifdef TORCHPROBE_HAS_DIST
#include "torchprobe/device_spec.h"
#include "torchprobe/dist/dist_bench.h"
#include "torchprobe/models/registry.h"
#endif

namespace torchprobe::cli {
namespace {

struct Flags {
  std::string min_bytes = "1KiB", max_bytes = "1GiB";
  int iterations = 20, repetitions = 5;
  std::string model = "net";
  std::int64_t batch = 64;
  int steps = 20, warmup = 3;
  double bucket_mib = 25.0;
  double timeout_s = 60.0;
  int threads = 0;
  std::string device = "cpu";    ///< per rank: cpu (Gloo), cuda (cuda:LOCAL_RANK) or cuda:N (NCCL)
  std::string devices = "cuda";  ///< data_parallel's devices
  bool json = false;
  std::string out;
};

#ifdef TORCHPROBE_HAS_DIST
/// The context a dist results file records: Google Benchmark's keys and torchprobe's, as torchprobe-bench's files.
/// With a rank's launch (launcher, torchrun's restart count) where there is one.
ContextEntries dist_context(const ThreadSetup& threads, const std::string& allocator, const dist::DistEnv* env = nullptr) {
  auto context = standard_context();
  for (auto& entry : torchprobe_context(threads, allocator, trust::threading_warnings(threads))) context.push_back(std::move(entry));
  if (env != nullptr) {
    for (auto& entry : dist::launch_context(*env)) context.push_back(std::move(entry));
  }
  return context;
}

/// Rank 0's (or the one process's) output: text or JSON on stdout, the JSON also to --out.
void print(const Flags& flags, const std::string& json, std::string text) {
  text += fmt::format("  (LibTorch intra-op threads: {})\n", current_threads().intra_op);
  if (!flags.out.empty()) {
    io::write_text_file(flags.out, json);
    std::fprintf(stderr, "torchprobe: wrote %s\n", flags.out.c_str());
  }
  std::printf("%s", flags.json ? json.c_str() : text.c_str());
}

/// The largest all-reduce message: nccl-tests' usual sweeps end at 8-16 GiB; beyond that a typo
/// (1000000TiB) would only grow the process until the system kills it.
constexpr std::int64_t kMaxMessageBytes = std::int64_t{16} << 30;

/// Before any work: the output file can be written (a bad --out fails now, not after the whole run).
void check_out(const Flags& flags) {
  if (!flags.out.empty()) io::check_writable(flags.out);
}

int run_rank(const Flags& flags, bool all_reduce) {
  check_out(flags);
  const dist::DistEnv env = dist::env_from_environment();
  const std::string allocator = measure::steady_state_allocator();  // a benchmark: as torchprobe-bench has it
  const ThreadSetup threads = configure_threads(flags.threads);
  std::int64_t min_bytes = 0, max_bytes = 0;
  if (all_reduce) {
    min_bytes = byte_size_flag("--min-bytes", flags.min_bytes, kMaxMessageBytes);
    max_bytes = byte_size_flag("--max-bytes", flags.max_bytes, kMaxMessageBytes);
    if (min_bytes > max_bytes) throw InputError("--min-bytes is larger than --max-bytes");
  } else {
    models::make_model(flags.model);  // an unknown model is an InputError before any step
  }
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(flags.timeout_s * 1e3));
  // A peer that dies mid-send must be an error this rank reports (naming the peer), not a SIGPIPE that kills it
  // silently: Gloo writes to its sockets with writev (no MSG_NOSIGNAL) and handles EPIPE as an error, as Python, which
  // PyTorch's ranks run in, ignores SIGPIPE from start-up. Under torchrun rank 0 died so ("exitcode: -13") when
  // rank 1 was killed.
  std::signal(SIGPIPE, SIG_IGN);
  dist::ProcessGroup group(env, timeout, dist::rank_device(env, flags.device));
  std::string json, text;
  if (all_reduce) {
    // A line per message size on rank 0 (a sweep to 64 MiB over Gloo takes ~16 s, silent before).
    const auto on_size = [&group](const dist::AllReduceRow& row, int done, int total) {
      if (group.rank() != 0) return;
      std::fprintf(stderr, "torchprobe: all-reduce %s: %.1f us, busbw %.3f GB/s (%d of %d sizes)\n",
                   units::format_bytes(static_cast<double>(row.bytes)).c_str(), row.median_us, row.busbw_gbps, done,
                   total);
    };
    const auto rows = dist::all_reduce_sweep(group, min_bytes, max_bytes, flags.iterations, flags.repetitions, on_size);
    json = dist::all_reduce_json(group, rows, dist_context(threads, allocator, &env));
    text = dist::all_reduce_text(group, rows);
  } else {
    const auto bucket = static_cast<std::int64_t>(flags.bucket_mib * (1 << 20));
    const auto result =
        dist::distributed_train(group, flags.model, flags.batch, flags.steps, flags.warmup, bucket, flags.repetitions);
    json = dist::train_json(result, dist_context(threads, allocator, &env));
    text = dist::train_text(result);
  }
  text += dist::restart_note(env);
  group.barrier();
  group.shutdown();
  if (group.rank() == 0) print(flags, json, text);
  return 0;
}

int run_data_parallel(const Flags& flags) {
  check_out(flags);
  const std::string allocator = measure::steady_state_allocator();
  const ThreadSetup threads = configure_threads(flags.threads);
  models::make_model(flags.model);  // an unknown model is an InputError before any step
  const auto devices = parse_device_list(flags.devices);
  const auto result = dist::data_parallel_train(flags.model, devices, flags.batch, flags.steps, flags.warmup, flags.repetitions);
  print(flags, dist::train_json(result, dist_context(threads, allocator)), dist::train_text(result));
  return 0;
}
#endif

/// --timeout's bounds. Below a second the ranks' start-up alone (loading LibTorch) can exceed it.
constexpr double kMinTimeout = 1.0, kMaxTimeout = 86400.0;

}  // namespace

std::vector<Command> add_dist_command(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  auto* dist = app.add_subcommand("dist", std::string(measuring_description("dist")));
  dist->require_subcommand(1);
  auto* allreduce = dist->add_subcommand("allreduce", "All-reduce sweep: time, algbw and busbw (nccl-tests' definitions)");
  auto* train = dist->add_subcommand("train", "Data-parallel training steps: per-rank and global images/s, scaling efficiency");
  auto* dp = dist->add_subcommand(
      "dataparallel", "One process: torch::nn::parallel::data_parallel training steps over several GPUs, scaling efficiency");
  for (auto* cmd : {allreduce, train}) {
    cmd->add_option("--timeout", flags->timeout_s,
                    "Seconds to wait for the store and the other ranks (one deadline for the whole rendezvous), and for "
                    "each collective")
        ->check(in_range(kMinTimeout, kMaxTimeout))
        ->capture_default_str();
    cmd->add_option("--device", flags->device, "cpu (Gloo), cuda (cuda:LOCAL_RANK) or cuda:N (NCCL)")->capture_default_str();
  }
  for (auto* cmd : {allreduce, train, dp}) {
    cmd->add_option("--threads", flags->threads, "LibTorch intra-op threads per process")
        ->check(in_range(1, kMaxThreads));
    cmd->add_flag("--json", flags->json, "Print JSON (rank 0): Google Benchmark's schema, for report and compare");
    cmd->add_option("--out", flags->out, "Also write the JSON here (rank 0)");
    cmd->add_option("--repetitions", flags->repetitions, "The timed calls are split into this many repetitions")
        ->check(in_range(1, 1000))
        ->capture_default_str();
  }
  dp->add_option("--devices", flags->devices, "cuda (every GPU) or a list such as cuda:0,cuda:1")->capture_default_str();
  allreduce->add_option("--min-bytes", flags->min_bytes, "Smallest message")->capture_default_str();
  allreduce->add_option("--max-bytes", flags->max_bytes, "Largest message (sizes double)")->capture_default_str();
  allreduce->add_option("--iterations", flags->iterations, "Timed calls per size")
      ->check(in_range(1, 1000000))
      ->capture_default_str();
  for (auto* cmd : {train, dp}) {
    cmd->add_option("--model", flags->model, "net or resnet18")->capture_default_str();
    cmd->add_option("--batch", flags->batch, "Images per rank (per device) per step")
        ->check(in_range(std::int64_t{1}, std::int64_t{1} << 24))
        ->capture_default_str();
    cmd->add_option("--steps", flags->steps, "Timed steps")->check(in_range(1, 10000000))->capture_default_str();
    cmd->add_option("--warmup", flags->warmup, "Untimed steps first")->check(in_range(0, 10000000))->capture_default_str();
  }
  train->add_option("--bucket-mib", flags->bucket_mib, "All-reduce bucket size")
      ->check(in_range(0.001, 1e6))
      ->capture_default_str();
#ifdef TORCHPROBE_HAS_DIST
  return {{allreduce, [flags] { return run_rank(*flags, /*all_reduce=*/true); }},
          {train, [flags] { return run_rank(*flags, /*all_reduce=*/false); }},
          {dp, [flags] { return run_data_parallel(*flags); }}};
#else
  const auto unavailable = []() -> int {
    throw InputError("this torchprobe was built without distributed support (TORCHPROBE_ENABLE_DIST was off: Gloo's headers "
                     "were not found at configure time; apt-get install libgloo-dev and rebuild)");
  };
  return {{allreduce, unavailable}, {train, unavailable}, {dp, unavailable}};
#endif
}

}  // namespace torchprobe::cli
