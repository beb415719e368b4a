#pragma once
// Data-parallel training across processes on PyTorch's own c10d: a TCPStore rendezvous with
// torchrun's environment conventions, and a Gloo (CPU tensors) or NCCL (CUDA tensors) process group.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace torchprobe::dist {

/// Where and who this process is, as its launcher says.
struct DistEnv {
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  /// "torchrun" (TORCHELASTIC_* set), "slurm" (srun's SLURM_* variables) or "environment" (the
  /// variables set by hand or by scripts/launch.sh).
  std::string launcher = "environment";
  /// torchrun: the launcher's agent hosts the store at MASTER_ADDR:MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE),
  /// so every rank, rank 0 too, connects to it as a client.
  bool agent_store = false;
  int restart_count = 0;  ///< torchrun's TORCHELASTIC_RESTART_COUNT: how often the group was restarted
  int max_restarts = 0;   ///< torchrun's --max-restarts
  std::string endpoint() const { return master_addr + ":" + std::to_string(master_port); }
};

/// Reads the launcher's variables through `get` (getenv by default). With RANK set (torchrun,
/// scripts/launch.sh, by hand): MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK (default
/// RANK) and torchrun's TORCHELASTIC_* variables. Otherwise, under srun: RANK = SLURM_PROCID,
/// WORLD_SIZE = SLURM_NTASKS, LOCAL_RANK = SLURM_LOCALID, MASTER_ADDR = MASTER_ADDR or the first host
/// of SLURM_STEP_NODELIST / SLURM_NODELIST / SLURM_JOB_NODELIST, MASTER_PORT = MASTER_PORT or
/// slurm_default_port(). Throws InputError naming the variable that is missing or invalid.
DistEnv env_from(const std::function<const char*(const char*)>& get);
DistEnv env_from_environment();

/// The first host of a SLURM host list, as `scontrol show hostnames LIST | head -n 1` prints it:
/// "gpu[07-09,12],cpu1" -> "gpu07"; "rack[1-2]-n[01-04]" -> "rack1-n01". Throws InputError for
/// an empty or malformed list.
std::string first_slurm_host(const std::string& nodelist);

/// MASTER_PORT under SLURM when it is not set: 15000 + the last four digits of SLURM_JOB_ID (as
/// PyTorch Lightning derives it, so two jobs sharing a node do not collide); 29500 without a job id.
int slurm_default_port(const char* job_id);

/// What a results file says of the launch: launcher, and torchrun's restart count, so a result
/// from a restarted group says so.
std::vector<std::pair<std::string, std::string>> launch_context(const DistEnv& env);
/// One line for the text output where the group was restarted ("" otherwise).
std::string restart_note(const DistEnv& env);

/// This rank's device, by the one device grammar where one device is meant: "cpu"; "cuda" is
/// cuda:LOCAL_RANK (one GPU per rank, as torchrun users set it); "cuda:N". Throws InputError when the
/// host has no such GPU.
torch::Device rank_device(const DistEnv& env, const std::string& device);

/// How many ranks an error message names before it counts the rest.
constexpr size_t kListedRanks = 8;
/// Ranks for an error message: "rank 3", "ranks 1, 2 and 5", "ranks 1, 2, 3, 4, 5, 6, 7, 8 and 99991 more":
/// the first kListedRanks of `named`, and `total` (the named ranks and those not named) counted.
std::string rank_list(const std::vector<int>& named, std::int64_t total);

/// Bytes per all-reduce bucket by default: DistributedDataParallel's bucket_cap_mb of 25 MiB.
constexpr std::int64_t kDefaultBucketBytes = 25ll << 20;

/// One process's membership of a process group. Joining checks that every rank was started with
/// the same WORLD_SIZE before the collective backend is created, so a mismatch is an error
/// naming the ranks instead of a hang. Collectives block until done.
class ProcessGroup {
 public:
  /// Rank 0 hosts the store at env.endpoint(); the others connect to it. Throws std::runtime_error
  /// naming the endpoint when the store cannot be reached, or a rank does not join, within `timeout`:
  /// one deadline for resolving MASTER_ADDR, connecting, the handshake and every wait of the rendezvous
  /// (the error follows it by a quarter of a second at most). An unresolvable MASTER_ADDR is an InputError.
  /// `timeout` also bounds each collective.
  /// Tensors live on `device`: Gloo serves the CPU, NCCL a CUDA device (InputError where this
  /// build or host has no NCCL). With NCCL, collectives are queued on the device: "block" means
  /// the device's current stream waits, not the host.
  ProcessGroup(const DistEnv& env, std::chrono::milliseconds timeout, torch::Device device = torch::Device(torch::kCPU));
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  const DistEnv& env() const { return env_; }
  const torch::Device& device() const { return device_; }
  /// "gloo" or "nccl".
  std::string backend_name() const;

  /// Averages a contiguous 1-D tensor over the ranks in place: all-reduce (sum) of consecutive
  /// views of at most `bucket_bytes`, queued together and then awaited, then divided by the world size.
  /// Returns the number of all-reduce calls.
  int average_(torch::Tensor& flat, std::int64_t bucket_bytes = kDefaultBucketBytes);
  /// Sum all-reduce of one tensor (the benchmark's unit of work).
  void all_reduce_sum_(torch::Tensor& tensor);
  /// Copies rank `root`'s values of a tensor to every rank.
  void broadcast_(torch::Tensor& tensor, int root = 0);
  /// Returns when every rank has reached it (and, with NCCL, this rank's device has drained).
  void barrier();
  /// Runs `work` on rank 0 while the other ranks wait, idle, for as long as it takes (up to
  /// kAloneWait, not the group's timeout: a single-process baseline can outlast it), then meets
  /// at a barrier. If rank 0 fails, its exception propagates there and the others throw
  /// std::runtime_error saying rank 0 stopped.
  void run_on_rank0_alone(const std::function<void()>& work);
  static constexpr std::chrono::hours kAloneWait{24};
  /// Ends a successful run: flushes pending collectives and frees the backend's communicators,
  /// as destroy_process_group() does (NCCL otherwise aborts them in the destructor, with a
  /// warning). No collective may follow (std::logic_error). On an error path, just destroy the group.
  void shutdown();

 private:
  /// Runs a collective; a failure becomes an error naming this rank, the peer that went away (where it
  /// can be told) and the store's address.
  void guarded(const std::string& what, const std::function<void()>& collective);

  struct Impl;
  DistEnv env_;
  torch::Device device_;
  std::unique_ptr<Impl> impl_;
  int alone_rounds_ = 0;
};

}  // namespace torchprobe::dist
