// `rtcgc tune`: search the schedule space of a kernel on the GPU (rtcg::tune), with a progress
// bar, a table of the best candidates, a JSON summary and an HTML report. With --manifest, every
// kernel of rtcg-scan's manifests (ManifestTune.h), under the key Context::compile looks up.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ManifestTune.h"
#include "runtime/Device.h"
#include "tune/TestDevice.h"
#include "tune/Tuner.h"

constexpr double kDefaultTuneTimeLimit = 300;  // seconds

struct TuneArgs {
  std::string file;
  std::vector<std::string> manifests;  // --manifest: rtcg-scan manifests (instead of file and -D)
  std::vector<std::string> defines;
  std::string kernel;
  int64_t maxCandidates = 0;
  // A search without a budget runs the whole space (81 108 candidates for a small convolution:
  // hours of GPU time for someone who typed the obvious command), so it stops starting candidates
  // after 5 minutes unless told otherwise; 0: the whole space. --resume continues a cut search.
  double timeLimit = kDefaultTuneTimeLimit;
  int64_t minThreads = 32, minBlocks = 1;
  int repeats = 20;
  int compileThreads = 0;
  std::string report;
  bool json = false;
  bool timeline = false;  // --timeline: the search's phases as they end (TuneResult::timeline)
  std::string db;  // empty: the default database; "-": none
  uint64_t seed = 1;
  std::string worker;
  double referenceMaxFlops = rtcg::kDefaultReferenceMaxFlops;  // --reference-max-flops
  bool fullReference = false;                                  // --full-reference: never sampled
  bool resume = false;                                         // --resume: skip what earlier searches measured
  bool dryRun = false;  // --dry-run: print the space and the candidates a search would take; no GPU
  std::string arch;     // --arch with --dry-run: the model's device (schedule/DeviceModels.h); empty: sm_90
  // --devices: "all" or ordinals separated by commas; empty (not given): device 0, under MPI every
  // device (a rank takes the one of its local rank)
  std::string devices;
  std::string precision = "ieee";  // --precision: which tensor-core arithmetic the space offers
  std::vector<std::string> inputs;  // --input NAME=FILE: in/inout arrays' values for the search
  double rankTimeout = 120;  // MPI: a rank silent this long is lost (MpiTune.h)
};

// --devices: the ordinals of "0,2" (in that order), or an empty list for "all" (every device,
// known only once the driver is asked); nullopt for anything else, or an ordinal listed twice.
std::optional<std::vector<int>> parseDeviceList(const std::string& text);

struct TuneCommand {
  CLI::App* command = nullptr;       // the `tune` subcommand (check command->parsed())
  std::shared_ptr<TuneArgs> args;    // where CLI11 stores the options (stable address)
};

// The search options of the command line, without the progress and log callbacks.
rtcg::TuneOptions searchOptions(const TuneArgs& a);

// The first line a search prints (on standard error): its time limit, and how to change it.
std::string timeLimitLine(const TuneArgs& a);

// Adds the `tune` subcommand to `app`.
TuneCommand addTuneCommand(CLI::App& app);

// One kernel of a --manifest to tune: what Context::compile looks up.
struct ManifestKey {
  size_t plan = 0;     // its entry's index in the plan
  std::string fileName, source;
  rtcg::Kernel bound;
  std::string label;   // "matmul (n=500) at app.cpp:3:5"
};
// What became of one key's search.
struct KeyOutcome {
  std::optional<rtcg::TuneResult> result;  // none: failed (error, code) or lost
  std::string error;
  int code = 0;
  bool lost = false;    // its rank stopped answering mid-search (MPI)
  std::string earlier;  // not searched: tuned by an earlier run (MPI --resume), in words
  bool recorded = false;  // in the database already (a search of this process with writeDb)
  int rank = 0;         // which MPI rank ran it
  // Unix time in seconds when its search began and ended, on the clock of its rank's node (0: not
  // searched): the manifest's JSON says when each key ran where (the ranks' balance).
  double startedAt = 0, endedAt = 0;
};
// Tunes one key in this process; `adjust` changes the options first (an MPI rank's device and
// database). Errors of the search become the outcome (codes as runTuneCommand's).
KeyOutcome tuneKey(const TuneArgs& a, const ManifestKey& key, const std::string& logPrefix,
                   const std::function<void(rtcg::TuneOptions&)>& adjust);
// The keys a plan tunes, in plan order.
std::vector<ManifestKey> manifestKeys(const std::vector<rtcg::manifest::Planned>& plan);
// The order keys are tuned in, here or dealt out to MPI ranks: the largest search first
// (rtcg::searchWorkEstimate at the command's candidate budget), plan order among equals, so that
// the last keys dealt are short and the ranks finish close together.
std::vector<size_t> tuningOrder(const TuneArgs& a, const std::vector<ManifestKey>& keys);

// Runs the searches of a manifest's keys and reports each as it finishes, through `done` (called
// from the caller's thread, one at a time). The default runs them one after another here; the MPI
// mode deals them out to its ranks (MpiTune.h).
using KeyDone = std::function<void(size_t key, KeyOutcome outcome)>;
using ManifestDealer = std::function<void(const std::vector<ManifestKey>& keys, const KeyDone& done)>;
// --manifest on `entries` (read and parsed by the caller), the searches through `dealer` (null:
// here, one after another). Returns the exit status as runTuneCommand.
int runManifestEntries(const TuneArgs& a, const std::vector<rtcg::manifest::Entry>& entries,
                       const ManifestDealer* dealer);
// A search of one DSL FILE (not --manifest), with `adjust` applied to its options.
int runSingle(const TuneArgs& a, const std::function<void(rtcg::TuneOptions&)>& adjust);

// Runs it; returns the exit status: 0 ok, 1 input error (program, sizes, unreadable file, database,
// a malformed manifest), 2 bad command line, 4 no CUDA device, 5 no candidate was verified, 70
// internal error. With --manifest: the status of the first kernel that failed, 0 when none did.
int runTuneCommand(const TuneCommand& cmd);
