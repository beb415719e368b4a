#include <gtest/gtest.h>
#include <sched.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "history_docs.h"
#include "test_util.h"
#include "torchprobe/history/analysis.h"
#include "torchprobe/history/change_points.h"
#include "torchprobe/history/dashboard.h"
#include "torchprobe/history/store.h"
#include "torchprobe/input_error.h"
#include "torchprobe/io.h"

namespace history = torchprobe::history;
namespace docs = torchprobe::history_docs;
using torchprobe::InputError;

namespace {

const std::string kFixtures = TORCHPROBE_REPORT_FIXTURE_DIR;
constexpr const char* kStep = "train_step/net/cpu/batch:64/dtype:fp32/layout:nchw";
constexpr const char* kAdd = "op/add/cpu/n:1024";

history::RunLabels labels(const std::string& commit, const std::string& branch = "main", const std::string& date = "") {
  return {commit, branch, date};
}

// A run of two benchmarks: the training step at `step_ms` (5 repetitions, 1% noise), the op at 2 ms.
std::string run(std::mt19937_64& rng, int i, double step_ms, const std::string& host = "host-a") {
  return docs::document(host, docs::run_date(i),
                        {{kStep, docs::samples(rng, step_ms, 0.01, 5), {{"images_per_s", 64000.0 / step_ms}, {"epoch_s", step_ms * 0.78}}},
                         {kAdd, docs::samples(rng, 2.0, 0.01, 5), {}}});
}

// Adds `values.size()` runs whose training step has these medians; run i's commit is "c<i>", except the
// last `new_runs` runs, which are runs of one commit, "new".
void add_series(history::Store& store, const std::vector<double>& values, size_t new_runs = 0) {
  std::mt19937_64 rng(1);
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string commit = i + new_runs >= values.size() ? "new" : fmt::format("c{:04}", i);
    store.add_documents({{"run" + std::to_string(i) + ".json", run(rng, static_cast<int>(i), values[i])}}, labels(commit));
  }
}

// n medians of `before`, then `after` from index `at` on.
std::vector<double> step_values(size_t n, size_t at, double before, double after) {
  std::vector<double> values(n, before);
  std::fill(values.begin() + static_cast<std::ptrdiff_t>(at), values.end(), after);
  return values;
}

// What show and check do: the store's series, analysed with its repetitions read as the size rule needs them.
std::vector<history::SeriesReport> analyze_stored(const history::Store& store, const history::ChangePointOptions& options = {}) {
  return history::analyze(store.series({}), options, [&store](const history::Point& p) { return store.samples(p.benchmark_id); });
}

const history::Series* find(const std::vector<history::Series>& all, const std::string& name) {
  for (const auto& s : all) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// n points of relative noise `cv` around 100, times (1 + step) from each index in `steps`.
std::vector<double> planted(std::uint64_t seed, size_t n, double cv, const std::vector<std::pair<size_t, double>>& steps) {
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

void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

}  // namespace

// ---- the store ----

TEST(HistoryStore, RoundTripKeepsEveryRepetitionCounterAndTheContext) {
  TempDir dir("torchprobe-history");
  const std::string db = dir.file("sub/dir/h.sqlite");
  const std::string file = kFixtures + "/results.json";
  const auto original = torchprobe::report::load_results({file});
  {
    history::Store store(db, history::Store::Mode::kCreate);
    const auto outcomes = store.add_files({file}, labels("abc1234", "main", "2026-11-22T09:00:00+01:00"));
    ASSERT_EQ(outcomes.size(), 1u);
    EXPECT_TRUE(outcomes[0].added);
    EXPECT_EQ(outcomes[0].benchmarks, original.results.size());
    EXPECT_EQ(outcomes[0].host, original.contexts[0].host);
  }
  const history::Store store(db, history::Store::Mode::kExisting);  // read back from the file
  EXPECT_EQ(store.run_count(), 1);
  EXPECT_EQ(store.newest_commit(), "abc1234");
  EXPECT_EQ(store.resolve_commit("abc1"), "abc1234");
  const auto latest = store.latest_runs({});
  ASSERT_EQ(latest.results.size(), original.results.size());
  ASSERT_EQ(latest.contexts.size(), 1u);
  const auto& ctx = latest.contexts[0];
  EXPECT_EQ(ctx.host, original.contexts[0].host);
  EXPECT_EQ(ctx.torchprobe_version, original.contexts[0].torchprobe_version);
  EXPECT_EQ(ctx.libtorch_version, original.contexts[0].libtorch_version);
  EXPECT_EQ(ctx.trust_warnings, original.contexts[0].trust_warnings);
  ASSERT_EQ(ctx.devices.size(), original.contexts[0].devices.size());
  for (size_t d = 0; d < ctx.devices.size(); ++d) EXPECT_EQ(ctx.devices[d].name, original.contexts[0].devices[d].name);
  for (size_t i = 0; i < latest.results.size(); ++i) {
    const auto& a = latest.results[i];
    const auto& b = original.results[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.device_name, b.device_name);
    EXPECT_EQ(a.samples_ms, b.samples_ms) << a.name;
    EXPECT_EQ(a.counters, b.counters) << a.name;
    EXPECT_DOUBLE_EQ(a.median_ms, b.median_ms);
    EXPECT_DOUBLE_EQ(a.cv_pct, b.cv_pct);
    EXPECT_EQ(a.error, b.error);
  }
  // Series: one point per benchmark that ran, dated as given.
  const auto series = store.series({});
  size_t ran = 0;
  for (const auto& r : original.results) ran += r.failed() ? 0 : 1;
  EXPECT_EQ(series.size(), ran);
  for (const auto& s : series) {
    ASSERT_EQ(s.points.size(), 1u);
    EXPECT_EQ(s.points[0].commit, "abc1234");
    EXPECT_EQ(s.points[0].branch, "main");
    EXPECT_EQ(s.points[0].date, "2026-11-22T09:00:00+01:00");
  }
}

TEST(HistoryStore, AddingTheSameRunTwiceStoresItOnce) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  std::mt19937_64 rng(7);
  const std::string doc = run(rng, 0, 5.0);
  EXPECT_TRUE(store.add_documents({{"a.json", doc}}, labels("c1")).at(0).added);
  const auto again = store.add_documents({{"a-copy.json", doc}, {"b.json", run(rng, 1, 5.0)}}, labels("c2"));
  EXPECT_FALSE(again.at(0).added);
  EXPECT_EQ(again.at(0).commit, "c1");  // the run it already is
  EXPECT_TRUE(again.at(1).added);
  EXPECT_EQ(store.run_count(), 2);
  EXPECT_EQ(find(store.series({}), kStep)->points.size(), 2u);
}

TEST(HistoryStore, AMalformedFileAddsNothingOfItsBatch) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  std::mt19937_64 rng(7);
  EXPECT_THROW_WITH(store.add_documents({{"good.json", run(rng, 0, 5.0)}, {"bad.json", "{\"benchmarks\": 3}"}}, labels("c1")),
                    InputError, "bad.json");
  EXPECT_THROW_WITH(store.add_documents({{"good.json", run(rng, 0, 5.0)}}, labels("c1", "main", "yesterday")), InputError,
                    "--date: 'yesterday' is not an ISO 8601 date");
  EXPECT_EQ(store.run_count(), 0);
}

// Two processes add at once, each run in its own transaction, one file in both: every run once, nothing lost.
TEST(HistoryStore, ConcurrentAddsFromTwoProcesses) {
  TempDir dir("torchprobe-history");
  const std::string db = dir.file("h.sqlite");
  constexpr int kRunsEach = 25;
  std::mt19937_64 shared_rng(99);
  const std::string shared = run(shared_rng, 999, 5.0);
  std::vector<pid_t> children;
  for (int child = 0; child < 2; ++child) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        history::Store store(db, history::Store::Mode::kCreate);  // both may create the schema at once
        std::mt19937_64 rng(static_cast<std::uint64_t>(child) + 1);
        for (int i = 0; i < kRunsEach; ++i) {
          store.add_documents({{"r.json", run(rng, child * 100 + i, 5.0)}}, labels(fmt::format("p{}-{}", child, i)));
          if (i == kRunsEach / 2) store.add_documents({{"shared.json", shared}}, labels("shared"));
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", child, e.what());
        rc = 1;
      }
      _exit(rc);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a child failed (see stderr)";
  }
  const history::Store store(db, history::Store::Mode::kExisting);
  EXPECT_EQ(store.run_count(), 2 * kRunsEach + 1);
  EXPECT_EQ(find(store.series({}), kStep)->points.size(), static_cast<size_t>(2 * kRunsEach + 1));
}

TEST(HistoryStore, RefusesNewerSchemasOtherFilesAndMissingDatabases) {
  TempDir dir("torchprobe-history");
  const std::string db = dir.file("h.sqlite");
  { history::Store store(db, history::Store::Mode::kCreate); }
  exec_sql(db, "UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  EXPECT_THROW_WITH(history::Store(db, history::Store::Mode::kExisting), history::DatabaseError,
                    "history database " + db + " has history schema version 99, newer than this torchprobe's (1)");
  EXPECT_THROW_WITH(history::Store(db, history::Store::Mode::kCreate), history::DatabaseError, "newer");
  exec_sql(db, "UPDATE meta SET value = 'x' WHERE key = 'schema_version'");
  EXPECT_THROW_WITH(history::Store(db, history::Store::Mode::kExisting), history::DatabaseError,
                    "unknown history schema version 'x'");

  const std::string text = dir.file("notes.txt");
  torchprobe::io::write_text_file(text, std::string(4096, 'x'));
  EXPECT_THROW_WITH(history::Store(text, history::Store::Mode::kExisting), history::DatabaseError,
                    "history database " + text + " is not a torchprobe history database (file is not a database)");
  const std::string other = dir.file("other.sqlite");
  exec_sql(other, "CREATE TABLE t(x)");
  EXPECT_THROW_WITH(history::Store(other, history::Store::Mode::kCreate), history::DatabaseError,
                    "history database " + other + " is not a torchprobe history database (it has other tables)");
  EXPECT_THROW_WITH(history::Store(other, history::Store::Mode::kExisting), history::DatabaseError,
                    "is not a torchprobe history database (no meta table)");
  EXPECT_THROW_WITH(history::Store(dir.file("none.sqlite"), history::Store::Mode::kExisting), InputError,
                    "no history database there");
}

// Every way a database can be unusable is a DatabaseError (exit 2) naming the file, never a failed run (exit 1,
// which `history check` keeps for a slowdown).
TEST(HistoryStore, CorruptTruncatedAndMisplacedDatabasesAreDatabaseErrors) {
  TempDir dir("torchprobe-history");
  const std::string db = dir.file("h.sqlite");
  {
    history::Store store(db, history::Store::Mode::kCreate);
    add_series(store, std::vector<double>(30, 5.0));
  }
  const std::string good = torchprobe::io::read_text_file(db);
  ASSERT_GT(good.size(), 8u * 4096u);

  // The first pages (the schema) intact, the tables' pages cut off.
  const std::string truncated = dir.file("truncated.sqlite");
  torchprobe::io::write_text_file(truncated, good.substr(0, 4 * 4096));
  try {
    const history::Store store(truncated, history::Store::Mode::kExisting);
    (void)store.series({});
    (void)store.latest_runs({});
    ADD_FAILURE() << "a truncated database was read without an error";
  } catch (const history::DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find("history database " + truncated + " is corrupt (database disk image is malformed"),
              std::string::npos)
        << e.what();
  }

  // SQLite's header overwritten: not a database any more, for reading and for adding.
  std::string header = good;
  header.replace(0, 16, "not a database!!");
  const std::string overwritten = dir.file("overwritten.sqlite");
  torchprobe::io::write_text_file(overwritten, header);
  for (const auto mode : {history::Store::Mode::kExisting, history::Store::Mode::kCreate}) {
    EXPECT_THROW_WITH(history::Store(overwritten, mode), history::DatabaseError,
                      "history database " + overwritten + " is not a torchprobe history database (file is not a database)");
  }
  EXPECT_EQ(torchprobe::io::read_text_file(overwritten), header) << "add must not touch a file that is not a database";

  EXPECT_THROW_WITH(history::Store(dir.path().string(), history::Store::Mode::kExisting), history::DatabaseError,
                    "is a directory, not a database file");
}

// Another process's lock, held past the busy timeout, is a DatabaseError that says so (not a slowdown).
TEST(HistoryStore, ALockHeldPastTheBusyTimeoutIsADatabaseError) {
  TempDir dir("torchprobe-history");
  const std::string db = dir.file("h.sqlite");
  { history::Store store(db, history::Store::Mode::kCreate); }
  ASSERT_EQ(setenv(history::kBusyTimeoutVariable, "50", 1), 0);
  const std::string locked = "history database " + db + " is locked by another process (gave up after 50 ms; " +
                             history::kBusyTimeoutVariable + " sets the wait)";
  std::mt19937_64 rng(5);
  // SQLite locks per connection, also within one process. Another writer's transaction: add waits, then gives up.
  {
    history::Store writer(db, history::Store::Mode::kCreate);
    sqlite3* holder = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE; DELETE FROM runs", nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(holder);
    EXPECT_THROW_WITH(writer.add_documents({{"a.json", run(rng, 0, 5.0)}}, labels("c1")), history::DatabaseError, locked);
    EXPECT_EQ(history::Store(db, history::Store::Mode::kExisting).run_count(), 0);  // WAL: readers do not wait
    sqlite3_close(holder);
    EXPECT_TRUE(writer.add_documents({{"a.json", run(rng, 0, 5.0)}}, labels("c1")).at(0).added);
  }
  // A process holding the whole file (exclusive locking mode): opening it, to read or to add, gives up.
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; DELETE FROM runs", nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(holder);
  EXPECT_THROW_WITH(history::Store(db, history::Store::Mode::kExisting), history::DatabaseError, locked);
  EXPECT_THROW_WITH(history::Store(db, history::Store::Mode::kCreate), history::DatabaseError, locked);
  sqlite3_close(holder);
  EXPECT_EQ(history::Store(db, history::Store::Mode::kExisting).run_count(), 1);

  ASSERT_EQ(setenv(history::kBusyTimeoutVariable, "soon", 1), 0);
  EXPECT_THROW_WITH(history::Store(db, history::Store::Mode::kExisting), InputError,
                    "TORCHPROBE_HISTORY_BUSY_TIMEOUT_MS: 'soon' is not a number of milliseconds");
  unsetenv(history::kBusyTimeoutVariable);
}

namespace {

// Makes `dir` read-only for this process, as well as the host allows: root ignores file modes, so it gets a
// read-only bind mount in a mount namespace of its own; anyone else chmod. Call in a child. False: cannot.
bool make_read_only(const std::string& dir, const std::string& file) {
  if (geteuid() != 0) return chmod(file.c_str(), 0444) == 0 && chmod(dir.c_str(), 0555) == 0;
  return unshare(CLONE_NEWNS) == 0 && mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
         mount(dir.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) == 0 &&
         mount(nullptr, dir.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0;
}

}  // namespace

// show, check and html read a database they cannot write (a read-only directory or file system: SQLite cannot
// make the WAL index there, so the store reads the file as it is); add says it cannot write.
TEST(HistoryStore, ReadsADatabaseItCannotWrite) {
  TempDir dir("torchprobe-history");
  const std::string ro = dir.file("ro");
  const std::string db = ro + "/h.sqlite";
  {
    history::Store store(db, history::Store::Mode::kCreate);
    add_series(store, step_values(20, 14, 5.0, 6.0));
  }
  // A copy taken while a writer had a commit in its WAL not yet merged into the file: the file alone is an
  // older state.
  const std::string unmerged = ro + "/unmerged.sqlite";
  {
    sqlite3* writer = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &writer), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(writer, "PRAGMA wal_autocheckpoint = 0; INSERT INTO meta(key, value) VALUES('note', 'unmerged')",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    torchprobe::io::write_text_file(unmerged, torchprobe::io::read_text_file(db));
    torchprobe::io::write_text_file(unmerged + "-wal", torchprobe::io::read_text_file(db + "-wal"));
    sqlite3_close(writer);
  }
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!make_read_only(ro, db)) _exit(77);
    if (access(ro.c_str(), W_OK) == 0) _exit(78);
    int rc = 0;
    try {
      const history::Store store(db, history::Store::Mode::kExisting);
      if (store.run_count() != 20 || store.resolve_commit("c0003") != "c0003" || store.series({}).size() != 2) rc = 1;
      try {
        const history::Store old_state(unmerged, history::Store::Mode::kExisting);
        std::fprintf(stderr, "read a database without the commit in its WAL\n");
        rc = 1;
      } catch (const history::DatabaseError& e) {
        if (std::string(e.what()).find("history database " + unmerged + " cannot be read here: a writer left runs in " +
                                       unmerged + "-wal") == std::string::npos) {
          std::fprintf(stderr, "unexpected message: %s\n", e.what());
          rc = 1;
        }
      }
      try {
        history::Store writer(db, history::Store::Mode::kCreate);
        std::fprintf(stderr, "opened an unwritable database for writing\n");
        rc = 1;
      } catch (const history::DatabaseError& e) {
        if (std::string(e.what()).find("history database " + db + " cannot be written") == std::string::npos) {
          std::fprintf(stderr, "unexpected message: %s\n", e.what());
          rc = 1;
        }
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "reading the read-only database: %s\n", e.what());
      rc = 1;
    }
    _exit(rc);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "cannot make a directory read-only here (root without mount namespaces)";
  ASSERT_NE(WEXITSTATUS(status), 78) << "the directory was still writable";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see stderr";
  chmod(ro.c_str(), 0755);  // the TempDir removes it
}

// `add` and `check` share one rule for a commit id: what one stores the other finds, what one refuses the
// other refuses with the same words.
TEST(HistoryStore, AddAndCheckAgreeOnWhatACommitIdIs) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  std::mt19937_64 rng(6);
  store.add_documents({{"a.json", run(rng, 0, 5.0)}}, labels("c08"));
  store.add_documents({{"b.json", run(rng, 1, 5.0)}}, labels("c08f00d"));
  EXPECT_EQ(store.resolve_commit("c08"), "c08");  // its full id, though it is also a prefix of c08f00d
  EXPECT_EQ(store.resolve_commit("c08f"), "c08f00d");
  const std::string rule = std::string("is not a commit id (a commit id is ") + history::kCommitIdRule + ")";
  for (const std::string& bad : {std::string(), std::string("a b"), std::string("c08\n"), std::string("c\t08"),
                                std::string(129, 'a'), std::string("c0\x7f")}) {
    EXPECT_THROW_WITH(store.add_documents({{"c.json", run(rng, 2, 5.0)}}, labels(bad)), InputError, "--commit: '");
    EXPECT_THROW_WITH(store.add_documents({{"c.json", run(rng, 2, 5.0)}}, labels(bad)), InputError, rule);
    EXPECT_THROW_WITH(store.resolve_commit(bad), InputError, rule);
    if (!bad.empty()) EXPECT_THROW_WITH(history::complete_labels(labels(bad)), InputError, rule);
  }
  EXPECT_THROW_WITH(history::check_commit_id("c08\n"), InputError, "--commit: 'c08\\x0a' is not a commit id");
  EXPECT_NO_THROW(history::check_commit_id(std::string(128, 'a')));
  EXPECT_NO_THROW(history::check_commit_id("v1.2.3-rc1+build/5"));
  EXPECT_EQ(store.run_count(), 2);
}

TEST(HistoryStore, SeriesAreOrderedByDateAndFilteredByNameAndBranch) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  std::mt19937_64 rng(3);
  // Added out of order, and the string order of the dates is not their order: the series follows UTC.
  store.add_documents({{"b.json", run(rng, 0, 5.0)}}, labels("utc2345", "main", "2026-01-01T23:45:00Z"));
  store.add_documents({{"a.json", run(rng, 1, 5.0)}}, labels("utc2330", "main", "2026-01-02T00:30:00+01:00"));
  store.add_documents({{"pr.json", run(rng, 2, 5.0)}}, labels("pr", "feature", "2026-01-03"));
  const auto all = store.series({});
  ASSERT_EQ(all.size(), 2u);
  const auto* step = find(all, kStep);
  ASSERT_EQ(step->points.size(), 3u);
  EXPECT_EQ(step->points[0].commit, "utc2330");
  EXPECT_EQ(step->points[1].commit, "utc2345");
  EXPECT_EQ(step->points[2].commit, "pr");
  EXPECT_EQ(store.newest_commit(), "pr");
  const auto ops = store.series({"^op/", {}, ""});
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, kAdd);
  EXPECT_EQ(find(store.series({"", {"main"}, ""}), kStep)->points.size(), 2u);
  EXPECT_EQ(find(store.series({"", {"main"}, "pr"}), kStep)->points.size(), 3u);  // main's history + the PR's run
  EXPECT_THROW_WITH(store.series({"(", {}, ""}), InputError, "--filter: invalid regular expression");
  EXPECT_THROW_WITH(store.resolve_commit("zzzz"), InputError, "no run of commit 'zzzz'");
  EXPECT_THROW_WITH(store.resolve_commit("ut"), InputError,
                    "no run of commit 'ut' in " + dir.file("h.sqlite") +
                        " (a commit is found by its full id or a unique prefix of at least 4 characters)");
  EXPECT_EQ(store.resolve_commit("pr"), "pr");  // a full id of any length
  EXPECT_THROW_WITH(store.resolve_commit("utc2"), InputError, "ambiguous");
}

TEST(HistoryStore, Iso8601Dates) {
  std::int64_t s = 0;
  ASSERT_TRUE(history::parse_iso8601("1970-01-01T00:00:00Z", s));
  EXPECT_EQ(s, 0);
  ASSERT_TRUE(history::parse_iso8601("2026-11-22T08:00:00+00:00", s));
  EXPECT_EQ(s, 1795334400);
  ASSERT_TRUE(history::parse_iso8601("2026-11-22T09:00:00.123+01:00", s));
  EXPECT_EQ(s, 1795334400);
  ASSERT_TRUE(history::parse_iso8601("2026-11-22 03:00:00-0500", s));
  EXPECT_EQ(s, 1795334400);
  ASSERT_TRUE(history::parse_iso8601("2026-11-22", s));
  EXPECT_EQ(s, 1795305600);
  // The month's last day, leap years included, and one past it.
  EXPECT_TRUE(history::parse_iso8601("2024-02-29", s));
  EXPECT_TRUE(history::parse_iso8601("2000-02-29", s));
  EXPECT_TRUE(history::parse_iso8601("2026-04-30", s));
  EXPECT_TRUE(history::parse_iso8601("2026-12-31", s));
  for (const char* bad : {"", "2026", "2026-13-01", "2026-11-22T25:00", "2026-11-22T08:00:00 junk", "22/11/2026",
                          "2026-02-30", "2025-02-29", "1900-02-29", "2026-04-31", "2026-11-31", "2026-01-32", "2026-00-10"}) {
    EXPECT_FALSE(history::parse_iso8601(bad, s)) << bad;
  }
}

// ---- change points ----

TEST(HistoryChangePoints, DivergenceMatchesTheDefinition) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(10.0, 2.0);
  std::vector<double> x;
  for (int i = 0; i < 23; ++i) x.push_back(i == 7 ? x.back() : noise(rng));  // with a tie
  const auto q = history::divergence(x);
  const size_t n = x.size();
  for (size_t tau = 1; tau < n; ++tau) {
    double between = 0, left = 0, right = 0;
    for (size_t i = 0; i < tau; ++i) {
      for (size_t j = tau; j < n; ++j) between += std::fabs(x[i] - x[j]);
      for (size_t k = i + 1; k < tau; ++k) left += std::fabs(x[i] - x[k]);
    }
    for (size_t j = tau; j < n; ++j) {
      for (size_t k = j + 1; k < n; ++k) right += std::fabs(x[j] - x[k]);
    }
    const double m = static_cast<double>(tau), k = static_cast<double>(n - tau);
    const double expected = m * k / (m + k) * (2 * between / (m * k) - (m > 1 ? left / (m * (m - 1) / 2) : 0) -
                                               (k > 1 ? right / (k * (k - 1) / 2) : 0));
    EXPECT_NEAR(q[tau], expected, 1e-9 * std::max(1.0, std::fabs(expected))) << "tau " << tau;
  }
}

TEST(HistoryChangePoints, ATenPercentStepInOnePercentNoiseIsFoundAtItsCommit) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto values = planted(seed, 60, 0.01, {{37, 0.10}});
    const auto found = history::e_divisive(values, {});
    ASSERT_EQ(found.size(), 1u) << "seed " << seed;
    EXPECT_EQ(found[0].index, 37u) << "seed " << seed;
    EXPECT_LT(found[0].p_value, 0.05);
  }
}

TEST(HistoryChangePoints, TwoStepsAreBothFound) {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const auto values = planted(seed, 80, 0.01, {{25, 0.10}, {55, -0.08}});
    const auto found = history::e_divisive(values, {});
    ASSERT_EQ(found.size(), 2u) << "seed " << seed;
    EXPECT_EQ(found[0].index, 25u);
    EXPECT_EQ(found[1].index, 55u);
  }
}

// The false-positive rate on pure noise, measured over 200 seeds (stated in docs/history.md).
TEST(HistoryChangePoints, PureNoiseRarelyYieldsAChangePoint) {
  constexpr int kSeeds = 200;
  int with_defaults = 0, test_alone = 0, noisy_defaults = 0;
  history::ChangePointOptions significance_only;
  significance_only.min_change_pct = 0.0;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    with_defaults += history::e_divisive(planted(seed, 60, 0.01, {}), {}).empty() ? 0 : 1;
    test_alone += history::e_divisive(planted(seed, 60, 0.01, {}), significance_only).empty() ? 0 : 1;
    noisy_defaults += history::e_divisive(planted(seed, 60, 0.05, {}), {}).empty() ? 0 : 1;
  }
  const auto rate = [&](int count) { return 100.0 * count / kSeeds; };
  std::printf("false positives over %d noise series of 60 points: 1%% noise %.1f%%, 5%% noise %.1f%% (defaults); "
              "1%% noise with --min-change 0 (the permutation test alone) %.1f%%\n",
              kSeeds, rate(with_defaults), rate(noisy_defaults), rate(test_alone));
  RecordProperty("false_positive_pct_defaults", std::to_string(rate(with_defaults)));
  RecordProperty("false_positive_pct_test_alone", std::to_string(rate(test_alone)));
  EXPECT_LE(rate(with_defaults), 1.0);
  EXPECT_LE(rate(noisy_defaults), 10.0);
  EXPECT_LE(rate(test_alone), 10.0);  // alpha = 0.05 with the permutation test's own error
}

// How many runs of history a change on the newest runs needs (stated in docs/history.md): one run of the new
// commit must stand out among ~100 positions for p < 0.05 (the end-anchored and the full search share alpha);
// two runs need 10 runs before them, three need 6.
TEST(HistoryChangePoints, AChangeOnTheNewestRunsNeedsEnoughHistory) {
  const auto found_at = [](size_t history_runs, size_t new_runs, std::uint64_t seed) {
    const auto values = planted(seed, history_runs + new_runs, 0.01, {{history_runs, 0.10}});
    for (const auto& c : history::e_divisive(values, {})) {
      if (c.index == history_runs) return true;
    }
    return false;
  };
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    EXPECT_TRUE(found_at(100, 1, seed)) << "seed " << seed;
    EXPECT_FALSE(found_at(80, 1, seed)) << "seed " << seed;
    EXPECT_FALSE(found_at(30, 1, seed)) << "seed " << seed;  // p >= 2/31: never significant
    EXPECT_TRUE(found_at(10, 2, seed)) << "seed " << seed;
    EXPECT_FALSE(found_at(8, 2, seed)) << "seed " << seed;
    EXPECT_TRUE(found_at(6, 3, seed)) << "seed " << seed;
    EXPECT_FALSE(found_at(4, 3, seed)) << "seed " << seed;
  }
}

// A 10% regression fixed fifteen commits later: judged on the whole series the two sides' medians barely
// differ, so both changes must come from the splits inside it.
TEST(HistoryChangePoints, ARegressionLaterUndoneIsFoundTwice) {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const auto found = history::e_divisive(planted(seed, 45, 0.01, {{15, 0.10}, {30, 1.0 / 1.10 - 1.0}}), {});
    ASSERT_EQ(found.size(), 2u) << "seed " << seed;
    EXPECT_EQ(found[0].index, 15u) << "seed " << seed;
    EXPECT_EQ(found[1].index, 30u) << "seed " << seed;
  }
}

TEST(HistoryChangePoints, SmallStepsBelowTheMinimumAreNotReported) {
  const auto values = planted(3, 60, 0.002, {{30, 0.03}});
  EXPECT_TRUE(history::e_divisive(values, {}).empty());
  history::ChangePointOptions two_pct;
  two_pct.min_change_pct = 2.0;
  ASSERT_EQ(history::e_divisive(values, two_pct).size(), 1u);
  EXPECT_EQ(history::e_divisive(values, two_pct)[0].index, 30u);
  EXPECT_TRUE(history::e_divisive({1.0, 2.0}, {}).empty());  // too short to split
  EXPECT_TRUE(history::e_divisive({}, {}).empty());
}

// ---- every documented threshold and exact value (tests/README.md) ----

// Q of {1, 2, 4, 8}, by hand from the definition (checked with python3 fractions): tau = 1: (3/4)(2*11/3 - 12/3) = 5/2;
// tau = 2: (4/4)(2*18/4 - 1 - 4) = 4; tau = 3: (3/4)(2*17/3 - 6/3) = 7.
TEST(HistoryChangePoints, DivergenceOfATinySeriesByHand) {
  const auto q = history::divergence({1.0, 2.0, 4.0, 8.0});
  ASSERT_EQ(q.size(), 4u);
  EXPECT_EQ(q[0], 0.0);
  EXPECT_DOUBLE_EQ(q[1], 2.5);
  EXPECT_DOUBLE_EQ(q[2], 4.0);
  EXPECT_DOUBLE_EQ(q[3], 7.0);
}

// p = (1 + exceeding) / (1 + permutations): a step no shuffle of 10 + 10 points can match (a shuffle matches it with
// probability 2 / C(20, 10) = 1e-5) has zero exceeding permutations, so p is exactly 1 / (1 + permutations), never 0.
TEST(HistoryChangePoints, ThePermutationPHasAFloorOfOneOverPermutationsPlusOne) {
  const auto step = step_values(20, 10, 1.0, 2.0);
  for (const int permutations : {199, 99, 39}) {
    history::ChangePointOptions options;
    options.permutations = permutations;
    const auto found = history::e_divisive(step, options);
    ASSERT_EQ(found.size(), 1u) << permutations;
    EXPECT_EQ(found[0].index, 10u);
    EXPECT_EQ(found[0].p_value, 1.0 / (1.0 + permutations)) << permutations;
  }
  EXPECT_EQ(history::e_divisive(step, {})[0].p_value, 0.005);
}

// A split is a change point when p < alpha: with 19 permutations the smallest p is 1/20 = alpha exactly, which is
// not below it; alpha one step above 0.05 accepts the same split, with p = 0.05.
TEST(HistoryChangePoints, APEqualToAlphaIsNotAChangePoint) {
  const auto step = step_values(20, 10, 1.0, 2.0);
  history::ChangePointOptions options;
  options.permutations = 19;
  options.alpha = 0.05;
  EXPECT_TRUE(history::e_divisive(step, options).empty());
  options.alpha = std::nextafter(0.05, 0.0);
  EXPECT_TRUE(history::e_divisive(step, options).empty());
  options.alpha = std::nextafter(0.05, 1.0);
  const auto found = history::e_divisive(step, options);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].p_value, 0.05);
}

// "A change point whose medians differ by less than --min-change is dropped": exactly 5.0% (100 -> 105, and
// 105 -> 99.75 down) stays, both in e_divisive and in what show/check report (analyze); a minimum one step above drops it.
TEST(HistoryChangePoints, AChangeOfExactlyTheMinimumIsKept) {
  for (const auto& [before, after, pct] : std::vector<std::tuple<double, double, double>>{{100.0, 105.0, 5.0}, {105.0, 99.75, -5.0}}) {
    const auto values = step_values(20, 10, before, after);
    history::Series series{kStep, "cpu", "host-a", {}};
    for (size_t i = 0; i < values.size(); ++i) {
      history::Point p;
      p.commit = fmt::format("c{:04}", i);
      p.median_ms = values[i];
      series.points.push_back(p);
    }
    const auto changes_with = [&](double min_change_pct) {
      history::ChangePointOptions options;
      options.min_change_pct = min_change_pct;
      const auto found = history::e_divisive(values, options);
      const auto reports = history::analyze({series}, options);
      EXPECT_EQ(reports.at(0).changes.size(), found.size()) << min_change_pct;
      return reports.at(0).changes;
    };
    const auto at = changes_with(5.0);
    ASSERT_EQ(at.size(), 1u) << before << " -> " << after;
    EXPECT_EQ(at[0].index, 10u);
    EXPECT_EQ(at[0].change_pct, pct);
    EXPECT_EQ(changes_with(std::nextafter(5.0, 0.0)).size(), 1u);
    EXPECT_TRUE(changes_with(std::nextafter(5.0, 10.0)).empty()) << before << " -> " << after;
  }
}

// ---- show and check ----

TEST(HistoryAnalysis, ShowAndCheckFindTheSlowdownOnTheNewestCommit) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  add_series(store, step_values(40, 38, 5.0, 5.6), /*new_runs=*/2);  // two runs of the newest commit, 12% slower
  const auto reports = analyze_stored(store);
  ASSERT_EQ(reports.size(), 2u);
  const history::SeriesReport* step = nullptr;
  for (const auto& r : reports) step = r.series.name == kStep ? &r : step;
  ASSERT_NE(step, nullptr);
  ASSERT_EQ(step->changes.size(), 1u);
  const auto& change = step->changes[0];
  EXPECT_EQ(change.commit, "new");
  EXPECT_EQ(change.index, 38u);
  EXPECT_NEAR(change.before_ms, 5.0, 0.1);
  EXPECT_NEAR(change.after_ms, 5.6, 0.1);
  EXPECT_NEAR(change.change_pct, 12.0, 2.5);
  EXPECT_LT(change.p_value, 0.05);

  const auto slow = history::slowdowns_at(reports, store.newest_commit());
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].report, step);
  const std::string text = history::check_console(slow, "new", reports.size(), {});
  EXPECT_TRUE(std::regex_search(text, std::regex("SLOWER  train_step/net/cpu/batch:64/dtype:fp32/layout:nchw  device cpu  host host-a")))
      << text;
  EXPECT_NE(text.find("FAIL: 1 of 2 series slowed down at commit new"), std::string::npos) << text;
  EXPECT_TRUE(history::slowdowns_at(reports, "c0037").empty());
  EXPECT_NE(history::check_console({}, "c0038", 2, {}).find("OK: no slowdown change point at commit c0038 in 2 series"),
            std::string::npos);

  const auto json = nlohmann::json::parse(history::show_json(reports));
  ASSERT_EQ(json["benchmarks"].size(), 2u);
  for (const auto& b : json["benchmarks"]) {
    for (const char* key : {"name", "device", "host", "points", "change_points"}) EXPECT_TRUE(b.contains(key)) << key;
    EXPECT_EQ(b["points"].size(), 40u);
    if (b["name"] != kStep) continue;
    ASSERT_EQ(b["change_points"].size(), 1u);
    const auto& c = b["change_points"][0];
    for (const char* key : {"commit", "before_ms", "after_ms", "change_pct", "p_value"}) EXPECT_TRUE(c.contains(key)) << key;
    EXPECT_EQ(c["commit"], "new");
  }
  const std::string console = history::show_console(reports, 5);
  EXPECT_NE(console.find("(35 earlier runs not listed)"), std::string::npos) << console;
  EXPECT_NE(console.find("change point at new"), std::string::npos) << console;
  EXPECT_NE(console.find("2 series, 1 with change points"), std::string::npos) << console;
}

TEST(HistoryAnalysis, AFasterCommitIsNotASlowdown) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  add_series(store, step_values(40, 20, 5.0, 4.0));
  const auto reports = analyze_stored(store);
  ASSERT_EQ(find(store.series({}), kStep)->points.size(), 40u);
  EXPECT_TRUE(history::slowdowns_at(reports, "c0020").empty());
  bool found = false;
  for (const auto& r : reports) {
    for (const auto& c : r.changes) found = found || (c.commit == "c0020" && c.change_pct < -15.0);
  }
  EXPECT_TRUE(found);
}

// Every change kept could be --min-change between its neighbours: 10 -> 10.4 (+4%) -> 11 (+5.8%), 20 runs each
// with 1% noise, keeps only the second, as +7.8% over the first two segments (the +4% split's interval stays
// under 5%).
TEST(HistoryAnalysis, EveryChangeKeptIsAtLeastTheMinimumBetweenItsNeighbours) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  std::vector<double> values(20, 10.0);
  values.insert(values.end(), 20, 10.4);
  values.insert(values.end(), 20, 11.0);
  add_series(store, values);
  const auto reports = analyze_stored(store);
  const history::SeriesReport* step = nullptr;
  for (const auto& r : reports) step = r.series.name == kStep ? &r : step;
  ASSERT_NE(step, nullptr);
  ASSERT_EQ(step->changes.size(), 1u);
  EXPECT_EQ(step->changes[0].index, 40u);
  EXPECT_NEAR(step->changes[0].change_pct, 100.0 * (11.0 - 10.2) / 10.2, 0.5);
  EXPECT_LE(step->changes[0].low_pct, step->changes[0].change_pct);
  EXPECT_GE(step->changes[0].high_pct, step->changes[0].change_pct);
  for (const auto& c : step->changes) EXPECT_GE(std::fabs(c.change_pct), 5.0) << c.commit;
}

// Weakest first: 100 -> 104 (+4.0%) -> 108.3 (+4.1%), noise-free, so each interval is its point. Both splits are
// significant and too small; the weaker (+4.0% at 10) goes first, and the merged segment's median (102) makes the
// other +6.2%: one change, at 20. Dropping the stronger first would keep one at 10 instead.
TEST(HistoryChangePoints, TheWeakestSmallChangeGoesFirstAndItsNeighbourIsJudgedAgain) {
  std::vector<double> values(10, 100.0);
  values.insert(values.end(), 10, 104.0);
  values.insert(values.end(), 10, 108.3);
  history::ChangePointOptions significance_only;
  significance_only.min_change_pct = 0.0;
  ASSERT_EQ(history::e_divisive(values, significance_only).size(), 2u);  // none inside the constant segments
  EXPECT_TRUE(history::e_divisive(std::vector<double>(30, 108.3), significance_only).empty());  // Q is 0 up to rounding
  const auto found = history::e_divisive(values, {});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].index, 20u);
  EXPECT_DOUBLE_EQ(found[0].change_pct, 100.0 * (108.3 - 102.0) / 102.0);
  EXPECT_DOUBLE_EQ(found[0].high_pct, 100.0 * (108.3 - 100.0) / 100.0);  // the left side's median can be 100
}

// The practical-size rule at its boundaries: the interval must exclude zero (a bound of exactly 0 does not) and its
// far end must reach the minimum (exactly the minimum does), on either side; a minimum of 0 keeps every split.
TEST(HistoryChangePoints, LargeEnoughAtItsBoundaries) {
  using E = history::ChangeEstimate;
  EXPECT_TRUE(history::large_enough(E{3.0, 1.0, 5.0}, 5.0));
  EXPECT_FALSE(history::large_enough(E{3.0, 1.0, std::nextafter(5.0, 0.0)}, 5.0));
  EXPECT_FALSE(history::large_enough(E{3.0, 0.0, 9.0}, 5.0));
  EXPECT_TRUE(history::large_enough(E{3.0, std::nextafter(0.0, 1.0), 9.0}, 5.0));
  EXPECT_TRUE(history::large_enough(E{-3.0, -5.0, -1.0}, 5.0));
  EXPECT_FALSE(history::large_enough(E{-3.0, std::nextafter(-5.0, 0.0), -1.0}, 5.0));
  EXPECT_FALSE(history::large_enough(E{-3.0, -9.0, 0.0}, 5.0));
  EXPECT_FALSE(history::large_enough(E{0.0, 0.0, 0.0}, 5.0));
  EXPECT_TRUE(history::large_enough(E{0.0, -1.0, 1.0}, 0.0));
}

// The interval: noise-free segments give exactly the point estimate; noisy ones an interval around it that widens
// as the segments shorten; the same inputs give the same interval; repetitions widen it where a side has few runs.
TEST(HistoryChangePoints, TheBootstrapIntervalOfAChange) {
  const auto flat = step_values(20, 10, 100.0, 105.0);
  const auto exact = history::estimate_change(flat, {}, 0, 10, 20, {});
  EXPECT_DOUBLE_EQ(exact.change_pct, 5.0);
  EXPECT_DOUBLE_EQ(exact.low_pct, 5.0);
  EXPECT_DOUBLE_EQ(exact.high_pct, 5.0);
  const auto noisy = planted(7, 60, 0.02, {{30, 0.05}});
  const auto wide = history::estimate_change(noisy, {}, 27, 30, 33, {});
  const auto narrow = history::estimate_change(noisy, {}, 0, 30, 60, {});
  EXPECT_LT(narrow.low_pct, narrow.change_pct);
  EXPECT_GT(narrow.high_pct, narrow.change_pct);
  EXPECT_GT(wide.high_pct - wide.low_pct, 1.5 * (narrow.high_pct - narrow.low_pct));
  const auto again = history::estimate_change(noisy, {}, 0, 30, 60, {});
  EXPECT_EQ(again.low_pct, narrow.low_pct);
  EXPECT_EQ(again.high_pct, narrow.high_pct);
  std::vector<std::vector<double>> reps(60);
  for (size_t i = 0; i < 60; ++i) reps[i] = {noisy[i] * 0.9, noisy[i], noisy[i] * 1.1};
  // 20 runs before the change: fewer than 30, so each drawn run's repetitions are drawn too.
  const auto few = history::estimate_change(noisy, {}, 10, 30, 60, {});
  const auto wider = history::estimate_change(noisy, reps, 10, 30, 60, {});
  EXPECT_GT(wider.high_pct - wider.low_pct, few.high_pct - few.low_pct);
  EXPECT_EQ(wider.change_pct, few.change_pct);  // the estimate is the run medians' either way
  history::ChangePointOptions medians_only;
  medians_only.use_repetitions = false;
  EXPECT_EQ(history::estimate_change(noisy, reps, 10, 30, 60, medians_only).high_pct, few.high_pct);
  // 30 runs on each side: the run medians alone (they carry the within-run noise already).
  EXPECT_EQ(history::estimate_change(noisy, reps, 0, 30, 60, {}).high_pct, narrow.high_pct);
}

// The repetitions are read only where the size rule may draw them: runs within few_runs_reach() (30) of a split.
// A 10% step at run 40 of 100 reads runs 10..69 (each once); a flat series reads none.
TEST(HistoryAnalysis, RepetitionsAreReadOnlyNearASplit) {
  history::Series step{kStep, "cpu", "host-a", {}}, flat{kAdd, "cpu", "host-a", {}};
  const auto values = planted(5, 100, 0.01, {{40, 0.10}});
  for (size_t i = 0; i < values.size(); ++i) {
    history::Point p;
    p.commit = fmt::format("c{:04}", i);
    p.run_id = static_cast<std::int64_t>(i);
    p.median_ms = values[i];
    step.points.push_back(p);
    p.median_ms = 2.0 + 0.001 * static_cast<double>(i % 3);
    flat.points.push_back(p);
  }
  std::map<std::string, std::set<std::int64_t>> read;
  std::map<std::string, int> calls;
  const auto reports = history::analyze({step, flat}, {}, [&](const history::Point& p) {
    const std::string series = p.median_ms < 5.0 ? kAdd : kStep;
    read[series].insert(p.run_id);
    ++calls[series];
    return std::vector<double>{p.median_ms * 0.99, p.median_ms, p.median_ms * 1.01};
  });
  ASSERT_EQ(reports.size(), 2u);
  ASSERT_EQ(reports[0].changes.size(), 1u);
  EXPECT_EQ(reports[0].changes[0].index, 40u);
  EXPECT_EQ(history::few_runs_reach(), 30u);
  EXPECT_EQ(read[kStep].size(), 60u);
  EXPECT_EQ(*read[kStep].begin(), 10);
  EXPECT_EQ(*read[kStep].rbegin(), 69);
  EXPECT_EQ(calls[kStep], 60);
  EXPECT_TRUE(read[kAdd].empty());
}

// ---- the dashboard (its rendering is checked in a browser by history_browser_test) ----

TEST(HistoryDashboard, OneChartPerSeriesChangePointsMarkedNothingFromTheNetwork) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  add_series(store, step_values(30, 15, 5.0, 5.75));
  history::DashboardOptions options;
  options.usd_per_hour = history::parse_prices("cpu=0.36");
  const auto reports = analyze_stored(store);
  const std::string html = history::dashboard_html(reports, store.latest_runs({}), options);
  const auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<section class=\"series\""), 2u);
  EXPECT_EQ(count("class=\"change-point\" data-commit=\"c0015\""), 1u);
  EXPECT_TRUE(std::regex_search(html, std::regex(R"(>c0015 \+1[45]\.[0-9]%<title>)"))) << "no change point label";
  EXPECT_EQ(count("<input id=\"filter\""), 1u);
  EXPECT_EQ(count("id=\"device-images_per_s\""), 1u);  // the report's chart of the latest run
  // Every URL is an XML namespace: no CDN, no fetch.
  EXPECT_EQ(count("http://"), count("http://www.w3.org/2000/svg"));
  EXPECT_EQ(count("https://"), 0u);
  // Cost per epoch: epoch_s 5.75 * 0.78 s at 0.36 USD/h; per million images: 1e6 / (64000 / 5.75) s.
  EXPECT_NE(html.find(fmt::format("<td class=\"num\">{:.4g}</td>", 5.75 * 0.78 / 3600 * 0.36)), std::string::npos);
  EXPECT_NE(html.find(fmt::format("<td class=\"num\">{:.4g}</td>", 1e6 / (64000 / 5.75) / 3600 * 0.36)), std::string::npos);
}

TEST(HistoryDashboard, PricesAreDeviceEqualsUsdPerHour) {
  const auto prices = history::parse_prices("cpu=0.10,cuda:0=2.5,cpu@gpu-host=0");
  ASSERT_EQ(prices.size(), 3u);
  EXPECT_DOUBLE_EQ(prices.at("cuda:0"), 2.5);
  EXPECT_DOUBLE_EQ(prices.at("cpu@gpu-host"), 0.0);
  for (const char* bad : {"cpu", "cpu=", "=1", "cpu=abc", "cpu=-1", "cpu=1x"}) {
    EXPECT_THROW_WITH(history::parse_prices(bad), InputError, "--price: expected DEVICE=USD_PER_HOUR");
  }
  EXPECT_THROW_WITH(history::parse_prices("cpu=1,,cuda=2"), InputError, "--price: empty item");
}
