// compile()'s schedule choice without a device (api/ScheduleChoice.h): the tuning database is a
// help, never a requirement. Every way the cache or the database can be unusable (no HOME, HOME a
// file, a write-protected or corrupt database, a stored schedule that no longer plans) gives a
// warning and the default schedule, never an exception.
#include <sqlite3.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>

#include "api/ScheduleChoice.h"
#include "runtime/Device.h"
#include "runtime/KernelCache.h"
#include "runtime/StateDirs.h"
#include "tune/TempDir.h"
#include "tune/TuningKeyFor.h"
#include "tune/TuningLookup.h"

namespace rtcg {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const char* kMatmul = R"(kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
  }
}
)";

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// No variable that names a place for rtcg's state, for one scope.
struct NoStateEnvironment {
  ScopedEnv a{"RTCG_TUNING_DB", nullptr}, b{"RTCG_CACHE_DIR", nullptr}, c{"XDG_CACHE_HOME", nullptr},
      d{"XDG_DATA_HOME", nullptr}, e{"RTCG_CACHE", nullptr}, f{"RTCG_TUNING", nullptr};
};

cuda::DeviceProperties h100() {
  cuda::DeviceProperties p;
  p.name = "NVIDIA H100 80GB HBM3";
  p.computeMajor = 9;
  p.multiprocessors = 132;
  p.driverVersion = 13000;
  p.maxThreadsPerBlock = 1024;
  p.sharedPerBlockOptin = 232448;
  return p;
}

// One compile()'s schedule choice for matmul at n, with the messages it logged.
struct Chosen {
  ScheduleChoice choice;
  std::vector<std::string> messages;
  std::string all() const {
    std::string s;
    for (const std::string& m : messages) s += m + "\n";
    return s;
  }
};

Chosen choose(int64_t n, std::optional<std::string> dbPath = std::nullopt, Tuning policy = Tuning::UseCached,
              bool snapshot = false) {
  CompileOptions options;
  ProvedKernel proved = proveKernel(kMatmul, {{"n", n}}, options);
  ScheduleInputs in;
  in.key = tuningKeyFor(proved.bound, h100());
  in.dbPath = std::move(dbPath);
  in.dbSnapshot = snapshot;
  Chosen out;
  CompileLog log([&](const std::string& m) { out.messages.push_back(m); });
  out.choice = pickSchedule(kMatmul, proved, options, policy, in, log);
  return out;
}

// Off: reads no database (the tests never look at the user's own).
std::string defaultText() { return choose(64, std::nullopt, Tuning::Off).choice.prepared.scheduleText; }

TuningKey matmulKey(int64_t n) { return tuningKeyFor(proveKernel(kMatmul, {{"n", n}}, {}).bound, h100()); }

CandidateRecord verified(const std::string& schedule, double ms) {
  CandidateRecord c;
  c.schedule = schedule;
  c.medianMs = ms;
  return c;
}

bool isRoot() { return ::geteuid() == 0; }

TEST(ScheduleChoice, NoHomeGivesTheDefaultScheduleAndNoDiskCache) {
  NoStateEnvironment clean;
  ScopedEnv home("HOME", nullptr);
  EXPECT_EQ(state::kernelCacheDirectory(), std::nullopt);
  EXPECT_EQ(state::tuningDbPath(), std::nullopt);
  EXPECT_EQ(TuningDb::existingDefaultPath(), std::nullopt);
  Chosen c = choose(64);
  EXPECT_EQ(c.choice.origin, "default");
  EXPECT_EQ(c.all().find("warning"), std::string::npos) << c.all();  // nothing is wrong: there is no database
}

TEST(ScheduleChoice, HomeAFileGivesTheDefaultScheduleAndAMemoryOnlyCache) {
  NoStateEnvironment clean;
  TempDir dir;
  std::ofstream(dir.file("home")) << "not a directory";
  ScopedEnv home("HOME", dir.file("home").c_str());
  Chosen c = choose(64);
  EXPECT_EQ(c.choice.origin, "default");
  KernelCache cache;  // from the environment: under the file
  ASSERT_TRUE(cache.diskEnabled());
  EXPECT_EQ(cache.getOrCompute("k", [] { return std::string("cubin"); }), "cubin");
  EXPECT_EQ(cache.stats().diskErrors, 1);
  EXPECT_EQ(cache.get("k"), "cubin");  // still served from memory
}

TEST(ScheduleChoice, RtcgCacheOffCreatesNothing) {
  NoStateEnvironment clean;
  TempDir dir;
  ScopedEnv home("HOME", dir.file("home").c_str());
  ScopedEnv off("RTCG_CACHE", "0");
  EXPECT_EQ(state::kernelCacheDirectory(), std::nullopt);
  Chosen c = choose(64);
  EXPECT_EQ(c.choice.origin, "default");
  EXPECT_FALSE(fs::exists(dir.file("home")));  // compile() made no directory
}

TEST(ScheduleChoice, CorruptDatabaseIsAWarningAndTheDefaultSchedule) {
  NoStateEnvironment clean;
  TempDir dir;
  std::ofstream(dir.file("tuning.sqlite")) << std::string(4096, 'x');
  ScopedEnv db("RTCG_TUNING_DB", dir.file("tuning.sqlite").c_str());
  Chosen c = choose(64);
  EXPECT_EQ(c.choice.origin, "default");
  EXPECT_NE(c.all().find("rtcg: warning: the tuning database cannot be read"), std::string::npos) << c.all();
  EXPECT_NE(c.all().find("not a database"), std::string::npos) << c.all();
}

TEST(ScheduleChoice, StoredScheduleThatNoLongerPlansIsSkipped) {
  TempDir dir;
  std::string def = defaultText();
  {
    TuningDb db(dir.file("t.sqlite"));
    db.record(matmulKey(64), verified("q: thread.x 32", 0.5));  // the fastest, but no index q
    db.record(matmulKey(64), verified(def, 1.0));
  }
  Chosen c = choose(64, dir.file("t.sqlite"));
  // best() is the fastest verified row; it no longer plans: a warning, then the default.
  EXPECT_EQ(c.choice.origin, "default");
  EXPECT_NE(c.all().find("'q: thread.x 32' (measured for matmul (n=64) on"), std::string::npos) << c.all();
  EXPECT_NE(c.all().find("rtcg: warning: matmul: the stored schedule"), std::string::npos) << c.all();
}

// Issue 40, 2: a stored row whose factors multiply past 64 bits (written by an rtcg before the
// import refused it) crashed the planner (SIGFPE) in every application that met it; it is now
// skipped with a warning, and such a row is no longer imported.
TEST(ScheduleChoice, StoredScheduleWhoseFactorsOverflowIsSkippedAndNotImported) {
  TempDir dir;
  const std::string overflow = "i: grid.y, serial 65536, serial 65536, serial 65536, serial 65536; j: grid.x; k: serial";
  std::string json;
  {
    TuningDb db(dir.file("t.sqlite"));
    db.record(matmulKey(64), verified(overflow, 0.5));
    json = db.exportJson();
  }
  Chosen c = choose(64, dir.file("t.sqlite"));
  EXPECT_EQ(c.choice.origin, "default");
  EXPECT_NE(c.all().find("rtcg: warning: matmul: the stored schedule '" + overflow), std::string::npos) << c.all();
  EXPECT_NE(c.all().find("at most 2^31 - 1 points"), std::string::npos) << c.all();
  TuningDb other(dir.file("other.sqlite"));
  try {
    other.importJson(json);
    ADD_FAILURE() << "imported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the schedule cannot plan for any kernel"), std::string::npos) << e.what();
  }
}

TEST(ScheduleChoice, StoredScheduleIsUsedAndNamed) {
  TempDir dir;
  std::string def = defaultText();
  {
    TuningDb db(dir.file("t.sqlite"));
    db.record(matmulKey(64), verified(def, 1.0));
  }
  Chosen c = choose(64, dir.file("t.sqlite"));
  EXPECT_EQ(c.choice.origin, "tuning database");
  EXPECT_NE(c.all().find("schedule from the tuning database"), std::string::npos) << c.all();
  EXPECT_EQ(choose(64, dir.file("t.sqlite"), Tuning::Off).choice.origin, "default");
}

// CompileOptions::tuningDbSnapshot: a snapshot is read without SQLite's locks, so even an exclusive
// lock held by another connection does not keep compile() from the tuned schedule (a reader taking
// locks is refused: the database cannot be read, a warning and the default schedule).
TEST(ScheduleChoice, ASnapshotIsReadWithoutLocks) {
  TempDir dir;
  std::string def = defaultText();
  {
    TuningDb db(dir.file("t.sqlite"));
    db.record(matmulKey(64), verified(def, 1.0));
    db.snapshotTo(dir.file("snapshot.sqlite"));
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(dir.file("snapshot.sqlite").c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;", nullptr, nullptr, nullptr),
            SQLITE_OK);
  Chosen c = choose(64, dir.file("snapshot.sqlite"), Tuning::UseCached, true);
  EXPECT_EQ(c.choice.origin, "tuning database") << c.all();
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    EXPECT_FALSE(fs::exists(dir.file(std::string("snapshot.sqlite") + suffix))) << suffix;
  sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
}

TEST(ScheduleChoice, WriteProtectedDatabaseIsReadWithoutSwitchingItsJournalMode) {
  TempDir dir;
  std::string path = dir.file("t.sqlite");
  std::string def = defaultText();
  {
    TuningDb db(path);
    db.record(matmulKey(64), verified(def, 1.0));
  }
  // A rollback-journal file, as a copy made with the sqlite3 shell or by an older tool would be
  // (switched through the library: the sqlite3 shell is not installed everywhere).
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(raw, "PRAGMA journal_mode = DELETE", nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(raw);
  }
  auto journalByte = [&] {  // header bytes 18 and 19: 1 rollback journal, 2 WAL
    std::ifstream f(path, std::ios::binary);
    char header[20];
    f.read(header, 20);
    return int(header[18]);
  };
  ASSERT_EQ(journalByte(), 1);
  ::chmod(path.c_str(), 0444);
  ::chmod(dir.path().c_str(), 0555);
  {
    // Asked read-only (compile()'s lookups), and write-protected (rtcgc db list opens read-write).
    TuningDb ro(path, TuningDb::Access::ReadOnly);
    EXPECT_TRUE(ro.readOnly());
    ASSERT_EQ(ro.list().size(), 1u);
    if (!isRoot()) {
      TuningDb protectedFile(path);
      EXPECT_TRUE(protectedFile.readOnly());
      EXPECT_EQ(protectedFile.list().size(), 1u);
      EXPECT_THROW(protectedFile.record(matmulKey(64), verified(def, 2.0)), Error);
    }
  }
  EXPECT_EQ(choose(64, path).choice.origin, "tuning database");
  EXPECT_EQ(journalByte(), 1);
  ::chmod(dir.path().c_str(), 0755);
}

// A writable file in a read-only directory: SQLite cannot make the WAL's -shm file, so the
// database is read as it is (rtcgc db list works) and compile() uses it.
TEST(ScheduleChoice, ADatabaseInAReadOnlyDirectoryIsRead) {
  if (isRoot()) GTEST_SKIP() << "root writes into read-only directories";
  TempDir dir;
  std::string path = dir.file("t.sqlite");
  std::string def = defaultText();
  {
    TuningDb db(path);
    db.record(matmulKey(64), verified(def, 1.0));
  }
  ::chmod(dir.path().c_str(), 0555);
  {
    TuningDb db(path);
    EXPECT_TRUE(db.readOnly());
    EXPECT_EQ(db.list().size(), 1u);
  }
  EXPECT_EQ(choose(64, path).choice.origin, "tuning database");
  ::chmod(dir.path().c_str(), 0755);
}

TEST(ScheduleChoice, AnEmptyFileReadsAsAnEmptyDatabase) {
  TempDir dir;
  std::ofstream(dir.file("empty.sqlite")).flush();
  TuningDb db(dir.file("empty.sqlite"), TuningDb::Access::ReadOnly);
  EXPECT_TRUE(db.list().empty());
  EXPECT_EQ(db.best(matmulKey(64)), std::nullopt);
  EXPECT_EQ(choose(64, dir.file("empty.sqlite")).choice.origin, "default");
}

// ---- the lookup ladder on recorded rows ------------------------------------------------------------

TuningKey withDevice(TuningKey k, const std::string& board, int multiprocessors, int driver) {
  k.device = board;
  k.multiprocessors = multiprocessors;
  k.driverVersion = driver;
  return k;
}

// A driver update and another board name of the same class (architecture, multiprocessor count)
// are served by rung 2; a board with another multiprocessor count is not.
TEST(ScheduleChoice, AnotherDriverOrBoardOfTheSameClassServesTheKernel) {
  TempDir dir;
  std::string def = defaultText();
  {
    TuningDb db(dir.file("t.sqlite"));
    db.record(withDevice(matmulKey(64), "NVIDIA H100 PCIe", 114, 13000), verified("q: thread.x 32", 0.1));
    db.record(withDevice(matmulKey(64), "NVIDIA H100 SXM5 80GB", 132, 12080), verified(def, 0.9));
    std::vector<LookupOffer> ladder = lookupLadder(db, matmulKey(64));
    ASSERT_EQ(ladder.size(), 1u);
    EXPECT_EQ(ladder[0].rung, LookupRung::SameDevice);
    EXPECT_EQ(ladder[0].key.device, "NVIDIA H100 SXM5 80GB");
  }
  Chosen c = choose(64, dir.file("t.sqlite"));
  EXPECT_EQ(c.choice.origin, "tuning database (other versions or board)");
  EXPECT_EQ(c.choice.prepared.scheduleText, def);
  EXPECT_NE(c.all().find("measured for matmul (n=64) on NVIDIA H100 SXM5 80GB sm_90 (132 multiprocessors), driver "
                         "12080"),
            std::string::npos)
      << c.all();
}

// Rows of rtcg 0.1 have no multiprocessor count: they serve rung 2 by the same board name only.
TEST(ScheduleChoice, RowsWithoutAMultiprocessorCountMatchByBoard) {
  TempDir dir;
  std::string def = defaultText();
  TuningDb db(dir.file("t.sqlite"));
  db.record(withDevice(matmulKey(64), "NVIDIA H100 PCIe", 0, 12080), verified(def, 0.5));
  EXPECT_TRUE(lookupLadder(db, matmulKey(64)).empty());
  db.record(withDevice(matmulKey(64), h100().name, 0, 12080), verified(def, 0.7));
  std::vector<LookupOffer> ladder = lookupLadder(db, matmulKey(64));
  ASSERT_EQ(ladder.size(), 1u);
  EXPECT_EQ(ladder[0].key.driverVersion, 12080);
  EXPECT_EQ(ladder[0].best.medianMs, 0.7);
}

// `db import` cannot tell whether a verified schedule is legal for its kernel (the database holds
// no kernel source; it checks that the schedule parses and that every value is in range). A
// schedule that parses but does not plan for the kernel imports, and compile() re-plans it before
// use: skipped with the reason logged, then the rungs below, then the default schedule.
TEST(ScheduleChoice, AnImportedScheduleIllegalForItsKernelIsReplannedAndSkipped) {
  TempDir dir;
  std::string def = defaultText();
  const std::string twice = "i: grid.y, thread.x 16; j: grid.x, thread.x 16; k: serial";  // thread.x twice
  std::string json;
  {
    TuningDb src(dir.file("src.sqlite"));
    src.record(matmulKey(64), verified(twice, 0.1));
    src.record(withDevice(matmulKey(64), h100().name, 132, 12000), verified("k: grid.x", 0.2));  // k: a reduction
    json = src.exportJson();
  }
  {
    TuningDb dst(dir.file("t.sqlite"));
    EXPECT_EQ(dst.importJson(json), 2);
    ASSERT_TRUE(dst.best(matmulKey(64)));
    EXPECT_EQ(dst.best(matmulKey(64))->schedule, twice);  // stored as it came
  }
  Chosen c = choose(64, dir.file("t.sqlite"));
  EXPECT_EQ(c.choice.origin, "default");
  EXPECT_EQ(c.choice.prepared.scheduleText, def);
  // The exact key's schedule is news (a warning); the other driver's only a note; each says why.
  EXPECT_NE(c.all().find("rtcg: warning: matmul: the stored schedule '" + twice +
                         "' (measured for matmul (n=64) on NVIDIA H100 80GB HBM3 sm_90 (132 multiprocessors), driver "
                         "13000"),
            std::string::npos)
      << c.all();
  EXPECT_NE(c.all().find("thread.x is used twice (by 'i' and 'j')"), std::string::npos) << c.all();
  EXPECT_NE(c.all().find("rtcg: matmul: the stored schedule 'k: grid.x' (measured for matmul (n=64) on NVIDIA H100 "
                         "80GB HBM3 sm_90 (132 multiprocessors), driver 12000"),
            std::string::npos)
      << c.all();
  EXPECT_NE(c.all().find("does not plan for this kernel, skipped: "), std::string::npos) << c.all();
}

// n=64 untuned: the nearest tuned sizes of matmul on sm_90 (n=60 before n=128); a schedule that
// does not plan for these sizes is skipped with a note, not a warning.
TEST(ScheduleChoice, TheNearestTunedSizesServeAnUntunedSize) {
  TempDir dir;
  std::string def = defaultText();
  {
    TuningDb db(dir.file("t.sqlite"));
    db.record(matmulKey(128), verified("q: thread.x 32", 0.2));
    db.record(matmulKey(60), verified("q: thread.x 16", 0.1));
    db.record(matmulKey(60), verified(def, 0.3));  // not n=60's best: never offered
    TuningKey otherArch = matmulKey(70);
    otherArch.arch = "sm_80";
    db.record(otherArch, verified(def, 0.1));
    std::vector<LookupOffer> ladder = lookupLadder(db, matmulKey(64));
    ASSERT_EQ(ladder.size(), 2u);
    EXPECT_EQ(ladder[0].key.sizes, "n=60");
    EXPECT_EQ(ladder[1].key.sizes, "n=128");
    EXPECT_EQ(ladder[0].rung, LookupRung::NearestSizes);
    db.record(matmulKey(128), verified(def, 0.05));  // now n=128's best plans
  }
  Chosen c = choose(64, dir.file("t.sqlite"));
  EXPECT_EQ(c.choice.origin, "tuning database (nearest sizes)");
  EXPECT_EQ(c.choice.prepared.scheduleText, def);
  EXPECT_EQ(c.all().find("warning"), std::string::npos) << c.all();
  EXPECT_NE(c.all().find("rtcg: matmul: the stored schedule 'q: thread.x 16'"), std::string::npos) << c.all();
}

// The exact key comes first, whatever is faster elsewhere.
TEST(ScheduleChoice, TheExactKeyComesFirst) {
  TempDir dir;
  std::string def = defaultText();
  TuningDb db(dir.file("t.sqlite"));
  db.record(withDevice(matmulKey(64), h100().name, 132, 12000), verified(def, 0.1));
  db.record(matmulKey(63), verified(def, 0.1));
  db.record(matmulKey(64), verified(def, 5.0));
  std::vector<LookupOffer> ladder = lookupLadder(db, matmulKey(64));
  ASSERT_EQ(ladder.size(), 3u);
  EXPECT_EQ(ladder[0].rung, LookupRung::Exact);
  EXPECT_EQ(ladder[1].rung, LookupRung::SameDevice);
  EXPECT_EQ(ladder[2].rung, LookupRung::NearestSizes);
  EXPECT_EQ(choose(64, dir.file("t.sqlite")).choice.origin, "tuning database");
}

// Asked to tune, a miss of the exact key runs the search before the lower rungs are used: it
// measures this very key. A search that finds nothing leaves them to serve.
TEST(ScheduleChoice, TuneOnFirstUseSearchesBeforeTheLowerRungs) {
  TempDir dir;
  std::string def = defaultText();
  {
    TuningDb db(dir.file("t.sqlite"));
    db.record(matmulKey(60), verified(def, 0.1));
  }
  CompileOptions options;
  ProvedKernel proved = proveKernel(kMatmul, {{"n", 64}}, options);
  ScheduleInputs in;
  in.key = matmulKey(64);
  in.dbPath = dir.file("t.sqlite");
  int searches = 0;
  std::optional<CandidateRecord> winner = verified(def, 0.2);
  in.tuneNow = [&] {
    ++searches;
    return winner;
  };
  CompileLog log([](const std::string&) {});
  EXPECT_EQ(pickSchedule(kMatmul, proved, options, Tuning::TuneOnFirstUse, in, log).origin, "tuned");
  EXPECT_EQ(pickSchedule(kMatmul, proved, options, Tuning::UseCached, in, log).origin,
            "tuning database (nearest sizes)");
  winner.reset();
  EXPECT_EQ(pickSchedule(kMatmul, proved, options, Tuning::TuneOnFirstUse, in, log).origin,
            "tuning database (nearest sizes)");
  EXPECT_EQ(searches, 2);
}

TEST(ScheduleChoice, SizesTextParses) {
  auto p = parseSizesText("m=3,n=500");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].first, "n");
  EXPECT_EQ(p[1].second, 500);
  EXPECT_TRUE(parseSizesText("m=3,=4").empty());
  EXPECT_TRUE(parseSizesText("m=x").empty());
}

TEST(ScheduleChoice, WarningsGoToStderrOncePerProcess) {
  NoStateEnvironment clean;
  CompileLog log(nullptr);
  ::testing::internal::CaptureStderr();
  log.warn("the same problem");
  log.warn("the same problem");
  log.note("a note nobody asked for");
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "rtcg: warning: the same problem\n");
  ScopedEnv verbose("RTCG_LOG", "1");
  ::testing::internal::CaptureStderr();
  log.note("a note");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "rtcg: a note\n");
}

}  // namespace
}  // namespace rtcg
