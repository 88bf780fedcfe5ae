// The HTML report of one search (`rtcgc tune --report search.html`): a self-contained page
// (inline CSS and SVG drawn here, no scripts, no external fonts) with a summary table, the time of
// every candidate in completion order, the best-so-far curve over search time, a breakdown by
// schedule choice, the top candidates and the failures with their reasons.
//
// ReportData is plain data: the tuner (or anything reading the tuning database) fills it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/IR.h"
#include "schedule/Plan.h"
#include "tune/TuningDb.h"

namespace rtcg {

struct ReportData {
  // What was tuned.
  std::string kernelName, kernelHash, sizes, device, arch;
  std::string settings;  // the search's options, for people ("max-candidates=200, time-limit=60s")

  // Every candidate measured or failed, in completion order.
  std::vector<CandidateRecord> candidates;
  // Seconds since the start of the search at which each candidate completed (same length as
  // `candidates`), or empty: then taken from the candidates' recordedAt.
  std::vector<double> completedSeconds;
  // (seconds since start, best median ms so far) at each improvement; empty: derived from the
  // candidates and their completion times.
  std::vector<std::pair<double, double>> bestOverTime;

  std::optional<CandidateRecord> best;             // empty: the fastest verified candidate
  std::optional<CandidateRecord> defaultSchedule;  // the default schedule's record, if measured

  // Counters of the search.
  int64_t enumerated = 0, pruned = 0, generated = 0, compiled = 0, compileFailed = 0, verified = 0, failed = 0;
  double wallSeconds = 0, compileSeconds = 0;
  double compilesPerSecond = 0;  // NVRTC throughput during the search
  // Why candidates were pruned by the static model: (reason, count), most frequent first.
  std::vector<std::pair<std::string, int64_t>> prunedReasons;

  // The device's peaks for "% of roofline"; 0: unknown (the column shows a dash).
  double peakGflops = 0, peakGbytesPerSecond = 0;

  int topCount = 20;  // rows of the top-candidates table
  // The plan of each candidate's schedule (planCandidates), by schedule text: the breakdown by
  // schedule choice reads them. A candidate without one is counted under ("schedule", "no plan").
  std::map<std::string, SchedulePlan> plans;
};

// The whole page. Every text from the data is HTML-escaped.
std::string renderSearchReport(const ReportData& data);

// The fraction of the roofline a candidate reaches: the larger of its achieved GF/s over the peak
// and its achieved GB/s over the peak bandwidth (achieved rates count the kernel's ideal flops and
// bytes, so the bound that limits it is the larger fraction). Empty when no peak is known or the
// candidate has no rates.
std::optional<double> rooflineFraction(const CandidateRecord& c, double peakGflops, double peakGbytesPerSecond);

// The schedule choices a candidate made, read from its plan, as (choice, value) pairs in a fixed
// order: ("thread.x", "j 32"), ("threads per block", "256": the launch's, whatever the sizes),
// ("register tile", "4"), ("unroll", "4"), then one per row of the clause table (clauseTable,
// schedule/Schedule.h: ("shared", "a, b"), ("transposed", "none"), ("buffers", "2"), ("copy",
// "async"), ("loads", "late"), ("blocks_per_sm", "none"), ...), and ("grid axes", "2"). Several
// nests join their values with " | ". A plan with reasons gives {("schedule", "no plan")}.
std::vector<std::pair<std::string, std::string>> scheduleChoices(const SchedulePlan& plan);

// The plans of the candidates' schedules (each distinct text planned once against the bound
// kernel under `limits`), for ReportData::plans. Text that does not parse has none.
std::map<std::string, SchedulePlan> planCandidates(const Kernel& bound, const std::vector<CandidateRecord>& candidates,
                                                   const ScheduleLimits& limits);

// & < > " ' as entities.
std::string htmlEscape(std::string_view text);

}  // namespace rtcg
