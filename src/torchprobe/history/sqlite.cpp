#include "torchprobe/history/sqlite.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "torchprobe/history/store.h"
#include "torchprobe/input_error.h"

namespace torchprobe::history::sqlite {
namespace {

// What is wrong with the database, from SQLite's result code, for "history database PATH <what>".
std::string what_is_wrong(sqlite3* db, int code, int busy_timeout, const std::string& doing) {
  const std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  const int system_errno = db != nullptr ? sqlite3_system_errno(db) : 0;
  const std::string system = system_errno != 0 ? fmt::format(": {}", std::strerror(system_errno)) : "";
  switch (code & 0xff) {
    case SQLITE_NOTADB:
      return fmt::format("is not a torchprobe history database ({})", message);
    case SQLITE_CORRUPT:
      return fmt::format("is corrupt ({})", message);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return fmt::format("is locked by another process (gave up after {} ms; {} sets the wait)", busy_timeout,
                         kBusyTimeoutVariable);
    case SQLITE_READONLY:
      return fmt::format("cannot be written ({})", message);
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return fmt::format("cannot be opened ({}{})", message, system);
    case SQLITE_IOERR:
      return fmt::format("cannot be read or written ({}{})", message, system);
    case SQLITE_FULL:
      return fmt::format("cannot be written: the disk is full ({})", message);
    case SQLITE_ERROR:
      // The SQL is ours and tested: a missing table or column means another program's tables.
      if (message.rfind("no such ", 0) == 0) return fmt::format("is not a torchprobe history database ({})", message);
      break;
    default:
      break;
  }
  return fmt::format("failed while {}: {}", doing, message);
}

}  // namespace

int busy_timeout_ms() {
  const char* text = std::getenv(kBusyTimeoutVariable);
  if (text == nullptr || *text == '\0') return kDefaultBusyTimeoutMs;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || errno != 0 || value < 0 || value > 86400000) {
    throw InputError(fmt::format("{}: '{}' is not a number of milliseconds (0 to 86400000)", kBusyTimeoutVariable,
                                 std::string(text).substr(0, 40)));
  }
  return static_cast<int>(value);
}

[[noreturn]] void fail(sqlite3* db, const std::string& path, int busy_timeout, const std::string& doing) {
  const int code = db != nullptr ? sqlite3_extended_errcode(db) : SQLITE_NOMEM;
  throw DatabaseError(fmt::format("history database {} {}", path, what_is_wrong(db, code, busy_timeout, doing)));
}

void exec(sqlite3* db, const std::string& path, int busy_timeout, const std::string& sql) {
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    fail(db, path, busy_timeout, "running " + sql.substr(0, sql.find('\n')));
  }
}

std::string immutable_uri(const std::string& path) {
  std::string uri = "file://";
  for (const char c : std::filesystem::absolute(path).string()) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || std::strchr("/-._~", c) != nullptr) {
      uri += c;
    } else {
      uri += fmt::format("%{:02X}", static_cast<unsigned>(u));
    }
  }
  return uri + "?mode=ro&immutable=1";
}

}  // namespace torchprobe::history::sqlite
