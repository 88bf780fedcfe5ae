#include "tune/TuningDb.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/Error.h"
#include "tune/TempDir.h"
#include "tune/WarmStart.h"

using namespace rtcg;
using rtcg::testing::TempDir;

namespace {

TuningKey makeKey(const std::string& hash = "00000000deadbeef", const std::string& sizes = "n=500") {
  TuningKey k;
  k.kernelHash = hash;
  k.kernelName = "matmul";
  k.sizes = sizes;
  k.device = "NVIDIA H200";
  k.arch = "sm_90";
  k.driverVersion = 13000;
  k.nvrtcVersion = "13.0";
  k.rtcgVersion = "0.1.0";
  return k;
}

CandidateRecord verified(const std::string& schedule, double ms) {
  CandidateRecord c;
  c.schedule = schedule;
  c.status = CandidateStatus::Verified;
  c.medianMs = ms;
  c.relativeError = 1e-7;
  c.registers = 40;
  c.spillBytes = 0;
  c.sharedBytes = 4096;
  c.occupancy = 0.75;
  c.gflops = 1000.0 / ms;
  c.gbytes = 300.0 / ms;
  c.compileMs = 12.5;
  return c;
}

CandidateRecord failed(const std::string& schedule, CandidateStatus s, const std::string& reason) {
  CandidateRecord c;
  c.schedule = schedule;
  c.status = s;
  c.reason = reason;
  return c;
}

// Runs one SQL query on the file directly (outside TuningDb) and returns the first column of
// every row as text.
// The `column`th value of each row `sql` returns.
std::vector<std::string> rawQuery(const std::string& path, const std::string& sql, int column = 0) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::vector<std::string> rows;
  struct Out {
    std::vector<std::string>* rows;
    int column;
  } out{&rows, column};
  auto collect = [](void* o, int n, char** values, char**) {
    auto* out = static_cast<Out*>(o);
    out->rows->push_back(n > out->column && values[out->column] ? values[out->column] : "");
    return 0;
  };
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), +collect, &out, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
  return rows;
}

int64_t countRows(const std::string& path, const std::string& table) {
  auto rows = rawQuery(path, "SELECT count(*) FROM " + table);
  return rows.empty() ? -1 : std::stoll(rows[0]);
}

}  // namespace

TEST(TuningDb, StatusNamesRoundTrip) {
  for (CandidateStatus s : {CandidateStatus::Verified, CandidateStatus::WrongResult, CandidateStatus::CompileFailed,
                            CandidateStatus::LaunchFailed, CandidateStatus::Faulted, CandidateStatus::TimedOut,
                            CandidateStatus::Skipped}) {
    auto back = parseStatus(statusName(s));
    ASSERT_TRUE(back.has_value()) << statusName(s);
    EXPECT_EQ(*back, s);
  }
  EXPECT_FALSE(parseStatus("fast").has_value());
}

TEST(TuningDb, BestIsTheFastestVerifiedOfExactlyThatKey) {
  TempDir dir;
  TuningDb db(dir.file("t.sqlite"));
  TuningKey key = makeKey();
  EXPECT_FALSE(db.best(key).has_value());

  db.record(key, verified("j: grid.x, thread.x 32", 2.0));
  db.record(key, verified("j: grid.x, thread.x 128", 1.5));
  db.record(key, failed("j: grid.x, thread.x 64", CandidateStatus::WrongResult, "relative error 0.3"));
  CandidateRecord fastButWrong = verified("j: grid.x, thread.x 256", 0.1);
  fastButWrong.status = CandidateStatus::WrongResult;
  db.record(key, fastButWrong);
  TuningKey other = makeKey("00000000deadbeef", "n=1500");
  db.record(other, verified("j: grid.x, thread.x 512", 0.5));

  auto best = db.best(key);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->schedule, "j: grid.x, thread.x 128");
  EXPECT_DOUBLE_EQ(best->medianMs, 1.5);
  EXPECT_EQ(best->registers, 40);
  EXPECT_EQ(best->sharedBytes, 4096);
  EXPECT_DOUBLE_EQ(best->occupancy, 0.75);
  EXPECT_GT(best->recordedAt, 1.6e9);  // stamped by record()

  TuningKey otherDevice = key;
  otherDevice.device = "NVIDIA H100";
  EXPECT_FALSE(db.best(otherDevice).has_value());
  EXPECT_EQ(db.best(other)->schedule, "j: grid.x, thread.x 512");
}

TEST(TuningDb, CandidatesComeBackInRecordOrderWithEveryField) {
  TempDir dir;
  TuningDb db(dir.file("t.sqlite"));
  TuningKey key = makeKey();
  int64_t search = db.beginSearch(key, "max-candidates=10");
  EXPECT_GT(search, 0);
  CandidateRecord a = verified("i: grid.x, thread.x 32", 3.25);
  a.searchId = search;
  a.recordedAt = 1700000000.5;
  CandidateRecord b = failed("i: grid.x, thread.x 2048", CandidateStatus::CompileFailed, "error: too many threads\nline 2");
  b.searchId = search;
  b.recordedAt = 1700000001.25;
  db.record(key, a);
  db.record(key, b);
  db.endSearch(search, 4.5, 2);

  auto all = db.candidates(key);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], a);
  EXPECT_EQ(all[1], b);
  EXPECT_TRUE(db.candidates(makeKey("ffffffffffffffff")).empty());
  EXPECT_EQ(rawQuery(dir.file("t.sqlite"), "SELECT wall_seconds FROM searches")[0], "4.5");
}

TEST(TuningDb, ARecordOfAClearedSearchIsKeptWithoutItsSearch) {
  TempDir dir;
  TuningDb db(dir.file("t.sqlite"));
  TuningKey key = makeKey();
  int64_t search = db.beginSearch(key, "");
  {
    TuningDb other(dir.file("t.sqlite"));  // another process clearing during the search
    other.clear();
  }
  CandidateRecord c = verified("i: grid.x, thread.x 32", 1.0);
  c.searchId = search;
  EXPECT_NO_THROW(db.record(key, c));
  EXPECT_NO_THROW(db.endSearch(search, 1.0, 1));
  auto all = db.candidates(key);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].searchId, 0);
}

// A file of rtcg 0.1 (schema version 1, no multiprocessor count) is read as it is when read-only
// and migrated when opened writable; its keys keep their rows and read 0 (unknown) processors, until
// a record with the count fills it in.
TEST(TuningDb, VersionOneFilesAreReadAndMigrated) {
  TempDir dir;
  std::string path = dir.file("v1.sqlite");
  {
    TuningDb db(path);
    db.record(makeKey(), verified("i: thread.x 64", 1.0));
  }
  rawQuery(path, "ALTER TABLE tuning_keys DROP COLUMN multiprocessors");
  rawQuery(path, "UPDATE schema_version SET version = 1");
  {
    TuningDb ro(path, TuningDb::Access::ReadOnly);
    ASSERT_EQ(ro.list().size(), 1u);
    EXPECT_EQ(ro.list()[0].key.multiprocessors, 0);
    EXPECT_TRUE(ro.best(makeKey()).has_value());
  }
  TuningDb db(path);
  EXPECT_EQ(rawQuery(path, "SELECT version FROM schema_version"), std::vector<std::string>{"2"});
  EXPECT_TRUE(db.best(makeKey()).has_value());  // exact lookups ignore the count
  TuningKey counted = makeKey();
  counted.multiprocessors = 132;
  db.record(counted, verified("i: thread.x 128", 2.0));
  ASSERT_EQ(db.list().size(), 1u);
  EXPECT_EQ(db.list()[0].key.multiprocessors, 132);
  EXPECT_EQ(db.list()[0].measured, 2);
}

TEST(TuningDb, SchemaHasVersionWalAndTheBestIndex) {
  TempDir dir;
  std::string path = dir.file("t.sqlite");
  { TuningDb db(path); }
  { TuningDb again(path); }  // reopening an up-to-date file migrates nothing
  EXPECT_EQ(rawQuery(path, "SELECT version FROM schema_version"), std::vector<std::string>{"2"});
  EXPECT_EQ(rawQuery(path, "PRAGMA journal_mode")[0], "wal");
  // The lookup best() makes is served by the index, in order, without a sort.
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db,
                     "EXPLAIN QUERY PLAN SELECT schedule FROM candidates WHERE key_id = 1 AND "
                     "status = 'verified' ORDER BY median_ms, id LIMIT 1",
                     -1, &st, nullptr);
  std::string detail;
  while (sqlite3_step(st) == SQLITE_ROW) detail += std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 3))) + "\n";
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_NE(detail.find("candidates_best"), std::string::npos) << detail;
  EXPECT_EQ(detail.find("TEMP B-TREE"), std::string::npos) << detail;
}

TEST(TuningDb, AFileOfANewerSchemaIsRefused) {
  TempDir dir;
  std::string path = dir.file("t.sqlite");
  { TuningDb db(path); }
  rawQuery(path, "UPDATE schema_version SET version = 99");
  try {
    TuningDb db(path);
    FAIL() << "expected rtcg::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
  }
}

TEST(TuningDb, OpenErrorsAreRtcgErrorsWithSqlitesMessage) {
  TempDir dir;
  try {
    TuningDb db(dir.file("no/such/dir/t.sqlite"));
    FAIL() << "expected rtcg::Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("sqlite3_open_v2 failed"), std::string::npos) << m;
    EXPECT_NE(m.find("unable to open"), std::string::npos) << m;
  }
  std::string garbage = dir.file("garbage.sqlite");
  std::ofstream(garbage) << std::string(8192, 'x');
  try {
    TuningDb db(garbage);
    FAIL() << "expected rtcg::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a database"), std::string::npos) << e.what();
  }
}

// Sets (or, with nullptr, unsets) environment variables for one scope.
class ScopedEnvironment {
 public:
  ScopedEnvironment() {
    for (const char* n : {"RTCG_TUNING_DB", "RTCG_CACHE_DIR", "XDG_CACHE_HOME", "XDG_DATA_HOME", "HOME"}) {
      const char* v = std::getenv(n);
      saved_.emplace_back(n, v ? std::optional<std::string>(v) : std::nullopt);
    }
  }
  ~ScopedEnvironment() {
    for (auto& [n, v] : saved_) v ? setenv(n, v->c_str(), 1) : unsetenv(n);
  }
  void set(const char* n, const std::string& v) { setenv(n, v.c_str(), 1); }
  void unset(const char* n) { unsetenv(n); }

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

// The database lives apart from the kernel cache (runtime/StateDirs.h): RTCG_TUNING_DB, else the
// explicit RTCG_CACHE_DIR, else the XDG data directory.
TEST(TuningDb, DefaultPathFollowsTheEnvironment) {
  TempDir dir;
  ScopedEnvironment env;
  env.set("RTCG_TUNING_DB", dir.file("explicit/db.sqlite"));
  env.set("RTCG_CACHE_DIR", dir.file("a/b"));
  env.set("XDG_CACHE_HOME", dir.file("xdg"));
  env.set("XDG_DATA_HOME", dir.file("data"));
  env.set("HOME", dir.file("home"));
  EXPECT_EQ(TuningDb::defaultPath(), dir.file("explicit/db.sqlite"));
  EXPECT_TRUE(std::filesystem::is_directory(dir.file("explicit")));
  env.unset("RTCG_TUNING_DB");
  EXPECT_EQ(TuningDb::defaultPath(), dir.file("a/b") + "/tuning.sqlite");
  EXPECT_TRUE(std::filesystem::is_directory(dir.file("a/b")));
  env.unset("RTCG_CACHE_DIR");
  EXPECT_EQ(TuningDb::defaultPath(), dir.file("data") + "/rtcg/tuning.sqlite");
  env.set("XDG_DATA_HOME", "relative/ignored");
  EXPECT_EQ(TuningDb::defaultPath(), dir.file("home") + "/.local/share/rtcg/tuning.sqlite");
  env.unset("XDG_DATA_HOME");
  EXPECT_EQ(TuningDb::defaultPath(), dir.file("home") + "/.local/share/rtcg/tuning.sqlite");
  EXPECT_TRUE(std::filesystem::is_directory(dir.file("home/.local/share/rtcg")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("xdg")));  // the cache directory is not made for it
  std::ofstream(dir.file("file")) << "x";
  env.set("RTCG_TUNING_DB", dir.file("file/sub/db.sqlite"));
  EXPECT_THROW(TuningDb::defaultPath(), Error);
  env.unset("RTCG_TUNING_DB");
  env.unset("HOME");
  EXPECT_THROW(TuningDb::defaultPath(), Error);
  EXPECT_EQ(TuningDb::existingDefaultPath(), std::nullopt);
}

// rtcg 0.1 kept the database in the kernel cache directory: the first use moves it, with every row.
TEST(TuningDb, TheOldDatabaseInTheCacheDirectoryIsMovedOnce) {
  TempDir dir;
  ScopedEnvironment env;
  env.unset("RTCG_TUNING_DB");
  env.unset("RTCG_CACHE_DIR");
  env.unset("XDG_CACHE_HOME");
  env.unset("XDG_DATA_HOME");
  env.set("HOME", dir.file("home"));
  std::string legacy = dir.file("home/.cache/rtcg/tuning.sqlite");
  std::filesystem::create_directories(dir.file("home/.cache/rtcg"));
  {
    TuningDb old(legacy);
    old.record(makeKey(), verified("i: thread.x 64", 1.5));
  }
  EXPECT_EQ(TuningDb::existingDefaultPath(), dir.file("home/.local/share/rtcg/tuning.sqlite"));
  EXPECT_FALSE(std::filesystem::exists(legacy));
  TuningDb moved(TuningDb::defaultPath());
  ASSERT_TRUE(moved.best(makeKey()).has_value());
  EXPECT_EQ(moved.best(makeKey())->schedule, "i: thread.x 64");

  // A new database is never overwritten by an old one that reappears.
  {
    TuningDb old(legacy);
    old.record(makeKey("00000000000000aa"), verified("i: thread.x 32", 1.0));
  }
  EXPECT_EQ(TuningDb::defaultPath(), dir.file("home/.local/share/rtcg/tuning.sqlite"));
  EXPECT_FALSE(moved.best(makeKey("00000000000000aa")).has_value());
}

TEST(TuningDb, ExportImportRoundTripsAndSkipsDuplicates) {
  TempDir dir;
  TuningDb src(dir.file("src.sqlite"));
  TuningKey k1 = makeKey("1111111111111111"), k2 = makeKey("2222222222222222", "n=64");
  int64_t s1 = src.beginSearch(k1, "time-limit=60");
  for (int i = 0; i < 5; ++i) {
    CandidateRecord c = verified("j: grid.x, thread.x " + std::to_string(32 << i), 1.0 + i * 0.1);
    c.searchId = s1;
    src.record(k1, c);
  }
  src.record(k1, failed("j: <weird> & \"quoted\"", CandidateStatus::Faulted, "illegal address"));
  src.endSearch(s1, 3.0, 6);
  src.record(k2, verified("i: grid.x, thread.x 64", 0.02));

  std::string all = src.exportJson();
  auto doc = nlohmann::json::parse(all);
  EXPECT_EQ(doc["format"], "rtcg-tuning-db");
  EXPECT_EQ(doc["keys"].size(), 2u);
  auto only2 = nlohmann::json::parse(src.exportJson("2222222222222222"));
  ASSERT_EQ(only2["keys"].size(), 1u);
  EXPECT_EQ(only2["keys"][0]["key"]["sizes"], "n=64");
  EXPECT_TRUE(nlohmann::json::parse(src.exportJson("0000000000000000"))["keys"].empty());

  TuningDb dst(dir.file("dst.sqlite"));
  dst.record(k2, verified("i: grid.x, thread.x 128", 0.03));  // merged with, not replaced
  int skipped = -1;
  EXPECT_EQ(dst.importJson(all, &skipped), 7);
  EXPECT_EQ(skipped, 0);
  auto a = src.candidates(k1), b = dst.candidates(k1);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].schedule, b[i].schedule);
    EXPECT_EQ(a[i].status, b[i].status);
    EXPECT_EQ(a[i].reason, b[i].reason);
    EXPECT_EQ(a[i].medianMs, b[i].medianMs);  // exact: JSON round-trips doubles
    EXPECT_EQ(a[i].recordedAt, b[i].recordedAt);
    EXPECT_EQ(a[i].searchId != 0, b[i].searchId != 0);
  }
  EXPECT_EQ(dst.candidates(k2).size(), 2u);
  EXPECT_EQ(dst.best(k2)->schedule, "i: grid.x, thread.x 64");

  // Importing again, or into the source itself, adds nothing.
  EXPECT_EQ(dst.importJson(all, &skipped), 0);
  EXPECT_EQ(skipped, 7);
  EXPECT_EQ(src.importJson(all, &skipped), 0);
  EXPECT_EQ(skipped, 7);
  EXPECT_EQ(countRows(dir.file("dst.sqlite"), "searches"), 1);
  EXPECT_EQ(countRows(dir.file("src.sqlite"), "candidates"), 7);
}

// An import with `field: value` replaced in its one candidate or its key, and what it must say.
static std::string importError(const std::string& field, const std::string& value) {
  nlohmann::json doc = nlohmann::json::parse(R"({"format": "rtcg-tuning-db", "schemaVersion": 1, "keys": [{"key": {
      "kernelHash": "ab00000000000000", "kernelName": "k", "sizes": "n=8", "device": "d", "arch": "sm_90",
      "driverVersion": 1, "nvrtcVersion": "1", "rtcgVersion": "1"}, "candidates": [{"schedule": "i: grid.x, thread.x 32",
      "status": "verified", "medianMs": 1.0, "registers": 32, "recordedAt": 1.0}]}]})");
  nlohmann::json& key = doc["keys"][0]["key"];
  nlohmann::json& candidate = doc["keys"][0]["candidates"][0];
  (key.contains(field) ? key : candidate)[field] = nlohmann::json::parse(value);
  TempDir dir;
  TuningDb db(dir.file("t.sqlite"));
  try {
    db.importJson(doc.dump());
  } catch (const Error& e) {
    EXPECT_TRUE(db.list().empty());
    return e.what();
  }
  return "<imported>";
}

TEST(TuningDb, ImportValidatesEveryValue) {
  // Nothing was checked: integers narrowed, negative medians sorted first, a schedule that does
  // not parse became the best, names carried terminal escape sequences to `db list`.
  EXPECT_EQ(importError("schedule", R"("i: grid.x, thread.x 32")"), "<imported>");
  EXPECT_NE(importError("registers", "5000000000").find("'registers' must be an integer from 0 to 2147483647, not 5000000000"),
            std::string::npos);
  EXPECT_NE(importError("registers", "1.5").find("'registers' must be an integer"), std::string::npos);
  EXPECT_NE(importError("medianMs", "-1.0").find("'medianMs' must be a finite number above 0, not -1.0"), std::string::npos);
  EXPECT_NE(importError("medianMs", "0").find("'medianMs' must be a finite number above 0"), std::string::npos);
  EXPECT_NE(importError("occupancy", R"("high")").find("'occupancy' must be a number"), std::string::npos);
  EXPECT_NE(importError("schedule", R"("i: grid.x, warp.q 99")").find("the schedule does not parse"), std::string::npos);
  EXPECT_NE(importError("kernelName", "\"k\\u001b[2J\"").find("'kernelName' must be printable ASCII"), std::string::npos);
  EXPECT_NE(importError("kernelHash", R"("xyz")").find("'kernelHash' 'xyz' is not of the form rtcg writes"),
            std::string::npos);
  EXPECT_NE(importError("driverVersion", "-3").find("'driverVersion' must be an integer"), std::string::npos);
}

// Found by the dbimport fuzzer: a search's values were read with get<int64_t> unchecked, and a
// count of 1.6e65 (too large for an integer, so JSON holds a double) was undefined behaviour.
TEST(TuningDb, ImportValidatesTheSearchesToo) {
  auto importWith = [](const std::string& field, const std::string& value, bool inCandidate = false) -> std::string {
    nlohmann::json doc = nlohmann::json::parse(R"({"format": "rtcg-tuning-db", "schemaVersion": 1, "keys": [{"key": {
        "kernelHash": "ab00000000000000", "kernelName": "k", "sizes": "n=8", "device": "d", "arch": "sm_90",
        "driverVersion": 1, "nvrtcVersion": "1", "rtcgVersion": "1"},
        "searches": [{"id": 3, "settings": "s", "startedAt": 1.0, "finishedAt": 2.0, "wallSeconds": 1.0,
                      "candidates": 1}],
        "candidates": [{"schedule": "i: grid.x, thread.x 32", "status": "verified", "medianMs": 1.0,
                        "recordedAt": 1.0, "search": 3}]}]})");
    (inCandidate ? doc["keys"][0]["candidates"][0] : doc["keys"][0]["searches"][0])[field] = nlohmann::json::parse(value);
    TempDir dir;
    TuningDb db(dir.file("t.sqlite"));
    try {
      db.importJson(doc.dump());
    } catch (const Error& e) {
      EXPECT_TRUE(db.list().empty());
      return e.what();
    }
    return "<imported>";
  };
  EXPECT_EQ(importWith("candidates", "1"), "<imported>");
  EXPECT_EQ(importWith("finishedAt", "null"), "<imported>");
  EXPECT_NE(importWith("candidates", std::string(66, '1')).find("a search of key ab00000000000000: 'candidates' must "
                                                                "be an integer from 0 to 9223372036854775807"),
            std::string::npos);
  EXPECT_NE(importWith("candidates", "2.5").find("'candidates' must be an integer"), std::string::npos);
  EXPECT_NE(importWith("id", "1e300").find("'id' must be an integer"), std::string::npos);
  EXPECT_NE(importWith("startedAt", "-4").find("'startedAt' must be a finite number of at least 0"), std::string::npos);
  EXPECT_NE(importWith("wallSeconds", R"("long")").find("'wallSeconds' must be a number"), std::string::npos);
  EXPECT_NE(importWith("search", "3e30", true).find("'search' must be an integer"), std::string::npos);
  EXPECT_NE(importWith("search", "4", true).find("refers to search 4, which the file does not hold"), std::string::npos);
}

TEST(TuningDb, MalformedImportAddsNothing) {
  TempDir dir;
  TuningDb db(dir.file("t.sqlite"));
  EXPECT_THROW(db.importJson("{not json"), Error);
  EXPECT_THROW(db.importJson(R"({"format": "something-else", "keys": []})"), Error);
  // The first candidate is fine, the second lacks its time: the whole import is rolled back.
  std::string half = R"({"format": "rtcg-tuning-db", "schemaVersion": 1, "keys": [{"key": {"kernelHash": "ab00000000000000", "kernelName": "k",
      "sizes": "", "device": "d", "arch": "sm_90", "driverVersion": 1, "nvrtcVersion": "1", "rtcgVersion": "1"},
      "candidates": [{"schedule": "i: grid.x, thread.x 32", "status": "verified", "medianMs": 1.0, "recordedAt": 1.0},
                     {"schedule": "i: grid.x, thread.x 64", "status": "verified", "recordedAt": 2.0}]}]})";
  try {
    db.importJson(half);
    FAIL() << "expected rtcg::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("medianMs"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(db.list().empty());
  std::string badStatus = half;
  badStatus.replace(badStatus.rfind("\"verified\""), 10, "\"speedy\"");
  EXPECT_THROW(db.importJson(badStatus), Error);
  EXPECT_TRUE(db.list().empty());
}

TEST(TuningDb, ListAndClear) {
  TempDir dir;
  TuningDb db(dir.file("t.sqlite"));
  TuningKey k1 = makeKey("1111111111111111"), k2 = makeKey("2222222222222222");
  k2.kernelName = "axpy";
  db.record(k1, verified("a", 2.0));
  db.record(k1, verified("b", 1.0));
  db.record(k1, failed("c", CandidateStatus::TimedOut, "hung"));
  db.record(k2, failed("d", CandidateStatus::CompileFailed, "bad"));
  db.beginSearch(makeKey("3333333333333333"), "");  // a key with nothing measured yet

  auto entries = db.list();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].key.kernelName, "axpy");  // sorted by kernel name
  EXPECT_EQ(entries[0].measured, 1);
  EXPECT_EQ(entries[0].verified, 0);
  EXPECT_FALSE(entries[0].best.has_value());
  auto it = std::find_if(entries.begin(), entries.end(), [&](auto& e) { return e.key == k1; });
  ASSERT_NE(it, entries.end());
  EXPECT_EQ(it->measured, 3);
  EXPECT_EQ(it->verified, 2);
  EXPECT_EQ(it->best->schedule, "b");

  EXPECT_EQ(db.clear("1111111111111111"), 3);
  EXPECT_EQ(db.list().size(), 2u);
  EXPECT_FALSE(db.best(k1).has_value());
  EXPECT_EQ(db.clear("1111111111111111"), 0);
  EXPECT_EQ(db.clear(), 1);
  EXPECT_TRUE(db.list().empty());
  EXPECT_EQ(countRows(dir.file("t.sqlite"), "searches"), 0);
}

// best() among 10^4 rows is one index search, not a scan and sort: asserted by SQLite's query plan
// rather than by milliseconds (a time limit flaked under load; bench/compiler_speed.cpp times it).
TEST(TuningDb, BestIsAnIndexSearchAmongTenThousandRows) {
  TempDir dir;
  std::string path = dir.file("t.sqlite");
  TuningDb db(path);
  TuningKey key = makeKey();
  // 10^4 rows: most of them for the looked-up key, the rest spread over other sizes.
  {
    int64_t search = db.beginSearch(key, "");
    for (int i = 0; i < 10000; ++i) {
      TuningKey k = i % 5 == 0 ? makeKey("00000000deadbeef", "n=" + std::to_string(i % 50)) : key;
      CandidateRecord c = i % 7 == 0 ? failed("s" + std::to_string(i), CandidateStatus::WrongResult, "wrong")
                                     : verified("s" + std::to_string(i), 1.0 + (i * 7919 % 10007) * 1e-3);
      c.searchId = search;
      db.record(k, c);
    }
  }
  EXPECT_EQ(countRows(path, "candidates"), 10000);

  TuningDb fresh(path);  // a cold connection, as a new process would have
  auto best = fresh.best(key);
  ASSERT_TRUE(best.has_value());
  // The query of TuningDb::Impl::bestOf: a search of the candidates_best index, already in
  // median order (no temporary B-tree for the ORDER BY).
  std::string plan;
  for (const std::string& row : rawQuery(path, "EXPLAIN QUERY PLAN SELECT * FROM candidates WHERE key_id = 1 AND "
                                               "status = 'verified' ORDER BY median_ms, id LIMIT 1", 3))
    plan += row + "\n";
  EXPECT_NE(plan.find("SEARCH candidates USING INDEX candidates_best (key_id=? AND status=?)"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << plan;

  // It is the fastest verified one.
  double fastest = 1e9;
  for (const CandidateRecord& c : fresh.candidates(key))
    if (c.status == CandidateStatus::Verified) fastest = std::min(fastest, c.medianMs);
  EXPECT_EQ(best->medianMs, fastest);
}

TEST(TuningDb, SeveralThreadsShareOneObject) {
  TempDir dir;
  TuningDb db(dir.file("t.sqlite"));
  TuningKey key = makeKey();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        db.record(key, verified(std::to_string(t) + "/" + std::to_string(i), 1.0 + i));
        db.best(key);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(db.candidates(key).size(), 200u);
}

// N processes write 200 records each into one file at once, each opening it itself (the first
// ones race to create the schema): every row arrives and no process sees an error.
TEST(TuningDb, SeveralProcessesWriteAtOnce) {
  TempDir dir;
  std::string path = dir.file("shared.sqlite");
  constexpr int kProcesses = 8, kRecords = 200;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        TuningDb db(path);
        TuningKey key = makeKey(p % 2 ? "aaaaaaaaaaaaaaaa" : "bbbbbbbbbbbbbbbb");
        int64_t search = db.beginSearch(key, "process " + std::to_string(p));
        for (int i = 0; i < kRecords; ++i) {
          CandidateRecord c = verified("p" + std::to_string(p) + " c" + std::to_string(i), 1.0 + i);
          c.searchId = search;
          db.record(key, c);
          if (i % 50 == 0) db.best(key);  // readers interleaved with writers
        }
        db.endSearch(search, 1.0, kRecords);
      } catch (const std::exception& e) {
        fprintf(stderr, "child %d: %s\n", p, e.what());
        code = 1;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  TuningDb db(path);
  size_t total = db.candidates(makeKey("aaaaaaaaaaaaaaaa")).size() + db.candidates(makeKey("bbbbbbbbbbbbbbbb")).size();
  EXPECT_EQ(total, static_cast<size_t>(kProcesses * kRecords));
  EXPECT_EQ(countRows(path, "searches"), kProcesses);
  EXPECT_EQ(countRows(path, "tuning_keys"), 2);
  EXPECT_EQ(rawQuery(path, "PRAGMA integrity_check")[0], "ok");
}

// A writer killed with SIGKILL in the middle of its loop: the file opens and holds every row
// whose record() had returned (the child reports each through a pipe).
TEST(TuningDb, AKilledWriterLosesNoCommittedRow) {
  TempDir dir;
  std::string path = dir.file("killed.sqlite");
  { TuningDb db(path); }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    try {
      TuningDb db(path);
      TuningKey key = makeKey();
      int64_t search = db.beginSearch(key, "");
      for (int i = 0;; ++i) {
        CandidateRecord c = verified("c" + std::to_string(i), 1.0 + i);
        c.searchId = search;
        db.record(key, c);
        char byte = 1;
        if (write(fds[1], &byte, 1) != 1) _exit(2);
      }
    } catch (...) {
      _exit(1);
    }
  }
  close(fds[1]);
  int committed = 0;
  char buf[64];
  while (committed < 300) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    ASSERT_GT(n, 0) << "the writer stopped early";
    committed += static_cast<int>(n);
  }
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  while (true) {  // reports written just before the kill
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    committed += static_cast<int>(n);
  }
  close(fds[0]);

  TuningDb db(path);
  auto rows = db.candidates(makeKey());
  EXPECT_GE(static_cast<int>(rows.size()), committed);
  EXPECT_LE(static_cast<int>(rows.size()), committed + 1);  // one may have committed unreported
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].schedule, "c" + std::to_string(i));
  EXPECT_EQ(rawQuery(path, "PRAGMA integrity_check")[0], "ok");
  db.record(makeKey(), verified("after the kill", 0.5));  // and it is writable
  EXPECT_EQ(db.best(makeKey())->schedule, "after the kill");
}

TEST(WarmStart, TakesTheWinnersOfOtherSizesNearestFirst) {
  TempDir dir;
  TuningDb db(dir.file("t.sqlite"));
  // The same kernel on the same device at three other sizes, each with a slower runner-up.
  const std::vector<std::pair<std::string, std::string>> sizes{
      {"n=1000", "tile 1000"}, {"n=2048", "tile 2048"}, {"n=4096", "tile 4096"}};
  for (const auto& [s, best] : sizes) {
    db.record(makeKey("hash " + s, s), verified(best, 1.0));
    db.record(makeKey("hash " + s, s), verified("slower at " + s, 2.0));
    db.record(makeKey("hash " + s, s), failed("faster but wrong at " + s, CandidateStatus::WrongResult, "mismatch"));
  }
  // Not taken: this size itself, another device, another kernel, other size parameters.
  db.record(makeKey("hash n=3000", "n=3000"), verified("this size", 0.5));
  TuningKey otherDevice = makeKey("hash h100", "n=3001");
  otherDevice.device = "NVIDIA H100 80GB HBM3";
  db.record(otherDevice, verified("other device", 0.5));
  TuningKey otherKernel = makeKey("hash gemv", "n=3001");
  otherKernel.kernelName = "gemv";
  db.record(otherKernel, verified("other kernel", 0.5));
  db.record(makeKey("hash mn", "m=3000,n=3000"), verified("other parameters", 0.5));

  TuningKey key = makeKey("hash n=3000", "n=3000");
  // |ln(3000/4096)| = 0.31 < |ln(3000/2048)| = 0.38 < |ln(3000/1000)| = 1.10.
  EXPECT_EQ(warmStartSchedules(db.list(), key, 4), (std::vector<std::string>{"tile 4096", "tile 2048", "tile 1000"}));
  EXPECT_EQ(warmStartSchedules(db.list(), key, 1), (std::vector<std::string>{"tile 4096"}));
  // Two sizes with the same winner give it once.
  db.record(makeKey("hash n=3500", "n=3500"), verified("tile 4096", 0.9));
  EXPECT_EQ(warmStartSchedules(db.list(), key, 4), (std::vector<std::string>{"tile 4096", "tile 2048", "tile 1000"}));
  // Sizes that are not the database's "name=value,..." give nothing rather than a guess.
  TuningKey odd = makeKey("hash odd", "n=");
  EXPECT_TRUE(warmStartSchedules(db.list(), odd, 4).empty());
}
