#pragma once
// The history's SQLite wrapper (Debian's libsqlite3), private to torchprobe_history: statements and transactions
// that finish themselves, and every SQLite failure as one DatabaseError naming the database file.
#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace torchprobe::history::sqlite {

constexpr int kDefaultBusyTimeoutMs = 60000;

// The busy timeout: kBusyTimeoutVariable when set (tests keep a lock short), else 60 s.
int busy_timeout_ms();

// Every SQLite failure is the database's problem, never a slowdown: one DatabaseError naming the file.
[[noreturn]] void fail(sqlite3* db, const std::string& path, int busy_timeout, const std::string& doing);

// Runs SQL without results; throws DatabaseError (the statement's first line says which step failed).
void exec(sqlite3* db, const std::string& path, int busy_timeout, const std::string& sql);

// "file:" URI of `path` opened read-only as immutable: no locks, no WAL index (which a read-only directory or
// file system cannot hold).
std::string immutable_uri(const std::string& path);

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& path, int busy_timeout)
      : db_(db), path_(path), busy_timeout_(busy_timeout) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) fail("preparing a statement");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& v) {
    return check(sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  Statement& bind(int i, double v) { return check(sqlite3_bind_double(stmt_, i, v)); }
  Statement& bind(int i, std::int64_t v) { return check(sqlite3_bind_int64(stmt_, i, v)); }
  Statement& bind(int i, int v) { return check(sqlite3_bind_int(stmt_, i, v)); }
  /// True while there is a row; throws on errors.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail("running a statement");
  }
  void run() {
    step();
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  void reset() { sqlite3_reset(stmt_); }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p == nullptr
               ? ""
               : std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
  }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }

 private:
  Statement& check(int rc) {
    if (rc != SQLITE_OK) fail("binding a value");
    return *this;
  }
  [[noreturn]] void fail(const char* doing) const { sqlite::fail(db_, path_, busy_timeout_, doing); }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string path_;
  int busy_timeout_;
};

// BEGIN IMMEDIATE takes the write lock at once (waiting up to the busy timeout), so two writers never
// both read and then both write; rolled back unless committed.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& path, int busy_timeout)
      : db_(db), path_(path), busy_timeout_(busy_timeout) {
    exec(db_, path_, busy_timeout_, "BEGIN IMMEDIATE");
  }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    exec(db_, path_, busy_timeout_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  std::string path_;
  int busy_timeout_;
  bool done_ = false;
};

}  // namespace torchprobe::history::sqlite
