#include "torchprobe/dist/process_group.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/utils.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <thread>

#include "test_util.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/backend.h"
#include "torchprobe/backend_c10d.h"
#include "torchprobe/dist/dist_bench.h"
#include "torchprobe/input_error.h"
#include "torchprobe/io.h"
#include "torchprobe/models/registry.h"
#include "torchprobe/report/results.h"
#include "torchprobe/report/schema.h"
#include "torchprobe/run_context.h"
#include "torchprobe/train/train_step.h"

using namespace torchprobe;
using namespace std::chrono_literals;

namespace {

/// A TCP port that was free a moment ago (bind to port 0, read it, close).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("free_port: no port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

dist::DistEnv env_for(int port, int rank, int world) {
  dist::DistEnv env;
  env.master_addr = "127.0.0.1";
  env.master_port = port;
  env.rank = env.local_rank = rank;
  env.world_size = world;
  return env;
}

/// Runs `body(rank)` on `world` threads, each a rank; rethrows the first failure.
template <typename Body>
void run_ranks(int world, Body body) {
  std::vector<std::future<void>> ranks;
  for (int r = 0; r < world; ++r) ranks.push_back(std::async(std::launch::async, body, r));
  for (auto& f : ranks) f.get();
}

}  // namespace

TEST(DistEnv, ReadsTorchrunVariables) {
  const std::map<std::string, std::string> vars = {
      {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "29501"}, {"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}};
  const auto get = [&](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  const dist::DistEnv env = dist::env_from(get);
  EXPECT_EQ(env.endpoint(), "10.0.0.7:29501");
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
}

TEST(DistEnv, NamesTheMissingOrInvalidVariable) {
  std::map<std::string, std::string> vars = {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}, {"WORLD_SIZE", "2"}};
  const auto get = [&](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  EXPECT_THROW_WITH(dist::env_from(get), InputError, "RANK is not set (torchrun sets MASTER_ADDR, MASTER_PORT");
  vars["RANK"] = "2";
  EXPECT_THROW_WITH(dist::env_from(get), InputError, "RANK=2 is not an integer in [0, 1]");
  vars["RANK"] = "1";
  vars["MASTER_PORT"] = "http";
  EXPECT_THROW_WITH(dist::env_from(get), InputError, "MASTER_PORT=http is not an integer in [1, 65535]");
  vars["MASTER_PORT"] = "29500";
  EXPECT_EQ(dist::env_from(get).local_rank, 1) << "LOCAL_RANK defaults to RANK";
}

/// A `get` for env_from over a map of variables.
struct FakeEnvironment {
  std::map<std::string, std::string> vars;
  const char* operator()(const char* name) const {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  }
};

TEST(DistEnv, SrunVariablesGiveRanksAndTheFirstNodeAsMaster) {
  FakeEnvironment env{{{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                       {"SLURM_NODELIST", "gpu[07-09,12],cpu1"}, {"SLURM_JOB_ID", "1234567"}}};
  dist::DistEnv got = dist::env_from(std::cref(env));
  EXPECT_EQ(got.launcher, "slurm");
  EXPECT_EQ(got.rank, 5);
  EXPECT_EQ(got.world_size, 8);
  EXPECT_EQ(got.local_rank, 1);
  EXPECT_EQ(got.endpoint(), "gpu07:19567") << "the first host; 15000 + the job id's last four digits";
  EXPECT_FALSE(got.agent_store);
  // The step's node list comes first; MASTER_ADDR and MASTER_PORT, where set, win.
  env.vars["SLURM_STEP_NODELIST"] = "node[3-4]";
  EXPECT_EQ(dist::env_from(std::cref(env)).master_addr, "node3");
  env.vars["MASTER_ADDR"] = "10.1.2.3";
  env.vars["MASTER_PORT"] = "29999";
  EXPECT_EQ(dist::env_from(std::cref(env)).endpoint(), "10.1.2.3:29999");
  // Named errors: a rank beyond the task count, no node list at all.
  env.vars["SLURM_PROCID"] = "8";
  EXPECT_THROW_WITH(dist::env_from(std::cref(env)), InputError, "SLURM_PROCID=8 is not an integer in [0, 7]");
  FakeEnvironment bare{{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}};
  EXPECT_THROW_WITH(dist::env_from(std::cref(bare)), InputError, "neither MASTER_ADDR nor SLURM_NODELIST is set");
}

TEST(DistEnv, TorchrunVariablesWinOverSlurmAndSayRestartsAndTheAgentStore) {
  // torchrun started inside an srun step: its own variables describe the worker.
  FakeEnvironment env{{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "n[1-2]"},
                       {"MASTER_ADDR", "n1"}, {"MASTER_PORT", "29500"}, {"RANK", "6"}, {"WORLD_SIZE", "8"},
                       {"LOCAL_RANK", "2"}, {"TORCHELASTIC_RUN_ID", "none"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                       {"TORCHELASTIC_RESTART_COUNT", "2"}, {"TORCHELASTIC_MAX_RESTARTS", "3"}}};
  const dist::DistEnv got = dist::env_from(std::cref(env));
  EXPECT_EQ(got.launcher, "torchrun");
  EXPECT_EQ(got.rank, 6);
  EXPECT_EQ(got.local_rank, 2);
  EXPECT_TRUE(got.agent_store) << "every rank, rank 0 too, connects to the agent's store";
  EXPECT_EQ(got.restart_count, 2);
  const auto context = dist::launch_context(got);
  EXPECT_NE(std::find(context.begin(), context.end(), std::make_pair(std::string("torchelastic_restart_count"), std::string("2"))),
            context.end());
  EXPECT_NE(dist::restart_note(got).find("torchrun restarted this group 2 times (of at most 3)"), std::string::npos);
  env.vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  env.vars["TORCHELASTIC_RESTART_COUNT"] = "0";
  EXPECT_FALSE(dist::env_from(std::cref(env)).agent_store);
  EXPECT_EQ(dist::restart_note(dist::env_from(std::cref(env))), "") << "no note for a first attempt";
  // scripts/launch.sh and hand-set variables: no torchrun, no restarts.
  FakeEnvironment plain{{{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}, {"RANK", "0"}, {"WORLD_SIZE", "1"}}};
  EXPECT_EQ(dist::env_from(std::cref(plain)).launcher, "environment");
}

TEST(DistEnv, FirstHostOfASlurmNodeList) {
  EXPECT_EQ(dist::first_slurm_host("node1"), "node1");
  EXPECT_EQ(dist::first_slurm_host("node1,node2"), "node1");
  EXPECT_EQ(dist::first_slurm_host("gpu-[009-011],cpu[1-4]"), "gpu-009") << "zero padding kept";
  EXPECT_EQ(dist::first_slurm_host("rack[1-2]-n[01-04]"), "rack1-n01") << "every bracket its first value";
  EXPECT_EQ(dist::first_slurm_host("a[3]"), "a3");
  EXPECT_EQ(dist::first_slurm_host("a[5,2-3]b"), "a5b");
  EXPECT_THROW_WITH(dist::first_slurm_host("gpu[1-2"), InputError, "SLURM_NODELIST=gpu[1-2 is not a SLURM host list (a '[' without its ']')");
  EXPECT_THROW_WITH(dist::first_slurm_host("gpu]"), InputError, "a ']' without its '['");
  EXPECT_THROW_WITH(dist::first_slurm_host("gpu[a-b]"), InputError, "a range that is not numbers");
  EXPECT_THROW_WITH(dist::first_slurm_host(""), InputError, "no host");
  EXPECT_EQ(dist::slurm_default_port(nullptr), 29500);
  EXPECT_EQ(dist::slurm_default_port("7"), 15007);
  EXPECT_THROW_WITH(dist::slurm_default_port("12ab"), InputError, "SLURM_JOB_ID=12ab is not a number (set MASTER_PORT)");
}

TEST(Gloo, ASecondProcessWithTheSameRankIsToldSoAndTheGroupGoesOn) {
  const int port = free_port();
  // Three members for a world of 2: ranks 0, 1 and 1 again. One of the two rank-1s is refused by
  // name; the other and rank 0 form the group.
  std::vector<std::string> errors(3);
  std::vector<int> done(3, 0);
  std::atomic<int> tried{0};
  run_ranks(3, [&](int member) {
    try {
      dist::ProcessGroup group(env_for(port, member == 0 ? 0 : 1, 2), 20s);
      ++tried;
      while (tried < 3) std::this_thread::sleep_for(10ms);  // rank 0's store stays up until the duplicate has tried
      group.barrier();
      done[static_cast<size_t>(member)] = 1;
    } catch (const InputError& e) {
      errors[static_cast<size_t>(member)] = e.what();
      ++tried;
    }
  });
  EXPECT_EQ(done[0], 1);
  EXPECT_EQ(done[1] + done[2], 1) << "exactly one rank 1 joins";
  const std::string& refused = errors[1].empty() ? errors[2] : errors[1];
  EXPECT_NE(refused.find(fmt::format("rank 1 of 2: pid {} on ", getpid())), std::string::npos) << refused;
  EXPECT_NE(refused.find(fmt::format("already joined as RANK=1 at 127.0.0.1:{}: each process of a job needs its own RANK", port)),
            std::string::npos)
      << refused;
}

TEST(Gloo, TwoRanksAverageInBuckets) {
  const int port = free_port();
  std::vector<torch::Tensor> results(2);
  run_ranks(2, [&](int rank) {
    dist::ProcessGroup group(env_for(port, rank, 2), 20s);
    torch::Tensor grads = torch::arange(1000, torch::kFloat32) * static_cast<float>(rank + 1);
    // 1000 floats in 256-byte buckets: 16 all-reduce calls.
    EXPECT_EQ(group.average_(grads, /*bucket_bytes=*/256), 16);
    results[static_cast<size_t>(rank)] = grads;
  });
  EXPECT_TRUE(torch::equal(results[0], results[1])) << "every rank holds the same average";
  EXPECT_TRUE(torch::allclose(results[0], torch::arange(1000, torch::kFloat32) * 1.5f));
}

TEST(Gloo, NoCollectiveAfterShutdown) {
  const int port = free_port();
  run_ranks(2, [&](int rank) {
    dist::ProcessGroup group(env_for(port, rank, 2), 20s);
    group.barrier();
    group.shutdown();
    group.shutdown();  // a second call is harmless
    torch::Tensor t = torch::ones({4});
    EXPECT_THROW_WITH(group.all_reduce_sum_(t), std::logic_error, "a collective after shutdown()");
  });
}

TEST(Gloo, DataParallelStepsMatchOneProcessOnTheCombinedBatch) {
  // Two ranks, each with half of a batch of 16, start from rank 0's weights (broadcast) and
  // average gradients every step: the same arithmetic as one process on all 16 images.
  const auto full = std::make_shared<const data::Dataset>(data::make_synthetic(16, 21));
  const int steps = 3;
  std::vector<torch::Tensor> params(2);
  std::vector<torch::Tensor> before(2), initial(2);
  std::vector<std::vector<float>> losses(2);
  const int port = free_port();
  run_ranks(2, [&](int rank) {
    dist::ProcessGroup group(env_for(port, rank, 2), 20s);
    // Both threads draw initial weights from the one global generator, so they differ: the broadcast
    // must make them equal.
    train::StepOptions options = train::StepOptions::sgd(0.05, 0.9);
    options.reduce_gradients = [&group](torch::Tensor& grads) { group.average_(grads, /*bucket_bytes=*/16 << 10); };
    train::TrainStep step(models::make_model("net"), torch::Device(torch::kCPU), options);
    before[static_cast<size_t>(rank)] = step.flat_parameters().clone();
    group.broadcast_(step.flat_parameters(), /*root=*/0);
    initial[static_cast<size_t>(rank)] = step.flat_parameters().clone();
    auto half = std::make_shared<const data::Dataset>(
        data::Dataset{full->images.narrow(0, 8 * rank, 8).clone(), full->labels.narrow(0, 8 * rank, 8).clone(), "half"});
    data::Batcher batcher(half, 8, /*pinned=*/false, /*seed=*/0, /*ring_size=*/1, /*shuffle=*/false);
    for (int i = 0; i < steps; ++i) losses[static_cast<size_t>(rank)].push_back(step.run(batcher.next()).item<float>());
    params[static_cast<size_t>(rank)] = step.flat_parameters().clone();
  });
  ASSERT_FALSE(torch::equal(before[0], before[1])) << "the ranks start from different weights";
  EXPECT_TRUE(torch::equal(initial[0], initial[1])) << "rank 0's weights were broadcast";
  EXPECT_TRUE(torch::equal(initial[0], before[0]));
  EXPECT_TRUE(torch::equal(params[0], params[1])) << "parameters are identical on every rank";

  train::TrainStep single(models::make_model("net"), torch::Device(torch::kCPU), train::StepOptions::sgd(0.05, 0.9));
  single.flat_parameters().copy_(initial[0]);  // rank 0's starting weights
  data::Batcher batcher(full, 16, false, 0, 1, false);
  for (int i = 0; i < steps; ++i) {
    const float loss = single.run(batcher.next()).item<float>();
    EXPECT_NEAR(loss, (losses[0][static_cast<size_t>(i)] + losses[1][static_cast<size_t>(i)]) / 2, 1e-5) << "step " << i;
  }
  EXPECT_TRUE(torch::allclose(params[0], single.flat_parameters(), /*rtol=*/1e-5, /*atol=*/1e-6));
}

TEST(Gloo, AnUnreachableStoreTimesOutNamingTheEndpoint) {
  const int port = free_port();  // nobody listens there
  EXPECT_THROW_WITH(dist::ProcessGroup(env_for(port, 1, 2), 1500ms), std::runtime_error,
                    "rank 1 of 2: could not reach the rendezvous store at 127.0.0.1:" + std::to_string(port) +
                        " within 1.5 s");
}

TEST(Gloo, AMissingPeerTimesOutOnRankZero) {
  const int port = free_port();
  EXPECT_THROW_WITH(dist::ProcessGroup(env_for(port, 0, 2), 1500ms), std::runtime_error,
                    "rank 0 of 2: not every rank joined at 127.0.0.1:" + std::to_string(port) + " within 1.5 s (missing: rank 1;");
}

TEST(Gloo, ManyMissingRanksAreCountedNotListed) {
  // WORLD_SIZE=100000 with rank 0 alone: a few ranks named, the rest counted (it printed every one, 689 KB).
  const int port = free_port();
  try {
    dist::ProcessGroup group(env_for(port, 0, 100000), 1500ms);
    ADD_FAILURE() << "rank 0 of 100000 joined alone";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("rank 0 of 100000: not every rank joined at 127.0.0.1:" + std::to_string(port) +
                           " within 1.5 s (missing: ranks 1, 2, 3, 4, 5, 6, 7, 8 and 99991 more;"),
              std::string::npos)
        << message;
    EXPECT_LT(message.size(), 1000u) << message;
  }
}

TEST(Gloo, AnUnresolvableMasterAddrIsNamedAsSuch) {
  for (const int rank : {0, 1}) {  // rank 0 hosts the store, but connects to it through MASTER_ADDR too
    auto env = env_for(free_port(), rank, 2);
    env.master_addr = "no-such-host.invalid";
    EXPECT_THROW_WITH(dist::ProcessGroup(env, 5s), InputError, "cannot resolve MASTER_ADDR no-such-host.invalid: ");
  }
}

TEST(DistMessages, RankListsNameAFewAndCountTheRest) {
  EXPECT_EQ(dist::rank_list({3}, 1), "rank 3");
  EXPECT_EQ(dist::rank_list({1, 2, 5}, 3), "ranks 1, 2 and 5");
  EXPECT_EQ(dist::rank_list({1, 2, 3, 4, 5, 6, 7, 8}, 99999), "ranks 1, 2, 3, 4, 5, 6, 7, 8 and 99991 more");
  EXPECT_EQ(dist::rank_list({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 10), "ranks 0, 1, 2, 3, 4, 5, 6, 7 and 2 more");
  EXPECT_EQ(dist::rank_list({4}, 3), "ranks 4 and 2 more");
  EXPECT_EQ(dist::rank_list({}, 5), "5 ranks");
  EXPECT_EQ(dist::rank_list({}, 0), "no rank");
}

TEST(Gloo, MismatchedWorldSizesAreReportedNotHungOn) {
  const int port = free_port();
  std::vector<std::string> errors(2);
  run_ranks(2, [&](int rank) {
    try {
      dist::ProcessGroup group(env_for(port, rank, rank == 0 ? 2 : 3), 5s);
    } catch (const std::exception& e) {
      errors[static_cast<size_t>(rank)] = e.what();
    }
  });
  EXPECT_NE(errors[0].find("WORLD_SIZE mismatch: rank 0 was started with 2 and rank 1 with 3"), std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("WORLD_SIZE mismatch: rank 1 was started with 3 and rank 0 with 2"), std::string::npos)
      << errors[1];
}

TEST(Gloo, Rank0RunsAloneForLongerThanTheGroupTimeout) {
  // dist train's single-process baseline: the other ranks wait past the 2 s collective timeout
  // (not less: the rendezvous shares it, and a client that connects before rank 0 listens retries
  // after a pause).
  const int port = free_port();
  std::vector<std::chrono::steady_clock::time_point> returned(2);
  std::chrono::steady_clock::time_point work_done;
  std::vector<torch::Tensor> sums(2);
  run_ranks(2, [&](int rank) {
    dist::ProcessGroup group(env_for(port, rank, 2), 2s);
    group.run_on_rank0_alone([&] {
      std::this_thread::sleep_for(4500ms);
      work_done = std::chrono::steady_clock::now();
    });
    returned[static_cast<size_t>(rank)] = std::chrono::steady_clock::now();
    torch::Tensor t = torch::full({4}, static_cast<float>(rank + 1));
    group.all_reduce_sum_(t);
    sums[static_cast<size_t>(rank)] = t;
  });
  EXPECT_GE(returned[1], work_done) << "rank 1 went on before rank 0 had finished";
  EXPECT_TRUE(torch::equal(sums[1], torch::full({4}, 3.0f))) << "the group still works afterwards";
}

TEST(Gloo, RanksWaitingForRank0HearThatItStopped) {
  const int port = free_port();
  std::vector<std::string> errors(2);
  run_ranks(2, [&](int rank) {
    try {
      dist::ProcessGroup group(env_for(port, rank, 2), 5s);
      group.run_on_rank0_alone([] {
        std::this_thread::sleep_for(500ms);
        throw std::runtime_error("out of memory in the baseline");
      });
    } catch (const std::exception& e) {
      errors[static_cast<size_t>(rank)] = e.what();
    }
  });
  EXPECT_EQ(errors[0], "out of memory in the baseline");
  EXPECT_NE(errors[1].find("rank 1 of 2: rank 0 stopped while the others waited for its single-process run"),
            std::string::npos)
      << errors[1];
}

TEST(DataParallel, ExplainsWhyItCannotRunHere) {
  // On a host without GPUs (CI) both builds refuse with a reason: a CPU-only LibTorch, or no such device.
  if (backend::cuda_device_count() > 0) GTEST_SKIP() << "this host has a GPU: Gpu.DataParallel* cover it";
  const std::string reason = backend::data_parallel_unsupported_reason({torch::Device(torch::kCUDA, 0)});
  EXPECT_TRUE(reason.find("CPU-only") != std::string::npos || reason.find("cuda:0 does not exist") != std::string::npos)
      << reason;
  train::StepOptions options;
  options.data_parallel = {torch::Device(torch::kCUDA, 0)};
  EXPECT_THROW_WITH(train::TrainStep(models::make_model("net"), torch::Device(torch::kCPU), options), InputError, reason);
  EXPECT_THROW_WITH(dist::data_parallel_train("net", {torch::Device(torch::kCUDA, 0)}, 8, 1, 0), InputError, reason);
}

// A data_parallel run over two GPUs, as `dist dataparallel` writes it (train_json; the step figures are made
// up, no GPU runs here), read back: filed under its devices "cuda:0,cuda:1" and their names, not under the
// CPU. tests/fixtures/report/dist_dataparallel.json is this file, for the LibTorch-free reader's tests.
// A distributed run's figures from what the ranks measured, by hand: the slowest rank's step gives the global rate;
// the all-reduce is what the rank that arrives last sees (the smallest median: the others also waited for it), so
// its share and bus bandwidth are the communication's, not the load imbalance's.
TEST(DistTrain, FiguresComeFromTheSlowestStepAndTheLastRanksAllReduce) {
  dist::DistTrainResult r;
  r.world_size = 4;
  r.batch_per_rank = 64;
  r.rank_ms_per_step = {10.0, 12.0, 11.0, 10.5};
  r.single_ms_per_step = 8.0;
  r.gradient_bytes = 4'000'000;
  dist::finish_train_result(r, {3.0, 1.0, 5.0, 2.0});
  EXPECT_DOUBLE_EQ(r.global_images_per_s, 4 * 64 / 0.012);
  EXPECT_DOUBLE_EQ(r.single_images_per_s, 64 / 0.008);
  EXPECT_DOUBLE_EQ(r.scaling_efficiency, (4 * 64 / 0.012) / (4 * 64 / 0.008));
  EXPECT_DOUBLE_EQ(r.all_reduce_ms_per_step, 1.0) << "the last rank to arrive waits least";
  EXPECT_DOUBLE_EQ(r.all_reduce_share, 1.0 / 12.0);
  EXPECT_DOUBLE_EQ(r.busbw_gbps, 4e6 / 1e-3 / 1e9 * 2.0 * 3.0 / 4.0);  // nccl-tests' 2(n-1)/n
  dist::AllReduceRow row;
  row.bytes = 1 << 20;
  row.median_us = 100.0;
  dist::finish_all_reduce_row(row, 8);
  EXPECT_DOUBLE_EQ(row.algbw_gbps, (1 << 20) / 1e-4 / 1e9);
  EXPECT_DOUBLE_EQ(row.busbw_gbps, row.algbw_gbps * 2.0 * 7.0 / 8.0);
  dist::DistTrainResult one = r;  // data_parallel: one process, no all-reduce of its own
  one.all_reduce_share = one.busbw_gbps = 0.0;
  dist::finish_train_result(one, {});
  EXPECT_EQ(one.all_reduce_ms_per_step, 0.0);
  EXPECT_EQ(one.all_reduce_share, 0.0);
  EXPECT_EQ(one.busbw_gbps, 0.0);
}

TEST(DataParallel, ResultsAreFiledUnderTheirGpus) {
  dist::DistTrainResult r;
  r.model = "net";
  r.engine = "data_parallel";
  r.device = "cuda:0,cuda:1";
  r.world_size = 2;
  r.batch_per_rank = 64;
  r.steps = 20;
  r.rank_ms_per_step = {2.0, 2.0};
  r.repetition_ms = {2.0, 2.1};
  r.single_ms_per_step = 1.5;
  r.single_images_per_s = 64 / 1.5e-3;
  const auto gpu = [](int index) {
    return R"({"device":"cuda:)" + std::to_string(index) +
           R"(","name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0","total_memory_bytes":85045231616,)"
           R"("multiprocessors":132})";
  };
  const std::string inventory =
      R"({"cpu":{"model":"Intel(R) Xeon(R) Platinum 8480+"},"cuda":{"devices":[)" + gpu(0) + "," + gpu(1) + "]}}";
  ContextEntries context = {{std::string(report::schema::kVersionKey), std::to_string(report::schema::kVersion)},
                            {"host_name", "gpu-host"},
                            {"date", "2026-11-27T00:00:00+00:00"},
                            {"inventory", inventory}};
  const std::string text = dist::train_json(r, context);
  const report::ResultSet set = report::parse_results(text, "dist_dataparallel.json");
  ASSERT_EQ(set.results.size(), 1u);
  const report::Result& result = set.results.front();
  EXPECT_EQ(result.name, "dist_train/net/cuda:0,cuda:1/world:2/batch:64/engine:data_parallel");
  EXPECT_EQ(result.device, "cuda:0,cuda:1");
  EXPECT_EQ(result.device_name, "2 x NVIDIA H100 80GB HBM3");
  EXPECT_EQ(result.subject, "net");
  if (const char* out = std::getenv("TORCHPROBE_WRITE_FIXTURE")) io::write_text_file(out, text);
}

// data_parallel's --devices follows the one device grammar; the check that they suit it is separate.
TEST(DataParallel, DeviceListsFollowTheOneGrammarAndAreChecked) {
  const auto devices = parse_device_list("cuda:0,cuda:2", /*cuda_device_count=*/4);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0], torch::Device(torch::kCUDA, 0));
  EXPECT_EQ(devices[1], torch::Device(torch::kCUDA, 2));
  EXPECT_EQ(parse_device_list("cuda", 2).size(), 2u) << "cuda: every GPU";
  EXPECT_THROW_WITH(parse_device_list("cuda:0,,cuda:1", 2), InputError, "invalid device 'cuda:0,,cuda:1' (expected cpu, cuda, cuda:N or all");
  EXPECT_THROW_WITH(parse_device_list("0,1", 2), InputError, "invalid device '0' (expected cpu, cuda, cuda:N or all");
  if (backend::cuda_compiled()) {
    EXPECT_NE(backend::data_parallel_unsupported_reason({torch::Device(torch::kCUDA, 0), torch::Device(torch::kCUDA, 0)}),
              "");
  }
  EXPECT_NE(backend::data_parallel_unsupported_reason({}), "");
  EXPECT_NE(backend::data_parallel_unsupported_reason({torch::Device(torch::kCPU)}), "");
}

// A rank's device: "cuda" is cuda:LOCAL_RANK; the grammar's wording for the rest.
TEST(DistEnv, RankDeviceFollowsTheGrammar) {
  dist::DistEnv env;
  env.local_rank = 1;
  EXPECT_TRUE(dist::rank_device(env, "cpu").is_cpu());
  EXPECT_THROW_WITH(dist::rank_device(env, "gpu"), InputError, "invalid device 'gpu' (expected one of cpu, cuda or cuda:N)");
  EXPECT_THROW_WITH(dist::rank_device(env, "cpu,cuda"), InputError, "invalid device 'cpu,cuda'");
  if (backend::cuda_device_count() == 0) {
    EXPECT_THROW_WITH(dist::rank_device(env, "cuda"), InputError, "device cuda not found");
  }
}

TEST(Nccl, ACudaRankWithoutNcclOrGpuIsAnInputErrorBeforeAnyRendezvous) {
  if (backend::cuda_device_count() > 0) GTEST_SKIP() << "this host has a GPU: Gpu.Nccl* cover it";
  const int port = free_port();  // nobody listens: a rendezvous attempt would time out instead
  const torch::Device cuda(torch::kCUDA, 0);
  EXPECT_THROW_WITH(dist::ProcessGroup(env_for(port, 1, 2), 60s, cuda), InputError,
                    backend::nccl_unsupported_reason(cuda));
  EXPECT_THROW_WITH(dist::rank_device(env_for(port, 0, 1), "cuda"), InputError, "device cuda not found (this host has no CUDA device");
  EXPECT_EQ(dist::rank_device(env_for(port, 0, 1), "cpu"), torch::Device(torch::kCPU));
  EXPECT_THROW_WITH(dist::rank_device(env_for(port, 0, 1), "tpu"), InputError, "invalid device 'tpu' (expected one of cpu, cuda or cuda:N)");
}
