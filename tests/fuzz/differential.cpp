// Differential fuzzer of the CPU stages after type checking: binding, proof, the schedule space,
// planning, the emitter and the emitted code itself. Each case takes a valid kernel (an example, a
// frontend test program, or a small random one from a grammar), binds small random sizes, and runs
// its default schedule and random candidates of its space (enumerateSchedules with a seed) in the
// host emulation (tests/codegen/HostEmulation.h) against the reference executor; half the cases
// search the space of an sm_90 model shrunk to 2 multiprocessors (Case::smallSm90). A mismatch, an
// emulation failure (g++ error, misaligned copy, arrival counter left set) or an exception is a
// finding: its reproducer is written to the output directory and the run exits 1. A kernel whose
// points store to one element through an index array (the reference executor's WriteConflictError)
// has no result to compare: it is counted as rejected input, as `rtcgc run` rejects it.
//
// Every case compiles emitted code with g++ (seconds), far too slow for libFuzzer's loop, so this
// is a seeded, bounded driver: the same seed gives the same cases.
//   usage: differential_fuzz [--seed S] [--cases N] [--seconds T] [--schedules K] [--out DIR]
//                            [--policy PRECISION]
// --policy fp64x (or any precision) runs only the kernels it applies to, each under it: a long run
// aimed at one rewrite (the others' cases are skipped before any compile).
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/CudaTypes.h"
#include "codegen/Emitter.h"
#include "codegen/HostEmulation.h"
#include "driver/Pipeline.h"
#include "frontend/Frontend.h"
#include "reference/Reference.h"
#include "schedule/DeviceModels.h"
#include "schedule/Mma.h"
#include "schedule/Space.h"
#include "schedule/PolicyRewrite.h"
#include "tune/Verify.h"

using namespace rtcg;
namespace fs = std::filesystem;

namespace {

struct Options {
  uint64_t seed = 1;
  int cases = 1000000;
  double seconds = 60;
  int schedules = 2;  // random candidates per case, besides the default
  fs::path out = "differential-findings";
  std::optional<Precision> policy;  // every case under it (the kernels it does not apply to skipped)
};

struct Source {
  std::string name, text;
};

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The seed corpus: the examples and the frontend's valid test programs.
std::vector<Source> corpus() {
  std::vector<Source> out;
  for (const char* dir : {"/examples", "/tests/frontend/good"})
    for (const auto& e : fs::directory_iterator(std::string(RTCG_SOURCE_DIR) + dir))
      if (e.path().extension() == ".rtcg") out.push_back({e.path().filename().string(), readFile(e.path())});
  std::sort(out.begin(), out.end(), [](const Source& a, const Source& b) { return a.name < b.name; });
  return out;
}

// The reserved words of the emitter (C++ and CUDA keywords, macros, the names the emitted code
// uses) that the language takes as names: the grammar's kernels use them for their names.
const std::vector<std::string>& reservedNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const std::string& w : emit::reservedWords()) {
      Diagnostics diags;
      // Named beside the functions the grammar calls (a name that shadows one is not ours).
      if (parseProgram("probe", "kernel k(" + w + ": f32[1], out y: f32[1]) { y[0] = max(sqrt(abs(" + w +
                                    "[0])), floor(min(f32(i32(" + w + "[0])), select(" + w + "[0] > 0.0, 1.0, 0.0)))); }",
                       diags))
        out.push_back(w);
    }
    return out;
  }();
  return names;
}

// A random expression of a[i, j] and b (read straight or transposed) of at most `depth` levels:
// operators the reference and CUDA agree on to rounding (no exp of large values). The quotients of
// the indices by ten are f32 values whose products by ten round to an integer in f32 but not in
// double (f32(7) / 10.0 * 10.0 is 7.0f, 6.99999988 in double: issue 40's false mismatch).
std::string randomExpr(std::mt19937_64& rng, int depth, const std::string& bRead) {
  auto pick = [&](int n) { return int(rng() % uint64_t(n)); };
  if (depth == 0 || pick(3) == 0) {
    const std::string leaves[] = {"a[i, j]", bRead, "0.5", "2.0", "a[i, j] * 0.25", "(f32(i) / 10.0)", "(f32(j) * 0.1)"};
    return leaves[pick(7)];
  }
  std::string l = randomExpr(rng, depth - 1, bRead), r = randomExpr(rng, depth - 1, bRead);
  switch (pick(6)) {
    case 0: return "(" + l + " + " + r + ")";
    case 1: return "(" + l + " - " + r + ")";
    case 2: return "(" + l + " * " + r + ")";
    case 3: return "max(" + l + ", " + r + ")";
    case 4: return "min(" + l + ", " + r + ")";
    default: return "sqrt(abs(" + l + "))";
  }
}

// A small random kernel from a grammar: a map over (i, j), a row reduction over j, a whole-array
// reduction, an accumulation into c, or a scan of a local, of a random expression; b is [n, m] or [m, n] (read
// transposed).
Source randomKernel(std::mt19937_64& rng) {
  bool transposed = rng() % 2;
  // b in f32 or one of the 16-bit storage types (read through an exact conversion to f32).
  const char* storage[] = {"f32", "bf16", "f16"};
  const std::string bElem = storage[rng() % 3];
  std::string bType = bElem + (transposed ? "[m, n]" : "[n, m]"), bRead = transposed ? "b[j, i]" : "b[i, j]";
  if (bElem != "f32") bRead = "f32(" + bRead + ")";
  std::string e = randomExpr(rng, 3, bRead);
  // A discontinuity after a product by ten: where f32 rounds across an integer, the reference and
  // the device must agree exactly (products the emitter keeps from fusing, the reference's f32).
  switch (rng() % 6) {
    case 0: e = "floor(" + e + " * 10.0)"; break;
    case 1: e = "f32(i32(" + e + " * 10.0))"; break;
    case 2: e = "select(" + e + " * 10.0 - 7.0 >= 0.0, 1.0, 0.0)"; break;
    default: break;
  }
  const char* reductions[] = {"sum", "max", "min"};
  std::string red = reductions[rng() % 3], body, outType;
  if (rng() % 4 == 0) {
    // An accumulation (docs/language.md 5.1): through an index map k (values in 0..m: the random
    // inputs of an index array), or at an affine element every i shares; a float sum, the
    // maximum of integers, or a u32 sum (products past 2^32 wrap, as the negative values do), maximum
    // or minimum (unsigned: those values order above the positive ones).
    std::string target = rng() % 2 ? "c[k[i, j]]" : "c[j]", update;
    std::string elem = "f32";
    switch (rng() % 5) {
      case 0: update = " += " + e; break;
      case 1: update = " += " + e + " * 0.5"; break;
      case 3: elem = "u32", update = " += u32(i32(" + e + " * 8.0)) * 536870909u32"; break;
      case 4: elem = "u32", update = std::string(rng() % 2 ? " max=" : " min=") + " u32(i32(" + e + " * 8.0))"; break;
      default: elem = "i32", update = " max= i32(" + e + " * 8.0)"; break;
    }
    std::string text = fmt::format(
        "kernel g(n: int, m: int, a: f32[n, m], b: {}, k: i32[n, m], inout c: {}[m]) {{\n"
        "  for i in 0..n, j in 0..m {{ {}{}; }}\n}}\n",
        bType, elem, target, update);
    return {"grammar", text};
  }
  if (rng() % 5 == 0) {
    // A scan (docs/language.md 5.2) of the expression, computed into a local first: inclusive or
    // exclusive, along a row or down a column, segmented by heads (random segments of the reference's
    // filling), of f32 values (sum, max, min) or of i32 or u32 ones (any operator: products wrap
    // exactly; u32 max and min order the wrapped negative values above the positive ones).
    const bool i32 = rng() % 3 == 0, rows = rng() % 2, seg = rng() % 4 == 0, excl = rng() % 3 == 0;
    const bool u32 = i32 && rng() % 2 == 0;
    const char* ops[] = {"sum", "max", "min", "product"};
    const std::string op = ops[rng() % (i32 ? 4 : 3)], elem = u32 ? "u32" : i32 ? "i32" : "f32";
    const std::string value = u32 ? "u32(i32(" + e + " * 4.0))" : i32 ? "i32(" + e + " * 4.0)" : e, s = rows ? "j" : "i";
    const std::string lo = seg ? "head[i, j]" : "0", hi = excl ? s : s + " + 1", read = rows ? "t[i, q]" : "t[q, j]";
    std::string text = fmt::format(
        "kernel g(n: int, m: int, a: f32[n, m], b: {},{} out c: {}[n, m]) {{\n"
        "  local t: {}[n, m];\n"
        "  for i in 0..n, j in 0..m {{ t[i, j] = {}; }}\n"
        "  for i in 0..n, j in 0..m {{ c[i, j] = {}(q in {}..{}, {}); }}\n}}\n",
        bType, seg ? " head: i32[n, m]," : "", elem, elem, value, op, lo, hi, read);
    return {"grammar", text};
  }
  switch (rng() % 4) {
    case 3:  // i64 values above 2^53, where double cannot tell neighbours apart (issue 40, item 10):
             // the host emulation compares integer outputs exactly
      outType = "i64[n, m]";
      body = "for i in 0..n, j in 0..m { c[i, j] = 9007199254740993 * i64(1 + (i + j) % 3) + i64(floor(" + e +
             " * 8.0)); }";
      break;
    case 0:  // the map's output in f32, or rounded to f16 when stored
      if (rng() % 2) outType = "f32[n, m]", body = "for i in 0..n, j in 0..m { c[i, j] = " + e + "; }";
      else outType = "f16[n, m]", body = "for i in 0..n, j in 0..m { c[i, j] = f16(" + e + "); }";
      break;
    case 1: outType = "f32[n]"; body = "for i in 0..n { c[i] = " + red + "(j in 0..m, " + e + "); }"; break;
    default: outType = "f32[1]"; body = "c[0] = " + red + "(i in 0..n, j in 0..m, " + e + ");"; break;
  }
  std::string text = fmt::format("kernel g(n: int, m: int, a: f32[n, m], b: {}, out c: {}) {{\n  {}\n}}\n", bType,
                                 outType, body);
  // A third of the kernels name their arrays, sizes and indices with reserved words (whole words
  // only: every name here is one letter).
  if (rng() % 3 == 0) {
    const std::vector<std::string>& words = reservedNames();
    std::string renamed;
    std::map<char, std::string> to;
    for (char c : std::string("abcnmij")) to[c] = words[rng() % words.size()];
    std::set<std::string> used;
    for (auto& [c, w] : to)
      while (!used.insert(w).second) w = words[rng() % words.size()];
    for (size_t p = 0; p < text.size(); ++p) {
      const char ch = text[p];
      const bool alone = (p == 0 || !std::isalnum((unsigned char)text[p - 1])) &&
                         (p + 1 == text.size() || !std::isalnum((unsigned char)text[p + 1]));
      renamed += alone && to.count(ch) ? to[ch] : std::string(1, ch);
    }
    text = renamed;
  }
  return {"grammar", text};
}

struct Case {
  std::string sourceName, source, kernel, schedule;
  SizeBindings sizes;
  Precision precision = Precision::Ieee;  // the policy the space was searched under
  // The space's device: none (generic limits: 48 KiB of shared memory a block, no multiprocessor
  // count, so no `persistent` form), or an sm_90 model with 2 multiprocessors and its 227 KiB a
  // block, where small sizes fill the device and the forms of large runs appear (persistent,
  // pingpong, resident, the producer warpgroup, deep rings).
  bool smallSm90 = false;
};

// The space options and plan limits of a case's device (Case::smallSm90).
SpaceOptions spaceOptionsOf(const Case& c) {
  SpaceOptions so;
  so.precision = c.precision;
  if (c.smallSm90) {
    so.device = *archDeviceModel("sm_90");
    so.device.multiprocessors = 2;
    so.limits = modelScheduleLimits(so.device);
  }
  return so;
}

std::string describe(const Case& c) {
  std::string defs;
  for (const auto& [n, v] : c.sizes) defs += fmt::format(" -D {}={}", n, v);
  const std::string policy = c.precision == Precision::Ieee ? "" : fmt::format(" --precision {}", precisionName(c.precision));
  const char* device = c.smallSm90 ? " --arch sm_90 --max-shared 232448 --multiprocessors 2" : "";
  return fmt::format("{} kernel {}{}{}{} --schedule '{}'", c.sourceName, c.kernel, defs, policy, device, c.schedule);
}

// Writes the reproducer (the source, then the case as an rtcgc command line and what went wrong).
void report(const Options& o, int n, const Case& c, const std::string& what) {
  fs::create_directories(o.out);
  fs::path file = o.out / fmt::format("finding-{}-{}.rtcg", o.seed, n);
  // A small sm_90's case plans under limits no GPU run takes (`run` plans for its device): `emit` shows its code.
  std::ofstream(file) << c.source << "\n// rtcgc " << (c.smallSm90 ? "emit " : "run ") << file.filename().string()
                      << " --kernel " << c.kernel
                      << describe(c).substr(describe(c).find(" -D")) << "\n/*\n" << what.substr(0, 20000) << "\n*/\n";
  std::fprintf(stderr, "FINDING %s\n%s\nreproducer: %s\n", describe(c).c_str(), what.substr(0, 4000).c_str(),
               file.c_str());
}

// Random sizes 1..40 for every size parameter; bindAndProve refuses those the kernel cannot take
// (an index array's range, a relation between sizes), and the case draws again.
std::optional<Kernel> bindRandom(const Kernel& k, std::mt19937_64& rng, SizeBindings& sizes) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    sizes.clear();
    for (const Param& p : k.params)
      if (p.kind == ParamKind::Size) sizes[p.name] = 1 + int64_t(rng() % 40);
    Diagnostics diags;
    if (auto bound = bindAndProve(k, sizes, diags)) return bound;
  }
  return std::nullopt;
}

// The schedules of one case: the default, then `count` random candidates of a seeded sample of the
// space of `so` (its precision; tf32x3: with the mma candidates of f32 contractions).
std::vector<std::string> schedulesOf(const Kernel& bound, std::mt19937_64& rng, int count, SpaceOptions so = {}) {
  const Precision precision = so.precision;
  std::vector<std::string> out{printSchedule(defaultSchedule(bound, so.limits))};
  so.maxCandidates = 40;
  so.seed = rng();
  so.minThreads = 1;
  Space space = enumerateSchedules(bound, so);
  for (int i = 0; i < count && !space.candidates.empty(); ++i)
    out.push_back(space.candidates[rng() % space.candidates.size()].text);
  // Under tf32x3 one of the space's tensor-core candidates too, where it has any (a few among many).
  std::vector<const Candidate*> mma;
  for (const Candidate& c : space.candidates)
    if (c.text.find("mma:") != std::string::npos) mma.push_back(&c);
  if (precision != Precision::Ieee && !mma.empty()) out.push_back(mma[rng() % mma.size()]->text);
  // An accumulation privatized in shared memory: one of the space's such candidates again with
  // random `slices` and `copies` (the space offers those only on grid-stride loops of one parallel
  // index, which the grammar's accumulations lack), where the plan takes them.
  std::vector<const Candidate*> privatized;
  for (const Candidate& c : space.candidates)
    if (c.text.find("accumulate: shared") != std::string::npos) privatized.push_back(&c);
  if (!privatized.empty()) {
    Schedule s = privatized[rng() % privatized.size()]->schedule;
    for (NestSchedule& ns : s.nests)
      if (ns.accumulate.shared) ns.accumulate.slices = 1 + int64_t(rng() % 4), ns.accumulate.copies = 1 + int64_t(rng() % 3);
    if (planSchedule(bound, s, so.limits).ok()) out.push_back(printSchedule(s));
  }
  return out;
}

// The same kernel at sizes near the ends of i32 (bounds whose products cross 2^31, 2^32 or 2^63):
// binding refuses them with an error, or the default schedule and a few candidates plan and emit.
// Too large to run; anything but rtcg::Error (an internal error, a crash under the sanitizers) is
// a finding.
std::string bigSizesProblem(const Kernel& k, std::mt19937_64& rng, SizeBindings& sizes) {
  const int64_t edges[] = {1290, 1291, 46340, 46341, 65535, 65536, 2097152, int64_t(1) << 30, 2147483647};
  sizes.clear();
  for (const Param& p : k.params)
    if (p.kind == ParamKind::Size) sizes[p.name] = edges[rng() % std::size(edges)];
  try {
    Diagnostics diags;
    std::optional<Kernel> bound = bindAndProve(k, sizes, diags);
    if (!bound) return "";
    for (const std::string& s : schedulesOf(*bound, rng, 2)) {
      ScheduleParseResult parsed = parseSchedule(s);
      if (!parsed.ok()) return "the space offered a schedule that does not parse: " + s;
      emitCuda(*bound, *parsed.schedule);
    }
  } catch (const Error&) {
    // A user error: a refusal with a message.
  } catch (const std::exception& e) {
    return std::string("exception at large sizes: ") + e.what();
  }
  return "";
}

// One case; returns false on a finding.
// Counts of the run: schedules emulated (on tensor cores among them) and cases rejected.
struct Counts {
  int emulated = 0, mma = 0, rejected = 0;
  int sm90 = 0, persistent = 0;  // emulated in a small sm_90's space (Case::smallSm90); persistent among them
  int rewritten = 0;  // cases under fp64x / fp32x (their schedules are the rewritten kernel's)
  int skipped = 0;    // kernels --policy does not apply to
};

bool runCase(const Options& o, int n, const Source& src, std::mt19937_64& rng, Counts& counts) {
  Diagnostics diags;
  auto prog = parseProgram(src.name, src.text, diags);
  if (!prog || prog->kernels.empty()) return true;  // a grammar kernel the checker refuses: not ours
  const Kernel& k = prog->kernels[rng() % prog->kernels.size()];
  Case c{src.name, src.text, k.name, "", {}};
  std::optional<Kernel> bound = bindRandom(k, rng, c.sizes);
  if (!bound) return true;
  // Half of the kernels a policy other than ieee applies to search under one of them: tf32x3 (f32:
  // the tensor-core schedules of their contractions, stacked statements, collapsed rows), fp64x or
  // fp32x (a contraction the Ozaki rewrite takes: the schedules are the rewritten kernel's, the
  // reference the kernel's as written).
  std::vector<Precision> policies;
  for (Precision p : {Precision::Tf32x3, Precision::Fp64x, Precision::Fp32x})
    if (precisionObstacle(*bound, p).empty()) policies.push_back(p);
  if (o.policy) {
    if (!precisionObstacle(*bound, *o.policy).empty()) return ++counts.skipped, true;
    c.precision = *o.policy;
  } else if (!policies.empty() && rng() % 2 == 0) {
    c.precision = policies[rng() % policies.size()];
  }
  c.smallSm90 = rng() % 2 == 0;
  counts.rewritten += precisionRewrites(c.precision);
  // 1e-4, or more where the kernel stores 16-bit values (one rounding of each, as the tuner allows)
  // or the policy rounds operands.
  double tolerance = 1e-4;
  for (size_t p = 0; p < bound->params.size(); ++p)
    if (bound->params[p].isWritten())
      tolerance = std::max(tolerance, verificationTolerance(*bound, int(p), c.precision));
  try {
    // (inside: a rewrite that fails is a finding with its reproducer, not an abort)
    const Kernel scheduled = policyKernel(*bound, c.precision, PolicyReach::Everywhere);
    const SpaceOptions so = spaceOptionsOf(c);
    for (const std::string& s : schedulesOf(scheduled, rng, o.schedules, so)) {
      c.schedule = s;
      testing::EmulationOptions eo;
      eo.blockOrder = int(rng() % 3);
      std::string err = testing::checkScheduledOnHost(*bound, scheduled, s, tolerance, so.limits, eo);
      ++counts.emulated;
      counts.mma += s.find("mma:") != std::string::npos;
      counts.sm90 += c.smallSm90;
      counts.persistent += s.find("persistent") != std::string::npos;
      if (!err.empty()) return report(o, n, c, err), false;
    }
  } catch (const WriteConflictError&) {
    // Two points store to one element through an index array (indirect.rtcg's scatter at n > m,
    // the first finding of this fuzzer): the kernel's result depends on the order its points run
    // in, and the reference executor refuses it, as `rtcgc run` does. Rejected input, not a finding.
    ++counts.rejected;
  } catch (const std::exception& e) {
    return report(o, n, c, std::string("exception: ") + e.what()), false;
  }
  Case big = c;
  big.schedule = "(default and space candidates, emitted only)";
  if (std::string why = bigSizesProblem(k, rng, big.sizes); !why.empty()) return report(o, n, big, why), false;
  return true;
}

Options parseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--seed") o.seed = std::stoull(v);
    else if (a == "--cases") o.cases = std::stoi(v);
    else if (a == "--seconds") o.seconds = std::stod(v);
    else if (a == "--schedules") o.schedules = std::stoi(v);
    else if (a == "--out") o.out = v;
    else if (a == "--policy") {
      std::optional<Precision> p = parsePrecision(v);
      if (!p) throw std::invalid_argument("unknown precision '" + v + "'");
      o.policy = p;
    }
    else throw std::runtime_error("unknown option " + a);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parseArgs(argc, argv);
  std::vector<Source> seeds = corpus();
  std::mt19937_64 rng(o.seed);
  auto start = std::chrono::steady_clock::now();
  int cases = 0;
  Counts counts;
  for (; cases < o.cases; ++cases) {
    // The time bound is checked between cases: a case is never cut halfway.
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    if (elapsed.count() >= o.seconds) break;
    // Half the cases from the corpus, half from the grammar.
    Source src = rng() % 2 ? seeds[rng() % seeds.size()] : randomKernel(rng);
    if (!runCase(o, cases, src, rng, counts)) return 1;
  }
  std::printf("Done %d cases (%d rewritten by fp64x or fp32x, %d skipped: not under --policy), %d emulated schedules "
              "(%d on tensor cores; %d of a 2-multiprocessor sm_90's space, %d persistent), %d rejected "
              "(order-dependent indirect stores), seed %llu: no finding\n",
              cases, counts.rewritten, counts.skipped, counts.emulated, counts.mma, counts.sm90, counts.persistent,
              counts.rejected, (unsigned long long)o.seed);
  return 0;
}
