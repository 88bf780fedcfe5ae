// Many ranks, one tuning database: a snapshot (`rtcgc db snapshot`) read with
// RTCG_TUNING_DB_SNAPSHOT=1 by 64 processes at once (8 of them compiling the tuned kernel with
// NVRTC, `rtcgc emit --tuned`) while another process holds an exclusive lock on the file: every one
// succeeds (a reader that took SQLite's locks would wait and fail: the control shows it), none
// writes (the file's bytes are unchanged, no journal, WAL or shared-memory file appears). The
// database is made on the CPU by a search on a stand-in device measured by the fake worker.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../tune/TempDir.h"
#include "Shell.h"
#include "runtime/StateDirs.h"

namespace fs = std::filesystem;
using rtcg::testing::TempDir;
using rtcg::tests::shell;

namespace {

const char* kScale = "kernel scale(n: int, alpha: f32, x: f32[n], out y: f32[n]) {\n"
                     "  for i in 0..n { y[i] = alpha * x[i]; }\n"
                     "}\n";

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A snapshot of a database with scale (n=1000) tuned on a stand-in sm_90 device.
std::string makeSnapshot(const TempDir& dir, const std::string& source) {
  std::string db = dir.file("tuning.sqlite"), snapshot = dir.file("snapshot.sqlite");
  auto r = shell("RTCG_TEST_DEVICE='Fake GPU,sm_90,132' RTCG_FAKE_WORKER_MODE=verified RTCG_CACHE_DIR=" +
                 dir.file("cache") + " " + RTCGC_PATH + " tune " + source + " -D n=1000 --max-candidates 3 " +
                 "--compile-threads 1 --worker " + RTCG_FAKE_WORKER + " --db " + db + " 2>&1");
  EXPECT_EQ(r.code, 0) << r.out;
  r = shell(std::string(RTCGC_PATH) + " db snapshot --db " + db + " " + snapshot + " 2>&1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(1 tuned keys)"), std::string::npos) << r.out;
  return snapshot;
}

// Holds an exclusive lock on the database file while it lives (rollback journal mode: no reader
// that takes locks gets in).
class ExclusiveLock {
 public:
  explicit ExclusiveLock(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db_, "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;", nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db_);
  }
  ~ExclusiveLock() {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
  }

 private:
  sqlite3* db_ = nullptr;
};

TEST(Snapshot, SixtyFourReadersEightCompilingTakeNoLockAndWriteNothing) {
  TempDir dir;
  std::string source = dir.file("scale.rtcg");
  std::ofstream(source) << kScale;
  std::string snapshot = makeSnapshot(dir, source);
  std::string before = readFile(snapshot);
  ASSERT_FALSE(before.empty());
  auto modified = fs::last_write_time(snapshot);
  ExclusiveLock lock(snapshot);
  std::string readers = dir.file("readers.sh");
  std::ofstream(readers) << "export RTCG_TUNING_DB_SNAPSHOT=1 RTCG_CACHE_DIR=" << dir.file("cache2") << "\n"
                         << "for i in $(seq 1 64); do\n"
                         << "  if [ $i -le 8 ]; then\n"
                         << "    (" << RTCGC_PATH << " emit --tuned --db " << snapshot << " " << source
                         << " -D n=1000 --arch sm_90 --cubin -o " << dir.file("k$i.cubin") << " > "
                         << dir.file("out$i") << " 2>&1; echo $? > " << dir.file("rc$i") << ") &\n"
                         << "  else\n"
                         << "    (" << RTCGC_PATH << " db list --db " << snapshot << " > " << dir.file("out$i")
                         << " 2>&1; echo $? > " << dir.file("rc$i") << ") &\n"
                         << "  fi\n"
                         << "done\nwait\n";
  ASSERT_EQ(shell("bash " + readers).code, 0);
  for (int i = 1; i <= 64; ++i) {
    std::string out = readFile(dir.file("out" + std::to_string(i)));
    EXPECT_EQ(readFile(dir.file("rc" + std::to_string(i))), "0\n") << "reader " << i << ": " << out;
    if (i <= 8)
      EXPECT_GT(fs::file_size(dir.file("k" + std::to_string(i) + ".cubin")), 0u) << out;
    else
      EXPECT_NE(out.find("scale"), std::string::npos) << out;
  }
  EXPECT_EQ(readFile(snapshot), before) << "a reader wrote the snapshot";
  EXPECT_EQ(fs::last_write_time(snapshot), modified);
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    EXPECT_FALSE(fs::exists(snapshot + suffix)) << snapshot + suffix;
}

// The control: without RTCG_TUNING_DB_SNAPSHOT a reader takes SQLite's shared lock, which the
// exclusive lock refuses (after the busy timeout): the lock above is real.
TEST(Snapshot, AReaderTakingLocksIsRefusedByTheExclusiveLock) {
  TempDir dir;
  std::string source = dir.file("scale.rtcg");
  std::ofstream(source) << kScale;
  std::string snapshot = makeSnapshot(dir, source);
  ExclusiveLock lock(snapshot);
  auto r = shell(std::string("env -u RTCG_TUNING_DB_SNAPSHOT ") + RTCGC_PATH + " db list --db " + snapshot + " 2>&1");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("locked"), std::string::npos) << r.out;
}

TEST(Snapshot, WritingASnapshotFailsClearly) {
  TempDir dir;
  std::string source = dir.file("scale.rtcg");
  std::ofstream(source) << kScale;
  std::string snapshot = makeSnapshot(dir, source);
  std::string before = readFile(snapshot);
  auto r = shell("RTCG_TUNING_DB_SNAPSHOT=1 " + std::string(RTCGC_PATH) + " db clear --yes --db " + snapshot + " 2>&1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("rtcgc: error: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("readonly"), std::string::npos) << r.out;
  EXPECT_EQ(readFile(snapshot), before);
}

TEST(Snapshot, NetworkFileSystemsAreKnownByType) {
  EXPECT_TRUE(rtcg::state::isNetworkFileSystemType(0x6969));      // NFS
  EXPECT_TRUE(rtcg::state::isNetworkFileSystemType(0x0bd00bd0));  // Lustre
  EXPECT_TRUE(rtcg::state::isNetworkFileSystemType(0x47504653));  // GPFS
  EXPECT_TRUE(rtcg::state::isNetworkFileSystemType(long(0xff534d42)));  // CIFS
  EXPECT_FALSE(rtcg::state::isNetworkFileSystemType(0xef53));      // ext4
  EXPECT_FALSE(rtcg::state::isNetworkFileSystemType(0x01021994));  // tmpfs
  EXPECT_FALSE(rtcg::state::onNetworkFileSystem(fs::temp_directory_path()));
}

TEST(Snapshot, KernelCacheDirectoryCanBeSetApart) {
  std::string old = std::getenv("RTCG_KERNEL_CACHE_DIR") ? std::getenv("RTCG_KERNEL_CACHE_DIR") : "";
  setenv("RTCG_KERNEL_CACHE_DIR", "/local/scratch/rtcg", 1);
  EXPECT_EQ(rtcg::state::kernelCacheDirectory(), fs::path("/local/scratch/rtcg"));
  old.empty() ? unsetenv("RTCG_KERNEL_CACHE_DIR") : setenv("RTCG_KERNEL_CACHE_DIR", old.c_str(), 1);
}

}  // namespace
