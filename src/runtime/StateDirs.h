// Where rtcg keeps state on disk, decided in one place for the kernel cache and the tuning database.
//
// The two are different kinds of state: the kernel cache holds cubins that NVRTC rebuilds in
// seconds (disposable: $XDG_CACHE_HOME, cleaned by users and tools at will), the tuning database
// holds measurements that took minutes of GPU time (data: $XDG_DATA_HOME). rtcg 0.1 kept the
// database in the cache directory; legacyTuningDbPath() names that place for the one-time move.
//
//   kernel cache:    $RTCG_KERNEL_CACHE_DIR, else $RTCG_CACHE_DIR, else $XDG_CACHE_HOME/rtcg,
//                    else $HOME/.cache/rtcg; when that place (not $RTCG_KERNEL_CACHE_DIR) is on a
//                    network file system (a cluster's shared home), $TMPDIR/rtcg-cache-UID
//                    (/tmp without TMPDIR) on the node instead: each node compiles its own
//                    cubins rather than many ranks writing small files to one server. None when
//                    RTCG_CACHE=0 (off, false, no) or nothing is set.
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

// RTCG_TUNING_DB_SNAPSHOT=1 (or on, true, yes): the tuning database is a snapshot that nobody
// writes while this process runs (a file shipped to every rank of an MPI application): it is read
// without locks and never written (TuningDb::Access::Snapshot), so that any number of processes
// read it at once, also on a network file system.
bool tuningDbSnapshot();

// Whether `path` (or the nearest of its parents that exists) is on a network or cluster file
// system (NFS, SMB/CIFS, Lustre, GPFS, BeeGFS, CephFS, AFS), where SQLite's locks and the kernel
// cache's many small files fare badly. `fsType` is statfs's f_type; the second form decides by it.
bool onNetworkFileSystem(const std::filesystem::path& path);
bool isNetworkFileSystemType(long fsType);

}  // namespace rtcg::state
