#include "tune/Report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "support/Diagnostics.h"

using namespace rtcg;

namespace {

// Checks that every element of the page is closed in order (void elements and `<x/>` aside) and
// returns the first problem, or "" when the page is balanced. Text is escaped, so every '<'
// starts a tag.
std::string balanceProblem(const std::string& html) {
  static const std::set<std::string> voidElements = {"meta", "br", "hr", "img", "link", "input"};
  std::vector<std::string> stack;
  size_t pos = 0;
  while ((pos = html.find('<', pos)) != std::string::npos) {
    size_t end = html.find('>', pos);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(pos);
    std::string tag = html.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag.rfind("!DOCTYPE", 0) == 0) continue;
    if (!tag.empty() && tag.back() == '/') continue;  // <circle .../>
    bool closing = !tag.empty() && tag[0] == '/';
    std::string name = tag.substr(closing ? 1 : 0);
    name = name.substr(0, name.find_first_of(" \t\n"));
    if (name.empty()) return "empty tag at " + std::to_string(pos);
    if (closing) {
      if (stack.empty() || stack.back() != name)
        return "</" + name + "> closes <" + (stack.empty() ? "nothing" : stack.back()) + "> at " + std::to_string(pos);
      stack.pop_back();
    } else if (!voidElements.count(name)) {
      stack.push_back(name);
    }
  }
  if (!stack.empty()) return "<" + stack.back() + "> never closed";
  return "";
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

CandidateRecord candidate(const std::string& schedule, CandidateStatus status, double ms, double at) {
  CandidateRecord c;
  c.schedule = schedule;
  c.status = status;
  c.medianMs = status == CandidateStatus::Verified ? ms : 0;
  c.gflops = ms > 0 ? 200.0 / ms : 0;
  c.gbytes = ms > 0 ? 100.0 / ms : 0;
  c.registers = 32;
  c.occupancy = 0.5;
  c.recordedAt = 1700000000 + at;
  if (status != CandidateStatus::Verified) c.reason = "failed <because> & \"so\"\nsecond line";
  return c;
}

// examples/NAME's first kernel bound at `sizes`.
Kernel exampleKernel(const std::string& name, const SizeBindings& sizes) {
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/examples/" + name);
  std::stringstream text;
  text << in.rdbuf();
  Diagnostics diags;
  auto program = parseProgram(name, text.str(), diags);
  EXPECT_TRUE(program.has_value()) << name;
  auto bound = bindSizes(program->kernels[0], sizes, diags);
  EXPECT_TRUE(bound.has_value()) << name;
  return *bound;
}

const ScheduleLimits kLimits = deviceScheduleLimits(227 * 1024, 1024);

// The choices of `text`'s plan for `k`.
std::vector<std::pair<std::string, std::string>> choicesOf(const Kernel& k, const std::string& text) {
  ScheduleParseResult parsed = parseSchedule(text);
  if (!parsed.ok()) {
    ADD_FAILURE() << text << ": " << parsed.error;
    return {};
  }
  return scheduleChoices(planSchedule(k, *parsed.schedule, kLimits));
}

// A plan that holds only what scheduleChoices reads (the nests' schedules and launch threads):
// the rendering of clauses no one kernel has together.
SchedulePlan sketchPlan(const std::string& text, int64_t threads) {
  ScheduleParseResult parsed = parseSchedule(text);
  SchedulePlan plan;
  if (!parsed.ok()) {
    ADD_FAILURE() << text << ": " << parsed.error;
    return plan;
  }
  for (const NestSchedule& ns : parsed.schedule->nests) {
    plan.nests.emplace_back();
    plan.nests.back().schedule = ns;
    plan.nests.back().launch.threads = threads;
  }
  return plan;
}

ReportData sampleData() {
  ReportData d;
  d.kernelName = "matmul";
  d.kernelHash = "0123456789abcdef";
  d.sizes = "n=500";
  d.device = "NVIDIA H200";
  d.arch = "sm_90";
  d.settings = "max-candidates=40 & time-limit<60s>";
  int i = 0;
  for (int tx : {16, 32, 64, 128})
    for (int reg : {1, 2, 4})
      for (bool staged : {false, true}) {
        std::string s = fmt::format("i: grid.y, thread.y 4{}; j: grid.x, thread.x {}; k: serial{}", reg > 1 ? fmt::format(", reg {}", reg) : "",
                                    tx, staged ? "; shared: a, b" : "");
        double ms = 1.0 + 8.0 / tx + 0.3 * reg + (staged ? -0.2 : 0);
        CandidateStatus st = i % 9 == 4 ? CandidateStatus::Faulted : i % 11 == 7 ? CandidateStatus::WrongResult
                                                                                 : CandidateStatus::Verified;
        d.candidates.push_back(candidate(s, st, ms, 0.5 * i));
        ++i;
      }
  d.candidates.push_back(candidate("not a schedule <script>alert(1)</script>", CandidateStatus::CompileFailed, 0, 30));
  d.defaultSchedule = d.candidates[0];
  d.enumerated = 100;
  d.pruned = 60;
  d.generated = 40;
  d.compiled = 39;
  d.compileFailed = 1;
  d.verified = 30;
  d.failed = 10;
  d.wallSeconds = 31;
  d.compileSeconds = 2.5;
  d.compilesPerSecond = 16;
  d.prunedReasons = {{"threads per block 16 < min_threads 32", 40}, {"uncoalesced: thread.x on i", 20}};
  d.peakGflops = 60000;
  d.peakGbytesPerSecond = 4800;
  d.plans = planCandidates(exampleKernel("matmul.rtcg", {{"n", 500}}), d.candidates, kLimits);
  return d;
}

}  // namespace

TEST(Report, EscapesHtml) {
  EXPECT_EQ(htmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(htmlEscape("plain"), "plain");
}

TEST(Report, ScheduleChoicesComeFromThePlans) {
  const Kernel matmul = exampleKernel("matmul.rtcg", {{"n", 500}});
  auto c = choicesOf(matmul, "i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32; k: serial, serial 8; shared: a, b");
  std::vector<std::pair<std::string, std::string>> expected = {
      {"thread.x", "j 32"}, {"threads per block", "512"}, {"register tile", "4"}, {"unroll", "none"},
      {"shared", "a, b"},   {"transposed", "none"},       {"buffers", "1"},       {"copy", "registers"},
      {"loads", "late"},    {"blocks_per_sm", "none"},    {"stores", "cached"},   {"long_rows", "none"},
      {"mma", "none"},      {"fuse", "1"},                {"keep", "none"},       {"accumulate", "global"},
      {"aggregate", "none"}, {"scan", "none"},     {"grid axes", "2"}};
  EXPECT_EQ(c, expected);
  // Threads the schedule text does not say (a first part spans the index): the launch's.
  auto bySize = choicesOf(matmul, "i: grid.y; j: thread.x; k: serial");
  EXPECT_EQ(bySize[1], (std::pair<std::string, std::string>{"threads per block", "500"}));
  // A schedule without a plan for the kernel.
  auto none = choicesOf(matmul, "i: grid.y; j: grid.x, thread.x 2048; k: serial");
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0], (std::pair<std::string, std::string>{"schedule", "no plan"}));
  // The newer clauses: every row of the clause table is a choice.
  auto staged = scheduleChoices(sketchPlan("i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32; k: serial, unroll 4; "
                                           "shared: a^T, b; buffers: 3; copy: async; loads: early; blocks_per_sm: 2; "
                                           "stores: streaming; long_rows: 64; accumulate: shared; aggregate: warp", 512));
  std::vector<std::pair<std::string, std::string>> clauses(staged.begin() + 4, staged.end() - 1);
  std::vector<std::pair<std::string, std::string>> expectedClauses = {
      {"shared", "a, b"}, {"transposed", "a"}, {"buffers", "3"}, {"copy", "async"}, {"loads", "early"}, {"blocks_per_sm", "2"},
      {"stores", "streaming"}, {"long_rows", "64"}, {"mma", "none"}, {"fuse", "1"}, {"keep", "none"},
      {"accumulate", "shared"}, {"aggregate", "warp"}, {"scan", "none"}};
  EXPECT_EQ(clauses, expectedClauses);
  EXPECT_EQ(staged[3].second, "4");
  // An mma schedule (no index clauses): its clause is the choice, its threads the warps'.
  auto mma = choicesOf(matmul, "mma: tf32x3 m16n8k8 warps 2x2 tile 4x2 k 16");
  EXPECT_EQ(mma[1], (std::pair<std::string, std::string>{"threads per block", "128"}));
  EXPECT_EQ(mma[mma.size() - 7], (std::pair<std::string, std::string>{"mma", "tf32x3 m16n8k8 warps 2x2 tile 4x2 k 16"}));
  // Nests fused: the first nest's count, the others' 1.
  const Kernel softmax = exampleKernel("softmax.rtcg", {{"m", 7}, {"n", 1003}});
  const std::string row = "i: grid.x; j: serial, thread.x 64";
  auto fused = choicesOf(softmax, row + "; fuse: 3; keep: x | " + row + " | " + row);
  EXPECT_EQ(fused[fused.size() - 6], (std::pair<std::string, std::string>{"fuse", "3 | 1 | 1"}));
  EXPECT_EQ(fused[fused.size() - 5], (std::pair<std::string, std::string>{"keep", "x | none | none"}));
  // A scan schedule: its clause is the choice.
  auto scan = scheduleChoices(sketchPlan("scan: lookback threads 256 items 8", 256));
  EXPECT_EQ(scan[scan.size() - 2], (std::pair<std::string, std::string>{"scan", "lookback threads 256 items 8"}));
  auto two = scheduleChoices(sketchPlan("i: grid.x, thread.x 64 | i: grid.x, thread.x 256, reg 2", 64));
  EXPECT_EQ(two[0].second, "i 64 | i 256");
  EXPECT_EQ(two[2].second, "1 | 2");
}

TEST(Report, TheBreakdownCountsCandidatesWithoutAPlan) {
  ReportData d = sampleData();
  d.plans.clear();
  const std::string page = renderSearchReport(d);
  EXPECT_EQ(balanceProblem(page), "");
  EXPECT_NE(page.find("no plan"), std::string::npos);
}

TEST(Report, RooflineIsTheLargerFraction) {
  CandidateRecord c;
  c.gflops = 300;
  c.gbytes = 2400;
  EXPECT_DOUBLE_EQ(*rooflineFraction(c, 60000, 4800), 0.5);
  EXPECT_FALSE(rooflineFraction(c, 0, 0).has_value());
  EXPECT_FALSE(rooflineFraction(CandidateRecord{}, 60000, 4800).has_value());
}

TEST(Report, PageIsSelfContainedBalancedAndShowsEveryCandidate) {
  ReportData d = sampleData();
  std::string page = renderSearchReport(d);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(balanceProblem(page), "");
  EXPECT_EQ(page.find("<script"), std::string::npos);  // no scripts at all, and user text escaped
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_EQ(page.find("href="), std::string::npos);    // nothing external
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page.find("max-candidates=40 &amp; time-limit&lt;60s&gt;"), std::string::npos);
  for (const CandidateRecord& c : d.candidates)
    EXPECT_NE(page.find(htmlEscape(c.schedule)), std::string::npos) << c.schedule;
  // Summary, the three kinds of chart, tables.
  EXPECT_NE(page.find("Summary"), std::string::npos);
  EXPECT_GE(count(page, "<svg"), 4u);  // scatter, best-so-far, at least two varying choices
  EXPECT_NE(page.find("<h3>thread.x</h3>"), std::string::npos);
  EXPECT_NE(page.find("<h3>register tile</h3>"), std::string::npos);
  EXPECT_NE(page.find("<h3>shared</h3>"), std::string::npos);
  size_t verified = std::count_if(d.candidates.begin(), d.candidates.end(),
                                  [](auto& c) { return c.status == CandidateStatus::Verified; });
  ASSERT_LT(verified, 20u);  // all of them fit under the default 20
  EXPECT_NE(page.find(fmt::format("Top {0} of {0} verified", verified)), std::string::npos);
  EXPECT_NE(page.find("threads per block 16 &lt; min_threads 32"), std::string::npos);
  // Failures are marked in the scatter and listed with their reason.
  size_t failures = std::count_if(d.candidates.begin(), d.candidates.end(),
                                  [](auto& c) { return c.status != CandidateStatus::Verified; });
  EXPECT_EQ(count(page, "<path class=\"fail\""), failures + 1);  // + the legend's mark
  EXPECT_NE(page.find("failed &lt;because&gt; &amp; &quot;so&quot;"), std::string::npos);
  // The best is the fastest verified, and the default's speedup is stated.
  EXPECT_NE(page.find("x faster"), std::string::npos);
  EXPECT_NE(page.find("% of roofline"), std::string::npos);
}

TEST(Report, TopTableHasTheAskedRowsFastestFirst) {
  ReportData d = sampleData();
  d.topCount = 3;
  std::string page = renderSearchReport(d);
  size_t top = page.find("<h2>Top 3 of");
  ASSERT_NE(top, std::string::npos);
  size_t end = page.find("</table>", top);
  std::string table = page.substr(top, end - top);
  EXPECT_EQ(count(table, "<tr>"), 4u);  // header + 3
  std::vector<const CandidateRecord*> verified;
  for (auto& c : d.candidates)
    if (c.status == CandidateStatus::Verified) verified.push_back(&c);
  std::sort(verified.begin(), verified.end(), [](auto* a, auto* b) { return a->medianMs < b->medianMs; });
  size_t first = table.find(htmlEscape(verified[0]->schedule)), second = table.find(htmlEscape(verified[1]->schedule));
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  EXPECT_LT(first, second);
}

TEST(Report, EmptyAndAllFailedSearchesStillRender) {
  ReportData empty;
  empty.kernelName = "k";
  std::string page = renderSearchReport(empty);
  EXPECT_EQ(balanceProblem(page), "");
  EXPECT_NE(page.find("No candidates."), std::string::npos);

  ReportData failedOnly;
  failedOnly.kernelName = "k";
  failedOnly.candidates.push_back(candidate("i: grid.x, thread.x 32", CandidateStatus::TimedOut, 0, 1));
  failedOnly.candidates.push_back(candidate("i: grid.x, thread.x 64", CandidateStatus::LaunchFailed, 0, 2));
  page = renderSearchReport(failedOnly);
  EXPECT_EQ(balanceProblem(page), "");
  EXPECT_NE(page.find("no verified candidate"), std::string::npos);
  EXPECT_NE(page.find("Failed candidates (2)"), std::string::npos);
}

TEST(Report, BestOverTimeIsDrawnFromTheGivenCurve) {
  ReportData d = sampleData();
  d.bestOverTime = {{0.5, 3.0}, {2.0, 2.0}, {10.0, 1.25}};
  std::string page = renderSearchReport(d);
  EXPECT_EQ(balanceProblem(page), "");
  EXPECT_NE(page.find("1.25 ms at 10"), std::string::npos);
  EXPECT_NE(page.find("search time, s"), std::string::npos);
}
