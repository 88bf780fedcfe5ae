#include "runtime/StateDirs.h"

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

}  // namespace

bool diskCacheOff() {
  const char* value = std::getenv("RTCG_CACHE");
  if (!value) return false;
  std::string v(value);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v == "0" || v == "off" || v == "false" || v == "no";
}

std::optional<fs::path> kernelCacheDirectory() {
  if (diskCacheOff()) return std::nullopt;
  if (const char* dir = nonEmptyEnv("RTCG_CACHE_DIR")) return fs::path(dir);
  return xdgDirectory("XDG_CACHE_HOME", ".cache");
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
