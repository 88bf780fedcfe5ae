#include <gtest/gtest.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "runtime/KernelCache.h"

extern char** environ;

namespace rtcg {
namespace {
namespace fs = std::filesystem;

// Sets an environment variable for one scope and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class KernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rtcg-cache-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string readFile(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void writeFile(const fs::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  // Files in the cache directory, by name.
  std::vector<std::string> listDir() {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  // Runs the helper binary; returns its exit status, its stdout in `out`.
  int helper(const std::vector<std::string>& args, std::string* out = nullptr) {
    std::string cmd = std::string(RTCG_KERNEL_CACHE_HELPER) + " '" + dir_.string() + "'";
    for (const auto& a : args) cmd += " '" + a + "'";
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) return -1;
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) text.append(buf, n);
    int status = pclose(pipe);
    if (out) *out = text;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  fs::path dir_;
};

TEST_F(KernelCacheTest, PutThenGet) {
  KernelCache cache(dir_);
  EXPECT_FALSE(cache.get("k1"));
  cache.put("k1", "cubin bytes");
  EXPECT_EQ(cache.get("k1"), "cubin bytes");
  KernelCache::Stats s = cache.stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.memoryHits, 1);
  EXPECT_EQ(s.diskWrites, 1);
  EXPECT_TRUE(fs::exists(cache.entryPath("k1")));
  cache.put("k1", "newer bytes");  // replacing is allowed
  EXPECT_EQ(cache.get("k1"), "newer bytes");
}

TEST_F(KernelCacheTest, BinaryAndEmptyPayloads) {
  std::string binary;
  for (int i = 0; i < 100000; ++i) binary.push_back(static_cast<char>((i * 131) & 0xff));  // NULs included
  {
    KernelCache cache(dir_);
    cache.put("bin", binary);
    cache.put("empty", "");
  }
  KernelCache fresh(dir_);
  EXPECT_EQ(fresh.get("bin"), binary);
  EXPECT_EQ(fresh.get("empty"), "");
  EXPECT_EQ(fresh.stats().diskHits, 2);
}

TEST_F(KernelCacheTest, AFreshCacheReadsTheDisk) {
  KernelCache(dir_).put("key with spaces/and slashes\n", "payload");
  KernelCache fresh(dir_);
  CacheSource src{};
  int computed = 0;
  std::string v = fresh.getOrCompute("key with spaces/and slashes\n", [&] { ++computed; return std::string("x"); }, &src);
  EXPECT_EQ(v, "payload");
  EXPECT_EQ(src, CacheSource::Disk);
  EXPECT_EQ(computed, 0);
  // Now in memory too: the disk copy is no longer read.
  fs::remove(fresh.entryPath("key with spaces/and slashes\n"));
  fresh.getOrCompute("key with spaces/and slashes\n", [&] { ++computed; return std::string("x"); }, &src);
  EXPECT_EQ(src, CacheSource::Memory);
  EXPECT_EQ(computed, 0);
}

TEST_F(KernelCacheTest, SharedWithAnotherProcess) {
  ASSERT_EQ(helper({"put", "from-child", "written by the helper"}), 0);
  KernelCache cache(dir_);
  EXPECT_EQ(cache.get("from-child"), "written by the helper");

  cache.put("from-parent", "written by the test");
  std::string out;
  EXPECT_EQ(helper({"get", "from-parent"}, &out), 0);
  EXPECT_EQ(out, "written by the test");
  EXPECT_EQ(helper({"get", "absent"}), 3);
}

TEST_F(KernelCacheTest, CorruptEntryIsIgnoredRemovedAndRebuilt) {
  KernelCache(dir_).put("k", std::string(1000, 'z'));
  KernelCache probe(dir_);
  fs::path file = probe.entryPath("k");
  std::string bytes = readFile(file);
  bytes[bytes.size() - 10] ^= 0x01;  // one bit in the payload
  writeFile(file, bytes);

  KernelCache cache(dir_);
  EXPECT_FALSE(cache.get("k"));
  EXPECT_EQ(cache.stats().corruptEntries, 1);
  EXPECT_FALSE(fs::exists(file));
  CacheSource src{};
  EXPECT_EQ(cache.getOrCompute("k", [] { return std::string("rebuilt"); }, &src), "rebuilt");
  EXPECT_EQ(src, CacheSource::Computed);
  EXPECT_EQ(KernelCache(dir_).get("k"), "rebuilt");
}

TEST_F(KernelCacheTest, TruncatedAndGarbageEntriesAreIgnored) {
  KernelCache(dir_).put("k", std::string(5000, 'y'));
  fs::path file = KernelCache(dir_).entryPath("k");
  std::string good = readFile(file);
  for (size_t keep : {good.size() - 1, good.size() / 2, size_t(41), size_t(40), size_t(10), size_t(0)}) {
    writeFile(file, good.substr(0, keep));
    KernelCache cache(dir_);
    EXPECT_FALSE(cache.get("k")) << "truncated to " << keep;
    EXPECT_EQ(cache.stats().corruptEntries, 1) << "truncated to " << keep;
  }
  writeFile(file, good + "trailing");
  EXPECT_FALSE(KernelCache(dir_).get("k"));
  writeFile(file, std::string(4096, '\xff'));
  EXPECT_FALSE(KernelCache(dir_).get("k"));
  // A header claiming a huge payload must not make the reader allocate or read past the end.
  std::string huge = good.substr(0, 40);
  for (int i = 16; i < 24; ++i) huge[i] = '\xff';
  writeFile(file, huge);
  EXPECT_FALSE(KernelCache(dir_).get("k"));
  writeFile(file, good);
  EXPECT_EQ(KernelCache(dir_).get("k"), std::string(5000, 'y'));
}

TEST_F(KernelCacheTest, AnEntryOfAnotherKeyIsNotReturned) {
  KernelCache cache(dir_);
  cache.put("a", "payload of a");
  // As if "b" hashed to the same file name as "a".
  fs::copy_file(cache.entryPath("a"), cache.entryPath("b"));
  KernelCache fresh(dir_);
  EXPECT_FALSE(fresh.get("b"));
  EXPECT_EQ(fresh.stats().corruptEntries, 0);
  fresh.put("b", "payload of b");
  EXPECT_EQ(KernelCache(dir_).get("b"), "payload of b");
}

TEST_F(KernelCacheTest, ADirectoryAtAnEntrysPathIsAMissNotAnException) {
  // get() threw std::ios_base::failure (EISDIR from the read) out of Context::compile.
  KernelCache cache(dir_);
  fs::create_directories(cache.entryPath("k"));
  std::optional<std::string> got;
  EXPECT_NO_THROW(got = cache.get("k"));
  EXPECT_FALSE(got.has_value());
  EXPECT_EQ(cache.stats().misses, 1);
  EXPECT_TRUE(fs::is_directory(cache.entryPath("k")));  // not the cache's to remove
  EXPECT_NO_THROW(cache.put("k", "bytes"));             // served from memory; the disk write fails quietly
  EXPECT_EQ(cache.get("k"), std::optional<std::string>("bytes"));
}

TEST_F(KernelCacheTest, MemoryOnlyCache) {
  KernelCache cache(std::nullopt);
  EXPECT_FALSE(cache.diskEnabled());
  cache.put("k", "v");
  EXPECT_EQ(cache.get("k"), "v");
  EXPECT_EQ(cache.stats().diskWrites, 0);
  cache.clearMemory();
  EXPECT_FALSE(cache.get("k"));
}

TEST_F(KernelCacheTest, DirectoryFromEnvironment) {
  ScopedEnv off("RTCG_CACHE", nullptr);
  {
    ScopedEnv d("RTCG_CACHE_DIR", "/some/where");
    EXPECT_EQ(KernelCache::directoryFromEnvironment(), fs::path("/some/where"));
  }
  ScopedEnv noDir("RTCG_CACHE_DIR", nullptr);
  {
    ScopedEnv x("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(KernelCache::directoryFromEnvironment(), fs::path("/xdg/rtcg"));
  }
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv x("XDG_CACHE_HOME", "relative/ignored");
    EXPECT_EQ(KernelCache::directoryFromEnvironment(), fs::path("/home/someone/.cache/rtcg"));
  }
  ScopedEnv noXdg("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(KernelCache::directoryFromEnvironment(), fs::path("/home/someone/.cache/rtcg"));
  {
    ScopedEnv noHome("HOME", nullptr);
    EXPECT_EQ(KernelCache::directoryFromEnvironment(), std::nullopt);
  }
}

TEST_F(KernelCacheTest, DisabledByEnvironment) {
  ScopedEnv d("RTCG_CACHE_DIR", dir_.c_str());
  {
    ScopedEnv on("RTCG_CACHE", "1");
    EXPECT_EQ(KernelCache::directoryFromEnvironment(), dir_);
  }
  for (const char* value : {"0", "off", "OFF", "false", "no"}) {
    ScopedEnv off("RTCG_CACHE", value);
    EXPECT_EQ(KernelCache::directoryFromEnvironment(), std::nullopt) << value;
    KernelCache cache;
    EXPECT_FALSE(cache.diskEnabled()) << value;
    cache.put("k", "v");
    EXPECT_EQ(cache.get("k"), "v");  // the memory cache still works
  }
  EXPECT_TRUE(listDir().empty());
}

TEST_F(KernelCacheTest, UnwritableDirectoryDegradesToMemory) {
  writeFile(dir_ / "a-file", "not a directory");
  KernelCache cache(dir_ / "a-file" / "cache");
  EXPECT_NO_THROW(cache.put("k", "v"));
  EXPECT_EQ(cache.get("k"), "v");
  EXPECT_EQ(cache.stats().diskErrors, 1);
  EXPECT_NE(cache.lastDiskError().find("cannot create the cache directory"), std::string::npos)
      << cache.lastDiskError();
}

TEST_F(KernelCacheTest, ConcurrentThreadsSeeOnlyCompleteEntries) {
  KernelCache cache(dir_);
  auto valueOf = [](int k) { return std::string(1000 + 37 * k, static_cast<char>('A' + k % 26)); };
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      KernelCache own(dir_);  // half the threads share `cache`, half read the disk through their own
      KernelCache& c = t % 2 ? cache : own;
      for (int i = 0; i < 200; ++i) {
        int k = (i * 7 + t) % 20;
        if (i % 3 == 0) c.put("key" + std::to_string(k), valueOf(k));
        auto v = c.get("key" + std::to_string(k));
        if (v && *v != valueOf(k)) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  KernelCache fresh(dir_);
  for (int k = 0; k < 20; ++k) EXPECT_EQ(fresh.get("key" + std::to_string(k)), valueOf(k)) << k;
  EXPECT_EQ(fresh.stats().corruptEntries, 0);
  for (const std::string& name : listDir()) EXPECT_EQ(fs::path(name).extension(), ".rtcgk") << name;
  EXPECT_EQ(listDir().size(), 20u);
}

TEST_F(KernelCacheTest, GetOrComputeRunsOnceForConcurrentCallers) {
  KernelCache cache(dir_);
  std::atomic<int> computations{0};
  std::vector<std::thread> threads;
  std::vector<std::string> results(16);
  std::vector<CacheSource> sources(16);
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      results[t] = cache.getOrCompute(
          "slow",
          [&] {
            ++computations;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            return std::string("compiled");
          },
          &sources[t]);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(computations.load(), 1);
  for (int t = 0; t < 16; ++t) EXPECT_EQ(results[t], "compiled");
  EXPECT_EQ(std::count(sources.begin(), sources.end(), CacheSource::Computed), 1);
}

TEST_F(KernelCacheTest, GetOrComputeFailureReachesEveryWaiterAndIsRetried) {
  KernelCache cache(dir_);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      try {
        cache.getOrCompute("bad", [] {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          throw std::runtime_error("nvrtc failed");
          return std::string();
        });
      } catch (const std::runtime_error& e) {
        if (std::string(e.what()) == "nvrtc failed") ++failures;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_GE(failures.load(), 1);
  EXPECT_EQ(failures.load(), 4);  // nobody got a value; each either computed or waited
  EXPECT_FALSE(cache.get("bad"));
  EXPECT_EQ(cache.getOrCompute("bad", [] { return std::string("fixed"); }), "fixed");
}

TEST_F(KernelCacheTest, ConcurrentProcessesNeverExposePartialFiles) {
  // Four processes rewrite one entry (200 KB each time) while this process keeps reading it: every
  // read sees a complete entry from one of the writers, or none yet.
  std::vector<pid_t> pids;
  for (int p = 0; p < 4; ++p) {
    std::string size = std::to_string(200000 + p);
    std::vector<std::string> args = {RTCG_KERNEL_CACHE_HELPER, dir_.string(), "hammer", "shared", "40", size};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid;
    ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
    pids.push_back(pid);
  }
  int reads = 0, found = 0, bad = 0;
  std::vector<int> status(pids.size(), -1);
  auto running = [&] {
    bool any = false;
    for (size_t i = 0; i < pids.size(); ++i)
      if (status[i] == -1) {
        int st = 0;
        if (waitpid(pids[i], &st, WNOHANG) == pids[i])
          status[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        else
          any = true;
      }
    return any;
  };
  while (running()) {
    KernelCache reader(dir_);
    if (auto v = reader.get("shared")) {
      ++found;
      bool uniform = !v->empty() && v->find_first_not_of((*v)[0]) == std::string::npos;
      if (!uniform || v->size() < 200000 || v->size() > 200003) ++bad;
    }
    bad += reader.stats().corruptEntries;
    ++reads;
  }
  for (int st : status) EXPECT_EQ(st, 0);
  EXPECT_EQ(bad, 0) << reads << " reads, " << found << " found";
  EXPECT_TRUE(KernelCache(dir_).get("shared"));
  std::vector<std::string> names = listDir();
  ASSERT_EQ(names.size(), 1u);  // the entry, and no leftover temporary file
  EXPECT_EQ(fs::path(names[0]).extension(), ".rtcgk");
}

}  // namespace
}  // namespace rtcg
