#pragma once
// Helpers shared by the history's test files (history_*_test.cpp): synthetic runs added to a store, series with
// planted steps, and what show and check do with them.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "history_docs.h"
#include "torchprobe/history/analysis.h"
#include "torchprobe/history/change_points.h"
#include "torchprobe/history/store.h"

namespace history = torchprobe::history;
namespace docs = torchprobe::history_docs;

inline constexpr const char* kStep = "train_step/net/cpu/batch:64/dtype:fp32/layout:nchw";
inline constexpr const char* kAdd = "op/add/cpu/n:1024";

inline history::RunLabels labels(const std::string& commit, const std::string& branch = "main",
                                 const std::string& date = "") {
  return {commit, branch, date};
}

// A run of two benchmarks: the training step at `step_ms` (5 repetitions, 1% noise), the op at 2 ms.
inline std::string run(std::mt19937_64& rng, int i, double step_ms, const std::string& host = "host-a") {
  return docs::document(host, docs::run_date(i),
                        {{kStep,
                          docs::samples(rng, step_ms, 0.01, 5),
                          {{"images_per_s", 64000.0 / step_ms}, {"epoch_s", step_ms * 0.78}}},
                         {kAdd, docs::samples(rng, 2.0, 0.01, 5), {}}});
}

// Adds `values.size()` runs whose training step has these medians; run i's commit is "c<i>", except the
// last `new_runs` runs, which are runs of one commit, "new".
inline void add_series(history::Store& store, const std::vector<double>& values, size_t new_runs = 0) {
  std::mt19937_64 rng(1);
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string commit = i + new_runs >= values.size() ? "new" : fmt::format("c{:04}", i);
    store.add_documents({{"run" + std::to_string(i) + ".json", run(rng, static_cast<int>(i), values[i])}},
                        labels(commit));
  }
}

// n medians of `before`, then `after` from index `at` on.
inline std::vector<double> step_values(size_t n, size_t at, double before, double after) {
  std::vector<double> values(n, before);
  std::fill(values.begin() + static_cast<std::ptrdiff_t>(at), values.end(), after);
  return values;
}

// What show and check do: the store's series, analysed with its repetitions read as the size rule needs them.
inline std::vector<history::SeriesReport> analyze_stored(const history::Store& store,
                                                         const history::ChangePointOptions& options = {}) {
  return history::analyze(store.series({}), options,
                          [&store](const history::Point& p) { return store.samples(p.benchmark_id); });
}

inline const history::Series* find(const std::vector<history::Series>& all, const std::string& name) {
  for (const auto& s : all) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// n points of relative noise `cv` around 100, times (1 + step) from each index in `steps`.
inline std::vector<double> planted(std::uint64_t seed, size_t n, double cv,
                                   const std::vector<std::pair<size_t, double>>& steps) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, cv);
  std::vector<double> values;
  for (size_t i = 0; i < n; ++i) {
    double level = 100.0;
    for (const auto& [at, step] : steps) level *= i >= at ? 1.0 + step : 1.0;
    values.push_back(level * (1.0 + noise(rng)));
  }
  return values;
}
