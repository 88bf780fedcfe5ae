// rtcgc tune under mpirun (tools/rtcgc/MpiTune.h) on the CPU: three ranks on a stand-in device
// ($RTCG_TEST_DEVICE), candidates compiled by NVRTC and measured by the test suite's fake worker
// (tests/tuner/fake_worker.cpp, mode "verified": a candidate's median is a function of its cubin).
// A manifest's keys are each tuned exactly once and rank 0's database gets every row; a rank
// killed mid-search loses its key, which is reported and completed by --resume; ranks with
// different devices are refused before anything is measured; a single search compiles and
// measures on every rank (starting each rank's compile worker once, refinement rounds included),
// and a rank killed while it compiles for rank 0 stops it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "Shell.h"
#include "tune/TuningDb.h"
#include "../tune/TempDir.h"

namespace fs = std::filesystem;
using nlohmann::json;
using rtcg::TuningDb;
using rtcg::testing::TempDir;
using rtcg::tests::shell;

namespace {

const char* kScale = "kernel scale(n: int, alpha: f32, x: f32[n], out y: f32[n]) {\n"
                     "  for i in 0..n { y[i] = alpha * x[i]; }\n"
                     "}\n";
constexpr int kKeys = 5;

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

// A manifest of kKeys entries: scale at five sizes (five keys).
std::string writeManifest(const TempDir& dir) {
  json kernels = json::array();
  for (int k = 0; k < kKeys; ++k)
    kernels.push_back({{"file", "app.cpp"},   {"line", 10 + k},       {"column", 5},
                       {"source", kScale},    {"sizes", {{"n", 1000 * (k + 1)}}},
                       {"sizesConstant", true}, {"errors", 0},          {"kernel", "scale"},
                       {"kernels", {"scale"}}});
  return write(dir, "kernels.json", json{{"version", 1}, {"kernels", kernels}}.dump());
}

// The environment every rank gets: the stand-in device, the fake worker, a cache of its own.
std::string environment(const TempDir& dir, const std::string& device = "Fake GPU,sm_90,132") {
  return "RTCG_TEST_DEVICE='" + device + "' RTCG_FAKE_WORKER_MODE=verified RTCG_FAKE_WORKER_DELAY_MS=30 " +
         "RTCG_CACHE_DIR=" + dir.file("cache") + " ";
}

std::string mpirun(int ranks, const std::string& extra = "") {
  return std::string(RTCG_MPIEXEC) + " --oversubscribe --allow-run-as-root --bind-to none " + extra + " -n " +
         std::to_string(ranks) + " ";
}

std::string tuneArgs(const std::string& db, int candidates = 4) {
  return std::string(RTCGC_PATH) + " tune --worker " + RTCG_FAKE_WORKER + " --max-candidates " +
         std::to_string(candidates) + " --compile-threads 1 --db " + db + " ";
}

// The JSON document at the end of standard output (the manifest's or the search's summary).
json lastJson(const std::string& out) {
  size_t at = out.rfind("\n{");
  size_t start = at == std::string::npos ? out.find('{') : at + 1;
  return json::parse(out.substr(start));
}

std::map<std::string, int> outcomes(const json& manifest) {
  std::map<std::string, int> counts;
  for (const json& k : manifest["kernels"]) ++counts[k["outcome"].get<std::string>()];
  return counts;
}

// How often each key was started, and on how many ranks: "rtcgc tune: rank R tunes LABEL" lines.
struct Dealt {
  std::map<std::string, int> perKey;
  std::set<int> ranks;
};
Dealt dealt(const std::string& err) {
  Dealt d;
  std::regex line("rtcgc tune: rank (\\d+) tunes (scale \\(n=\\d+\\) at app.cpp:\\d+:5)");
  for (auto it = std::sregex_iterator(err.begin(), err.end(), line); it != std::sregex_iterator(); ++it) {
    ++d.perKey[(*it)[2]];
    d.ranks.insert(std::stoi((*it)[1]));
  }
  return d;
}

// Candidate rows per key in the database, and whether each key's search ran to its end.
struct Rows {
  int keys = 0, rows = 0, finished = 0;
};
Rows rowsOf(const std::string& path) {
  Rows r;
  TuningDb db(path, TuningDb::Access::ReadOnly);
  for (const TuningDb::Entry& e : db.list()) {
    ++r.keys;
    r.rows += e.measured;
    r.finished += db.finishedSearches(e.key) > 0;
  }
  return r;
}

TEST(MpiTune, ManifestTunesEveryKeyOnceAndRankZeroRecordsEveryRow) {
  TempDir dir;
  std::string manifest = writeManifest(dir), db = dir.file("tuning.sqlite");
  auto r = shell(environment(dir) + mpirun(3) + tuneArgs(db) + "--manifest " + manifest + " --json 2>" +
                 dir.file("err"));
  std::string err = rtcg::tests::shell("cat " + dir.file("err")).out;
  ASSERT_EQ(r.code, 0) << r.out << err;
  json j = lastJson(r.out);
  EXPECT_EQ(outcomes(j)["tuned"], kKeys) << j.dump(2);
  Dealt d = dealt(err);
  ASSERT_EQ(d.perKey.size(), size_t(kKeys)) << err;
  for (const auto& [key, times] : d.perKey) EXPECT_EQ(times, 1) << key;
  EXPECT_GE(d.ranks.size(), 2u) << "the keys were not spread over the ranks:\n" << err;
  EXPECT_NE(err.find("MPI: 3 ranks, each on a Fake GPU (sm_90)"), std::string::npos) << err;
  // Each key says which rank searched it (the one the log says it was dealt to) and when.
  std::set<int> jsonRanks;
  for (const json& k : j["kernels"]) {
    ASSERT_TRUE(k.contains("rank") && k.contains("startedAt") && k.contains("endedAt")) << k.dump(2);
    const std::string label = fmt::format("scale (n={}) at app.cpp:{}:5", k["sizes"].get<std::string>().substr(2),
                                          k["line"].get<int>());
    EXPECT_NE(err.find(fmt::format("rtcgc tune: rank {} tunes {}", k["rank"].get<int>(), label)), std::string::npos)
        << label << "\n" << err;
    EXPECT_GT(k["startedAt"].get<double>(), 1.7e9);  // Unix seconds (2023 on)
    EXPECT_LE(k["startedAt"].get<double>(), k["endedAt"].get<double>());
    jsonRanks.insert(k["rank"].get<int>());
  }
  EXPECT_EQ(jsonRanks, d.ranks);
  // Dealt largest first (tuningOrder: the larger n, the more output every candidate compares): the
  // two smallest keys go out only once a rank has finished one of the three largest.
  auto dealtAt = [&](int n) {
    size_t at = err.find(fmt::format("tunes scale (n={})", n));
    EXPECT_NE(at, std::string::npos) << n;
    return at;
  };
  EXPECT_LT(std::max({dealtAt(5000), dealtAt(4000), dealtAt(3000)}), std::min(dealtAt(2000), dealtAt(1000))) << err;
  // Every candidate every rank measured is in rank 0's database, each key's search ended.
  int sent = 0;
  for (const json& k : j["kernels"]) sent += int(k["result"]["counts"]["generated"].get<int64_t>());
  Rows rows = rowsOf(db);
  EXPECT_EQ(rows.keys, kKeys);
  EXPECT_EQ(rows.finished, kKeys);
  EXPECT_EQ(rows.rows, sent);
  EXPECT_GT(sent, kKeys);
}

// One process (no MPI ranks) tunes the keys one after another in the same order: largest first.
TEST(MpiTune, OneProcessTunesTheLargestSearchFirst) {
  TempDir dir;
  std::string manifest = writeManifest(dir), db = dir.file("tuning.sqlite");
  auto r = shell(environment(dir) + tuneArgs(db) + "--manifest " + manifest + " --json 2>" + dir.file("err"));
  std::string err = rtcg::tests::shell("cat " + dir.file("err")).out;
  ASSERT_EQ(r.code, 0) << r.out << err;
  size_t last = 0;
  for (int k = kKeys; k >= 1; --k) {
    size_t at = err.find(fmt::format("rtcgc tune: [{}/{}] scale (n={})", kKeys - k + 1, kKeys, 1000 * k));
    ASSERT_NE(at, std::string::npos) << k << "\n" << err;
    EXPECT_GT(at, last);
    last = at;
  }
  // The report keeps the manifest's order.
  json j = lastJson(r.out);
  ASSERT_EQ(j["kernels"].size(), size_t(kKeys));
  for (int k = 0; k < kKeys; ++k) EXPECT_EQ(j["kernels"][k]["sizes"], fmt::format("n={}", 1000 * (k + 1)));
}

TEST(MpiTune, AKilledRanksKeyIsReportedAndResumeCompletesIt) {
  TempDir dir;
  std::string manifest = writeManifest(dir), db = dir.file("tuning.sqlite");
  // Rank 2's measuring worker kills its rank at its first candidate; mpirun keeps the others.
  auto r = shell(environment(dir) + "RTCG_FAKE_WORKER_KILL_RANK=2 " + mpirun(3, "--enable-recovery") + tuneArgs(db) +
                 "--rank-timeout 4 --manifest " + manifest + " --json 2>" + dir.file("err"));
  std::string err = shell("cat " + dir.file("err")).out;
  // rtcgc exits 1 (a key was lost), but Open MPI 4's mpirun --enable-recovery exits 0 whatever its
  // ranks return: the outcome is read from the JSON.
  json j = lastJson(r.out);
  std::map<std::string, int> first = outcomes(j);
  EXPECT_EQ(first["lost"], 1) << j.dump(2);
  EXPECT_EQ(first["tuned"], kKeys - 1) << j.dump(2);
  EXPECT_NE(err.find("rank 2 sent nothing for 4 s: it is lost, and with it scale"), std::string::npos) << err;
  std::string lostKey;
  for (const json& k : j["kernels"])
    if (k["outcome"] == "lost") lostKey = k["sizes"];
  EXPECT_EQ(rowsOf(db).finished, kKeys - 1);

  // --resume tunes the lost key alone; the others are the earlier run's.
  r = shell(environment(dir) + mpirun(3) + tuneArgs(db) + "--resume --manifest " + manifest + " --json 2>" +
            dir.file("err"));
  err = shell("cat " + dir.file("err")).out;
  ASSERT_EQ(r.code, 0) << r.out << err;
  j = lastJson(r.out);
  EXPECT_EQ(outcomes(j)["tuned"], kKeys) << j.dump(2);
  Dealt d = dealt(err);
  ASSERT_EQ(d.perKey.size(), 1u) << err;
  EXPECT_NE(d.perKey.begin()->first.find("(" + lostKey + ")"), std::string::npos) << err;
  int earlier = 0;
  for (const json& k : j["kernels"]) earlier += k.value("reason", "").find("by an earlier run") != std::string::npos;
  EXPECT_EQ(earlier, kKeys - 1) << j.dump(2);
  Rows rows = rowsOf(db);
  EXPECT_EQ(rows.keys, kKeys);
  EXPECT_EQ(rows.finished, kKeys);
}

TEST(MpiTune, RanksOnDifferentDevicesAreRefusedBeforeMeasuring) {
  TempDir dir;
  std::string manifest = writeManifest(dir), db = dir.file("tuning.sqlite");
  std::string args = tuneArgs(db) + "--manifest " + manifest;
  auto r = shell(environment(dir) + mpirun(2) + args + " : -n 1 env RTCG_TEST_DEVICE='Fake GPU,sm_80,108' " + args +
                 " 2>&1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("rtcgc: error: MPI: rank 2 ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Fake GPU (sm_80, 108 multiprocessors) differs from rank 0 ("), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("tunes scale"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(db)) << "a refused run opened the database";
}

TEST(MpiTune, OneSearchCompilesAndMeasuresOnEveryRank) {
  TempDir dir;
  std::string file = write(dir, "scale.rtcg", kScale), db = dir.file("tuning.sqlite");
  // 12 candidates: 8 up front, 4 in two refinement rounds (appended to the batch of rank 0's pool).
  auto r = shell(environment(dir) + mpirun(3) + tuneArgs(db, 12) + file + " -D n=100000 --json --timeline 2>" +
                 dir.file("err"));
  std::string err = shell("cat " + dir.file("err")).out;
  ASSERT_EQ(r.code, 0) << r.out << err;
  json j = lastJson(r.out);
  EXPECT_EQ(j["devices"], 3) << j.dump(2);
  // The other ranks' workers were set up as the search started, the reference sent them later.
  for (const char* event : {"remote devices ready", "reference done", "first result", "last result"})
    EXPECT_NE(err.find(std::string(" s  ") + event), std::string::npos) << event << "\n" << err;
  EXPECT_NE(err.find("refinement round 2: "), std::string::npos) << err;
  // Every rank started its compile worker once: the rounds ran on the workers (rank 0's own, and
  // those behind its slots on ranks 1 and 2) that the first batch started.
  for (const char* who : {"rtcgc tune: compile worker", "\\[rank 1\\] compile worker", "\\[rank 2\\] compile worker"}) {
    std::regex started(std::string(who) + " [0-9]+ started");
    EXPECT_EQ(std::distance(std::sregex_iterator(err.begin(), err.end(), started), std::sregex_iterator()), 1)
        << who << "\n" << err;
  }
  for (int rank : {1, 2})
    EXPECT_NE(err.find("measuring also on rank " + std::to_string(rank) + " ("), std::string::npos) << err;
  int64_t generated = j["counts"]["generated"], verified = j["counts"]["verified"];
  EXPECT_GT(generated, 3);
  EXPECT_EQ(verified, generated) << j.dump(2);
  // Rank 0's pool had a slot on every rank (--compile-threads 1 each); the other ranks' slots each
  // took a candidate as the pool started (rank 0's starts its worker first); each compiled once.
  EXPECT_NE(err.find("compiling with 3 slots: 1 here, 1 on rank 1, 1 on rank 2"), std::string::npos) << err;
  std::map<std::string, int64_t> compiled;
  for (const json& h : j["compiledOn"]) compiled[h["host"]] = h["compiled"];
  EXPECT_EQ(compiled.size(), 3u) << j.dump(2);
  for (const std::string host : {"rank 1", "rank 2"}) EXPECT_GE(compiled[host], 1) << host;
  EXPECT_EQ(compiled["local"] + compiled["rank 1"] + compiled["rank 2"], generated) << j.dump(2);
  for (const std::string rank : {"1", "2"}) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(err, m, std::regex("\\[rank " + rank + "\\] compiled (\\d+) candidates in 1 slot")))
        << err;
    EXPECT_EQ(std::stoll(m[1]), compiled["rank " + rank]) << err;
  }
  // Each measured once: the database's rows are the result's candidates, no schedule twice.
  Rows rows = rowsOf(db);
  EXPECT_EQ(rows.keys, 1);
  EXPECT_EQ(rows.finished, 1);
  EXPECT_EQ(rows.rows, generated);
  TuningDb read(db, TuningDb::Access::ReadOnly);
  std::set<std::string> schedules;
  for (const rtcg::CandidateRecord& c : read.candidates(read.list().at(0).key)) schedules.insert(c.schedule);
  EXPECT_EQ(int64_t(schedules.size()), generated);
}

TEST(MpiTune, ARankKilledHoldingCompileWorkStopsTheSearch) {
  TempDir dir;
  std::string file = write(dir, "scale.rtcg", kScale), db = dir.file("tuning.sqlite");
  // Rank 2's compile worker kills its rank at the first candidate rank 0's pool sends it; the
  // search stops with the lost rank's error instead of waiting for its reply (timeout: a hang fails).
  auto r = shell(environment(dir) + "RTCG_FAKE_COMPILE_WORKER_KILL_RANK=2 timeout 120 " +
                 mpirun(3, "--enable-recovery") + tuneArgs(db, 8) + "--rank-timeout 4 " + file +
                 " -D n=100000 --json 2>" + dir.file("err"));
  std::string err = shell("cat " + dir.file("err")).out;
  EXPECT_NE(r.code, 124) << "the search hung:\n" << err;
  // (The worker's own words go to the file its rank keeps of its stderr, gone with the rank.)
  EXPECT_NE(err.find("compiling with 3 slots: 1 here, 1 on rank 1, 1 on rank 2"), std::string::npos) << err;
  EXPECT_EQ(err.find("[rank 2] compiled"), std::string::npos) << "rank 2 was not killed:\n" << err;
  EXPECT_TRUE(std::regex_search(err, std::regex("rtcgc: error: rank 2 \\([^\\n]*\\) sent nothing for 4 s: it is lost")))
      << err;
  EXPECT_EQ(r.out.find("\"compiledOn\""), std::string::npos) << "a stopped search printed a result:\n" << r.out;
}

}  // namespace
