#include "runtime/KernelCache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "runtime/Hash.h"
#include "runtime/StateDirs.h"

namespace rtcg {
namespace fs = std::filesystem;

namespace {

// On-disk entry: header, then the key, then the payload. Integers little-endian.
constexpr char kMagic[8] = {'R', 'T', 'C', 'G', 'K', 'C', 'H', '\n'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 8;  // magic, version, key length, payload length, checksum
constexpr const char* kExtension = ".rtcgk";

void putLE(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t getLE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// The checksum covers key and payload, so a bit flip anywhere after the header is caught.
Hash128 checksum(std::string_view key, std::string_view payload) {
  Hash128 k = hash128(key, 0x6b6579);  // "key"
  return hash128(payload, k.lo ^ k.hi);
}

std::string encodeEntry(std::string_view key, std::string_view payload) {
  std::string out;
  out.reserve(kHeaderBytes + key.size() + payload.size());
  out.append(kMagic, sizeof kMagic);
  putLE(out, kFormatVersion, 4);
  putLE(out, key.size(), 4);
  putLE(out, payload.size(), 8);
  Hash128 sum = checksum(key, payload);
  putLE(out, sum.lo, 8);
  putLE(out, sum.hi, 8);
  out += key;
  out += payload;
  return out;
}

enum class Decoded { Ok, Corrupt, OtherKey };

// Checks a whole file's bytes; on Ok, `payload` holds the entry.
Decoded decodeEntry(const std::string& file, const std::string& key, std::string& payload) {
  if (file.size() < kHeaderBytes || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) return Decoded::Corrupt;
  const char* p = file.data() + sizeof kMagic;
  if (getLE(p, 4) != kFormatVersion) return Decoded::Corrupt;  // a future format: rebuild
  uint64_t keyLen = getLE(p + 4, 4);
  uint64_t payloadLen = getLE(p + 8, 8);
  Hash128 sum{getLE(p + 16, 8), getLE(p + 24, 8)};
  uint64_t rest = file.size() - kHeaderBytes;
  if (keyLen > rest || payloadLen != rest - keyLen) return Decoded::Corrupt;  // truncated or padded
  std::string_view storedKey(file.data() + kHeaderBytes, keyLen);
  std::string_view storedPayload(file.data() + kHeaderBytes + keyLen, payloadLen);
  if (checksum(storedKey, storedPayload) != sum) return Decoded::Corrupt;
  if (storedKey != key) return Decoded::OtherKey;  // a hash collision of file names
  payload.assign(storedPayload);
  return Decoded::Ok;
}

// A name no other thread or process uses for its temporary file.
std::string temporaryName(const std::string& base) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  return fmt::format(".{}.{}.{:x}.{}.tmp", base, static_cast<long>(getpid()), salt, counter.fetch_add(1));
}

// Writes all of `data` to `fd`, retrying short writes and EINTR.
bool writeAll(int fd, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

KernelCache::KernelCache() : KernelCache(directoryFromEnvironment()) {}

KernelCache::KernelCache(std::optional<fs::path> directory) : directory_(std::move(directory)) {}

std::optional<fs::path> KernelCache::directoryFromEnvironment() { return state::kernelCacheDirectory(); }

KernelCache& KernelCache::global() {
  static KernelCache cache;
  return cache;
}

fs::path KernelCache::entryPath(const std::string& key) const {
  // File names come from the key's hash: keys may hold any characters and be long.
  return *directory_ / (hash128(key).hex() + kExtension);
}

std::optional<std::string> KernelCache::get(const std::string& key) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      ++stats_.memoryHits;
      return it->second;
    }
  }
  std::optional<std::string> bytes = readDisk(key);
  std::lock_guard lock(mutex_);
  if (!bytes) {
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.diskHits;
  memory_.emplace(key, *bytes);
  return bytes;
}

void KernelCache::put(const std::string& key, std::string_view bytes) {
  {
    std::lock_guard lock(mutex_);
    memory_.insert_or_assign(key, std::string(bytes));
  }
  writeDisk(key, bytes);
}

std::string KernelCache::getOrCompute(const std::string& key, const std::function<std::string()>& compute,
                                      CacheSource* source) {
  std::promise<std::string> promise;
  {
    std::unique_lock lock(mutex_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      ++stats_.memoryHits;
      if (source) *source = CacheSource::Memory;
      return it->second;
    }
    if (auto it = inFlight_.find(key); it != inFlight_.end()) {
      // Another thread is producing this entry: wait for it (rethrows its exception).
      std::shared_future<std::string> pending = it->second;
      lock.unlock();
      std::string bytes = pending.get();
      if (source) *source = CacheSource::Memory;
      return bytes;
    }
    inFlight_.emplace(key, promise.get_future().share());
  }

  // This thread owns the key now; nothing below holds the lock while reading, computing or writing.
  auto finish = [&] {
    std::lock_guard lock(mutex_);
    inFlight_.erase(key);
  };
  try {
    std::string bytes;
    CacheSource from = CacheSource::Disk;
    if (std::optional<std::string> disk = readDisk(key)) {
      bytes = std::move(*disk);
      std::lock_guard lock(mutex_);
      ++stats_.diskHits;
      memory_.emplace(key, bytes);
    } else {
      {
        std::lock_guard lock(mutex_);
        ++stats_.misses;
      }
      bytes = compute();
      from = CacheSource::Computed;
      put(key, bytes);
    }
    promise.set_value(bytes);
    finish();
    if (source) *source = from;
    return bytes;
  } catch (...) {
    promise.set_exception(std::current_exception());
    finish();
    throw;
  }
}

std::optional<std::string> KernelCache::readDisk(const std::string& key) {
  if (!directory_) return std::nullopt;
  fs::path path = entryPath(key);
  // Only a regular file is an entry: a directory at the path opened fine and then threw from the
  // stream's read (EISDIR) out of get(). Anything else there is a miss; put() reports it.
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  std::string file;
  try {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;  // no entry (or unreadable: treated alike)
    file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) return std::nullopt;
  } catch (const std::ios_base::failure&) {
    return std::nullopt;  // a read error: a miss, as an unreadable entry is
  }
  std::string payload;
  switch (decodeEntry(file, key, payload)) {
    case Decoded::Ok:
      return payload;
    case Decoded::OtherKey:
      return std::nullopt;  // the next put for this key replaces it
    case Decoded::Corrupt: {
      std::error_code ec;
      fs::remove(path, ec);  // best effort: it is rebuilt by the next put either way
      std::lock_guard lock(mutex_);
      ++stats_.corruptEntries;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

void KernelCache::writeDisk(const std::string& key, std::string_view bytes) {
  if (!directory_) return;
  std::error_code ec;
  fs::create_directories(*directory_, ec);
  if (ec) return noteDiskError(fmt::format("cannot create the cache directory {}: {}", directory_->string(), ec.message()));

  fs::path target = entryPath(key);
  fs::path temp = *directory_ / temporaryName(target.filename().string());
  std::string entry = encodeEntry(key, bytes);

  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return noteDiskError(fmt::format("cannot create {}: {}", temp.string(), std::strerror(errno)));
  bool ok = writeAll(fd, entry);
  int writeErrno = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    writeErrno = errno;
  }
  if (!ok) {
    fs::remove(temp, ec);
    return noteDiskError(fmt::format("cannot write {}: {}", temp.string(), std::strerror(writeErrno)));
  }
  // rename() replaces the target atomically: readers see the old entry or the new, never a mix.
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    int renameErrno = errno;
    fs::remove(temp, ec);
    return noteDiskError(fmt::format("cannot rename {} to {}: {}", temp.string(), target.string(),
                                     std::strerror(renameErrno)));
  }
  std::lock_guard lock(mutex_);
  ++stats_.diskWrites;
}

void KernelCache::noteDiskError(std::string message) {
  std::lock_guard lock(mutex_);
  ++stats_.diskErrors;
  lastDiskError_ = std::move(message);
}

KernelCache::Stats KernelCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::string KernelCache::lastDiskError() const {
  std::lock_guard lock(mutex_);
  return lastDiskError_;
}

void KernelCache::clearMemory() {
  std::lock_guard lock(mutex_);
  memory_.clear();
}

}  // namespace rtcg
