#pragma once
// The performance history: every run's results in one SQLite database (Debian's libsqlite3), so a
// series per benchmark, device and host can be read back across commits. One run is one results file.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "torchprobe/input_error.h"
#include "torchprobe/report/results.h"

namespace torchprobe::history {

/// The history database cannot be used: not a database, corrupt, locked past the busy timeout, unreadable,
/// unwritable, a schema this torchprobe does not read. Bad input, not a slowdown: the CLI exits 2 on it.
/// The message names the database file and says what is wrong.
class DatabaseError : public InputError {
 public:
  using InputError::InputError;
};

/// The schema this torchprobe writes and reads; a database with a newer one is refused (DatabaseError).
constexpr int kSchemaVersion = 1;
constexpr const char* kDefaultDatabase = "reports/history.sqlite";
/// How long a store waits for another process's lock before it gives up (DatabaseError): 60 s, or the
/// milliseconds in this environment variable.
constexpr const char* kBusyTimeoutVariable = "TORCHPROBE_HISTORY_BUSY_TIMEOUT_MS";
/// The one rule for what a commit id may be, stated in the messages that refuse one.
constexpr const char* kCommitIdRule = "1 to 128 characters, none of them whitespace or a control character";

/// Checks a commit id given to `add --commit` or `check --commit` (or found by git): kCommitIdRule, so a SHA, a
/// prefix of one, a tag or a label like "c08" (`check` finds it by its full id or a unique prefix of at least 4
/// characters). Throws InputError naming `flag` and the rule.
void check_commit_id(const std::string& commit, const std::string& flag = "--commit");

/// What a run is filed under besides its results. Empty fields take defaults (see complete_labels).
struct RunLabels {
  std::string commit;
  std::string branch;
  std::string date;  ///< ISO 8601; empty: the results file's own date (Google Benchmark's context.date)
};

/// Fills an empty commit and branch from `git` in the current directory (HEAD, its branch; a detached HEAD
/// has no branch). Throws InputError when no commit is given and git cannot tell one.
RunLabels complete_labels(RunLabels labels);

/// Seconds since 1970-01-01T00:00:00Z of an ISO 8601 date ("2026-11-22", "2026-11-22T08:00:00Z",
/// "2026-11-22T08:00:00.123+01:00", "2026-11-22 08:00:00+0100"); false when it is not one.
bool parse_iso8601(const std::string& text, std::int64_t& seconds);

/// What `add` did with one file.
struct AddOutcome {
  std::string source;      ///< the file (or the name given for a document)
  bool added = false;      ///< false: the same run (same file contents) was already stored
  std::int64_t run_id = 0;
  std::string commit;      ///< the stored run's commit (the earlier one when it was already stored)
  std::string host;
  size_t benchmarks = 0;
};

/// A commit as the history prints and draws it (show, check, the dashboard): its first 10 characters.
inline std::string short_commit(const std::string& commit) { return commit.substr(0, 10); }

/// One point of a series: one benchmark's result in one run.
struct Point {
  std::int64_t run_id = 0;
  std::string commit, branch, date;
  double median_ms = 0.0;
  double cv_pct = -1.0;  ///< over the run's repetitions; < 0 with fewer than 2
  int repetitions = 0;
  std::int64_t benchmark_id = 0;    ///< its row in the store (Store::samples)
  std::vector<double> samples_ms;  ///< the run's repetitions, where a caller filled them in (Store::series does not)
};

/// A benchmark on one device of one host, its runs oldest first (by date, then by the order added).
struct Series {
  std::string name, device, host;
  std::vector<Point> points;
};

/// Which series and runs to read.
struct SeriesQuery {
  std::string filter;                  ///< RE2 pattern searched in the benchmark name; empty: all
  std::vector<std::string> branches;   ///< runs of these branches only; empty: every branch
  std::string also_commit;             ///< with branches: runs of this commit too (a PR run checked on main's history)
};

class Store {
 public:
  /// kCreate: for writing, made (with its directory) when missing. kExisting: an existing database, opened
  /// read-only; where its write-ahead-log index cannot be made (a read-only file system or directory), read
  /// as it is on disk (SQLite's immutable mode).
  enum class Mode { kCreate, kExisting };
  /// Opens the database at `path`. Throws InputError for a missing database in kExisting mode, DatabaseError
  /// for a file that is not a torchprobe history database, a corrupt, locked or unreadable one, or a schema
  /// version this torchprobe does not know. Every later SQLite failure is a DatabaseError too.
  Store(const std::string& path, Mode mode);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  /// Adds each file as one run, all in one transaction (all or none). A file whose contents were stored
  /// before is not stored again. Throws InputError for an unreadable or malformed file or a bad date.
  std::vector<AddOutcome> add_files(const std::vector<std::string>& paths, const RunLabels& labels);
  /// The same for documents given as (source name, Google Benchmark JSON text).
  std::vector<AddOutcome> add_documents(const std::vector<std::pair<std::string, std::string>>& documents,
                                        const RunLabels& labels);

  /// Every series the query selects, sorted by name, device and host; failed results are not points.
  std::vector<Series> series(const SeriesQuery& query) const;
  /// The stored repetitions (real time, ms) of a point's benchmark row, in order.
  std::vector<double> samples(std::int64_t benchmark_id) const;
  /// The commit of the newest run (by date, then the order added); "" for an empty store.
  std::string newest_commit() const;
  /// The stored commit that `commit` names: its full id (any valid one, see check_commit_id) or a unique prefix
  /// of at least 4 characters. Throws InputError for an invalid id and when none or several match.
  std::string resolve_commit(const std::string& commit) const;
  /// The newest run of each host on the given branches (every branch when empty), as one result set
  /// (device labels device@host when there are several hosts), for the device comparison.
  report::ResultSet latest_runs(const std::vector<std::string>& branches) const;
  /// The number of runs stored.
  std::int64_t run_count() const;
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace torchprobe::history
