#include "torchprobe/history/store.h"

#include <fmt/format.h>
#include <re2/re2.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <thread>

#include "torchprobe/history/sqlite.h"
#include "torchprobe/input_error.h"
#include "torchprobe/io.h"

namespace torchprobe::history {
namespace {

using nlohmann::json;
using sqlite::busy_timeout_ms;
using sqlite::immutable_uri;
using sqlite::kDefaultBusyTimeoutMs;
using sqlite::Statement;
using sqlite::Transaction;

const char* const kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  run_key TEXT NOT NULL UNIQUE,          -- hash of the results file's contents: one run is stored once
  commit_sha TEXT NOT NULL,
  branch TEXT NOT NULL,
  date TEXT NOT NULL,                    -- as given (ISO 8601)
  date_utc INTEGER NOT NULL,             -- seconds since the epoch: the series order
  host TEXT NOT NULL,
  source TEXT NOT NULL,
  torchprobe_version TEXT NOT NULL,
  libtorch_version TEXT NOT NULL,
  context_json TEXT NOT NULL,            -- the whole run context: devices, threads, BLAS, trust warnings
  added_utc INTEGER NOT NULL);
CREATE INDEX runs_by_date ON runs(date_utc, id);
CREATE INDEX runs_by_commit ON runs(commit_sha);
CREATE INDEX runs_by_host ON runs(host, date_utc, id);
CREATE TABLE benchmarks(
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  device TEXT NOT NULL,
  device_name TEXT NOT NULL,
  median_ms REAL NOT NULL,
  mean_ms REAL NOT NULL,
  stddev_ms REAL NOT NULL,
  cv_pct REAL NOT NULL,
  repetitions INTEGER NOT NULL,
  aggregates_only INTEGER NOT NULL,
  failed_repetitions INTEGER NOT NULL,
  failed_reason TEXT NOT NULL,
  error TEXT NOT NULL,
  UNIQUE(run_id, name, device));
CREATE INDEX benchmarks_by_series ON benchmarks(name, device, run_id);
CREATE TABLE samples(
  benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
  repetition INTEGER NOT NULL,
  real_time_ms REAL NOT NULL,
  PRIMARY KEY(benchmark_id, repetition)) WITHOUT ROWID;
CREATE TABLE counters(
  benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY(benchmark_id, name)) WITHOUT ROWID;
)sql";

// Two FNV-1a hashes with different offsets and the length: a content key no two real files share.
std::string content_key(const std::string& text) {
  std::uint64_t a = 14695981039346656037ULL, b = 0x84222325cbf29ce4ULL;
  for (const char c : text) {
    a = (a ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    b = (b ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    b ^= b >> 29;
  }
  return fmt::format("{:016x}{:016x}-{}", a, b, text.size());
}

json context_to_json(const report::RunContext& c) {
  json devices = json::array();
  for (const auto& d : c.devices) devices.push_back({{"id", d.id}, {"name", d.name}, {"details", d.details}});
  return {{"source", c.source}, {"host", c.host}, {"date", c.date}, {"executable", c.executable},
          {"build_type", c.build_type}, {"torchprobe_version", c.torchprobe_version},
          {"libtorch_version", c.libtorch_version}, {"threads", c.threads}, {"blas", c.blas}, {"data", c.data},
          {"num_cpus", c.num_cpus}, {"devices", devices}, {"trust_warnings", c.trust_warnings},
          {"run_status", c.run_status}};
}

report::RunContext context_from_json(const std::string& text) {
  const json j = json::parse(text);
  report::RunContext c;
  const auto str = [&](const char* key) { return j.value(key, std::string()); };
  c.source = str("source");
  c.host = str("host");
  c.date = str("date");
  c.executable = str("executable");
  c.build_type = str("build_type");
  c.torchprobe_version = str("torchprobe_version");
  c.libtorch_version = str("libtorch_version");
  c.threads = str("threads");
  c.blas = str("blas");
  c.data = str("data");
  c.run_status = str("run_status");
  c.num_cpus = j.value("num_cpus", 0);
  for (const auto& d : j.value("devices", json::array())) {
    c.devices.push_back({d.value("id", std::string()), d.value("name", std::string()), d.value("details", std::string())});
  }
  c.trust_warnings = j.value("trust_warnings", std::vector<std::string>());
  return c;
}

// An id as a message may show it: control characters escaped, long ones cut.
std::string printable(const std::string& text) {
  std::string out;
  for (const char c : text.substr(0, 80)) {
    const auto u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7f ? fmt::format("\\x{:02x}", static_cast<unsigned>(u)) : std::string(1, c);
  }
  return text.size() > 80 ? out + "..." : out;
}

}  // namespace

void check_commit_id(const std::string& commit, const std::string& flag) {
  const bool bad_character = std::any_of(commit.begin(), commit.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f;  // control characters and the space; other whitespace is a control character
  });
  if (commit.empty() || commit.size() > 128 || bad_character) {
    throw InputError(fmt::format("{}: '{}' is not a commit id (a commit id is {})", flag, printable(commit), kCommitIdRule));
  }
}

struct Store::Impl {
  std::string path;
  sqlite3* db = nullptr;
  int busy_timeout = kDefaultBusyTimeoutMs;

  ~Impl() { sqlite3_close_v2(db); }

  void exec(const std::string& sql) { sqlite::exec(db, path, busy_timeout, sql); }
  Statement prepare(const std::string& sql) const { return Statement(db, sql, path, busy_timeout); }
  bool has_table(const std::string& name) const {
    Statement s = prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
    s.bind(1, name);
    return s.step();
  }
  [[noreturn]] void fail(const std::string& doing) const { sqlite::fail(db, path, busy_timeout, doing); }
  [[noreturn]] void refuse(const std::string& what) const {
    throw DatabaseError(fmt::format("history database {} {}", path, what));
  }

  // Opens `name` with `flags`; the extended result code of the first read (0: it worked, the connection is open).
  int open(const std::string& name, int flags) {
    sqlite3_close_v2(db);
    db = nullptr;
    const int rc = sqlite3_open_v2(name.c_str(), &db, flags, nullptr);
    if (rc != SQLITE_OK) return db != nullptr ? sqlite3_extended_errcode(db) : rc;
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, busy_timeout);
    // A file that is not a database, or a lock another process holds, fails here.
    return sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) == SQLITE_OK
               ? SQLITE_OK
               : sqlite3_extended_errcode(db);
  }

  // Read-only; where SQLite cannot make the WAL index beside a WAL database (a read-only directory or file
  // system: SQLITE_CANTOPEN or SQLITE_READONLY_CANTINIT), read the file as it is, with no locks (immutable).
  void open_read_only() {
    int rc = open(path, SQLITE_OPEN_READONLY);
    const bool no_wal_index = rc == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_READONLY;
    if (no_wal_index && access(path.c_str(), R_OK) == 0) {
      std::error_code ec;
      if (std::filesystem::file_size(path + "-wal", ec) > 0 && !ec) {
        refuse(fmt::format("cannot be read here: a writer left runs in {}-wal, and this directory cannot be written "
                           "to merge them (open it once with write access)", path));
      }
      rc = open(immutable_uri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
    }
    if (rc != SQLITE_OK) fail("opening it");
  }
};

Store::Store(const std::string& path, Mode mode) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->busy_timeout = busy_timeout_ms();
  if (mode == Mode::kCreate) {
    const auto parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) throw io::WriteError(fmt::format("cannot create the directory {} for {}: {}", parent.string(), path, ec.message()));
  } else if (!std::filesystem::exists(path)) {
    throw InputError(fmt::format("{}: no history database there (create it with torchprobe history add --db {})", path, path));
  }
  if (std::filesystem::is_directory(path)) impl_->refuse("is a directory, not a database file");
  if (mode == Mode::kCreate) {
    // SQLite would open an unwritable file read-only without a word and fail at the first write.
    const std::string parent = std::filesystem::path(path).parent_path().string();
    if (std::filesystem::exists(path) && access(path.c_str(), W_OK) != 0) {
      impl_->refuse(fmt::format("cannot be written ({})", std::strerror(errno)));
    }
    if (access(parent.empty() ? "." : parent.c_str(), W_OK) != 0) {
      impl_->refuse(fmt::format("cannot be written: its directory is not writable ({})", std::strerror(errno)));
    }
  }
  if (mode == Mode::kExisting) {
    impl_->open_read_only();
  } else if (impl_->open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) != SQLITE_OK) {
    impl_->fail("opening it");
  }
  impl_->exec("PRAGMA foreign_keys = ON");
  if (mode == Mode::kCreate) {
    // WAL: readers never block the writer; FULL: a committed run survives a power cut. Switching a new file to WAL
    // takes an exclusive lock, and while another process opens the same file SQLite answers SQLITE_BUSY at once
    // (it does not call the busy handler where waiting could deadlock), so the switch is retried within the busy
    // timeout (two CI jobs creating one database: HistoryStore.ConcurrentAddsFromTwoProcesses failed 43 of 60 runs).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(impl_->busy_timeout);
    while (sqlite3_exec(impl_->db, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr) != SQLITE_OK) {
      if ((sqlite3_errcode(impl_->db) & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > deadline) {
        impl_->fail("switching it to WAL");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    impl_->exec("PRAGMA synchronous = FULL");
  }
  if (!impl_->has_table("meta")) {
    if (mode == Mode::kExisting) impl_->refuse("is not a torchprobe history database (no meta table)");
    Transaction t(impl_->db, path, impl_->busy_timeout);
    if (!impl_->has_table("meta")) {  // another process may have created it meanwhile
      Statement any = impl_->prepare("SELECT 1 FROM sqlite_master WHERE type = 'table'");
      if (any.step()) impl_->refuse("is not a torchprobe history database (it has other tables)");
      any.reset();
      impl_->exec(kSchema);
      impl_->exec(fmt::format("INSERT INTO meta(key, value) VALUES('schema_version', '{}')", kSchemaVersion));
    }
    t.commit();
  }
  Statement version = impl_->prepare("SELECT value FROM meta WHERE key = 'schema_version'");
  const std::string text = version.step() ? version.text(0) : "";
  int number = 0;
  try {
    number = std::stoi(text);
  } catch (const std::exception&) {
    number = 0;
  }
  if (number > kSchemaVersion) {
    impl_->refuse(fmt::format("has history schema version {}, newer than this torchprobe's ({}): use a newer torchprobe",
                              number, kSchemaVersion));
  }
  if (number != kSchemaVersion) {
    impl_->refuse(fmt::format("has an unknown history schema version '{}' (this torchprobe reads version {})",
                              printable(text.substr(0, 40)), kSchemaVersion));
  }
}

Store::~Store() = default;

const std::string& Store::path() const { return impl_->path; }

std::vector<AddOutcome> Store::add_files(const std::vector<std::string>& paths, const RunLabels& labels) {
  std::vector<std::pair<std::string, std::string>> documents;
  for (const auto& p : paths) documents.emplace_back(p, io::read_text_file(p));
  return add_documents(documents, labels);
}

std::vector<AddOutcome> Store::add_documents(const std::vector<std::pair<std::string, std::string>>& documents,
                                             const RunLabels& labels) {
  check_commit_id(labels.commit);
  std::int64_t given_date = 0;
  if (!labels.date.empty() && !parse_iso8601(labels.date, given_date)) {
    throw InputError(fmt::format("--date: '{}' is not an ISO 8601 date (e.g. 2026-11-22T08:00:00Z)", labels.date.substr(0, 80)));
  }
  // Parsed before the transaction: a malformed file leaves the database untouched, and others wait less.
  std::vector<report::ResultSet> sets;
  for (const auto& [source, text] : documents) sets.push_back(report::parse_results(text, source));

  Transaction t(impl_->db, impl_->path, impl_->busy_timeout);
  Statement find_run = impl_->prepare("SELECT id, commit_sha, host FROM runs WHERE run_key = ?");
  Statement insert_run = impl_->prepare(
      "INSERT INTO runs(run_key, commit_sha, branch, date, date_utc, host, source, torchprobe_version, libtorch_version, "
      "context_json, added_utc) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  Statement insert_benchmark = impl_->prepare(
      "INSERT INTO benchmarks(run_id, name, device, device_name, median_ms, mean_ms, stddev_ms, cv_pct, repetitions, "
      "aggregates_only, failed_repetitions, failed_reason, error) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  Statement insert_sample = impl_->prepare("INSERT INTO samples(benchmark_id, repetition, real_time_ms) VALUES(?, ?, ?)");
  Statement insert_counter = impl_->prepare("INSERT INTO counters(benchmark_id, name, value) VALUES(?, ?, ?)");
  std::vector<AddOutcome> outcomes;
  for (size_t i = 0; i < documents.size(); ++i) {
    const auto& [source, text] = documents[i];
    const report::ResultSet& set = sets[i];
    const report::RunContext& context = set.contexts.front();
    AddOutcome outcome;
    outcome.source = source;
    outcome.host = context.host;
    const std::string key = content_key(text);
    find_run.bind(1, key);
    if (find_run.step()) {
      outcome.run_id = find_run.integer(0);
      outcome.commit = find_run.text(1);
      find_run.reset();
      outcomes.push_back(outcome);
      continue;
    }
    find_run.reset();
    std::string date = labels.date.empty() ? context.date : labels.date;
    std::int64_t date_utc = given_date;
    if (labels.date.empty() && !parse_iso8601(date, date_utc)) {
      if (!date.empty()) {
        throw InputError(fmt::format("{}: context.date '{}' is not an ISO 8601 date; pass --date", source, date.substr(0, 80)));
      }
      date_utc = static_cast<std::int64_t>(std::time(nullptr));  // a file without a date: filed as added now
      char now[32];
      const std::time_t t_now = static_cast<std::time_t>(date_utc);
      std::tm tm_utc{};
      gmtime_r(&t_now, &tm_utc);
      std::strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm_utc);
      date = now;
    }
    insert_run.bind(1, key).bind(2, labels.commit).bind(3, labels.branch).bind(4, date).bind(5, date_utc);
    insert_run.bind(6, context.host).bind(7, source).bind(8, context.torchprobe_version).bind(9, context.libtorch_version);
    insert_run.bind(10, context_to_json(context).dump()).bind(11, static_cast<std::int64_t>(std::time(nullptr)));
    insert_run.run();
    outcome.run_id = sqlite3_last_insert_rowid(impl_->db);
    outcome.added = true;
    outcome.commit = labels.commit;
    for (const auto& r : set.results) {
      insert_benchmark.bind(1, outcome.run_id).bind(2, r.name).bind(3, r.device).bind(4, r.device_name);
      insert_benchmark.bind(5, r.median_ms).bind(6, r.mean_ms).bind(7, r.stddev_ms).bind(8, r.cv_pct);
      insert_benchmark.bind(9, r.repetitions).bind(10, r.aggregates_only ? 1 : 0).bind(11, r.failed_repetitions);
      insert_benchmark.bind(12, r.failed_reason).bind(13, r.error);
      insert_benchmark.run();
      const std::int64_t id = sqlite3_last_insert_rowid(impl_->db);
      for (size_t rep = 0; rep < r.samples_ms.size(); ++rep) {
        insert_sample.bind(1, id).bind(2, static_cast<int>(rep)).bind(3, r.samples_ms[rep]).run();
      }
      for (const auto& [name, value] : r.counters) {
        if (std::isfinite(value)) insert_counter.bind(1, id).bind(2, name).bind(3, value).run();
      }
      ++outcome.benchmarks;
    }
    outcomes.push_back(outcome);
  }
  t.commit();
  return outcomes;
}

std::vector<Series> Store::series(const SeriesQuery& query) const {
  std::unique_ptr<RE2> filter;
  if (!query.filter.empty()) {
    RE2::Options options;
    options.set_log_errors(false);
    filter = std::make_unique<RE2>(query.filter, options);
    if (!filter->ok()) throw InputError(fmt::format("--filter: invalid regular expression '{}': {}", query.filter, filter->error()));
  }
  const std::set<std::string> branches(query.branches.begin(), query.branches.end());
  Statement rows = impl_->prepare(
      "SELECT b.name, b.device, r.host, r.id, r.commit_sha, r.branch, r.date, b.median_ms, b.cv_pct, b.repetitions, b.id "
      "FROM benchmarks b JOIN runs r ON r.id = b.run_id WHERE b.error = '' AND b.median_ms > 0 "
      "ORDER BY b.name, b.device, r.host, r.date_utc, r.id");
  std::vector<Series> out;
  std::string last_name;
  bool name_matches = true;
  while (rows.step()) {
    const std::string name = rows.text(0);
    if (name != last_name) {
      last_name = name;
      name_matches = filter == nullptr || RE2::PartialMatch(name, *filter);
    }
    if (!name_matches) continue;
    Point p;
    p.run_id = rows.integer(3);
    p.commit = rows.text(4);
    p.branch = rows.text(5);
    if (!branches.empty() && !branches.count(p.branch) && (query.also_commit.empty() || p.commit != query.also_commit)) continue;
    const std::string device = rows.text(1), host = rows.text(2);
    if (out.empty() || out.back().name != name || out.back().device != device || out.back().host != host) {
      out.push_back({name, device, host, {}});
    }
    p.date = rows.text(6);
    p.median_ms = rows.real(7);
    p.cv_pct = rows.real(8);
    p.repetitions = static_cast<int>(rows.integer(9));
    p.benchmark_id = rows.integer(10);
    out.back().points.push_back(std::move(p));
  }
  return out;
}

std::vector<double> Store::samples(std::int64_t benchmark_id) const {
  Statement s = impl_->prepare("SELECT real_time_ms FROM samples WHERE benchmark_id = ? ORDER BY repetition");
  s.bind(1, benchmark_id);
  std::vector<double> out;
  while (s.step()) out.push_back(s.real(0));
  return out;
}

std::string Store::newest_commit() const {
  Statement s = impl_->prepare("SELECT commit_sha FROM runs ORDER BY date_utc DESC, id DESC LIMIT 1");
  return s.step() ? s.text(0) : "";
}

std::string Store::resolve_commit(const std::string& commit) const {
  check_commit_id(commit);
  constexpr size_t kMinPrefix = 4;
  Statement s = impl_->prepare(
      "SELECT DISTINCT commit_sha FROM runs WHERE commit_sha = ?1 OR (?2 >= ?3 AND substr(commit_sha, 1, ?2) = ?1)");
  s.bind(1, commit).bind(2, static_cast<int>(commit.size())).bind(3, static_cast<int>(kMinPrefix));
  std::vector<std::string> found;
  while (s.step()) {
    if (s.text(0) == commit) return commit;  // a full id wins over the longer ids it is a prefix of
    found.push_back(s.text(0));
  }
  if (found.empty()) {
    throw InputError(fmt::format("--commit: no run of commit '{}' in {}{}", printable(commit), impl_->path,
                                 commit.size() < kMinPrefix ? " (a commit is found by its full id or a unique prefix of at least 4 characters)" : ""));
  }
  if (found.size() > 1) {
    throw InputError(fmt::format("--commit: '{}' is ambiguous: {} and {} more", printable(commit), found[0], found.size() - 1));
  }
  return found.front();
}

std::int64_t Store::run_count() const {
  Statement s = impl_->prepare("SELECT count(*) FROM runs");
  return s.step() ? s.integer(0) : 0;
}

report::ResultSet Store::latest_runs(const std::vector<std::string>& branches) const {
  const std::set<std::string> wanted(branches.begin(), branches.end());
  Statement runs = impl_->prepare("SELECT id, host, branch, context_json FROM runs ORDER BY date_utc DESC, id DESC");
  std::map<std::string, std::pair<std::int64_t, std::string>> newest;  // host -> run id, context
  while (runs.step()) {
    if (!wanted.empty() && !wanted.count(runs.text(2))) continue;
    newest.try_emplace(runs.text(1), runs.integer(0), runs.text(3));
  }
  report::ResultSet set;
  Statement benchmarks = impl_->prepare(
      "SELECT id, name, device_name, median_ms, mean_ms, stddev_ms, cv_pct, repetitions, aggregates_only, "
      "failed_repetitions, failed_reason, error FROM benchmarks WHERE run_id = ? ORDER BY id");
  Statement samples = impl_->prepare("SELECT real_time_ms FROM samples WHERE benchmark_id = ? ORDER BY repetition");
  Statement counters = impl_->prepare("SELECT name, value FROM counters WHERE benchmark_id = ?");
  for (const auto& [host, run] : newest) {
    set.contexts.push_back(context_from_json(run.second));
    benchmarks.bind(1, run.first);
    while (benchmarks.step()) {
      report::Result r;
      report::parse_benchmark_name(benchmarks.text(1), r);
      r.device_name = benchmarks.text(2);
      r.median_ms = benchmarks.real(3);
      r.mean_ms = benchmarks.real(4);
      r.stddev_ms = benchmarks.real(5);
      r.cv_pct = benchmarks.real(6);
      r.repetitions = static_cast<int>(benchmarks.integer(7));
      r.aggregates_only = benchmarks.integer(8) != 0;
      r.failed_repetitions = static_cast<int>(benchmarks.integer(9));
      r.failed_reason = benchmarks.text(10);
      r.error = benchmarks.text(11);
      r.context = set.contexts.size() - 1;
      const std::int64_t id = benchmarks.integer(0);
      samples.bind(1, id);
      while (samples.step()) r.samples_ms.push_back(samples.real(0));
      samples.reset();
      counters.bind(1, id);
      while (counters.step()) r.counters[counters.text(0)] = counters.real(1);
      counters.reset();
      set.results.push_back(std::move(r));
    }
    benchmarks.reset();
  }
  report::label_devices(set);
  return set;
}

}  // namespace torchprobe::history
