#include "diagnostics/memory_probe.h"
#include "diagnostics/exception_message.h"
#include "diagnostics/probe_json.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "torchprobe/report/memory_chart.h"
#include "torchprobe/units.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/elapsed.h"
#include "torchprobe/models/registry.h"
#include "torchprobe/train/train_step.h"

namespace torchprobe::diagnostics {
namespace {

using Clock = std::chrono::steady_clock;
/// Random values for one block, tiled to the batch (a parallel copy): LibTorch draws CPU random numbers
/// on one core.
data::HostBatch random_batch(std::int64_t batch) {
  constexpr std::int64_t kBlock = 4096;
  data::HostBatch out;
  out.images = torch::randn({std::min(batch, kBlock), 3, 32, 32});
  if (batch > kBlock) out.images = out.images.repeat({(batch + kBlock - 1) / kBlock, 1, 1, 1}).narrow(0, 0, batch);
  out.labels = torch::randint(10, {batch}, torch::TensorOptions().dtype(torch::kLong));
  return out;
}

/// The trials' host batches. On a GPU the host copy is not what a trial measures, so they are cut from
/// one buffer that grows as needed: a fresh multi-GB batch per trial cost its first-touch page faults
/// and one-core random draws, ~40 s of a 2M-image trial on an H200 host (2026-11-27). On the CPU the
/// batch is part of the memory measured: a fresh one every trial.
class TrialBatches {
 public:
  explicit TrialBatches(bool reuse) : reuse_(reuse) {}
  data::HostBatch get(std::int64_t batch) {
    if (!reuse_) return random_batch(batch);
    if (!images_.defined() || images_.size(0) < batch) {
      images_ = labels_ = torch::Tensor();  // the old buffer goes before the larger one comes
      data::HostBatch fresh = random_batch(batch);
      images_ = fresh.images;
      labels_ = fresh.labels;
    }
    data::HostBatch out;
    out.images = images_.narrow(0, 0, batch);
    out.labels = labels_.narrow(0, 0, batch);
    return out;
  }

 private:
  bool reuse_;
  torch::Tensor images_, labels_;
};

// The fit uses the trials that ran; small batches are dominated by fixed workspaces, so those
// below 8 are left out when at least two larger ones exist.
LinearFit fit_trials(const std::vector<Trial>& trials) {
  for (const std::int64_t floor : {8, 1}) {
    std::vector<double> x, y;
    for (const auto& t : trials) {
      if (t.fits && t.batch >= floor) x.push_back(static_cast<double>(t.batch)), y.push_back(static_cast<double>(t.peak_bytes));
    }
    try {
      return fit_linear(x, y);
    } catch (const std::invalid_argument&) {
    }
  }
  return {};
}

nlohmann::json stats_json(const backend::AllocatorStats& s) {
  return {{"available", s.available},
          {"allocated", {s.allocated.current, s.allocated.peak}},
          {"reserved", {s.reserved.current, s.reserved.peak}},
          {"active", {s.active.current, s.active.peak}},
          {"live_allocations", s.live_allocations},
          {"alloc_retries", s.alloc_retries},
          {"ooms", s.ooms},
          {"device_total", s.device_total},
          {"device_free", s.device_free}};
}

backend::AllocatorStats stats_from(const nlohmann::json& j) {
  backend::AllocatorStats s;
  s.available = j.at("available").get<bool>();
  s.allocated = {j.at("allocated").at(0).get<std::int64_t>(), j.at("allocated").at(1).get<std::int64_t>()};
  s.reserved = {j.at("reserved").at(0).get<std::int64_t>(), j.at("reserved").at(1).get<std::int64_t>()};
  s.active = {j.at("active").at(0).get<std::int64_t>(), j.at("active").at(1).get<std::int64_t>()};
  s.live_allocations = j.at("live_allocations").get<std::int64_t>();
  s.alloc_retries = j.at("alloc_retries").get<std::int64_t>();
  s.ooms = j.at("ooms").get<std::int64_t>();
  s.device_total = j.at("device_total").get<std::int64_t>();
  s.device_free = j.at("device_free").get<std::int64_t>();
  return s;
}

std::string b(double bytes) { return units::format_bytes(bytes); }

}  // namespace

nlohmann::json trial_to_json(const Trial& t) {
  return {{"batch", t.batch},         {"fits", t.fits},   {"peak_bytes", t.peak_bytes},
          {"seconds", t.seconds},     {"error", t.error}, {"allocator", t.allocator}};
}

Trial trial_from_json(const nlohmann::json& j) {
  Trial t;
  t.batch = j.at("batch").get<std::int64_t>();
  t.fits = j.at("fits").get<bool>();
  t.peak_bytes = j.at("peak_bytes").get<std::int64_t>();
  t.seconds = j.at("seconds").get<double>();
  t.error = j.at("error").get<std::string>();
  t.allocator = j.value("allocator", "");
  return t;
}

bool ProbeReport::recovered() const {
  if (recovery_losses.empty() || !recovery_error.empty()) return false;
  for (const double loss : recovery_losses) {
    if (!std::isfinite(loss)) return false;
  }
  return true;
}

bool ProbeReport::ok() const {
  const bool classified = oom.kind == ErrorKind::kOutOfMemoryGpu || oom.kind == ErrorKind::kOutOfMemoryCpu;
  return oom_reproduced && classified && search.largest > 0 && recovered();
}

ProbeReport run_memory_probe(const torch::Device& device, const ProbeOptions& options) {
  const auto start = Clock::now();
  const backend::CpuAllocationCounter counter;  // CPU tensor bytes, counted exactly

  ProbeReport report;
  report.model = options.model;
  report.device = device_string(device);
  report.device_name = device.is_cuda() ? backend::cuda_device_info(device.index()).name : "CPU";
  report.threads = at::get_num_threads();

  train::TrainStep step(models::make_model(options.model), device);
  {  // warm-up: momentum buffer, kernels, library workspaces, worker threads
    data::HostBatch warm = random_batch(1);
    step.run(warm).item<float>();
    backend::synchronize(device);
  }
  TrialBatches batches(device.is_cuda());
  if (device.is_cuda()) {
    // What an earlier probe in this process left cached (resnet18's ~73 GB on an H100 before net's probe,
    // 2026-11-27) is free to this allocator but not to the device: return it, so free_at_start is the device's.
    backend::release_cached_memory(device);
    const auto stats = backend::allocator_stats(device);
    report.capacity_bytes = stats.device_total;
    report.free_at_start = stats.device_free;
  }
  if (options.on_ready) report.capacity_bytes = options.on_ready();
  // What tensors can have: the budget on the CPU; on a GPU what is free plus what the allocator holds.
  // Tensors that exist already (parameters, gradients, momentum) count in the peaks but are mapped already.
  const backend::AllocatorStats ready = backend::allocator_stats(device);
  const double tensor_capacity = device.is_cuda() ? static_cast<double>(report.free_at_start + ready.reserved.current)
                                                  : static_cast<double>(report.capacity_bytes + ready.allocated.current);

  const auto record_oom = [&report](const Trial& t) {
    if (report.oom_reproduced) return;
    report.oom_reproduced = true;
    report.oom_batch = t.batch;
    report.oom_message = t.error;
    report.oom_allocator = t.allocator;
  };
  const auto trial = [&](std::int64_t batch) {
    for (const auto& known : options.known_trials) {
      if (known.batch != batch) continue;
      if (!known.fits) record_oom(known);
      return known;
    }
    if (options.on_trial_start) options.on_trial_start(batch);
    Trial t;
    t.batch = batch;
    backend::release_cached_memory(device);
    backend::reset_allocator_peaks(device);
    const auto t0 = Clock::now();
    try {
      data::HostBatch host = batches.get(batch);
      step.run(host).item<float>();  // reading the loss waits for the step
      backend::synchronize(device);
      t.fits = true;
      t.peak_bytes = backend::allocator_stats(device).allocated.peak;
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
      t.error = raw_message(e);
      t.allocator = oom_allocator(e);
      t.peak_bytes = backend::allocator_stats(device).allocated.peak;  // live tensors when it failed
      if (!report.oom_reproduced) report.at_oom = backend::allocator_stats(device);
      record_oom(t);
      step.zero_grad();  // a backward that failed part-way leaves partial gradients
    }
    t.seconds = seconds_since(t0);
    if (options.on_trial) options.on_trial(t);
    return t;
  };
  SearchOptions search = options.search;
  if (!search.predict) {
    // A failed trial bounds what tensors can really have: what was live when it failed plus what it
    // asked for (this includes what the budget loses to non-tensor memory: code, caches, workspaces).
    search.predict = [tensor_capacity](const std::vector<Trial>& trials) {
      MemoryBreakdown model;
      model.fit = fit_trials(trials);
      double capacity = tensor_capacity;
      for (const auto& t : trials) {
        const auto requested = parse_oom(t.error).requested;
        if (!t.fits && requested) capacity = std::min(capacity, static_cast<double>(t.peak_bytes + *requested));
      }
      return model.fit.points >= 2 ? model.batch_for(capacity) : std::int64_t{0};
    };
  }
  report.search = find_max_batch(trial, search);
  if (report.oom_reproduced) report.oom = explain_error(report.oom_message);

  report.breakdown.parameters = step.parameter_bytes();
  report.breakdown.gradients = step.parameter_bytes();
  report.breakdown.optimizer_state = step.optimizer_state_bytes();
  report.breakdown.fit = fit_trials(report.search.trials);

  // Recovery: the same process and model train on at the largest batch. Memory use is not exactly
  // reproducible (new shapes add library caches and JIT code; allocator state differs), so if the
  // boundary batch fails again the batch steps down by the tolerance, at most twice, and says so.
  report.recovery_batch = report.search.largest;
  const auto step_down = [&] {
    const auto down = static_cast<std::int64_t>(static_cast<double>(report.recovery_batch) * (1.0 - std::max(search.tolerance, 0.02)));
    report.recovery_batch = std::min(down, report.recovery_batch - 1);
  };
  for (int attempt = 0; attempt < 3 && report.recovery_batch > 0; ++attempt) {
    backend::release_cached_memory(device);
    backend::reset_allocator_peaks(device);
    report.recovery_losses.clear();
    report.recovery_error.clear();
    const auto failed_before = std::find_if(options.known_recovery_failures.begin(), options.known_recovery_failures.end(),
                                            [&](const Trial& t) { return t.batch == report.recovery_batch; });
    if (failed_before != options.known_recovery_failures.end()) {
      report.recovery_error = failed_before->error;
      step_down();
      continue;
    }
    if (options.on_recovery_start) options.on_recovery_start(report.recovery_batch);
    try {
      data::HostBatch host = batches.get(report.recovery_batch);
      for (int i = 0; i < options.recovery_steps; ++i) report.recovery_losses.push_back(step.run(host).item<float>());
      break;
    } catch (const std::exception& e) {
      report.recovery_error = raw_message(e);
      if (!is_out_of_memory(e)) break;
      step.zero_grad();
      step_down();
    }
  }
  report.after = backend::allocator_stats(device);
  report.seconds = seconds_since(start);
  return report;
}

std::string probe_to_json(const ProbeReport& r, int indent) {
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& t : r.search.trials) {
    trials.push_back(trial_to_json(t));
  }
  const auto& f = r.breakdown.fit;
  const double capacity = static_cast<double>(r.capacity_bytes);
  nlohmann::json j = {
      {"model", r.model},
      {"device", r.device},
      {"device_name", r.device_name},
      {"threads", r.threads},
      {"capacity_bytes", r.capacity_bytes},
      {"free_at_start", r.free_at_start},
      {"oom",
       {{"reproduced", r.oom_reproduced},
        {"batch", r.oom_batch},
        {"message", r.oom_message},
        {"allocator", r.oom_allocator},
        {"kind", kind_name(r.oom.kind)},
        {"explanation", r.oom.explanation},
        {"needed_bytes_by_fit", f.points >= 2 ? f.at(static_cast<double>(r.oom_batch)) : 0.0},
        {"stats", stats_json(r.at_oom)}}},
      {"breakdown",
       {{"parameters", r.breakdown.parameters},
        {"gradients", r.breakdown.gradients},
        {"optimizer_state", r.breakdown.optimizer_state},
        {"fixed_other", f.points >= 2 ? r.breakdown.fixed_other() : 0.0},
        {"per_sample", r.breakdown.per_sample()},
        {"fit", {{"intercept", f.intercept}, {"slope", f.slope}, {"r2", f.r2}, {"points", f.points}}},
        {"batch_for_capacity", r.breakdown.batch_for(capacity)}}},
      {"search",
       {{"largest", r.search.largest},
        {"smallest_failing", r.search.smallest_failing},
        {"doubling_trials", r.search.doubling_trials},
        {"bisection_trials", r.search.bisection_trials},
        {"trials", trials}}},
      {"recovery", {{"batch", r.recovery_batch}, {"losses", r.recovery_losses}, {"error", r.recovery_error}, {"ok", r.recovered()}}},
      {"after", stats_json(r.after)},
      {"seconds", r.seconds},
      {"child_restarts", r.child_restarts},
      {"ok", r.ok()}};
  return j.dump(indent);
}

ProbeReport probe_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  ProbeReport r;
  r.model = j.at("model").get<std::string>();
  r.device = j.at("device").get<std::string>();
  r.device_name = j.at("device_name").get<std::string>();
  r.threads = j.at("threads").get<int>();
  r.capacity_bytes = j.at("capacity_bytes").get<std::int64_t>();
  r.free_at_start = j.at("free_at_start").get<std::int64_t>();
  const auto& oom = j.at("oom");
  r.oom_reproduced = oom.at("reproduced").get<bool>();
  r.oom_batch = oom.at("batch").get<std::int64_t>();
  r.oom_message = oom.at("message").get<std::string>();
  r.oom_allocator = oom.value("allocator", "");
  if (r.oom_reproduced) r.oom = explain_error(r.oom_message);
  r.at_oom = stats_from(oom.at("stats"));
  const auto& bd = j.at("breakdown");
  r.breakdown.parameters = bd.at("parameters").get<std::int64_t>();
  r.breakdown.gradients = bd.at("gradients").get<std::int64_t>();
  r.breakdown.optimizer_state = bd.at("optimizer_state").get<std::int64_t>();
  const auto& fit = bd.at("fit");
  r.breakdown.fit = {fit.at("intercept").get<double>(), fit.at("slope").get<double>(), fit.at("r2").get<double>(),
                     fit.at("points").get<int>()};
  const auto& search = j.at("search");
  r.search.largest = search.at("largest").get<std::int64_t>();
  r.search.smallest_failing = search.at("smallest_failing").get<std::int64_t>();
  r.search.doubling_trials = search.at("doubling_trials").get<int>();
  r.search.bisection_trials = search.at("bisection_trials").get<int>();
  for (const auto& t : search.at("trials")) r.search.trials.push_back(trial_from_json(t));
  const auto& rec = j.at("recovery");
  r.recovery_batch = rec.at("batch").get<std::int64_t>();
  r.recovery_losses = rec.at("losses").get<std::vector<double>>();
  r.recovery_error = rec.at("error").get<std::string>();
  r.after = stats_from(j.at("after"));
  r.seconds = j.at("seconds").get<double>();
  r.child_restarts = j.value("child_restarts", 0);
  return r;
}

std::string memory_summary_table(const backend::AllocatorStats& s) {
  if (!s.available) return "  (no allocator statistics on this device)\n";
  std::string out = fmt::format("  {:<12} {:>12} {:>12}\n", "", "current", "peak");
  const auto row = [&](const char* name, const backend::MemoryStat& m) {
    out += fmt::format("  {:<12} {:>12} {:>12}\n", name, b(static_cast<double>(m.current)), b(static_cast<double>(m.peak)));
  };
  row("allocated", s.allocated);
  if (s.device_total >= 0) {  // the CPU has no cache: reserved and active would repeat allocated
    row("reserved", s.reserved);
    row("active", s.active);
  }
  out += fmt::format("  live allocations {}", s.live_allocations);
  if (s.device_total >= 0) {
    out += fmt::format(", allocation retries {}, OOMs raised {}, device free {} of {}", s.alloc_retries, s.ooms,
                       b(static_cast<double>(s.device_free)), b(static_cast<double>(s.device_total)));
  }
  return out + "\n";
}

std::string probe_text(const ProbeReport& r) {
  const bool gpu = r.device.rfind("cuda", 0) == 0;
  const double capacity = static_cast<double>(r.capacity_bytes);
  std::string out = fmt::format("== {} on {} ({}, {} threads): {} of {}\n", r.model, r.device, r.device_name, r.threads,
                                gpu ? "device memory" : "address-space budget for the step", b(capacity));
  if (!r.oom_reproduced) {
    out += fmt::format("not reproduced: no out-of-memory error up to batch {} (raise --max-batch)\n", r.search.largest);
  } else {
    out += fmt::format("reproduced: a training step at batch {} failed with the real error:\n  {}\n", r.oom_batch, r.oom_message);
    if (!r.oom_allocator.empty()) out += fmt::format("allocator that failed: {}\n", r.oom_allocator);
    out += fmt::format("kind: {}\n", kind_name(r.oom.kind));
    const auto& bd = r.breakdown;
    std::string why = r.oom.explanation;
    if (!gpu) {
      why += fmt::format(" Here the limit is the child's address-space budget of {} (--cpu-limit); at the failure live "
                         "tensors had peaked at {}.",
                         b(capacity), b(static_cast<double>(r.at_oom.allocated.peak)));
    } else {
      why += fmt::format(" At the failure: live tensors peaked at {}, the allocator reserved {}.",
                         b(static_cast<double>(r.at_oom.allocated.peak)), b(static_cast<double>(r.at_oom.reserved.current)));
    }
    out += "explanation: " + why + "\n";
    if (bd.fit.points >= 2) {
      out += fmt::format(
          "memory of one step: parameters {}, gradients {}, optimizer state (momentum) {}, other fixed {}, and "
          "{} per sample for activations and the batch (fit over {} batch sizes, R^2 {:.4f})\n",
          b(static_cast<double>(bd.parameters)), b(static_cast<double>(bd.gradients)), b(static_cast<double>(bd.optimizer_state)),
          b(bd.fixed_other()), b(bd.per_sample()), bd.fit.points, bd.fit.r2);
      out += fmt::format("so batch {} needs about {}; {} {} -> about {} fit by the fit\n", r.oom_batch,
                         b(bd.fit.at(static_cast<double>(r.oom_batch))),
                         gpu ? "this device has" : "the address-space budget (--cpu-limit) is", b(capacity),
                         bd.batch_for(capacity));
    }
  }
  const auto& s = r.search;
  if (s.largest > 0) {
    out += fmt::format("largest batch that runs a full step: {}", s.largest);
    if (s.smallest_failing > 0) out += fmt::format(" ({} failed)", s.smallest_failing);
    out += fmt::format(", found in {} trials ({} doubling, {} bisecting)\n", s.trials.size(), s.doubling_trials, s.bisection_trials);
  } else {
    out += fmt::format("largest batch: none; even batch {} does not fit\n", s.trials.empty() ? 0 : s.trials.front().batch);
  }
  std::string trials = "trials:";
  for (const auto& t : s.trials) {
    const bool library = !t.fits && !t.allocator.empty() && t.allocator.rfind("LibTorch", 0) != 0;
    trials += fmt::format(" {}{}", t.batch, t.fits ? "" : library ? "(OOM in " + t.allocator + ")" : "(OOM)");
  }
  out += trials + "\n";
  if (r.recovered()) {
    std::string losses;
    for (const double loss : r.recovery_losses) losses += fmt::format("{}{:.3f}", losses.empty() ? "" : ", ", loss);
    out += fmt::format(
        "recovery: the same process trained {} more steps at batch {}{} (losses {}): "
        "nothing lost, no restart\n",
        r.recovery_losses.size(), r.recovery_batch,
        r.oom_reproduced ? " after the error" : " (no error to recover from)", losses);
    if (r.recovery_batch != s.largest) {
      out += fmt::format("  (batch {} ran during the search but failed on the second run: memory use is not exactly "
                         "reproducible, e.g. caches and JIT code for new shapes; so it stepped down)\n",
                         s.largest);
    }
  } else if (s.largest > 0) {
    out += "recovery FAILED: " + (r.recovery_error.empty() ? std::string("non-finite loss") : r.recovery_error) + "\n";
  }
  if (r.child_restarts > 0) {
    out += fmt::format("the probe's process was ended {} time(s) by a library that ran out of memory outside LibTorch's "
                       "allocator (see the trials marked with it); each time a new process replayed the trials and went on\n",
                       r.child_restarts);
  }
  out += "memory summary after the recovery steps:\n" + memory_summary_table(r.after);
  out += fmt::format("({:.1f} s)\n", r.seconds);
  return out;
}

std::string probe_chart(const ProbeReport& r) {
  report::MemoryChartInput in;
  in.model = r.model;
  in.device = r.device;
  in.device_name = r.device_name;
  in.gpu = r.device.rfind("cuda", 0) == 0;
  in.capacity_bytes = r.capacity_bytes;
  for (const Trial& t : r.search.trials) in.trials.push_back({t.batch, t.fits, t.peak_bytes});
  if (r.breakdown.fit.points >= 2) {
    in.fit_intercept = r.breakdown.fit.intercept;
    in.fit_slope = r.breakdown.fit.slope;
    in.fit_points = r.breakdown.fit.points;
  }
  in.largest = r.search.largest;
  in.smallest_failing = r.search.smallest_failing;
  return report::memory_chart(in);
}

}  // namespace torchprobe::diagnostics
