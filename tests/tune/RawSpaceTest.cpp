// A raw module's tuning space (tune/RawSpace.h): enumeration with restrictions and a limit, the
// variant's text and options, the checks of a declared space, the tuning key, and the key's round
// trip through the tuning database.
#include <gtest/gtest.h>

#include "runtime/Device.h"
#include "support/Error.h"
#include "tune/RawSpace.h"
#include "tune/TempDir.h"
#include "tune/TuningDb.h"

namespace rtcg::raw {
namespace {

const TuneSpace kSpace = {{"TILE", {"64", "128", "256"}}, {"UNROLL", {"1", "4"}}};

std::vector<std::string> texts(const std::vector<Variant>& vs) {
  std::vector<std::string> out;
  for (const Variant& v : vs) out.push_back(variantText(v));
  return out;
}

TEST(RawSpace, EnumeratesTheProductLastMacroFastest) {
  EXPECT_EQ(texts(enumerateSpace(kSpace)),
            (std::vector<std::string>{"TILE=64 UNROLL=1", "TILE=64 UNROLL=4", "TILE=128 UNROLL=1", "TILE=128 UNROLL=4",
                                      "TILE=256 UNROLL=1", "TILE=256 UNROLL=4"}));
  EXPECT_EQ(texts(enumerateSpace({{"T", {"float"}}})), (std::vector<std::string>{"T=float"}));
}

TEST(RawSpace, RestrictionsAndLimit) {
  auto keep = [](const Variant& v) { return !(v[0].second == "256" && v[1].second == "4"); };
  EXPECT_EQ(enumerateSpace(kSpace, keep).size(), 5u);
  EXPECT_EQ(texts(enumerateSpace(kSpace, keep, 2)), (std::vector<std::string>{"TILE=64 UNROLL=1", "TILE=64 UNROLL=4"}));
  EXPECT_TRUE(enumerateSpace(kSpace, [](const Variant&) { return false; }).empty());
}

TEST(RawSpace, VariantAsOptionsAndBack) {
  Variant v = enumerateSpace(kSpace)[3];
  EXPECT_EQ(variantOptions(v), (std::vector<std::string>{"-DTILE=128", "-DUNROLL=4"}));
  EXPECT_EQ(parseVariant("TILE=128 UNROLL=4", kSpace), v);
  EXPECT_EQ(parseVariant("UNROLL=4 TILE=128", kSpace), v);  // in the space's order
  EXPECT_THROW(parseVariant("TILE=128", kSpace), Error);
  EXPECT_THROW(parseVariant("TILE=100 UNROLL=4", kSpace), Error);
  EXPECT_THROW(parseVariant("TILE=128 UNROLL=4 X=1", kSpace), Error);
  EXPECT_THROW(parseVariant("TILE=128 TILE=64 UNROLL=4", kSpace), Error);
  EXPECT_THROW(parseVariant("TILE 128", kSpace), Error);
  EXPECT_EQ(spaceText(kSpace), "TILE=64,128,256;UNROLL=1,4");
}

TEST(RawSpace, RefusesBadSpaces) {
  auto message = [](const TuneSpace& s) {
    try {
      enumerateSpace(s);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<accepted>");
  };
  EXPECT_EQ(message({}), "the tuning space declares no macro (give at least one: TILE in 64, 128, 256)");
  EXPECT_EQ(message({{"2X", {"1"}}}), "tuning space: '2X' is not a macro name (a C identifier)");
  EXPECT_EQ(message({{"T", {"1"}}, {"T", {"2"}}}), "tuning space: macro 'T' is declared twice");
  EXPECT_EQ(message({{"T", {}}}), "tuning space: macro 'T' has no values");
  EXPECT_EQ(message({{"T", {"1 2"}}}), "tuning space: value '1 2' of macro 'T' is not one word (no spaces, '=', ',' or ';')");
  EXPECT_EQ(message({{"T", {"1", "1"}}}), "tuning space: macro 'T' lists the value '1' twice");
  TuneSpace huge;
  for (int i = 0; i < 7; ++i) huge.push_back({"M" + std::to_string(i), {"1", "2", "3", "4", "5", "6", "7", "8"}});
  EXPECT_NE(message(huge).find("more than 1000000 variants"), std::string::npos);
}

cuda::DeviceProperties h200() {
  cuda::DeviceProperties p;
  p.name = "NVIDIA H200";
  p.computeMajor = 9;
  p.driverVersion = 13000;
  p.multiprocessors = 132;
  return p;
}

TEST(RawSpace, KeyCoversSourceOptionsFunctionSpaceProblemAndDevice) {
  const std::string src = "extern \"C\" __global__ void k(float* x) {}";
  TuningKey key = rawTuningKey(src, "k.cu", {"-O3"}, "k", kSpace, "n=1000", h200());
  EXPECT_EQ(key.kernelHash.size(), 16u);
  EXPECT_EQ(key.kernelName, "raw:k");
  EXPECT_EQ(key.sizes, "n=1000");
  EXPECT_EQ(key.device, "NVIDIA H200");
  EXPECT_EQ(key.arch, "sm_90");
  EXPECT_EQ(key.driverVersion, 13000);
  EXPECT_EQ(rawTuningKey(src, "k.cu", {"-O3"}, "k", kSpace, "n=1000", h200()), key);
  EXPECT_NE(rawTuningKey(src + "\n", "k.cu", {"-O3"}, "k", kSpace, "n=1000", h200()).kernelHash, key.kernelHash);
  EXPECT_NE(rawTuningKey(src, "k.cu", {}, "k", kSpace, "n=1000", h200()).kernelHash, key.kernelHash);
  EXPECT_NE(rawTuningKey(src, "k.cu", {"-O3"}, "k2", kSpace, "n=1000", h200()).kernelHash, key.kernelHash);
  EXPECT_NE(rawTuningKey(src, "k.cu", {"-O3"}, "k", {{"TILE", {"64"}}}, "n=1000", h200()).kernelHash, key.kernelHash);
  EXPECT_NE(rawTuningKey(src, "k.cu", {"-O3"}, "k", kSpace, "n=2000", h200()).kernelHash, key.kernelHash);
  cuda::DeviceProperties other = h200();
  other.name = "NVIDIA H100 80GB HBM3";
  EXPECT_NE(rawTuningKey(src, "k.cu", {"-O3"}, "k", kSpace, "n=1000", other), key);  // same hash, another device
}

TEST(RawSpace, DatabaseRoundTrip) {
  testing::TempDir dir;
  const std::string src = "extern \"C\" __global__ void k(float* x) {}";
  TuningKey key = rawTuningKey(src, "k.cu", {}, "k", kSpace, "n=1000", h200());
  {
    TuningDb db(dir.file("tuning.sqlite"));
    int64_t search = db.beginSearch(key, "raw module");
    std::vector<Variant> vs = enumerateSpace(kSpace);
    double ms[] = {0.5, 0.25, 0.75, 0, 0.3, 0.2};
    for (size_t i = 0; i < vs.size(); ++i) {
      CandidateRecord r;
      r.schedule = variantText(vs[i]);
      r.searchId = search;
      if (i == 3) {
        r.status = CandidateStatus::WrongResult;
        r.reason = "argument 3: rel 1";
      } else if (i == 5) {
        r.status = CandidateStatus::CompileFailed;
        r.reason = "k.cu:2:3: error";
      } else {
        r.medianMs = ms[i];
      }
      db.record(key, r);
    }
    db.endSearch(search, 1.0, int(vs.size()));
  }
  TuningDb db(dir.file("tuning.sqlite"), TuningDb::Access::ReadOnly);
  std::optional<CandidateRecord> best = db.best(key);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->schedule, "TILE=64 UNROLL=4");  // the failed 0.2 ms row never wins
  EXPECT_EQ(parseVariant(best->schedule, kSpace), enumerateSpace(kSpace)[1]);
  EXPECT_EQ(db.candidates(key).size(), 6u);
  TuningKey elsewhere = rawTuningKey(src, "k.cu", {}, "k", kSpace, "n=2000", h200());
  EXPECT_FALSE(db.best(elsewhere));
  std::vector<TuningDb::Entry> list = db.list();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].key.kernelName, "raw:k");
  EXPECT_EQ(list[0].measured, 6);
  EXPECT_EQ(list[0].verified, 4);
}

}  // namespace
}  // namespace rtcg::raw
