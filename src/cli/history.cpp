// torchprobe history add RESULTS.json... [--db FILE] [--commit SHA] [--branch NAME] [--date ISO8601]
// torchprobe history show  [--db FILE] [--filter REGEX] [--branch NAME,...] [--last N] [--json]
// torchprobe history check [--db FILE] [--commit SHA] [--branch NAME,...]
// torchprobe history html  [--db FILE] --out DIR [--price DEVICE=USD_PER_HOUR,...] [--filter REGEX] [--branch NAME,...]
#include <cstdio>
#include <memory>

#include "commands.h"
#include "torchprobe/escape.h"
#include "torchprobe/history/analysis.h"
#include "torchprobe/history/dashboard.h"
#include "torchprobe/history/store.h"
#include "torchprobe/input_error.h"
#include "torchprobe/io.h"
#include "torchprobe/report/compare.h"

namespace torchprobe::cli {
namespace {

// The flags `show`, `check` and `html` share: which database, which series, how change points are found.
struct ReadFlags {
  std::string db = history::kDefaultDatabase, filter, branches,
              min_change = fmt::format("{:g}%", history::ChangePointOptions{}.min_change_pct);
  double alpha = 0.05;
  int permutations = 199;

  /// The subcommand `name` of `history` with these flags.
  CLI::App* add_subcommand(CLI::App& history, const std::string& name, const std::string& description) {
    CLI::App* cmd = history.add_subcommand(name, description);
    cmd->add_option("--db", db, "History database")->capture_default_str();
    cmd->add_option("--filter", filter, "Only benchmarks whose name matches this regular expression (RE2)");
    cmd->add_option("--branch", branches, "Only runs of these branches (comma-separated; default: every branch)");
    cmd->add_option("--min-change", min_change, "A change point must move the median by at least this much")
        ->capture_default_str();
    cmd->add_option("--alpha", alpha, "Significance level of the permutation test")->check(in_range(1e-6, 0.5))->capture_default_str();
    cmd->add_option("--permutations", permutations, "Permutations per candidate change point")
        ->check(in_range(19, 100000))
        ->capture_default_str();
    return cmd;
  }
  history::ChangePointOptions options() const {
    history::ChangePointOptions o;
    o.min_change_pct = report::parse_percent(min_change, "--min-change");
    o.alpha = alpha;
    o.permutations = permutations;
    return o;
  }
  history::SeriesQuery query() const {
    history::SeriesQuery q;
    q.filter = filter;
    if (!branches.empty()) q.branches = list_flag("--branch", branches);
    return q;
  }
  /// The series `query` selects in `store`, with their change points.
  std::vector<history::SeriesReport> analyze(const history::Store& store, const history::SeriesQuery& query) const {
    return history::analyze(store.series(query), options(),
                            [&store](const history::Point& p) { return store.samples(p.benchmark_id); });
  }
};

Command add_command(CLI::App& history) {
  struct Flags {
    std::vector<std::string> inputs;
    std::string db = history::kDefaultDatabase;
    history::RunLabels labels;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = history.add_subcommand("add", "Store results files as runs (one per file) of a commit; a file stored before is not stored again");
  cmd->add_option("results", flags->inputs, "Google Benchmark JSON files (torchprobe-bench --benchmark_out, dist --out)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--db", flags->db, "History database (created when missing)")->capture_default_str();
  cmd->add_option("--commit", flags->labels.commit,
                  "Commit id of the run: 1 to 128 characters without whitespace (default: git rev-parse HEAD)");
  cmd->add_option("--branch", flags->labels.branch, "Its branch (default: git's current branch)");
  cmd->add_option("--date", flags->labels.date, "When it ran, ISO 8601 (default: the file's context.date)");
  return {cmd, [flags] {
            const history::RunLabels labels = history::complete_labels(flags->labels);
            history::Store store(flags->db, history::Store::Mode::kCreate);
            for (const auto& o : store.add_files(flags->inputs, labels)) {
              const std::string source = terminal_line(o.source), commit = terminal_line(o.commit);
              if (o.added) {
                std::printf("added %s as run %lld: commit %s, branch %s, host %s, %zu benchmarks\n", source.c_str(),
                            static_cast<long long>(o.run_id), commit.c_str(),
                            labels.branch.empty() ? "-" : terminal_line(labels.branch).c_str(), terminal_line(o.host).c_str(),
                            o.benchmarks);
              } else {
                std::printf("%s: already stored as run %lld (commit %s); not added again\n", source.c_str(),
                            static_cast<long long>(o.run_id), commit.c_str());
              }
            }
            const long long runs = static_cast<long long>(store.run_count());
            std::printf("%s: %lld run%s\n", store.path().c_str(), runs, runs == 1 ? "" : "s");
            return 0;
          }};
}

Command show_command(CLI::App& history) {
  struct Flags : ReadFlags {
    bool json = false;
    std::int64_t last = 10;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = flags->add_subcommand(history, "show", "Each benchmark's series per device and host (median and CV per run) and its change points");
  cmd->add_option("--last", flags->last, "Runs listed per series (0: all; --json has all)")
      ->check(in_range<std::int64_t>(0, 1000000))
      ->capture_default_str();
  cmd->add_flag("--json", flags->json, "Print JSON: {\"benchmarks\": [{name, device, host, points, change_points}]}");
  return {cmd, [flags] {
            const history::Store store(flags->db, history::Store::Mode::kExisting);
            const auto reports = flags->analyze(store, flags->query());
            const std::string text = flags->json ? history::show_json(reports) : history::show_console(reports, static_cast<size_t>(flags->last));
            std::fputs(text.c_str(), stdout);
            return 0;
          }};
}

Command check_command(CLI::App& history) {
  struct Flags : ReadFlags {
    std::string commit;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = flags->add_subcommand(
      history, "check", "CI gate on the history: exit 1 when a significant slowdown change point falls on the commit, 0 otherwise, 2 for bad "
      "input or a database that cannot be used (corrupt, locked, unreadable)");
  cmd->add_option("--commit", flags->commit,
                  "Commit to check: its full id, or a unique prefix of at least 4 characters (default: the newest run's)");
  return {cmd, [flags] {
            const history::Store store(flags->db, history::Store::Mode::kExisting);
            const std::string commit = flags->commit.empty() ? store.newest_commit() : store.resolve_commit(flags->commit);
            if (commit.empty()) throw InputError(flags->db + ": no runs stored yet");
            history::SeriesQuery query = flags->query();
            query.also_commit = commit;
            const auto reports = flags->analyze(store, query);
            const auto slowdowns = history::slowdowns_at(reports, commit);
            std::fputs(history::check_console(slowdowns, commit, reports.size(), flags->options()).c_str(), stdout);
            return slowdowns.empty() ? 0 : 1;
          }};
}

Command html_command(CLI::App& history) {
  struct Flags : ReadFlags {
    std::string out, prices;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = flags->add_subcommand(history, "html", "Write DIR/index.html: a chart per benchmark with its change points, a filter, the device table");
  cmd->add_option("--out", flags->out, "Output directory")->required();
  cmd->add_option("--price", flags->prices, "Rental prices, DEVICE=USD_PER_HOUR,... (e.g. cpu=0.10,cuda:0=2.50): adds costs");
  return {cmd, [flags] {
            history::DashboardOptions dashboard;
            if (!flags->prices.empty()) dashboard.usd_per_hour = history::parse_prices(flags->prices);
            const history::Store store(flags->db, history::Store::Mode::kExisting);
            const auto query = flags->query();
            const auto reports = flags->analyze(store, query);
            io::write_file_set(flags->out, {{"index.html", history::dashboard_html(reports, store.latest_runs(query.branches), dashboard)}});
            std::fprintf(stderr, "torchprobe: wrote %s/index.html (%zu series)\n", flags->out.c_str(), reports.size());
            return 0;
          }};
}

}  // namespace

std::vector<Command> add_history_command(CLI::App& app) {
  auto* history = app.add_subcommand("history", "Performance history: store runs in SQLite, change points across commits, a CI gate, a dashboard");
  history->require_subcommand(1);
  return {add_command(*history), show_command(*history), check_command(*history), html_command(*history)};
}

}  // namespace torchprobe::cli
