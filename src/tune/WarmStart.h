// Warm start: a search begins with what the tuning database already knows about the same kernel
// at other sizes on the same device. Winners move little between nearby sizes, and the static
// model may rank such a winner far down the space (docs/bench.md, "Decisions and their
// measurements"), so the search measures them first instead of hoping its sample holds them;
// refinement then explores around whichever is fastest here.
#pragma once

#include <string>
#include <vector>

#include "schedule/Space.h"
#include "tune/CompilePool.h"
#include "tune/TuningDb.h"

namespace rtcg {

// The fastest verified schedule of each database key for the same kernel name, device and
// architecture at other sizes of the same size parameters, nearest sizes first (the sum over the
// parameters of |ln(ours / theirs)|), at most `limit`, without repeats.
std::vector<std::string> warmStartSchedules(const std::vector<TuningDb::Entry>& entries, const TuningKey& key,
                                            size_t limit);

// Appends a search's first jobs: the default schedule (the baseline), then the `warm` schedules
// the sample does not hold already (taken out of `reserve` when there, else used when they parse
// and are legal for `bound` within `limits`, else left out), then the sample, best predicted
// first; a `budgeted` sample gives up as many of its last (randomly drawn) candidates as the warm
// start added. Returns the warm schedules queued.
std::vector<std::string> queueSearch(const Kernel& bound, const ScheduleLimits& limits, const Schedule& defaultSchedule,
                                     const std::vector<Candidate>& sample, std::vector<Candidate>& reserve,
                                     const std::vector<std::string>& warm, bool budgeted, std::vector<CompileJob>& jobs);

// A resumed search (`rtcgc tune --resume`): removes from `jobs` every job but the first (the
// default schedule, the baseline every search measures) whose schedule an earlier search of the
// same key measured, whatever came of it. An exhaustive search stopped by its time limit then
// goes on, run after run, where the last one stopped. Returns how many it removed.
size_t dropMeasured(std::vector<CompileJob>& jobs, const std::vector<CandidateRecord>& earlier);

}  // namespace rtcg
