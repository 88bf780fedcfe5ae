// The tuning database: every candidate ever measured, in SQLite, in rtcg's data directory
// (runtime/StateDirs.h), apart from the disposable kernel cache.
//
// One row per measured candidate, keyed by the kernel's structural hash, bound sizes, device name,
// compute capability, driver and NVRTC versions and rtcg version. Safe with several processes
// tuning at once and after a kill in the middle of a search (WAL journal, one transaction per
// write, busy timeout). The best verified schedule for a key is looked up in milliseconds.
//
// Schema (version 2; `schema_version` holds the version, migrations run in order on open):
//   tuning_keys(id, kernel_hash, kernel_name, sizes, device, arch, driver_version,
//               nvrtc_version, rtcg_version,           unique over these key columns
//               multiprocessors)                        version 2; 0: unknown
//   searches(id, key_id, settings, started_at, finished_at, wall_seconds, candidates)
//   candidates(id, key_id, search_id, schedule, status, reason, median_ms, ..., recorded_at)
//               index (key_id, status, median_ms) serves best()
// An object is safe to use from several threads (calls are serialized); several processes may
// open the same file at once. Do not use an object across fork(): open a new one in the child.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rtcg {

// What a measurement is valid for.
struct TuningKey {
  std::string kernelHash;    // structuralHash as 16 hex digits (covers bound sizes)
  std::string kernelName;    // for people
  std::string sizes;         // "n=500,m=3" (sorted by name), for people and filters
  std::string device;        // "NVIDIA H200"
  std::string arch;          // "sm_90"
  int driverVersion = 0;
  std::string nvrtcVersion;  // "13.0"
  std::string rtcgVersion;
  // The device's multiprocessor count; 0: unknown (recorded by rtcg 0.1). Stored with the key but
  // not part of its identity (the device name fixes it): exact lookups ignore it.
  int multiprocessors = 0;
  bool operator==(const TuningKey&) const = default;
};

enum class CandidateStatus { Verified, WrongResult, CompileFailed, LaunchFailed, Faulted, TimedOut, Skipped };
// "verified", "wrong-result", "compile-failed", "launch-failed", "faulted", "timed-out", "skipped"
const char* statusName(CandidateStatus s);
// Now as Unix time in seconds: the clock of the records' and searches' times (recordedAt).
double unixNow();
std::optional<CandidateStatus> parseStatus(const std::string& name);

struct CandidateRecord {
  std::string schedule;
  CandidateStatus status = CandidateStatus::Verified;
  std::string reason;        // for failures: what went wrong
  double medianMs = 0;       // verified only
  double relativeError = 0;  // worst over outputs
  int registers = 0, spillBytes = 0, sharedBytes = 0;
  double occupancy = 0;
  double gflops = 0, gbytes = 0;
  double compileMs = 0;
  int64_t searchId = 0;      // which tuning run produced it (0: none)
  double recordedAt = 0;     // Unix time in seconds; record() stamps the current time when 0
  bool operator==(const CandidateRecord&) const = default;
};

class TuningDb {
 public:
  // Opens (creating if needed) the database at `path` (default: defaultPath()). Throws
  // rtcg::Error with SQLite's message when it cannot, or when the file was written by a newer rtcg
  // (a schema version this build does not know). A write-protected file, or Access::ReadOnly,
  // opens read-only: it is only read (its journal mode is not switched, nothing is migrated; an
  // empty file reads as an empty database) and every write throws.
  // Access::Snapshot (also what every open becomes with RTCG_TUNING_DB_SNAPSHOT=1,
  // runtime/StateDirs.h): a file nobody writes while it is open (a snapshot: `rtcgc db snapshot`),
  // read as SQLite's immutable file: no locks taken, nothing written (not even a -shm or -wal
  // file), so any number of processes read it at once, on any file system; every write throws.
  enum class Access { ReadWrite, ReadOnly, Snapshot };
  explicit TuningDb(const std::string& path, Access access = Access::ReadWrite);
  ~TuningDb();
  TuningDb(const TuningDb&) = delete;
  TuningDb& operator=(const TuningDb&) = delete;
  bool readOnly() const;

  // The database file runtime/StateDirs.h names ($RTCG_TUNING_DB, else $RTCG_CACHE_DIR/tuning.sqlite,
  // else $XDG_DATA_HOME/rtcg/tuning.sqlite, else ~/.local/share/rtcg/tuning.sqlite), for writers:
  // creates its directory, and moves rtcg 0.1's database (in the kernel cache directory) there
  // once. Throws rtcg::Error when no variable is set or the directory cannot be made.
  static std::string defaultPath();
  // The same file for readers (compile()'s lookups): the path when the file exists (after the
  // one-time move; the old file's path when it cannot be moved, with `warning` saying why), else
  // nullopt. Creates nothing but the moved file.
  static std::optional<std::string> existingDefaultPath(std::string* warning = nullptr);
  // A consistent copy of the whole database into a new file (VACUUM INTO).
  void copyTo(const std::string& file);
  // A snapshot for Access::Snapshot readers: a consistent copy in one file (rollback journal, no
  // WAL), written to a temporary file beside `file` and renamed over it, so readers of an older
  // snapshot at that path never see a half-written one. Throws rtcg::Error when it cannot.
  void snapshotTo(const std::string& file);
  const std::string& path() const;

  int64_t beginSearch(const TuningKey& key, const std::string& settings);  // returns searchId
  void record(const TuningKey& key, const CandidateRecord& c);             // one transaction
  void endSearch(int64_t searchId, double wallSeconds, int candidates);

  // The fastest verified candidate for exactly this key.
  std::optional<CandidateRecord> best(const TuningKey& key);
  // The searches of exactly this key that ran to their end (endSearch): a search cut by a crash
  // has its candidates but no end. `rtcgc tune --manifest --resume` under MPI skips such keys.
  int finishedSearches(const TuningKey& key);
  // Every candidate of exactly this key, in the order they were recorded.
  std::vector<CandidateRecord> candidates(const TuningKey& key);

  struct Entry {  // one key with its best
    TuningKey key;
    int measured = 0, verified = 0;
    std::optional<CandidateRecord> best;
  };
  // Every key (sorted by kernel name, sizes, hash, device), with counts and its best.
  std::vector<Entry> list();

  // JSON export of everything (or of the keys of one kernel hash): keys with their searches and
  // candidates. Import merges into this database in one transaction, skipping candidates that are
  // already present with every field equal; returns rows added (and, if asked, duplicates
  // skipped). Throws rtcg::Error on malformed input, adding nothing.
  std::string exportJson(const std::string& kernelHash = "");
  int importJson(const std::string& json, int* duplicatesSkipped = nullptr);
  // Removes every candidate, search and key (or those of one kernel hash); returns candidates removed.
  int clear(const std::string& kernelHash = "");

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace rtcg
