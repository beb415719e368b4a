#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "history_test_util.h"
#include "test_util.h"
#include "torchprobe/history/store.h"
#include "torchprobe/input_error.h"
#include "torchprobe/io.h"

using torchprobe::InputError;

namespace {

const std::string kFixtures = TORCHPROBE_REPORT_FIXTURE_DIR;

void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

}  // namespace

// ---- the store ----

// Every field of a run's context comes back from the database as it was read from the file; the document sets every
// one (trust warnings, run status, devices), so a field the store leaves out on either side fails here.
TEST(HistoryStore, EveryContextFieldComesBackAsStored) {
  std::string text = torchprobe::io::read_text_file(kFixtures + "/trust.json");
  const std::string opening = "\"context\": {";
  ASSERT_NE(text.find(opening), std::string::npos);
  text.insert(text.find(opening) + opening.size(), "\n    \"torchprobe_run\": \"complete (2 of 2 benchmarks)\",");
  const auto original = torchprobe::report::parse_results(text, "trust.json").contexts.at(0);
  TempDir dir("torchprobe-history");
  {
    history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
    store.add_documents({{"trust.json", text}}, labels("abc1234"));
  }
  const history::Store store(dir.file("h.sqlite"), history::Store::Mode::kExisting);
  const auto contexts = store.latest_runs({}).contexts;
  ASSERT_EQ(contexts.size(), 1u);
  const auto& back = contexts[0];
  const std::pair<const char*, std::string torchprobe::report::RunContext::*> fields[] = {
      {"source", &torchprobe::report::RunContext::source},
      {"host", &torchprobe::report::RunContext::host},
      {"date", &torchprobe::report::RunContext::date},
      {"executable", &torchprobe::report::RunContext::executable},
      {"build_type", &torchprobe::report::RunContext::build_type},
      {"torchprobe_version", &torchprobe::report::RunContext::torchprobe_version},
      {"libtorch_version", &torchprobe::report::RunContext::libtorch_version},
      {"threads", &torchprobe::report::RunContext::threads},
      {"blas", &torchprobe::report::RunContext::blas},
      {"data", &torchprobe::report::RunContext::data},
      {"run_status", &torchprobe::report::RunContext::run_status},
  };
  for (const auto& [name, field] : fields) {
    EXPECT_FALSE((original.*field).empty()) << name << ": the document should set it";
    EXPECT_EQ(back.*field, original.*field) << name;
  }
  EXPECT_EQ(back.num_cpus, original.num_cpus);
  ASSERT_EQ(original.trust_warnings.size(), 2u);
  EXPECT_EQ(back.trust_warnings, original.trust_warnings);
  ASSERT_FALSE(original.devices.empty());
  ASSERT_EQ(back.devices.size(), original.devices.size());
  for (size_t d = 0; d < back.devices.size(); ++d) {
    EXPECT_EQ(back.devices[d].id, original.devices[d].id);
    EXPECT_EQ(back.devices[d].name, original.devices[d].name);
    EXPECT_EQ(back.devices[d].details, original.devices[d].details);
  }
}

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
  EXPECT_THROW_WITH(
      store.add_documents({{"good.json", run(rng, 0, 5.0)}, {"bad.json", "{\"benchmarks\": 3}"}}, labels("c1")),
      InputError, "bad.json");
  EXPECT_THROW_WITH(store.add_documents({{"good.json", run(rng, 0, 5.0)}}, labels("c1", "main", "yesterday")),
                    InputError, "--date: 'yesterday' is not an ISO 8601 date");
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
    EXPECT_NE(
        std::string(e.what()).find("history database " + truncated + " is corrupt (database disk image is malformed"),
        std::string::npos)
        << e.what();
  }

  // SQLite's header overwritten: not a database any more, for reading and for adding.
  std::string header = good;
  header.replace(0, 16, "not a database!!");
  const std::string overwritten = dir.file("overwritten.sqlite");
  torchprobe::io::write_text_file(overwritten, header);
  for (const auto mode : {history::Store::Mode::kExisting, history::Store::Mode::kCreate}) {
    EXPECT_THROW_WITH(
        history::Store(overwritten, mode), history::DatabaseError,
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
    EXPECT_THROW_WITH(writer.add_documents({{"a.json", run(rng, 0, 5.0)}}, labels("c1")), history::DatabaseError,
                      locked);
    EXPECT_EQ(history::Store(db, history::Store::Mode::kExisting).run_count(), 0);  // WAL: readers do not wait
    sqlite3_close(holder);
    EXPECT_TRUE(writer.add_documents({{"a.json", run(rng, 0, 5.0)}}, labels("c1")).at(0).added);
  }
  // A process holding the whole file (exclusive locking mode): opening it, to read or to add, gives up.
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; DELETE FROM runs", nullptr, nullptr,
                         nullptr),
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
    ASSERT_EQ(
        sqlite3_exec(writer, "PRAGMA wal_autocheckpoint = 0; INSERT INTO meta(key, value) VALUES('note', 'unmerged')",
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
  if (WEXITSTATUS(status) == 77)
    GTEST_SKIP() << "cannot make a directory read-only here (root without mount namespaces)";
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

// store.h: an empty commit and an empty branch each come from git, whichever of the two was given.
TEST(HistoryStore, GitFillsTheCommitOrTheBranchThatIsMissing) {
  TempDir dir("torchprobe-git");
  const std::string repo = dir.file("repo");
  const std::string git = "git -c user.name=t -c user.email=t@example.invalid -C '" + repo + "' ";
  if (std::system(("git init -q -b feature-x '" + repo + "' 2>/dev/null").c_str()) != 0 ||
      std::system((git + "commit -q --allow-empty -m first").c_str()) != 0) {
    GTEST_SKIP() << "git is not usable here";
  }
  const auto old_dir = std::filesystem::current_path();
  std::filesystem::current_path(repo);
  const history::RunLabels given_commit = history::complete_labels({"abc1234", "", ""});
  const history::RunLabels given_branch = history::complete_labels({"", "release", ""});
  const history::RunLabels given_none = history::complete_labels({"", "", ""});
  const bool detached = std::system((git + "checkout -q --detach").c_str()) == 0;
  const history::RunLabels on_detached = history::complete_labels({"", "", ""});
  std::filesystem::current_path(old_dir);
  EXPECT_EQ(given_commit.commit, "abc1234");
  EXPECT_EQ(given_commit.branch, "feature-x");
  EXPECT_EQ(given_branch.branch, "release");
  EXPECT_EQ(given_branch.commit.size(), 40u) << given_branch.commit;
  EXPECT_EQ(given_none.commit, given_branch.commit);
  EXPECT_EQ(given_none.branch, "feature-x");
  ASSERT_TRUE(detached);
  EXPECT_EQ(on_detached.commit, given_branch.commit);
  EXPECT_EQ(on_detached.branch, "") << "a detached HEAD (a CI checkout) has no branch";
}

// Two commits run on one day with a date-only --date: the one added later is the newer (check gates it).
TEST(HistoryStore, RunsOfOneDateKeepTheOrderTheyWereAddedIn) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  std::mt19937_64 rng(5);
  store.add_documents({{"a.json", run(rng, 0, 5.0)}}, labels("c1", "main", "2026-11-22"));
  store.add_documents({{"b.json", run(rng, 1, 5.0)}}, labels("c2", "main", "2026-11-22"));
  store.add_documents({{"c.json", run(rng, 2, 5.0)}}, labels("c3", "main", "2026-11-22"));
  EXPECT_EQ(store.newest_commit(), "c3");
  const auto all = store.series({});
  const auto* step = find(all, kStep);
  ASSERT_NE(step, nullptr);
  ASSERT_EQ(step->points.size(), 3u);
  EXPECT_EQ(step->points[0].commit, "c1");
  EXPECT_EQ(step->points[1].commit, "c2");
  EXPECT_EQ(step->points[2].commit, "c3");
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
  // Every day is one day after the day before, across each month's end and each year's: January and February
  // belong to their own year (a March-based calendar moves them). Leap years, common ones and century ends.
  for (const int first : {1970, 1999, 2023, 2099}) {
    ASSERT_TRUE(history::parse_iso8601(fmt::format("{}-12-31", first - 1), s));
    for (int year = first; year <= first + 5; ++year) {
      for (int month = 1; month <= 12; ++month) {
        for (int day = 1; day <= 31; ++day) {
          const std::string date = fmt::format("{:04}-{:02}-{:02}", year, month, day);
          std::int64_t next = 0;
          if (!history::parse_iso8601(date, next)) continue;
          EXPECT_EQ(next - s, 86400) << date;
          s = next;
        }
      }
    }
  }
  ASSERT_TRUE(history::parse_iso8601("2026-02-10", s));
  EXPECT_EQ(s, 1770681600);
  // An offset's minutes and a time's seconds count (India's +05:30, Nepal's +05:45).
  ASSERT_TRUE(history::parse_iso8601("2026-11-22T13:30:00+05:30", s));
  EXPECT_EQ(s, 1795334400);
  ASSERT_TRUE(history::parse_iso8601("2026-11-22T02:15:00-05:45", s));
  EXPECT_EQ(s, 1795334400);
  ASSERT_TRUE(history::parse_iso8601("2026-11-22T08:01:30Z", s));
  EXPECT_EQ(s, 1795334490);
  ASSERT_TRUE(history::parse_iso8601("2026-11-22T23:59:59Z", s));
  EXPECT_EQ(s, 1795305600 + 86399);
  EXPECT_FALSE(history::parse_iso8601("2026-11-22T24:00:00Z", s));
  for (const char* bad :
       {"", "2026", "2026-13-01", "2026-11-22T25:00", "2026-11-22T08:00:00 junk", "22/11/2026", "2026-02-30",
        "2025-02-29", "1900-02-29", "2026-04-31", "2026-11-31", "2026-01-32", "2026-00-10"}) {
    EXPECT_FALSE(history::parse_iso8601(bad, s)) << bad;
  }
}
