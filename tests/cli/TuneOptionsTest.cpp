// `rtcgc tune`'s reference options, parsed by the command's own CLI11 definition and turned into
// the tuner's options (TuneCommand.cpp, linked in); the end-to-end usage errors run rtcgc.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>

#include "TuneCommand.h"

namespace {

// Parses `rtcgc tune ARGS`; returns the options, or throws CLI::ParseError.
rtcg::TuneOptions parse(std::vector<std::string> args) {
  CLI::App app{"test", "rtcgc"};
  TuneCommand cmd = addTuneCommand(app);
  args.insert(args.begin(), "tune");
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  app.parse(args);
  EXPECT_TRUE(cmd.command->parsed());
  return searchOptions(*cmd.args);
}

}  // namespace

TEST(TuneOptions, ReferenceLimitDefaultsToSampledAboveTwoGigaflops) {
  rtcg::TuneOptions o = parse({"k.rtcg", "-D", "n=64"});
  EXPECT_EQ(o.referenceMaxFlops, 2e9);
  EXPECT_EQ(o.referenceMaxFlops, rtcg::TuneOptions{}.referenceMaxFlops);  // the library's default too
}

TEST(TuneOptions, ReferenceMaxFlopsAndFullReference) {
  EXPECT_EQ(parse({"k.rtcg", "--reference-max-flops", "5e10"}).referenceMaxFlops, 5e10);
  EXPECT_EQ(parse({"k.rtcg", "--reference-max-flops", "0"}).referenceMaxFlops, 0);
  EXPECT_EQ(parse({"k.rtcg", "--full-reference"}).referenceMaxFlops, 0);
  // The other options still arrive.
  rtcg::TuneOptions o = parse({"k.rtcg", "--full-reference", "--seed", "9", "--repeats", "7"});
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.repeats, 7);
}

TEST(TuneOptions, ReferenceOptionErrors) {
  EXPECT_THROW(parse({"k.rtcg", "--reference-max-flops", "-1"}), CLI::ValidationError);
  EXPECT_THROW(parse({"k.rtcg", "--reference-max-flops", "lots"}), CLI::ParseError);
  EXPECT_THROW(parse({"k.rtcg", "--full-reference", "--reference-max-flops", "1e9"}), CLI::ExcludesError);
}

TEST(TuneOptions, DevicesTakeOrdinalsOrAll) {
  EXPECT_EQ(parse({"k.rtcg"}).deviceOrdinals, (std::vector<int>{0}));
  EXPECT_EQ(parse({"k.rtcg", "--devices", "1"}).deviceOrdinals, (std::vector<int>{1}));
  EXPECT_EQ(parse({"k.rtcg", "--devices", "2,0"}).deviceOrdinals, (std::vector<int>{2, 0}));
  // "all" is every device the driver has; without one, device 0 (where the search then fails).
  std::vector<int> all = parse({"k.rtcg", "--devices", "all"}).deviceOrdinals;
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front(), 0);
  for (const char* bad : {"", "x", "0,", ",1", "0,0", "-1", "1;2", "0, 1", "99999"})
    EXPECT_THROW(parse({"k.rtcg", "--devices", bad}), CLI::ValidationError) << "'" << bad << "'";
}

TEST(TuneOptions, TimeLimitDefaultsToFiveMinutesAndZeroIsTheWholeSpace) {
  EXPECT_EQ(parse({"k.rtcg", "-D", "n=64"}).timeLimitSeconds, 300);
  EXPECT_EQ(parse({"k.rtcg", "--time-limit", "0"}).timeLimitSeconds, 0);
  EXPECT_EQ(parse({"k.rtcg", "--time-limit", "20"}).timeLimitSeconds, 20);
  TuneArgs a;
  EXPECT_EQ(timeLimitLine(a), "rtcgc tune: time limit 300 s, the default (--time-limit S to change it, 0 for the "
                              "whole space; --resume continues a search it cut)");
  a.timeLimit = 0;
  EXPECT_EQ(timeLimitLine(a), "rtcgc tune: no time limit (--time-limit 0): the whole space");
}

TEST(TuneOptions, ASearchStatesItsTimeLimitFirst) {
  // Without a device the search stops after that line (exit 4); with one it goes on.
  std::string cmd = std::string(RTCGC_PATH) + " tune " RTCG_SOURCE_DIR "/examples/axpby.rtcg -D n=1000 --time-limit 7 "
                    "--max-candidates 2 --db - 2>&1 >/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[512] = {};
  ASSERT_NE(fgets(line, sizeof line, p), nullptr);
  pclose(p);
  EXPECT_EQ(std::string(line), "rtcgc tune: time limit 7 s (--time-limit S to change it, 0 for the whole space; "
                               "--resume continues a search it cut)\n");
}
