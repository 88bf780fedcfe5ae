// Where rtcg keeps state on disk, decided in one place for the kernel cache and the tuning database.
//
// The two are different kinds of state: the kernel cache holds cubins that NVRTC rebuilds in
// seconds (disposable: $XDG_CACHE_HOME, cleaned by users and tools at will), the tuning database
// holds measurements that took minutes of GPU time (data: $XDG_DATA_HOME). rtcg 0.1 kept the
// database in the cache directory; legacyTuningDbPath() names that place for the one-time move.
//
//   kernel cache:    $RTCG_CACHE_DIR, else $XDG_CACHE_HOME/rtcg, else $HOME/.cache/rtcg;
//                    none when RTCG_CACHE=0 (off, false, no) or nothing is set.
//   tuning database: $RTCG_TUNING_DB (a file), else $RTCG_CACHE_DIR/tuning.sqlite (one directory
//                    for all of rtcg's state: what scripts and tests isolate a run with), else
//                    $XDG_DATA_HOME/rtcg/tuning.sqlite, else $HOME/.local/share/rtcg/tuning.sqlite;
//                    none when nothing is set. RTCG_CACHE does not apply: it is not a cache.
// Relative XDG_* values are ignored, as the XDG spec says. Nothing here creates a directory.
#pragma once

#include <filesystem>
#include <optional>

namespace rtcg::state {

std::optional<std::filesystem::path> kernelCacheDirectory();
std::optional<std::filesystem::path> tuningDbPath();
// Where rtcg 0.1 kept the database ($XDG_CACHE_HOME/rtcg or $HOME/.cache/rtcg, + tuning.sqlite),
// when that is not tuningDbPath() itself; nullopt otherwise (also with RTCG_TUNING_DB or
// RTCG_CACHE_DIR set: an explicit place is never moved from or into).
std::optional<std::filesystem::path> legacyTuningDbPath();

// RTCG_CACHE=0 (or off, false, no, any case).
bool diskCacheOff();

}  // namespace rtcg::state
