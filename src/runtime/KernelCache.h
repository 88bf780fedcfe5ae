// A cache of compiled GPU code (cubin or PTX bytes) keyed by a string, in memory and on disk.
//
// The caller builds the key from everything the bytes depend on (kernel structure, sizes,
// schedule, architecture, NVRTC and rtcg versions), e.g. with hashKey() from runtime/Hash.h.
//
// Disk: one file per entry in the cache directory (runtime/StateDirs.h): $RTCG_CACHE_DIR if set,
// else $XDG_CACHE_HOME/rtcg, else $HOME/.cache/rtcg; RTCG_CACHE=0 (or off/false/no) turns the disk
// cache off. Each file holds a header (magic, format version, key, payload length, checksum)
// so a corrupt, truncated or colliding entry is detected, removed and rebuilt, never trusted.
// Files are written to a temporary file in the same directory and renamed into place, so other
// processes never see a partial entry. A disk that cannot be written never fails a compile: the
// entry just stays in memory (diskErrors() counts, lastDiskError() says why).
//
// All methods are thread-safe.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace rtcg {

enum class CacheSource { Memory, Disk, Computed };

class KernelCache {
 public:
  // Configured from the environment (see above).
  KernelCache();
  // Disk cache in `directory` (created on first write); nullopt: memory only.
  explicit KernelCache(std::optional<std::filesystem::path> directory);

  // The directory the environment selects; nullopt when the disk cache is off or no directory
  // can be derived (no HOME).
  static std::optional<std::filesystem::path> directoryFromEnvironment();

  // The process-wide cache, configured from the environment on first use.
  static KernelCache& global();

  std::optional<std::string> get(const std::string& key);
  void put(const std::string& key, std::string_view bytes);

  // The cached bytes for `key`, or `compute()`'s result, stored. Concurrent callers with the same
  // key in this process run `compute` once; the others wait for it. If compute throws, every
  // waiting caller gets the exception and a later call tries again. `source`, when given, says
  // where the bytes came from.
  std::string getOrCompute(const std::string& key, const std::function<std::string()>& compute,
                           CacheSource* source = nullptr);

  bool diskEnabled() const { return directory_.has_value(); }
  const std::optional<std::filesystem::path>& directory() const { return directory_; }
  // The file an entry for `key` lives in (whether or not it exists). Requires diskEnabled().
  std::filesystem::path entryPath(const std::string& key) const;

  struct Stats {
    int memoryHits = 0, diskHits = 0, misses = 0;
    int corruptEntries = 0;  // disk entries found bad and discarded
    int diskWrites = 0, diskErrors = 0;
  };
  Stats stats() const;
  std::string lastDiskError() const;

  // Forgets the in-memory entries (the disk is untouched): the next get() reads the disk.
  void clearMemory();

 private:
  std::optional<std::string> readDisk(const std::string& key);
  void writeDisk(const std::string& key, std::string_view bytes);
  void noteDiskError(std::string message);

  std::optional<std::filesystem::path> directory_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::string> memory_;
  std::unordered_map<std::string, std::shared_future<std::string>> inFlight_;
  Stats stats_;
  std::string lastDiskError_;
};

}  // namespace rtcg
