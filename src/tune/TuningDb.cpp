// The tuning database on SQLite. See TuningDb.h for the schema and the guarantees.
#include "tune/TuningDb.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <optional>
#include <regex>
#include <thread>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <system_error>

#include <unistd.h>

#include "runtime/StateDirs.h"
#include "schedule/Domain.h"
#include "schedule/Schedule.h"
#include "support/Error.h"

namespace rtcg {

const char* statusName(CandidateStatus s) {
  switch (s) {
    case CandidateStatus::Verified: return "verified";
    case CandidateStatus::WrongResult: return "wrong-result";
    case CandidateStatus::CompileFailed: return "compile-failed";
    case CandidateStatus::LaunchFailed: return "launch-failed";
    case CandidateStatus::Faulted: return "faulted";
    case CandidateStatus::TimedOut: return "timed-out";
    case CandidateStatus::Skipped: return "skipped";
  }
  return "unknown";
}

std::optional<CandidateStatus> parseStatus(const std::string& name) {
  for (CandidateStatus s : {CandidateStatus::Verified, CandidateStatus::WrongResult, CandidateStatus::CompileFailed,
                            CandidateStatus::LaunchFailed, CandidateStatus::Faulted, CandidateStatus::TimedOut,
                            CandidateStatus::Skipped})
    if (name == statusName(s)) return s;
  return std::nullopt;
}

namespace {

// Schema migrations, in order: migration i brings the file from version i to version i + 1.
// A released migration is never edited; a change to the schema appends one.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE tuning_keys(
  id INTEGER PRIMARY KEY,
  kernel_hash TEXT NOT NULL,
  kernel_name TEXT NOT NULL,
  sizes TEXT NOT NULL,
  device TEXT NOT NULL,
  arch TEXT NOT NULL,
  driver_version INTEGER NOT NULL,
  nvrtc_version TEXT NOT NULL,
  rtcg_version TEXT NOT NULL,
  UNIQUE(kernel_hash, sizes, device, arch, driver_version, nvrtc_version, rtcg_version, kernel_name));
CREATE TABLE searches(
  id INTEGER PRIMARY KEY,
  key_id INTEGER NOT NULL REFERENCES tuning_keys(id) ON DELETE CASCADE,
  settings TEXT NOT NULL,
  started_at REAL NOT NULL,
  finished_at REAL,
  wall_seconds REAL,
  candidates INTEGER);
CREATE INDEX searches_key ON searches(key_id);
CREATE TABLE candidates(
  id INTEGER PRIMARY KEY,
  key_id INTEGER NOT NULL REFERENCES tuning_keys(id) ON DELETE CASCADE,
  search_id INTEGER REFERENCES searches(id) ON DELETE SET NULL,
  schedule TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT NOT NULL,
  median_ms REAL NOT NULL,
  relative_error REAL NOT NULL,
  registers INTEGER NOT NULL,
  spill_bytes INTEGER NOT NULL,
  shared_bytes INTEGER NOT NULL,
  occupancy REAL NOT NULL,
  gflops REAL NOT NULL,
  gbytes REAL NOT NULL,
  compile_ms REAL NOT NULL,
  recorded_at REAL NOT NULL);
-- best(): the verified rows of one key in time order, straight from the index.
CREATE INDEX candidates_best ON candidates(key_id, status, median_ms);
CREATE INDEX candidates_search ON candidates(search_id);
)sql",
    // 2: the device's multiprocessor count, for the lookup ladder's "same architecture and
    // multiprocessor count" rung (tune/TuningLookup.h). Not part of the key's identity (the device
    // name fixes it); rows recorded before hold 0, "unknown".
    R"sql(
ALTER TABLE tuning_keys ADD COLUMN multiprocessors INTEGER NOT NULL DEFAULT 0;
)sql",
};
constexpr int kSchemaVersion = static_cast<int>(std::size(kMigrations));

constexpr int kBusyTimeoutMs = 10000;
// Readers wait less: a WAL database never blocks them, and a rollback-journal one (made by another
// tool) blocks them only while a writer holds its exclusive lock, which a read-only command
// reports at once rather than after ten seconds.
constexpr int kReadBusyTimeoutMs = 1000;

constexpr const char* kExportFormat = "rtcg-tuning-db";

// The candidate columns in the order readCandidate expects them.
constexpr const char* kCandidateColumns =
    "schedule, status, reason, median_ms, relative_error, registers, spill_bytes, shared_bytes, occupancy, "
    "gflops, gbytes, compile_ms, search_id, recorded_at";

// The condition selecting one key's row by its columns, bound as parameters ?1..?8.
constexpr const char* kKeyMatch =
    "kernel_hash = ?1 AND sizes = ?2 AND device = ?3 AND arch = ?4 AND driver_version = ?5 AND "
    "nvrtc_version = ?6 AND rtcg_version = ?7 AND kernel_name = ?8";

// Finds a candidate row equal in every column to the one bound as in Impl::bindCandidate. Column
// by column (`IS` also matches NULL search ids), so that key_id, status and median_ms use the index.
std::string duplicateQuery() {
  std::string sql = "SELECT 1 FROM candidates WHERE key_id = ?1";
  std::string columns = kCandidateColumns;
  int param = 2;
  for (size_t start = 0; start < columns.size();) {
    size_t end = columns.find(',', start);
    if (end == std::string::npos) end = columns.size();
    std::string name = columns.substr(start, end - start);
    name.erase(0, name.find_first_not_of(' '));
    sql += fmt::format(" AND {} IS ?{}", name, param++);
    start = end + 1;
  }
  return sql + " LIMIT 1";
}

// ---- validation of imported exports ----------------------------------------------------------
// An import is all or nothing, and every value is checked as the database's own writers would have
// made it: get<int> narrowed 5e9 registers silently, a negative median sorted first, a schedule
// that does not parse became a kernel's best.

[[noreturn]] void badValue(const std::string& where, const char* name, const std::string& why) {
  throw Error(fmt::format("{}: '{}' {}", where, name, why));
}

// A finite number of at least `lo` (above it when `strict`); `fallback` when absent.
double numberField(const nlohmann::json& j, const std::string& where, const char* name, double lo, bool strict,
                   std::optional<double> fallback) {
  if (!j.contains(name)) {
    if (fallback) return *fallback;
    badValue(where, name, "is missing");
  }
  const nlohmann::json& v = j.at(name);
  if (!v.is_number()) badValue(where, name, "must be a number");
  double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || (strict && d == lo))
    badValue(where, name, fmt::format("must be a finite number {} {}, not {}", strict ? "above" : "of at least", lo, v.dump()));
  return d;
}

// An integer in [lo, hi]; `fallback` when absent.
int64_t integerField(const nlohmann::json& j, const std::string& where, const char* name, int64_t lo, int64_t hi,
                     std::optional<int64_t> fallback) {
  if (!j.contains(name)) {
    if (fallback) return *fallback;
    badValue(where, name, "is missing");
  }
  const nlohmann::json& v = j.at(name);
  bool inRange = v.is_number_integer() &&  // unsigned ones too
                 !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) && v.get<int64_t>() >= lo &&
                 v.get<int64_t>() <= hi;
  if (!inRange) badValue(where, name, fmt::format("must be an integer from {} to {}, not {}", lo, hi, v.dump()));
  return v.get<int64_t>();
}

// Text as rtcg writes it: printable ASCII (names, sizes, versions) matching `pattern` when given.
std::string textField(const nlohmann::json& j, const std::string& where, const char* name, const char* pattern) {
  const nlohmann::json& v = j.at(name);
  if (!v.is_string()) badValue(where, name, "must be a string");
  std::string s = v.get<std::string>();
  for (char c : s)
    if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f) badValue(where, name, "must be printable ASCII");
  // Bounded before std::regex, which recurses per character (names and sizes are far shorter).
  if (pattern && (s.size() > 4096 || !std::regex_match(s, std::regex(pattern))))
    badValue(where, name, fmt::format("'{}' is not of the form rtcg writes", s.size() > 80 ? s.substr(0, 80) + "..." : s));
  return s;
}

}  // namespace

double unixNow() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

struct TuningDb::Impl {
  std::string path;
  sqlite3* db = nullptr;
  std::mutex mutex;  // one connection, several threads: calls are serialized
  bool readOnly = false;  // the file is opened read-only (asked, or write-protected)
  bool noTables = false;  // read-only and empty: every lookup finds nothing
  std::string multiprocessorsColumn = "multiprocessors";  // "0" in a read-only file of schema version 1

  int busyTimeoutMs = kBusyTimeoutMs;

  [[noreturn]] void fail(const std::string& call) const {
    if (db && (sqlite3_extended_errcode(db) & 0xff) == SQLITE_BUSY)
      throw Error(fmt::format("tuning database '{}' is locked: another process holds it for writing (waited {:g} s; "
                              "a rollback-journal database cannot be read while it is written). Try again when it "
                              "is done",
                              path, busyTimeoutMs / 1000.0));
    throw Error(fmt::format("tuning database '{}': {} failed: {}", path, call,
                            db ? sqlite3_errmsg(db) : "out of memory"));
  }

  // A prepared statement, kept for the life of the connection.
  class Stmt {
   public:
    Stmt(Impl& impl, const std::string& sql) : impl_(impl), sql_(sql) {
      if (sqlite3_prepare_v3(impl.db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK)
        impl.fail(fmt::format("preparing '{}'", sql));
    }
    ~Stmt() { sqlite3_finalize(stmt_); }
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;

    void bind(int i, const std::string& v) {
      check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT), "bind");
    }
    void bind(int i, int64_t v) { check(sqlite3_bind_int64(stmt_, i, v), "bind"); }
    void bind(int i, int v) { bind(i, static_cast<int64_t>(v)); }
    void bind(int i, double v) { check(sqlite3_bind_double(stmt_, i, v), "bind"); }
    void bindNull(int i) { check(sqlite3_bind_null(stmt_, i), "bind"); }
    void bindKey(const TuningKey& k) {  // parameters ?1..?8 of kKeyMatch
      bind(1, k.kernelHash);
      bind(2, k.sizes);
      bind(3, k.device);
      bind(4, k.arch);
      bind(5, k.driverVersion);
      bind(6, k.nvrtcVersion);
      bind(7, k.rtcgVersion);
      bind(8, k.kernelName);
    }

    // True while rows come; false when done. Any other result is an error.
    bool step() {
      int rc = sqlite3_step(stmt_);
      if (rc == SQLITE_ROW) return true;
      if (rc == SQLITE_DONE) return false;
      impl_.fail(fmt::format("running '{}'", sql_));
    }
    void run() {
      while (step()) {
      }
    }

    bool isNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
    int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
    int int32(int col) const { return sqlite3_column_int(stmt_, col); }
    double real(int col) const { return sqlite3_column_double(stmt_, col); }
    std::string text(int col) const {
      const unsigned char* p = sqlite3_column_text(stmt_, col);
      return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, col)) : std::string();
    }

    // Ends the statement's use: an unfinished SELECT would otherwise keep its read transaction
    // (and an old snapshot) open on the connection.
    void reset() {
      sqlite3_reset(stmt_);
      sqlite3_clear_bindings(stmt_);
    }

   private:
    void check(int rc, const char* what) {
      if (rc != SQLITE_OK) impl_.fail(fmt::format("{} for '{}'", what, sql_));
    }
    Impl& impl_;
    std::string sql_;
    sqlite3_stmt* stmt_ = nullptr;
  };

  // A statement ready for one use; it is reset when the use ends.
  class Use {
   public:
    explicit Use(Stmt& s) : s_(s) {}
    ~Use() { s_.reset(); }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    Stmt* operator->() { return &s_; }
    Stmt& operator*() { return s_; }

   private:
    Stmt& s_;
  };

  std::map<std::string, std::unique_ptr<Stmt>> statements;

  Use use(const std::string& sql) {
    auto it = statements.find(sql);
    if (it == statements.end()) it = statements.emplace(sql, std::make_unique<Stmt>(*this, sql)).first;
    return Use(*it->second);
  }

  void exec(const char* sql, const char* what) {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(what);
  }

  // Like exec, but retries while another connection holds a lock. Changing the journal mode needs
  // an exclusive lock that SQLite does not wait for through the busy handler (waiting could
  // deadlock), so processes opening a new database at the same moment get SQLITE_BUSY at once.
  void execRetryingWhileBusy(const char* sql, const char* what) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busyTimeoutMs);
    for (int attempt = 0;; ++attempt) {
      int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
      if (rc == SQLITE_OK) return;
      int primary = rc & 0xff;
      if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) || std::chrono::steady_clock::now() > deadline)
        fail(what);
      std::this_thread::sleep_for(std::chrono::milliseconds(1 + attempt % 20));
    }
  }

  int lastError = SQLITE_OK;  // of the last open that failed

  // Opens the connection and sets it up (setUpForWriting or checkReadable); on failure the
  // connection is closed again, lastError holds SQLite's code and rtcg::Error is thrown.
  enum class Mode { ReadWrite, ReadOnly, Immutable };
  void open(Mode mode) {
    int flags = mode == Mode::ReadWrite ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
    std::string name = path;
    if (mode == Mode::Immutable) {
      // A URI: the characters URIs give a meaning to are escaped.
      name = "file:";
      for (char c : path) name += c == '%' ? "%25" : c == '?' ? "%3f" : c == '#' ? "%23" : std::string(1, c);
      name += "?immutable=1";
      flags |= SQLITE_OPEN_URI;
    }
    int rc = sqlite3_open_v2(name.c_str(), &db, flags, nullptr);
    if (rc != SQLITE_OK) {
      lastError = rc;
      std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
      sqlite3_close(db);
      db = nullptr;
      throw Error(fmt::format("tuning database '{}': sqlite3_open_v2 failed: {}", path, message));
    }
    try {
      sqlite3_extended_result_codes(db, 1);
      busyTimeoutMs = mode == Mode::ReadWrite ? kBusyTimeoutMs : kReadBusyTimeoutMs;
      if (sqlite3_busy_timeout(db, busyTimeoutMs) != SQLITE_OK) fail("sqlite3_busy_timeout");
      // SQLite opens a write-protected file read-only even when asked for read-write.
      readOnly = sqlite3_db_readonly(db, "main") == 1;
      if (readOnly)
        checkReadable();
      else
        setUpForWriting();
    } catch (...) {
      lastError = sqlite3_extended_errcode(db);
      statements.clear();
      sqlite3_close(db);
      db = nullptr;
      throw;
    }
  }

  // A writable file: WAL (readers never block the writer and a killed writer leaves only
  // uncommitted frames, which the next open ignores), synchronous=NORMAL (every commit survives a
  // process kill; only a power loss may drop the last commits, at a fraction of FULL's fsyncs),
  // and the schema brought up to date.
  void setUpForWriting() {
    execRetryingWhileBusy("PRAGMA journal_mode = WAL", "PRAGMA journal_mode = WAL");
    exec("PRAGMA synchronous = NORMAL", "PRAGMA synchronous = NORMAL");
    exec("PRAGMA foreign_keys = ON", "PRAGMA foreign_keys = ON");
    migrate();
  }

  // A read-only file is only read: switching its journal mode or migrating it would write. A file
  // without the tables (an empty one) reads as an empty database.
  void checkReadable() {
    int version = schemaVersion();
    if (version > kSchemaVersion)
      throw Error(fmt::format("tuning database '{}' has schema version {}, newer than this rtcg knows ({})", path,
                              version, kSchemaVersion));
    noTables = version == 0;
    // Version 1 has no multiprocessor count: it reads as 0 (unknown), as migrated rows do.
    if (version == 1) multiprocessorsColumn = "0";
  }

  // One transaction. Writers take the write lock up front (BEGIN IMMEDIATE) so that two
  // processes never deadlock upgrading read locks; waiting for the lock is the busy timeout's.
  class Transaction {
   public:
    Transaction(Impl& impl, bool write) : impl_(impl) {
      impl_.exec(write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED", "BEGIN");
    }
    ~Transaction() {
      if (!done_) sqlite3_exec(impl_.db, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    void commit() {
      impl_.exec("COMMIT", "COMMIT");
      done_ = true;
    }

   private:
    Impl& impl_;
    bool done_ = false;
  };

  int schemaVersion() {
    {
      Use q = use("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'");
      q->step();
      if (q->int64(0) == 0) return 0;
    }
    Use q = use("SELECT coalesce(max(version), 0) FROM schema_version");
    q->step();
    return q->int32(0);
  }

  void migrate() {
    if (schemaVersion() == kSchemaVersion) return;  // the common case: no write lock needed
    Transaction t(*this, true);
    exec("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)", "creating schema_version");
    int version = schemaVersion();  // again: another process may have migrated meanwhile
    if (version > kSchemaVersion)
      throw Error(fmt::format("tuning database '{}' has schema version {}, newer than this rtcg knows ({}); "
                              "use a newer rtcg or another cache directory (RTCG_CACHE_DIR)",
                              path, version, kSchemaVersion));
    for (int v = version; v < kSchemaVersion; ++v)
      exec(kMigrations[v], fmt::format("migrating the schema to version {}", v + 1).c_str());
    exec("DELETE FROM schema_version", "updating schema_version");
    Use q = use("INSERT INTO schema_version(version) VALUES (?1)");
    q->bind(1, kSchemaVersion);
    q->run();
    t.commit();
  }

  // The id of `key`'s row, created if needed. Call inside a write transaction.
  int64_t keyId(const TuningKey& key) {
    {
      Use ins = use(
          "INSERT INTO tuning_keys(kernel_hash, sizes, device, arch, driver_version, nvrtc_version, rtcg_version, "
          "kernel_name, multiprocessors) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(kernel_hash, "
          "sizes, device, arch, driver_version, nvrtc_version, rtcg_version, kernel_name) DO UPDATE SET "
          "multiprocessors = excluded.multiprocessors WHERE multiprocessors = 0");  // a count learnt later
      ins->bindKey(key);
      ins->bind(9, key.multiprocessors);
      ins->run();
    }
    std::optional<int64_t> id = findKey(key);
    RTCG_ASSERT(id.has_value(), "tuning key row missing right after its insertion");
    return *id;
  }

  std::optional<int64_t> findKey(const TuningKey& key) {
    if (noTables) return std::nullopt;
    Use q = use(std::string("SELECT id FROM tuning_keys WHERE ") + kKeyMatch);
    q->bindKey(key);
    if (!q->step()) return std::nullopt;
    return q->int64(0);
  }

  static CandidateRecord readCandidate(Stmt& q, int first, const std::string& path) {
    CandidateRecord c;
    c.schedule = q.text(first + 0);
    std::string status = q.text(first + 1);
    std::optional<CandidateStatus> s = parseStatus(status);
    if (!s) throw Error(fmt::format("tuning database '{}': unknown candidate status '{}'", path, status));
    c.status = *s;
    c.reason = q.text(first + 2);
    c.medianMs = q.real(first + 3);
    c.relativeError = q.real(first + 4);
    c.registers = q.int32(first + 5);
    c.spillBytes = q.int32(first + 6);
    c.sharedBytes = q.int32(first + 7);
    c.occupancy = q.real(first + 8);
    c.gflops = q.real(first + 9);
    c.gbytes = q.real(first + 10);
    c.compileMs = q.real(first + 11);
    c.searchId = q.isNull(first + 12) ? 0 : q.int64(first + 12);
    c.recordedAt = q.real(first + 13);
    return c;
  }

  // Binds the candidate's columns as ?2..?15 in kCandidateColumns order (?1 is the key id); the
  // search id binds as given (0: NULL).
  static void bindCandidate(Stmt& q, const CandidateRecord& c, double recordedAt) {
    q.bind(2, c.schedule);
    q.bind(3, std::string(statusName(c.status)));
    q.bind(4, c.reason);
    q.bind(5, c.medianMs);
    q.bind(6, c.relativeError);
    q.bind(7, c.registers);
    q.bind(8, c.spillBytes);
    q.bind(9, c.sharedBytes);
    q.bind(10, c.occupancy);
    q.bind(11, c.gflops);
    q.bind(12, c.gbytes);
    q.bind(13, c.compileMs);
    if (c.searchId != 0)
      q.bind(14, c.searchId);
    else
      q.bindNull(14);
    q.bind(15, recordedAt);
  }

  std::optional<CandidateRecord> bestOf(int64_t keyId) {
    Use q = use(fmt::format("SELECT {} FROM candidates WHERE key_id = ?1 AND status = 'verified' "
                            "ORDER BY median_ms, id LIMIT 1",
                            kCandidateColumns));
    q->bind(1, keyId);
    if (!q->step()) return std::nullopt;
    return readCandidate(*q, 0, path);
  }

  std::vector<CandidateRecord> candidatesOf(int64_t keyId) {
    Use q = use(fmt::format("SELECT {} FROM candidates WHERE key_id = ?1 ORDER BY id", kCandidateColumns));
    q->bind(1, keyId);
    std::vector<CandidateRecord> out;
    while (q->step()) out.push_back(readCandidate(*q, 0, path));
    return out;
  }

  // Keys (id and columns) of one kernel hash, or all of them when `hash` is empty.
  std::vector<std::pair<int64_t, TuningKey>> keys(const std::string& hash) {
    if (noTables) return {};
    Use q = use(
        "SELECT id, kernel_hash, kernel_name, sizes, device, arch, driver_version, nvrtc_version, rtcg_version, " +
        multiprocessorsColumn +
        " FROM tuning_keys WHERE ?1 = '' OR kernel_hash = ?1 ORDER BY kernel_name, sizes, kernel_hash, device, "
        "arch, driver_version, nvrtc_version, rtcg_version");
    q->bind(1, hash);
    std::vector<std::pair<int64_t, TuningKey>> out;
    while (q->step()) {
      TuningKey k;
      k.kernelHash = q->text(1);
      k.kernelName = q->text(2);
      k.sizes = q->text(3);
      k.device = q->text(4);
      k.arch = q->text(5);
      k.driverVersion = q->int32(6);
      k.nvrtcVersion = q->text(7);
      k.rtcgVersion = q->text(8);
      k.multiprocessors = q->int32(9);
      out.emplace_back(q->int64(0), std::move(k));
    }
    return out;
  }
};

namespace {

// SQLite's codes for "cannot write here" (a write-protected file or directory, no lock file).
bool cannotWrite(int code) {
  int primary = code & 0xff;
  return primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN || primary == SQLITE_PERM;
}

}  // namespace

TuningDb::TuningDb(const std::string& path, Access access) : impl_(new Impl) {
  std::unique_ptr<Impl> guard(impl_);  // freed if the constructor throws
  impl_->path = path;
  // A file that cannot be written (or whose directory cannot: a WAL database needs its -shm file
  // beside it) is still read: read-only, and where even that needs a file SQLite cannot create,
  // as an immutable file (no locks; nobody can write it here anyway).
  std::error_code ec;
  bool exists = std::filesystem::exists(path, ec);
  if (access == Access::Snapshot || state::tuningDbSnapshot()) {
    if (!exists) throw Error(fmt::format("tuning database snapshot '{}' does not exist", path));
    impl_->open(Impl::Mode::Immutable);
    guard.release();
    return;
  }
  try {
    impl_->open(access == Access::ReadOnly ? Impl::Mode::ReadOnly : Impl::Mode::ReadWrite);
  } catch (const Error&) {
    if (!exists || !cannotWrite(impl_->lastError)) throw;
    try {
      if (access == Access::ReadOnly) throw;
      impl_->open(Impl::Mode::ReadOnly);
    } catch (const Error&) {
      if (!cannotWrite(impl_->lastError)) throw;
      impl_->open(Impl::Mode::Immutable);
    }
  }
  guard.release();
}

TuningDb::~TuningDb() {
  impl_->statements.clear();  // finalize before closing
  sqlite3_close(impl_->db);
  delete impl_;
}

bool TuningDb::readOnly() const { return impl_->readOnly; }

namespace {

std::filesystem::path withSuffix(const std::filesystem::path& p, const std::string& suffix) {
  return std::filesystem::path(p.string() + suffix);
}

// Moves rtcg 0.1's database (in the kernel cache directory) to `target` once: a consistent copy
// (VACUUM INTO, safe while another process writes the old file) renamed into place, then the old
// file and its WAL files removed. A copy that cannot be made throws; an old file that cannot be
// removed stays (it is not looked at again: the new file exists).
void moveLegacyDatabase(const std::filesystem::path& legacy, const std::filesystem::path& target) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(target, ec) || !fs::is_regular_file(legacy, ec)) return;
  fs::create_directories(target.parent_path(), ec);
  if (ec)
    throw Error(fmt::format("cannot create the tuning database directory '{}': {}", target.parent_path().string(),
                            ec.message()));
  fs::path temp = withSuffix(target, fmt::format(".{}.moving", static_cast<long>(::getpid())));
  fs::remove(temp, ec);
  {
    TuningDb old(legacy.string(), TuningDb::Access::ReadOnly);
    old.copyTo(temp.string());
  }
  fs::rename(temp, target, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw Error(fmt::format("cannot move the tuning database to '{}': {}", target.string(), ec.message()));
  }
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(withSuffix(legacy, suffix), ec);
}

std::filesystem::path configuredPath() {
  std::optional<std::filesystem::path> path = state::tuningDbPath();
  if (!path) throw Error("no place for the tuning database: set RTCG_TUNING_DB (or XDG_DATA_HOME or HOME)");
  return *path;
}

}  // namespace

std::string TuningDb::defaultPath() {
  namespace fs = std::filesystem;
  fs::path path = configuredPath();
  if (std::optional<fs::path> legacy = state::legacyTuningDbPath()) moveLegacyDatabase(*legacy, path);
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec)
    throw Error(fmt::format("cannot create the tuning database directory '{}': {}", path.parent_path().string(),
                            ec.message()));
  return path.string();
}

std::optional<std::string> TuningDb::existingDefaultPath(std::string* warning) {
  namespace fs = std::filesystem;
  std::optional<fs::path> path = state::tuningDbPath();
  if (!path) return std::nullopt;
  std::error_code ec;
  if (std::optional<fs::path> legacy = state::legacyTuningDbPath(); legacy && fs::exists(*legacy, ec)) {
    try {
      moveLegacyDatabase(*legacy, *path);
    } catch (const Error& e) {
      // Not movable (a read-only home, say): read it where it is.
      if (warning) *warning = e.what();
      if (!fs::exists(*path, ec)) return legacy->string();
    }
  }
  if (!fs::exists(*path, ec)) return std::nullopt;
  return path->string();
}

void TuningDb::copyTo(const std::string& file) {
  std::lock_guard lock(impl_->mutex);
  Impl::Use q = impl_->use("VACUUM INTO ?1");
  q->bind(1, file);
  q->run();
}

void TuningDb::snapshotTo(const std::string& file) {
  namespace fs = std::filesystem;
  fs::path temp = withSuffix(fs::path(file), fmt::format(".{}.snapshot", static_cast<long>(::getpid())));
  std::error_code ec;
  fs::remove(temp, ec);
  try {
    copyTo(temp.string());
    TuningDb copy(temp.string());  // VACUUM INTO keeps WAL mode: an immutable reader needs none
    std::lock_guard lock(copy.impl_->mutex);
    Impl::Use q = copy.impl_->use("PRAGMA journal_mode = DELETE");
    if (!q->step() || q->text(0) != "delete")
      throw Error(fmt::format("cannot switch the snapshot '{}' out of WAL mode", temp.string()));
  } catch (...) {
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(withSuffix(temp, suffix), ec);
    throw;
  }
  fs::rename(temp, file, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw Error(fmt::format("cannot write the snapshot '{}': {}", file, ec.message()));
  }
}

const std::string& TuningDb::path() const { return impl_->path; }

int64_t TuningDb::beginSearch(const TuningKey& key, const std::string& settings) {
  std::lock_guard lock(impl_->mutex);
  Impl::Transaction t(*impl_, true);
  int64_t keyId = impl_->keyId(key);
  Impl::Use q = impl_->use("INSERT INTO searches(key_id, settings, started_at) VALUES (?1, ?2, ?3)");
  q->bind(1, keyId);
  q->bind(2, settings);
  q->bind(3, unixNow());
  q->run();
  int64_t id = sqlite3_last_insert_rowid(impl_->db);
  t.commit();
  return id;
}

void TuningDb::record(const TuningKey& key, const CandidateRecord& c) {
  std::lock_guard lock(impl_->mutex);
  Impl::Transaction t(*impl_, true);
  int64_t keyId = impl_->keyId(key);
  {
    // The search id goes through a lookup: when another process cleared the search meanwhile
    // (`rtcgc db clear` during a tuning run), the row is still kept, without its search.
    Impl::Use q = impl_->use(fmt::format(
        "INSERT INTO candidates(key_id, {}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
        "(SELECT id FROM searches WHERE id = ?14), ?15)",
        kCandidateColumns));
    q->bind(1, keyId);
    Impl::bindCandidate(*q, c, c.recordedAt != 0 ? c.recordedAt : unixNow());
    q->run();
  }
  t.commit();
}

void TuningDb::endSearch(int64_t searchId, double wallSeconds, int candidates) {
  std::lock_guard lock(impl_->mutex);
  Impl::Transaction t(*impl_, true);
  // A search cleared meanwhile by another process updates nothing; that is not an error.
  Impl::Use q = impl_->use("UPDATE searches SET finished_at = ?2, wall_seconds = ?3, candidates = ?4 WHERE id = ?1");
  q->bind(1, searchId);
  q->bind(2, unixNow());
  q->bind(3, wallSeconds);
  q->bind(4, candidates);
  q->run();
  t.commit();
}

std::optional<CandidateRecord> TuningDb::best(const TuningKey& key) {
  std::lock_guard lock(impl_->mutex);
  Impl::Transaction t(*impl_, false);
  std::optional<int64_t> id = impl_->findKey(key);
  if (!id) return std::nullopt;
  return impl_->bestOf(*id);
}

int TuningDb::finishedSearches(const TuningKey& key) {
  std::lock_guard lock(impl_->mutex);
  Impl::Transaction t(*impl_, false);
  std::optional<int64_t> id = impl_->findKey(key);
  if (!id) return 0;
  Impl::Use q = impl_->use("SELECT count(*) FROM searches WHERE key_id = ?1 AND finished_at IS NOT NULL");
  q->bind(1, *id);
  q->step();
  return q->int32(0);
}

std::vector<CandidateRecord> TuningDb::candidates(const TuningKey& key) {
  std::lock_guard lock(impl_->mutex);
  Impl::Transaction t(*impl_, false);
  std::optional<int64_t> id = impl_->findKey(key);
  if (!id) return {};
  return impl_->candidatesOf(*id);
}

std::vector<TuningDb::Entry> TuningDb::list() {
  std::lock_guard lock(impl_->mutex);
  Impl::Transaction t(*impl_, false);  // one snapshot for the counts and the bests
  std::vector<Entry> out;
  for (auto& [id, key] : impl_->keys("")) {
    Entry e;
    e.key = key;
    {
      Impl::Use q = impl_->use(
          "SELECT count(*), coalesce(sum(status = 'verified'), 0) FROM candidates WHERE key_id = ?1");
      q->bind(1, id);
      q->step();
      e.measured = q->int32(0);
      e.verified = q->int32(1);
    }
    e.best = impl_->bestOf(id);
    out.push_back(std::move(e));
  }
  return out;
}

std::string TuningDb::exportJson(const std::string& kernelHash) {
  using nlohmann::json;
  std::lock_guard lock(impl_->mutex);
  Impl::Transaction t(*impl_, false);
  json keys = json::array();
  for (auto& [id, k] : impl_->keys(kernelHash)) {
    json entry;
    entry["key"] = {{"kernelHash", k.kernelHash},       {"kernelName", k.kernelName},
                    {"sizes", k.sizes},                 {"device", k.device},
                    {"arch", k.arch},                   {"driverVersion", k.driverVersion},
                    {"nvrtcVersion", k.nvrtcVersion},   {"rtcgVersion", k.rtcgVersion},
                    {"multiprocessors", k.multiprocessors}};
    json searches = json::array();
    {
      Impl::Use q = impl_->use(
          "SELECT id, settings, started_at, finished_at, wall_seconds, candidates FROM searches "
          "WHERE key_id = ?1 ORDER BY id");
      q->bind(1, id);
      while (q->step()) {
        json s = {{"id", q->int64(0)}, {"settings", q->text(1)}, {"startedAt", q->real(2)}};
        s["finishedAt"] = q->isNull(3) ? json() : json(q->real(3));
        s["wallSeconds"] = q->isNull(4) ? json() : json(q->real(4));
        s["candidates"] = q->isNull(5) ? json() : json(q->int64(5));
        searches.push_back(std::move(s));
      }
    }
    json candidates = json::array();
    for (const CandidateRecord& c : impl_->candidatesOf(id)) {
      json j = {{"schedule", c.schedule},       {"status", statusName(c.status)},
                {"reason", c.reason},           {"medianMs", c.medianMs},
                {"relativeError", c.relativeError}, {"registers", c.registers},
                {"spillBytes", c.spillBytes},   {"sharedBytes", c.sharedBytes},
                {"occupancy", c.occupancy},     {"gflops", c.gflops},
                {"gbytes", c.gbytes},           {"compileMs", c.compileMs},
                {"recordedAt", c.recordedAt}};
      j["search"] = c.searchId != 0 ? json(c.searchId) : json();
      candidates.push_back(std::move(j));
    }
    entry["searches"] = std::move(searches);
    entry["candidates"] = std::move(candidates);
    keys.push_back(std::move(entry));
  }
  json doc = {{"format", kExportFormat}, {"schemaVersion", kSchemaVersion}, {"keys", std::move(keys)}};
  // Text that is not UTF-8 (an imported name, a compiler log in a reason) becomes U+FFFD: JSON
  // cannot carry it, and the default handler threw (exit 70).
  return doc.dump(2, ' ', false, json::error_handler_t::replace);
}

namespace {

TuningKey importedKey(const nlohmann::json& jk) {
  const std::string where = "a key";
  TuningKey key;
  key.kernelHash = textField(jk, where, "kernelHash", "[0-9a-f]{16}");
  const std::string at = "key " + key.kernelHash;
  key.kernelName = textField(jk, at, "kernelName", "[A-Za-z_][A-Za-z0-9_]{0,254}");
  key.sizes = textField(jk, at, "sizes", "([A-Za-z_][A-Za-z0-9_]*=-?[0-9]+(,[A-Za-z_][A-Za-z0-9_]*=-?[0-9]+)*)?");
  key.device = textField(jk, at, "device", nullptr);
  key.arch = textField(jk, at, "arch", "(sm|compute)_[0-9]+[af]?");
  key.driverVersion = int(integerField(jk, at, "driverVersion", 0, INT32_MAX, std::nullopt));
  key.nvrtcVersion = textField(jk, at, "nvrtcVersion", nullptr);
  key.rtcgVersion = textField(jk, at, "rtcgVersion", nullptr);
  // Absent in exports of rtcg 0.1 (0: unknown).
  key.multiprocessors = int(integerField(jk, at, "multiprocessors", 0, INT32_MAX, int64_t(0)));
  return key;
}

CandidateRecord importedCandidate(const nlohmann::json& jc, const TuningKey& key) {
  CandidateRecord c;
  c.schedule = jc.at("schedule").get<std::string>();
  const std::string where = fmt::format("candidate '{}' of key {}", c.schedule, key.kernelHash);
  std::string status = jc.at("status").get<std::string>();
  std::optional<CandidateStatus> st = parseStatus(status);
  if (!st) throw Error(fmt::format("unknown candidate status '{}'", status));
  c.status = *st;
  const bool verified = c.status == CandidateStatus::Verified;
  // A verified candidate may become the kernel's best: its schedule must at least parse.
  if (ScheduleParseResult parsed = parseSchedule(c.schedule); verified && !parsed.ok())
    throw Error(fmt::format("{}: the schedule does not parse (column {}: {})", where, parsed.column, parsed.error));
  // The database has no kernel to plan a schedule for, but a clause whose factors alone cover more
  // points than the emitted code counts cannot plan for any kernel (it crashed the planner).
  if (ScheduleParseResult parsed = parseSchedule(c.schedule); verified && parsed.ok())
    if (std::optional<std::string> why = factorProductProblem(*parsed.schedule))
      throw Error(fmt::format("{}: the schedule cannot plan for any kernel: {}", where, *why));
  c.reason = jc.value("reason", std::string());
  c.medianMs = numberField(jc, where, "medianMs", 0, verified, std::nullopt);
  c.relativeError = numberField(jc, where, "relativeError", 0, false, 0.0);
  c.registers = int(integerField(jc, where, "registers", 0, INT32_MAX, 0));
  c.spillBytes = int(integerField(jc, where, "spillBytes", 0, INT32_MAX, 0));
  c.sharedBytes = int(integerField(jc, where, "sharedBytes", 0, INT32_MAX, 0));
  c.occupancy = numberField(jc, where, "occupancy", 0, false, 0.0);
  c.gflops = numberField(jc, where, "gflops", 0, false, 0.0);
  c.gbytes = numberField(jc, where, "gbytes", 0, false, 0.0);
  c.compileMs = numberField(jc, where, "compileMs", 0, false, 0.0);
  c.recordedAt = numberField(jc, where, "recordedAt", 0, false, std::nullopt);
  return c;
}

}  // namespace

int TuningDb::importJson(const std::string& text, int* duplicatesSkipped) {
  using nlohmann::json;
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 1e999
    throw Error(fmt::format("not a tuning database export (invalid JSON): {}", e.what()));
  }
  std::lock_guard lock(impl_->mutex);
  Impl::Transaction t(*impl_, true);  // all or nothing
  int added = 0, skipped = 0;
  try {
    if (!doc.is_object() || doc.value("format", std::string()) != kExportFormat)
      throw Error(fmt::format("not a tuning database export: expected \"format\": \"{}\"", kExportFormat));
    // The versions this build's exports can have been written by (a newer one may hold what this
    // build would misread: refused, not guessed at).
    integerField(doc, "the export", "schemaVersion", 1, kSchemaVersion, std::nullopt);
    // An array of keys ("keys": {} imported nothing and said so with exit 0), and not an empty one.
    if (!doc.contains("keys") || !doc.at("keys").is_array())
      throw Error("malformed tuning database export: \"keys\" must be an array of tuned keys");
    if (doc.at("keys").empty())
      throw Error("the export holds no tuned keys (\"keys\" is empty): nothing to import");
    for (const json& entry : doc.at("keys")) {
      const json& jk = entry.at("key");
      TuningKey key = importedKey(jk);
      int64_t keyId = impl_->keyId(key);

      // Searches are matched by key, start time and settings, so importing a file twice reuses them.
      std::map<int64_t, int64_t> searchIds;  // id in the file -> id here
      for (const json& s : entry.value("searches", json::array())) {
        const std::string where = "a search of key " + key.kernelHash;
        std::string settings = s.at("settings").get<std::string>();
        double startedAt = numberField(s, where, "startedAt", 0, false, std::nullopt);
        std::optional<int64_t> local;
        {
          Impl::Use q = impl_->use(
              "SELECT id FROM searches WHERE key_id = ?1 AND started_at = ?2 AND settings = ?3 LIMIT 1");
          q->bind(1, keyId);
          q->bind(2, startedAt);
          q->bind(3, settings);
          if (q->step()) local = q->int64(0);
        }
        if (!local) {
          Impl::Use q = impl_->use(
              "INSERT INTO searches(key_id, settings, started_at, finished_at, wall_seconds, candidates) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
          q->bind(1, keyId);
          q->bind(2, settings);
          q->bind(3, startedAt);
          auto bindOptional = [&](int i, const char* name, bool integer) {
            const json& v = s.value(name, json());
            // Checked as the other values are: get<int64_t> of 1.6e65 (too large for an integer,
            // so JSON holds a double) was undefined behaviour.
            if (v.is_null())
              q->bindNull(i);
            else if (integer)
              q->bind(i, integerField(s, where, name, 0, INT64_MAX, std::nullopt));
            else
              q->bind(i, numberField(s, where, name, 0, false, std::nullopt));
          };
          bindOptional(4, "finishedAt", false);
          bindOptional(5, "wallSeconds", false);
          bindOptional(6, "candidates", true);
          q->run();
          local = sqlite3_last_insert_rowid(impl_->db);
        }
        searchIds[integerField(s, where, "id", 0, INT64_MAX, std::nullopt)] = *local;
      }

      for (const json& jc : entry.at("candidates")) {
        CandidateRecord c = importedCandidate(jc, key);
        if (!jc.value("search", json()).is_null()) {
          const int64_t search = integerField(jc, fmt::format("candidate '{}' of key {}", c.schedule, key.kernelHash),
                                              "search", 0, INT64_MAX, std::nullopt);
          auto it = searchIds.find(search);
          if (it == searchIds.end())
            throw Error(fmt::format("candidate '{}' refers to search {}, which the file does not hold", c.schedule,
                                    search));
          c.searchId = it->second;
        }

        bool duplicate = false;
        {
          Impl::Use q = impl_->use(duplicateQuery());
          q->bind(1, keyId);
          Impl::bindCandidate(*q, c, c.recordedAt);
          duplicate = q->step();
        }
        if (duplicate) {
          ++skipped;
          continue;
        }
        Impl::Use q = impl_->use(fmt::format(
            "INSERT INTO candidates(key_id, {}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
            "?15)",
            kCandidateColumns));
        q->bind(1, keyId);
        Impl::bindCandidate(*q, c, c.recordedAt);
        q->run();
        ++added;
      }
    }
  } catch (const json::exception& e) {
    throw Error(fmt::format("malformed tuning database export: {}", e.what()));
  }
  t.commit();
  if (duplicatesSkipped) *duplicatesSkipped = skipped;
  return added;
}

int TuningDb::clear(const std::string& kernelHash) {
  std::lock_guard lock(impl_->mutex);
  Impl::Transaction t(*impl_, true);
  int removed = 0;
  {
    Impl::Use q = impl_->use(
        "DELETE FROM candidates WHERE ?1 = '' OR key_id IN (SELECT id FROM tuning_keys WHERE kernel_hash = ?1)");
    q->bind(1, kernelHash);
    q->run();
    removed = sqlite3_changes(impl_->db);
  }
  {
    Impl::Use q = impl_->use(
        "DELETE FROM searches WHERE ?1 = '' OR key_id IN (SELECT id FROM tuning_keys WHERE kernel_hash = ?1)");
    q->bind(1, kernelHash);
    q->run();
  }
  {
    Impl::Use q = impl_->use("DELETE FROM tuning_keys WHERE ?1 = '' OR kernel_hash = ?1");
    q->bind(1, kernelHash);
    q->run();
  }
  t.commit();
  return removed;
}

}  // namespace rtcg
