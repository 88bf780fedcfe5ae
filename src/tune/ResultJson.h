// A search's result as JSON and back, whole: how an MPI rank hands the search it ran to rank 0,
// which prints it and writes it into the tuning database (recordSearch, tune/Tuner.h). Every field
// of TuneResult travels except prunedList (its count does), so a result read back prints and
// records as the one that was sent.
#pragma once

#include <nlohmann/json.hpp>

#include "tune/Tuner.h"

namespace rtcg {

nlohmann::json tuneResultToJson(const TuneResult& r);
// Throws rtcg::Error naming the field for JSON that is not such a result.
TuneResult tuneResultFromJson(const nlohmann::json& j);

// [{host, slots, compiled}, ...]: TuneResult::compiledOn, as results and `rtcgc tune --json` give it.
nlohmann::json compiledOnJson(const std::vector<CompileHostCount>& hosts);

nlohmann::json keyToJson(const TuningKey& k);
TuningKey keyFromJson(const nlohmann::json& j);

}  // namespace rtcg
