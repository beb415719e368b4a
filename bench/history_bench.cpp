// torchprobe-history-bench: how the history scales: 1 000 runs x 200 benchmarks (5 repetitions each, 1% noise,
// a 10% step in every tenth benchmark at run 600) added one run at a time, then `show` and `html` over them.
// Run in this order (registration order); the database lives in a temporary directory.
#include <benchmark/benchmark.h>

#include <random>

#include "history_docs.h"
#include "torchprobe/history/analysis.h"
#include "torchprobe/history/dashboard.h"
#include "torchprobe/history/store.h"
#include "torchprobe/io.h"
#include "torchprobe/temp_dir.h"

namespace {

namespace docs = torchprobe::history_docs;
namespace history = torchprobe::history;

constexpr int kRuns = 1000, kBenchmarks = 200, kStepAt = 600;

torchprobe::TempDir& work() {
  static torchprobe::TempDir dir("torchprobe-history-bench");
  return dir;
}
std::string database() { return work().file("history.sqlite"); }

std::string run_document(std::mt19937_64& rng, int run) {
  std::vector<docs::Bench> benchmarks;
  for (int b = 0; b < kBenchmarks; ++b) {
    const double base = 1.0 + b, ms = base * (b % 10 == 0 && run >= kStepAt ? 1.10 : 1.0);
    if (b % 4 == 0) {
      benchmarks.push_back({fmt::format("train_step/model{}/cpu/batch:64/dtype:fp32/layout:nchw", b), docs::samples(rng, ms, 0.01, 5),
                            {{"images_per_s", 64000.0 / ms}, {"epoch_s", ms * 0.78}}});
    } else {
      benchmarks.push_back({fmt::format("op/op{}/cpu/n:1024/dtype:fp32", b), docs::samples(rng, ms, 0.01, 5), {}});
    }
  }
  return docs::document("bench-host", docs::run_date(run), benchmarks);
}

void BM_history_add(benchmark::State& state) {
  std::mt19937_64 rng(1);
  history::Store store(database(), history::Store::Mode::kCreate);
  int run = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::string doc = run_document(rng, run);
    state.ResumeTiming();
    store.add_documents({{"run.json", doc}}, {fmt::format("{:040x}", run), "main", ""});
    ++run;
  }
  state.counters["runs"] = static_cast<double>(store.run_count());
}
BENCHMARK(BM_history_add)->Iterations(kRuns)->Unit(benchmark::kMillisecond);

void BM_history_show(benchmark::State& state) {
  size_t changes = 0;
  for (auto _ : state) {
    const history::Store store(database(), history::Store::Mode::kExisting);
    const auto reports = history::analyze(store.series({}), {}, [&store](const history::Point& p) { return store.samples(p.benchmark_id); });
    benchmark::DoNotOptimize(history::show_console(reports, 10));
    changes = 0;
    for (const auto& r : reports) changes += r.changes.size();
  }
  state.counters["change_points"] = static_cast<double>(changes);
}
BENCHMARK(BM_history_show)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_history_html(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    const history::Store store(database(), history::Store::Mode::kExisting);
    const auto reports = history::analyze(store.series({}), {}, [&store](const history::Point& p) { return store.samples(p.benchmark_id); });
    const std::string html = history::dashboard_html(reports, store.latest_runs({}), {});
    torchprobe::io::write_file_set(work().file("site"), {{"index.html", html}});
    bytes = html.size();
  }
  state.counters["html_MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_history_html)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
