#include "runtime/StateDirs.h"

#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace rtcg::state {
namespace fs = std::filesystem;

namespace {

const char* nonEmptyEnv(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// $VAR/rtcg when VAR is an absolute path, else $HOME/<fallback>/rtcg.
std::optional<fs::path> xdgDirectory(const char* var, const char* homeFallback) {
  if (const char* xdg = nonEmptyEnv(var); xdg && fs::path(xdg).is_absolute()) return fs::path(xdg) / "rtcg";
  if (const char* home = nonEmptyEnv("HOME")) return fs::path(home) / homeFallback / "rtcg";
  return std::nullopt;
}

constexpr const char* kDbFile = "tuning.sqlite";

// The variable's value in lower case; "" when unset.
std::string lowerEnv(const char* name) {
  const char* value = std::getenv(name);
  std::string v(value ? value : "");
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v;
}

}  // namespace

bool diskCacheOff() {
  std::string v = lowerEnv("RTCG_CACHE");
  return v == "0" || v == "off" || v == "false" || v == "no";
}

bool tuningDbSnapshot() {
  std::string v = lowerEnv("RTCG_TUNING_DB_SNAPSHOT");
  return v == "1" || v == "on" || v == "true" || v == "yes";
}

bool isNetworkFileSystemType(long fsType) {
  switch (static_cast<unsigned long>(fsType) & 0xffffffffUL) {
    case 0x6969:      // NFS
    case 0x517b:      // SMB
    case 0xff534d42:  // CIFS
    case 0xfe534d42:  // SMB2
    case 0x0bd00bd0:  // Lustre
    case 0x47504653:  // GPFS (Spectrum Scale)
    case 0x19830326:  // BeeGFS
    case 0x00c36400:  // CephFS
    case 0x5346414f:  // AFS
      return true;
    default:
      return false;
  }
}

bool onNetworkFileSystem(const fs::path& path) {
  fs::path p = path;
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec)) {
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
  struct statfs s {};
  if (p.empty() || ::statfs(p.c_str(), &s) != 0) return false;
  return isNetworkFileSystemType(long(s.f_type));
}

std::optional<fs::path> kernelCacheDirectory() {
  if (diskCacheOff()) return std::nullopt;
  if (const char* dir = nonEmptyEnv("RTCG_KERNEL_CACHE_DIR")) return fs::path(dir);
  std::optional<fs::path> dir;
  if (const char* d = nonEmptyEnv("RTCG_CACHE_DIR"))
    dir = fs::path(d);
  else
    dir = xdgDirectory("XDG_CACHE_HOME", ".cache");
  if (dir && onNetworkFileSystem(*dir)) {
    const char* tmp = nonEmptyEnv("TMPDIR");
    fs::path local = tmp && fs::path(tmp).is_absolute() ? fs::path(tmp) : fs::path("/tmp");
    return local / ("rtcg-cache-" + std::to_string(::getuid()));
  }
  return dir;
}

std::optional<fs::path> tuningDbPath() {
  if (const char* file = nonEmptyEnv("RTCG_TUNING_DB")) return fs::path(file);
  if (const char* dir = nonEmptyEnv("RTCG_CACHE_DIR")) return fs::path(dir) / kDbFile;
  std::optional<fs::path> dir = xdgDirectory("XDG_DATA_HOME", ".local/share");
  if (!dir) return std::nullopt;
  return *dir / kDbFile;
}

std::optional<fs::path> legacyTuningDbPath() {
  if (nonEmptyEnv("RTCG_TUNING_DB") || nonEmptyEnv("RTCG_CACHE_DIR")) return std::nullopt;
  std::optional<fs::path> dir = xdgDirectory("XDG_CACHE_HOME", ".cache");
  if (!dir) return std::nullopt;
  std::optional<fs::path> current = tuningDbPath();
  if (current && *current == *dir / kDbFile) return std::nullopt;
  return *dir / kDbFile;
}

}  // namespace rtcg::state
