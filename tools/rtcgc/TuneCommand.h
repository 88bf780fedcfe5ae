// `rtcgc tune`: search the schedule space of a kernel on the GPU (rtcg::tune), with a progress
// bar, a table of the best candidates, a JSON summary and an HTML report. With --manifest, every
// kernel of rtcg-scan's manifests (ManifestTune.h), under the key Context::compile looks up.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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
  std::string db;  // empty: the default database; "-": none
  uint64_t seed = 1;
  std::string worker;
  double referenceMaxFlops = rtcg::kDefaultReferenceMaxFlops;  // --reference-max-flops
  bool fullReference = false;                                  // --full-reference: never sampled
  bool resume = false;                                         // --resume: skip what earlier searches measured
  bool dryRun = false;  // --dry-run: print the space and the candidates a search would take; no GPU
  std::string arch;     // --arch with --dry-run: the model's device (schedule/DeviceModels.h); empty: sm_90
  std::string devices = "0";  // --devices: "all" or ordinals separated by commas
  std::string precision = "ieee";  // --precision: which tensor-core arithmetic the space offers
  std::vector<std::string> inputs;  // --input NAME=FILE: in/inout arrays' values for the search
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

// Runs it; returns the exit status: 0 ok, 1 input error (program, sizes, unreadable file, database,
// a malformed manifest), 2 bad command line, 4 no CUDA device, 5 no candidate was verified, 70
// internal error. With --manifest: the status of the first kernel that failed, 0 when none did.
int runTuneCommand(const TuneCommand& cmd);
