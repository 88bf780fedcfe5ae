#include "schedule/Schedule.h"
#include "schedule/ScanPlan.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <set>
#include <tuple>
#include <type_traits>

#include "ir/Analysis.h"
#include "ir/Walk.h"
#include "schedule/Domain.h"
#include "schedule/Plan.h"
#include "support/Error.h"

namespace rtcg {

// ---------------------------------------------------------------------------------------------
// Placements

const char* placementName(Placement p) {
  switch (p) {
    case Placement::GridX: return "grid.x";
    case Placement::GridY: return "grid.y";
    case Placement::GridZ: return "grid.z";
    case Placement::ThreadX: return "thread.x";
    case Placement::ThreadY: return "thread.y";
    case Placement::ThreadZ: return "thread.z";
    case Placement::Reg: return "reg";
    case Placement::Serial: return "serial";
    case Placement::Unroll: return "unroll";
  }
  RTCG_ASSERT(false, "bad Placement");
}

std::optional<Placement> parsePlacement(std::string_view s) {
  for (Placement p : {Placement::GridX, Placement::GridY, Placement::GridZ, Placement::ThreadX,
                      Placement::ThreadY, Placement::ThreadZ, Placement::Reg, Placement::Serial,
                      Placement::Unroll})
    if (s == placementName(p)) return p;
  return std::nullopt;
}

bool isGridPlacement(Placement p) {
  return p == Placement::GridX || p == Placement::GridY || p == Placement::GridZ;
}
bool isThreadPlacement(Placement p) {
  return p == Placement::ThreadX || p == Placement::ThreadY || p == Placement::ThreadZ;
}
int placementAxis(Placement p) {
  switch (p) {
    case Placement::GridX:
    case Placement::ThreadX: return 0;
    case Placement::GridY:
    case Placement::ThreadY: return 1;
    case Placement::GridZ:
    case Placement::ThreadZ: return 2;
    default: return -1;
  }
}

const IndexSchedule* NestSchedule::find(std::string_view index) const {
  for (const IndexSchedule& s : indices)
    if (s.index == index) return &s;
  return nullptr;
}

bool NestSchedule::isTransposed(std::string_view array) const {
  return std::find(transposed.begin(), transposed.end(), array) != transposed.end();
}

std::string_view stagedArrayName(std::string_view entry) { return entry.substr(0, entry.find('[')); }

std::string_view stagedAccess(std::string_view entry) {
  const size_t open = entry.find('[');
  if (open == std::string_view::npos || entry.size() < open + 2) return {};
  return entry.substr(open + 1, entry.size() - open - 2);
}

// ---------------------------------------------------------------------------------------------
// Tensor-core arithmetic and the precision policy

const char* mmaArithName(MmaArith a) {
  switch (a) {
    case MmaArith::None: return "none";
    case MmaArith::Tf32: return "tf32";
    case MmaArith::Tf32x3: return "tf32x3";
    case MmaArith::F64: return "f64";
    case MmaArith::Bf16: return "bf16";
    case MmaArith::F16: return "f16";
    case MmaArith::S8: return "s8";
  }
  RTCG_ASSERT(false, "bad MmaArith");
}

bool mmaIs16Bit(MmaArith a) { return a == MmaArith::Bf16 || a == MmaArith::F16; }
bool mmaPacked(MmaArith a) { return mmaIs16Bit(a) || a == MmaArith::S8; }

const char* mmaShapeName(MmaArith a) {
  return a == MmaArith::F64 ? "m8n8k4" : a == MmaArith::S8 ? "m16n8k32" : mmaIs16Bit(a) ? "m16n8k16" : "m16n8k8";
}

int64_t mmaFragK(MmaArith a) { return a == MmaArith::F64 ? 4 : a == MmaArith::S8 ? 32 : mmaIs16Bit(a) ? 16 : 8; }

namespace {
// FP64's sm_90 shapes, by name (MmaShape order after Native).
constexpr std::pair<MmaShape, const char*> kF64Sm90Shapes[] = {
    {MmaShape::M16N8K4, "m16n8k4"}, {MmaShape::M16N8K8, "m16n8k8"}, {MmaShape::M16N8K16, "m16n8k16"}};
}  // namespace

const char* mmaShapeName(const MmaSchedule& m) {
  for (const auto& [shape, name] : kF64Sm90Shapes)
    if (m.shape == shape) return name;
  return mmaShapeName(m.arith);
}

MmaDims mmaDims(const MmaSchedule& m) {
  switch (m.shape) {
    case MmaShape::M16N8K4: return {16, 8, 4};
    case MmaShape::M16N8K8: return {16, 8, 8};
    case MmaShape::M16N8K16: return {16, 8, 16};
    case MmaShape::Native: break;
  }
  return {m.arith == MmaArith::F64 ? 8 : 16, 8, mmaFragK(m.arith)};
}

int mmaMinComputeCapability(const MmaSchedule& m) { return m.shape == MmaShape::Native ? 80 : 90; }

int computeCapabilityOf(std::string_view arch) {
  for (std::string_view prefix : {"sm_", "compute_"})
    if (arch.substr(0, prefix.size()) == prefix) {
      int cc = 0;
      size_t i = prefix.size();
      for (; i < arch.size() && std::isdigit((unsigned char)arch[i]) && cc < 10000; ++i) cc = cc * 10 + (arch[i] - '0');
      return i > prefix.size() ? cc : 0;
    }
  return 0;
}

bool mmaWgmmaArith(MmaArith a) {
  return mmaIs16Bit(a) || a == MmaArith::Tf32 || a == MmaArith::Tf32x3 || a == MmaArith::S8;
}

bool wgmmaShapeExists(MmaArith a, int64_t n) {
  if (a == MmaArith::S8) return n == 8 || n == 16 || n == 24 || (n >= 32 && n <= 256 && n % 16 == 0);
  return n >= 8 && n <= 256 && n % 8 == 0;
}

std::string printScanSchedule(const ScanSchedule& s) {
  if (s.kind == ScanSchedule::Kind::Lines)
    return fmt::format("lines lanes {} items {} threads {}", s.lanes, s.items, s.threads);
  return fmt::format("lookback threads {} items {}{}", s.threads, s.items, s.warpLayout ? " layout warp" : "");
}

namespace {

std::string keptAndGroupText(const MmaSchedule& m) {
  return (m.resident == MmaOperand::A ? " resident a" : m.resident == MmaOperand::B ? " resident b" : "") +
         (m.group > 0 ? fmt::format(" group {}", m.group) : std::string());
}

}  // namespace

std::string printMmaSchedule(const MmaSchedule& m) {
  if (m.wgmmaN > 0)
    return fmt::format("{} wgmma m64n{}k{} warpgroups {}x{} k {}{}{}{}{}{}{}{}{}", mmaArithName(m.arith), m.wgmmaN,
                       mmaFragK(m.arith), m.warpsM, m.warpsN, m.k,
                       m.stages > 1 ? fmt::format(" stages {}", m.stages) : "",
                       m.swizzle > 0 ? fmt::format(" swizzle {}", m.swizzle) : "", m.tma ? " tma" : "",
                       m.producer ? " producer" : "", m.persistent ? " persistent" : "",
                       m.pingpong ? " pingpong" : "", keptAndGroupText(m),
                       m.sharedEpilogue ? " epilogue shared" : "");
  // `persistent`, `pingpong` and `resident` parse on any clause (the plan refuses them without a
  // producer), so they print back.
  return fmt::format("{} {} warps {}x{} tile {}x{} k {}{}{}{}{}{}{}{}", mmaArithName(m.arith), mmaShapeName(m), m.warpsM,
                     m.warpsN, m.tileM, m.tileN, m.k, m.stages > 1 ? fmt::format(" stages {}", m.stages) : "",
                     m.persistent ? " persistent" : "", m.pingpong ? " pingpong" : "", keptAndGroupText(m),
                     m.fragments > 1 ? fmt::format(" fragments {}", m.fragments) : "",
                     m.hoistCopies ? " copies hoisted" : "", m.sharedEpilogue ? " epilogue shared" : "");
}

std::string printAccumulateSchedule(const AccumulateSchedule& a) {
  if (!a.shared) return "global";
  std::string out = "shared";
  if (a.slices > 1) out += fmt::format(" slices {}", a.slices);
  if (a.copies > 1) out += fmt::format(" copies {}", a.copies);
  return out;
}

const char* precisionName(Precision p) {
  switch (p) {
    case Precision::Ieee: return "ieee";
    case Precision::Tf32x3: return "tf32x3";
    case Precision::Tf32: return "tf32";
    case Precision::Fp64x: return "fp64x";
    case Precision::Fp32x: return "fp32x";
  }
  RTCG_ASSERT(false, "bad Precision");
}

std::optional<Precision> parsePrecision(std::string_view s) {
  for (Precision p : {Precision::Ieee, Precision::Tf32x3, Precision::Tf32, Precision::Fp64x, Precision::Fp32x})
    if (s == precisionName(p)) return p;
  return std::nullopt;
}

bool precisionAllows(Precision p, MmaArith arith) {
  switch (arith) {
    case MmaArith::None:
    case MmaArith::F64:   // IEEE products and sums
    case MmaArith::Bf16:  // products of 16-bit values are exact in f32, sums in f32
    case MmaArith::F16:
    case MmaArith::S8: return true;  // integer products and sums, as the i32 contraction's
    case MmaArith::Tf32x3: return p == Precision::Tf32x3 || p == Precision::Tf32;
    case MmaArith::Tf32: return p == Precision::Tf32;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// The clause table (Schedule.h). The space generates schedules by families, listed the same way in
// the family table (schedule/space/Families.cpp): a clause the space should offer is a family file
// and a row there.

const std::vector<ClauseRow>& clauseTable() {
  static const std::vector<ClauseRow> rows = [] {
    std::vector<ClauseRow> r;
    ClauseRow shared{"shared", ClauseKind::Arrays};
    shared.arrays = &NestSchedule::shared;
    shared.distance = 1.5;
    r.push_back(shared);
    ClauseRow transposed{"transposed", ClauseKind::ArrayFlag};
    transposed.arrays = &NestSchedule::transposed;
    r.push_back(transposed);
    ClauseRow buffers{"buffers", ClauseKind::Number, nullptr, &NestSchedule::buffers, 1, 1, 4,
                      "a number of buffers (1 to 4)", "buffers must be between 1 and 4"};
    r.push_back(buffers);
    ClauseRow copy{"copy", ClauseKind::Keyword};
    copy.flag = &NestSchedule::asyncCopy;
    copy.yes = "async", copy.no = "registers", copy.family = "copy: async";
    r.push_back(copy);
    ClauseRow loads{"loads", ClauseKind::Keyword};
    loads.flag = &NestSchedule::earlyLoads;
    loads.yes = "early", loads.no = "late", loads.family = "loads: early";
    r.push_back(loads);
    ClauseRow blocks{"blocks_per_sm", ClauseKind::Number, nullptr, &NestSchedule::blocksPerSM, 0, 1, 32,
                     "a number of blocks", "blocks_per_sm must be between 1 and 32"};
    blocks.family = "blocks_per_sm";
    r.push_back(blocks);
    ClauseRow stores{"stores", ClauseKind::Keyword};
    stores.flag = &NestSchedule::streamingStores;
    stores.yes = "streaming", stores.no = "cached", stores.family = "stores: streaming";
    r.push_back(stores);
    ClauseRow longRows{"long_rows", ClauseKind::Number, nullptr, &NestSchedule::longRows, 0, 1, int64_t(1) << 30,
                       "a row length (1 to 1073741824)", "long_rows must be between 1 and 1073741824"};
    longRows.family = "long_rows";
    r.push_back(longRows);
    ClauseRow mma{"mma", ClauseKind::Mma};
    mma.mma = &NestSchedule::mma;
    mma.distance = 4, mma.family = "mma";
    r.push_back(mma);
    ClauseRow fuse{"fuse", ClauseKind::Number, nullptr, &NestSchedule::fuse, 1, 1, 64,
                   "a number of nests (1 to 64)", "fuse must be between 1 and 64"};
    fuse.distance = 2;
    r.push_back(fuse);
    ClauseRow keep{"keep", ClauseKind::Arrays};
    keep.arrays = &NestSchedule::kept;
    keep.accesses = false;
    // Where the model ranks fusion itself low (layernorm 2048 x 16384), sampling still measures one.
    keep.family = "keep";
    r.push_back(keep);
    ClauseRow accumulate{"accumulate", ClauseKind::Accumulate};
    accumulate.accumulate = &NestSchedule::accumulate;
    accumulate.family = "accumulate: shared";
    r.push_back(accumulate);
    ClauseRow aggregate{"aggregate", ClauseKind::Keyword};
    aggregate.flag = &NestSchedule::warpAggregation;
    aggregate.yes = "warp", aggregate.no = "none", aggregate.family = "aggregate: warp";
    r.push_back(aggregate);
    ClauseRow scan{"scan", ClauseKind::Scan};
    scan.scan = &NestSchedule::scan;
    scan.distance = 4, scan.family = "scan";
    r.push_back(scan);
    return r;
  }();
  return rows;
}

bool clauseAtDefault(const ClauseRow& row, const NestSchedule& s) {
  switch (row.kind) {
    case ClauseKind::Arrays:
    case ClauseKind::ArrayFlag: return (s.*row.arrays).empty();
    case ClauseKind::Number: return s.*row.number == row.defaultNumber;
    case ClauseKind::Keyword: return !(s.*row.flag);
    case ClauseKind::Mma: return !(s.*row.mma).any();
    case ClauseKind::Scan: return !(s.*row.scan).any();
    case ClauseKind::Accumulate: return !(s.*row.accumulate).any();
  }
  return true;
}

std::string clauseValue(const ClauseRow& row, const NestSchedule& s) {
  switch (row.kind) {
    case ClauseKind::Arrays:
    case ClauseKind::ArrayFlag:
      return (s.*row.arrays).empty() ? "none" : fmt::format("{}", fmt::join(s.*row.arrays, ", "));
    case ClauseKind::Number:
      return row.defaultNumber == 0 && s.*row.number == 0 ? "none" : std::to_string(s.*row.number);
    case ClauseKind::Keyword: return s.*row.flag ? row.yes : row.no;
    case ClauseKind::Mma: return (s.*row.mma).any() ? printMmaSchedule(s.*row.mma) : "none";
    case ClauseKind::Scan: return (s.*row.scan).any() ? printScanSchedule(s.*row.scan) : "none";
    case ClauseKind::Accumulate: return printAccumulateSchedule(s.*row.accumulate);
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// Printing

// (Appended piece by piece: the space prints every schedule it generates.)
static void appendIndexSchedule(const IndexSchedule& s, std::string& out) {
  out += s.index;
  out += ':';
  for (size_t p = 0; p < s.parts.size(); ++p) {
    out += p == 0 ? " " : ", ";
    out += placementName(s.parts[p].place);
    if (s.parts[p].factor) {
      out += ' ';
      out += std::to_string(*s.parts[p].factor);
    }
  }
}

std::string printIndexSchedule(const IndexSchedule& s) {
  std::string out;
  appendIndexSchedule(s, out);
  return out;
}

std::string printNestSchedule(const NestSchedule& s) {
  std::string out;  // the clauses, separated by "; "
  auto clause = [&]() -> std::string& { return out.empty() ? out : out += "; "; };
  for (const IndexSchedule& i : s.indices) appendIndexSchedule(i, clause());
  for (const ClauseRow& row : clauseTable()) {
    if (clauseAtDefault(row, s)) continue;
    switch (row.kind) {
      case ClauseKind::Arrays: {
        std::string& c = clause();
        c += row.name;
        c += ": ";
        bool first = true;
        for (const std::string& a : s.*row.arrays) {  // with their `^T` marks (the ArrayFlag row)
          if (!first) c += ", ";
          first = false;
          c += a;
          if (row.accesses && s.isTransposed(a)) c += "^T";
        }
        break;
      }
      case ClauseKind::ArrayFlag: break;
      case ClauseKind::Number:
      case ClauseKind::Keyword:
      case ClauseKind::Mma:
      case ClauseKind::Scan:
      case ClauseKind::Accumulate: clause() += fmt::format("{}: {}", row.name, clauseValue(row, s)); break;
    }
  }
  if (out.empty()) return "-";
  return out;
}

std::string printSchedule(const Schedule& s) {
  std::vector<std::string> nests;
  for (const NestSchedule& n : s.nests) nests.push_back(printNestSchedule(n));
  return fmt::format("{}", fmt::join(nests, " | "));
}

// ---------------------------------------------------------------------------------------------
// Parsing: a small recursive-descent parser over the characters, with 1-based columns.

namespace {

struct ParseFailure {
  std::string message;
  size_t pos;
};

class ScheduleParser {
 public:
  explicit ScheduleParser(std::string_view text) : t_(text) {}

  Schedule parse() {
    Schedule s;
    s.nests.push_back(nest());
    while (accept('|')) s.nests.push_back(nest());
    skipSpace();
    if (pos_ < t_.size()) fail(fmt::format("unexpected '{}': expected ';' or '|' between clauses", t_[pos_]));
    return s;
  }

 private:
  std::string_view t_;
  size_t pos_ = 0;

  [[noreturn]] void fail(std::string message) { throw ParseFailure{std::move(message), pos_}; }
  [[noreturn]] void failAt(size_t pos, std::string message) { throw ParseFailure{std::move(message), pos}; }

  void skipSpace() {
    while (pos_ < t_.size() && std::isspace((unsigned char)t_[pos_])) ++pos_;
  }
  bool atEnd() { skipSpace(); return pos_ >= t_.size(); }
  bool peek(char c) { skipSpace(); return pos_ < t_.size() && t_[pos_] == c; }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  // What the parser expected, for a failure's message: a text, or a function that makes it, called
  // only when the parse fails (the space parses every candidate's text back: formatting each
  // clause's message up front was half of the parse).
  template <class What>
  static std::string describe(const What& what) {
    if constexpr (std::is_invocable_v<const What&>) return what();
    else return std::string(what);
  }

  template <class What>
  void expect(char c, const What& what) {
    if (accept(c)) return;
    if (atEnd()) fail(fmt::format("expected '{}' {}, found the end of the text", c, describe(what)));
    fail(fmt::format("expected '{}' {}, found '{}'", c, describe(what), t_[pos_]));
  }

  // A name: letters, digits, '_' and '.' (for grid.x), starting with a letter or '_'.
  template <class What>
  std::string word(const What& what) {
    skipSpace();
    size_t start = pos_;
    if (pos_ < t_.size() && (std::isalpha((unsigned char)t_[pos_]) || t_[pos_] == '_')) {
      while (pos_ < t_.size() && (std::isalnum((unsigned char)t_[pos_]) || t_[pos_] == '_' || t_[pos_] == '.'))
        ++pos_;
    }
    if (pos_ == start) {
      if (pos_ >= t_.size()) fail(fmt::format("expected {}, found the end of the text", describe(what)));
      fail(fmt::format("expected {}, found '{}'", describe(what), t_[pos_]));
    }
    return std::string(t_.substr(start, pos_ - start));
  }

  // A clause that takes one of two keywords (`copy: async|registers`, `loads: early|late`), after
  // its name and ':'; true for `yes`. `saw` refuses the clause a second time in the nest.
  bool keywordClause(size_t clauseStart, bool& saw, const char* name, const char* yes, const char* no) {
    if (saw) failAt(clauseStart, fmt::format("'{}:' is given twice for this nest", name));
    saw = true;
    size_t at = (skipSpace(), pos_);
    std::string value = word([&] { return fmt::format("'{}' or '{}' after '{}:'", yes, no, name); });
    if (value != yes && value != no)
      failAt(at, fmt::format("unknown {} '{}' (expected '{}' or '{}')", name, value, yes, no));
    return value == yes;
  }

  bool atNumber() {
    skipSpace();
    return pos_ < t_.size() && (std::isdigit((unsigned char)t_[pos_]) || t_[pos_] == '-' || t_[pos_] == '+');
  }

  int64_t number() {
    skipSpace();
    size_t start = pos_;
    bool negative = false;
    if (t_[pos_] == '-' || t_[pos_] == '+') negative = t_[pos_++] == '-';
    if (pos_ >= t_.size() || !std::isdigit((unsigned char)t_[pos_])) fail("expected digits of a factor");
    int64_t v = 0;
    while (pos_ < t_.size() && std::isdigit((unsigned char)t_[pos_])) {
      if (v > 1'000'000'000'000LL) failAt(start, "factor is too large");
      v = v * 10 + (t_[pos_++] - '0');
    }
    if (pos_ < t_.size() && (std::isalpha((unsigned char)t_[pos_]) || t_[pos_] == '_' || t_[pos_] == '.'))
      fail(fmt::format("unexpected '{}' after a factor", t_[pos_]));
    return negative ? -v : v;
  }

  // "an index name, 'shared', 'buffers', 'copy', 'loads' or 'blocks_per_sm'": the clause rows
  // that have a name of their own.
  static std::string clauseNames() {
    std::vector<std::string> names;
    for (const ClauseRow& row : clauseTable())
      if (row.kind != ClauseKind::ArrayFlag) names.push_back(fmt::format("'{}'", row.name));
    std::string last = names.back();
    names.pop_back();
    return fmt::format("an index name, {} or {}", fmt::join(names, ", "), last);
  }

  static const ClauseRow* clauseRow(const std::string& name) {
    for (const ClauseRow& row : clauseTable())
      if (row.kind != ClauseKind::ArrayFlag && name == row.name) return &row;
    return nullptr;
  }

  // The value of clause `row` after its ':' (`given`: the clause was seen before in this nest).
  void clause(const ClauseRow& row, NestSchedule& n, size_t clauseStart, bool& given) {
    switch (row.kind) {
      case ClauseKind::Number: {
        given = true;
        size_t at = (skipSpace(), pos_);
        if (!atNumber()) fail(fmt::format("expected {} after '{}:'", row.expected, row.name));
        n.*row.number = number();
        if (n.*row.number < row.min || n.*row.number > row.max) failAt(at, row.rangeError);
        return;
      }
      case ClauseKind::Keyword: n.*row.flag = keywordClause(clauseStart, given, row.name, row.yes, row.no); return;
      case ClauseKind::Arrays:
        given = true;
        do {
          // An array twice (`shared: a^T, a`) would print as one form for both, so the text would
          // not parse back to the schedule (found by tests/fuzz/schedule_fuzz): refused.
          size_t at = (skipSpace(), pos_);
          std::string name = word("an array name");
          // `keep:` holds the values of one access, which the plan finds: names only.
          if (!row.accesses && (peek('[') || peek('^')))
            fail(fmt::format("'{}:' takes array names only ('{}: {}'), not an access or a mark", row.name, row.name,
                             name));
          if (peek('[')) name += accessSelector();
          if (std::find((n.*row.arrays).begin(), (n.*row.arrays).end(), name) != (n.*row.arrays).end())
            failAt(at, fmt::format("'{}' is listed twice in '{}:'", name, row.name));
          (n.*row.arrays).push_back(name);
          // `a^T`: the tile is stored with its dimensions reversed.
          if (accept('^')) {
            size_t at = pos_;
            if (pos_ >= t_.size() || t_[pos_] != 'T') failAt(at, "expected 'T' after '^' (a transposed tile: 'a^T')");
            ++pos_;
            n.transposed.push_back((n.*row.arrays).back());
          }
        } while (accept(','));
        return;
      case ClauseKind::ArrayFlag: return;
      case ClauseKind::Mma: given = true, n.*row.mma = mmaClause(); return;
      case ClauseKind::Scan: given = true, n.*row.scan = scanClause(); return;
      case ClauseKind::Accumulate: n.*row.accumulate = accumulateClause(clauseStart, given); return;
    }
  }

  // `shared [slices S] [copies R]` or `global` after `accumulate:`. The numbers are range-checked
  // here so that every parsed clause prints back (a count of 1 is the plain form, so 2 is the least);
  // whether they fit the nest is the plan's question (AccumulationPlan).
  AccumulateSchedule accumulateClause(size_t clauseStart, bool& saw) {
    if (saw) failAt(clauseStart, "'accumulate:' is given twice for this nest");
    saw = true;
    AccumulateSchedule a;
    size_t at = (skipSpace(), pos_);
    const std::string value = word("'shared' or 'global' after 'accumulate:'");
    if (value != "shared" && value != "global")
      failAt(at, fmt::format("unknown accumulate '{}' (expected 'shared' or 'global')", value));
    if (value == "global") return a;
    a.shared = true;
    auto count = [&](const char* kw, int64_t max) {
      size_t vat = (skipSpace(), pos_);
      if (!atNumber()) fail(fmt::format("expected a number after '{}'", kw));
      const int64_t v = number();
      if (v < 2 || v > max) failAt(vat, fmt::format("accumulate {} must be between 2 and {}", kw, max));
      return v;
    };
    if (atKeyword("slices")) a.slices = count("slices", kMaxAccumulateSlices);
    if (atKeyword("copies")) a.copies = count("copies", kMaxAccumulateCopies);
    size_t late = (skipSpace(), pos_);
    if (atKeyword("slices") || atKeyword("copies"))
      failAt(late, "'accumulate: shared' takes 'slices S' then 'copies R', each at most once");
    return a;
  }

  // Consumes `kw` if the next word is exactly it (not a prefix of a longer word).
  bool atKeyword(const char* kw) {
    skipSpace();
    const size_t n = std::strlen(kw);
    if (t_.substr(pos_, n) != kw) return false;
    if (pos_ + n < t_.size() && (std::isalnum((unsigned char)t_[pos_ + n]) || t_[pos_ + n] == '_')) return false;
    pos_ += n;
    return true;
  }

  // `[i, k]` after an array name in `shared:`: one access of the array, returned as "[i,k]" (the
  // brackets' text without spaces, so that it prints back as parsed). Brackets nest (`[idx[i], k]`
  // parses; the plan refuses what no access of the nest matches).
  std::string accessSelector() {
    const size_t open = pos_;
    std::string text = "[";
    int depth = 1;
    for (++pos_; pos_ < t_.size() && depth > 0; ++pos_) {
      const char c = t_[pos_];
      if (c == '[') ++depth;
      if (c == ']') --depth;
      if (c == ';' || c == '|') break;
      if (!std::isspace((unsigned char)c)) text += c;
    }
    if (depth > 0) failAt(open, "unclosed '[' of an access in 'shared:' (e.g. 'a[i,k]')");
    if (text == "[]") failAt(open, "an access in 'shared:' needs its index expressions (e.g. 'a[i,k]')");
    return text;
  }

  // `lookback threads 256 items 8 [layout warp]` or `lines lanes 32 items 4 threads 256` after `scan:`. Numbers
  // are range-checked here so that every parsed clause prints back; whether the nest is a scan is
  // the plan's question (ScanPlan.h).
  ScanSchedule scanClause() {
    ScanSchedule s;
    size_t at = (skipSpace(), pos_);
    const std::string kind = word("'lookback' or 'lines' after 'scan:'");
    if (kind == "lookback") s.kind = ScanSchedule::Kind::Lookback;
    else if (kind == "lines") s.kind = ScanSchedule::Kind::Lines;
    else failAt(at, fmt::format("unknown scan '{}' (expected 'lookback' or 'lines')", kind));
    auto value = [&](const char* kw, const char* after, int64_t lo, int64_t hi, const char* rule) {
      keyword(kw, after);
      size_t vat = (skipSpace(), pos_);
      if (!atNumber()) fail(fmt::format("expected a number after '{}'", kw));
      const int64_t v = number();
      if (v < lo || v > hi || (std::string(rule).find("power") != std::string::npos && (v & (v - 1)) != 0) ||
          (std::string(rule).find("multiple") != std::string::npos && v % 32 != 0))
        failAt(vat, fmt::format("scan {} must be {}", kw, rule));
      return v;
    };
    const char* threadsRule = "a multiple of 32 from 32 to 1024";
    if (s.kind == ScanSchedule::Kind::Lookback) {
      s.threads = value("threads", "'lookback'", 32, 1024, threadsRule);
      s.items = value("items", "the threads", 1, 32, "between 1 and 32");
      size_t lat = 0;
      if (optionalWord("layout", lat)) {
        lat = (skipSpace(), pos_);
        const std::string layout = word("'warp' or 'block' after 'layout'");
        if (layout == "warp") s.warpLayout = true;
        else if (layout != "block") failAt(lat, fmt::format("unknown scan layout '{}' (expected 'warp' or 'block')", layout));
      }
    } else {
      s.lanes = value("lanes", "'lines'", 1, 32, "a power of two from 1 to 32");
      s.items = value("items", "the lanes", 1, 32, "between 1 and 32");
      s.threads = value("threads", "the items", 32, 1024, threadsRule);
    }
    return s;
  }

  // `WxH`: two positive numbers joined by 'x' (`warps 2x2`).
  std::pair<int64_t, int64_t> dims(const char* what) {
    skipSpace();
    size_t start = pos_;
    auto digits = [&] {
      size_t from = pos_;
      int64_t v = 0;
      while (pos_ < t_.size() && std::isdigit((unsigned char)t_[pos_]) && v < 1'000'000) v = v * 10 + (t_[pos_++] - '0');
      if (pos_ == from) failAt(start, fmt::format("expected {} as 'AxB' (e.g. '2x2')", what));
      return v;
    };
    int64_t a = digits();
    if (pos_ >= t_.size() || t_[pos_] != 'x') failAt(start, fmt::format("expected {} as 'AxB' (e.g. '2x2')", what));
    ++pos_;
    int64_t b = digits();
    if (pos_ < t_.size() && (std::isalnum((unsigned char)t_[pos_]) || t_[pos_] == '_' || t_[pos_] == '.'))
      fail(fmt::format("unexpected '{}' after {}", t_[pos_], what));
    return {a, b};
  }

  // The next word when it is `w` (not the start of a longer word): consumed, its column in `at`;
  // else nothing is consumed.
  bool optionalWord(std::string_view w, size_t& at) {
    const size_t save = pos_;
    skipSpace();
    const size_t end = pos_ + w.size();
    if (t_.compare(pos_, w.size(), w) == 0 &&
        (end >= t_.size() || !(std::isalnum((unsigned char)t_[end]) || t_[end] == '_'))) {
      at = pos_;
      pos_ = end;
      return true;
    }
    pos_ = save;
    return false;
  }

  void keyword(const char* kw, const char* after) {
    size_t at = (skipSpace(), pos_);
    std::string w = word([&] { return fmt::format("'{}' after {}", kw, after); });
    if (w != kw) failAt(at, fmt::format("expected '{}' after {}, found '{}'", kw, after, w));
  }

  // `wgmma m64n128k16 warpgroups 2x1` after the arithmetic (up to 'k'): the instruction's shape
  // (m64, n as wgmmaShapeExists says, k16 for 16-bit, k8 for TF32 and k32 for s8) and the
  // warpgroups of a block (at most 8: 1024 threads).
  void wgmmaShape(MmaSchedule& m, const std::string& arith, size_t arithAt) {
    if (!mmaWgmmaArith(m.arith))
      failAt(arithAt, fmt::format("wgmma multiplies bf16, f16, tf32, tf32x3 or s8 operands, not '{}'", arith));
    size_t at = (skipSpace(), pos_);
    std::string shape = word("the wgmma shape (e.g. m64n128k16)");
    const std::string k = fmt::format("k{}", mmaFragK(m.arith));
    int64_t n = 0;
    size_t digits = 0;
    if (shape.rfind("m64n", 0) == 0)
      while (4 + digits < shape.size() && std::isdigit((unsigned char)shape[4 + digits]) && digits < 4)
        n = n * 10 + (shape[4 + digits++] - '0');
    if (digits == 0 || shape.substr(4 + digits) != k)
      failAt(at, fmt::format("expected a wgmma shape 'm64nN{}' for '{}', found '{}'", k, arith, shape));
    if (!wgmmaShapeExists(m.arith, n))
      failAt(at, m.arith == MmaArith::S8
                     ? fmt::format("s8 wgmma N must be 8, 16, 24 or a multiple of 16 from 32 to 256, not {}", n)
                     : fmt::format("wgmma N must be a multiple of 8 from 8 to 256, not {}", n));
    m.wgmmaN = n;
    keyword("warpgroups", "the wgmma shape");
    at = (skipSpace(), pos_);
    std::tie(m.warpsM, m.warpsN) = dims("the warpgroups of a block");
    if (m.warpsM < 1 || m.warpsN < 1 || m.warpsM * m.warpsN > 8)
      failAt(at, "wgmma warpgroups must be at least 1x1 and at most 8 in all (1024 threads)");
    keyword("k", "the warpgroups");
  }

  // `tf32x3 m16n8k8 warps 2x2 tile 4x2 k 16` after `mma:`. Numbers are range-checked here so that
  // every parsed clause prints back; whether it fits the nest is the plan's question (Mma.h).
  MmaSchedule mmaClause() {
    MmaSchedule m;
    size_t at = (skipSpace(), pos_);
    std::string arith = word("'tf32', 'tf32x3', 'f64', 'bf16', 'f16' or 's8' after 'mma:'");
    for (MmaArith a : {MmaArith::Tf32, MmaArith::Tf32x3, MmaArith::F64, MmaArith::Bf16, MmaArith::F16, MmaArith::S8})
      if (arith == mmaArithName(a)) m.arith = a;
    if (!m.any())
      failAt(at, fmt::format("unknown mma arithmetic '{}' (expected 'tf32', 'tf32x3', 'f64', 'bf16', 'f16' or 's8')",
                             arith));
    const size_t arithAt = at;
    at = (skipSpace(), pos_);
    std::string shape = word("the mma shape (m16n8k8, m8n8k4, m16n8k16, m16n8k32 or 'wgmma')");
    if (shape == "wgmma") {
      wgmmaShape(m, arith, arithAt);
    } else {
      // f64 also takes the sm_90 shapes (whether the target has them is the plan's question).
      if (m.arith == MmaArith::F64)
        for (const auto& [s, name] : kF64Sm90Shapes)
          if (shape == name) m.shape = s;
      if (m.shape == MmaShape::Native && shape != mmaShapeName(m.arith))
        failAt(at, fmt::format("mma shape '{}' does not fit '{}' (expected '{}'{})", shape, arith, mmaShapeName(m.arith),
                               m.arith == MmaArith::F64 ? ", or on sm_90 'm16n8k4', 'm16n8k8' or 'm16n8k16'"
                                                        : " or 'wgmma'"));
      keyword("warps", "the mma shape");
      at = (skipSpace(), pos_);
      std::tie(m.warpsM, m.warpsN) = dims("the warps of a block");
      if (m.warpsM < 1 || m.warpsN < 1 || m.warpsM * m.warpsN > 32)
        failAt(at, "mma warps must be at least 1x1 and at most 32 in all");
      keyword("tile", "the warps");
      at = (skipSpace(), pos_);
      std::tie(m.tileM, m.tileN) = dims("the fragments of a warp");
      if (m.tileM < 1 || m.tileN < 1 || m.tileM * m.tileN > 32)
        failAt(at, "an mma tile must be at least 1x1 and at most 32 fragments in all");
      keyword("k", "the tile");
    }
    at = (skipSpace(), pos_);
    if (!atNumber()) fail("expected the reduction values per step after 'k'");
    m.k = number();
    const int64_t fragK = mmaDims(m).k;
    if (m.k < fragK || m.k > 128 || m.k % fragK != 0)
      failAt(at, fmt::format("mma k must be a multiple of {} between {} and 128", fragK, fragK));
    // `stages N`, optional: the next word, when it is that word.
    size_t wordAt = 0;
    if (optionalWord("stages", wordAt)) {
      at = (skipSpace(), pos_);
      if (!atNumber()) fail("expected the number of stages (2 to 4) after 'stages'");
      m.stages = number();
      if (m.stages < 2 || m.stages > 4) failAt(at, "mma stages must be between 2 and 4");
    }
    // `swizzle 128`, optional, wgmma only (the layouts wgmma's descriptors describe).
    if (optionalWord("swizzle", wordAt)) {
      if (m.wgmmaN == 0) failAt(wordAt, "'swizzle' lays out wgmma's tiles: it needs 'wgmma' (mma.sync pads its rows)");
      at = (skipSpace(), pos_);
      if (!atNumber()) fail("expected the swizzle's bytes (128) after 'swizzle'");
      m.swizzle = number();
      if (m.swizzle != 128) failAt(at, fmt::format("rtcg swizzles wgmma's tiles by 128 bytes only, not {}", m.swizzle));
    }
    // `tma`, optional: TMA writes the swizzled layout (a box of 128-byte rows), so it needs it.
    if (optionalWord("tma", wordAt)) {
      if (m.swizzle != 128)
        failAt(wordAt, "'tma' fills wgmma's swizzled tiles: it needs 'wgmma' and 'swizzle 128' before it");
      m.tma = true;
    }
    // `producer`, optional: a warpgroup of its own issues the TMA boxes, so it needs them.
    if (optionalWord("producer", wordAt)) {
      if (!m.tma) failAt(wordAt, "'producer' is a warpgroup that issues the TMA boxes: it needs 'tma' before it");
      m.producer = true;
    }
    // `persistent`, optional: a loop over output tiles on the producer's ring (the plan says where
    // it applies).
    if (optionalWord("persistent", wordAt)) m.persistent = true;
    // `pingpong`, optional: the consumer warpgroups own whole tiles in turn (the plan says where).
    if (optionalWord("pingpong", wordAt)) m.pingpong = true;
    // `resident a|b`, optional: that operand's whole reduction kept in shared memory per block (the
    // plan says where).
    if (optionalWord("resident", wordAt)) {
      at = (skipSpace(), pos_);
      std::string which = word("'a' or 'b' after 'resident'");
      if (which != "a" && which != "b")
        failAt(at, fmt::format("'resident' names the operand kept, 'a' or 'b' (the product's first or second "
                               "factor), not '{}'", which));
      m.resident = which == "a" ? MmaOperand::A : MmaOperand::B;
    }
    // `group G`, optional: the output tiles in groups of G M tiles (the plan says where).
    if (optionalWord("group", wordAt)) {
      at = (skipSpace(), pos_);
      if (!atNumber()) fail("expected the M tiles of a group (2 or more) after 'group'");
      m.group = number();
      if (m.group < 2 || m.group > 1024) failAt(at, "an mma group must be between 2 and 1024 M tiles");
    }
    // `fragments 2`, optional.
    if (optionalWord("fragments", wordAt)) {
      if (m.wgmmaN > 0)
        failAt(wordAt, "'fragments' double-buffers mma.sync's fragment registers; wgmma reads its operands from shared memory");
      at = (skipSpace(), pos_);
      if (!atNumber()) fail("expected the fragment register sets (2) after 'fragments'");
      m.fragments = number();
      if (m.fragments != 2) failAt(at, "mma fragments must be 2 (double-buffered fragment registers; without the word: 1)");
    }
    // `copies hoisted`, optional: the ring's copies prepared once per block (the plan says where).
    if (optionalWord("copies", wordAt)) {
      if (m.wgmmaN > 0) failAt(wordAt, "'copies hoisted' prepares mma.sync's cp.async ring; wgmma's copies are its own");
      at = (skipSpace(), pos_);
      std::string how = word("'hoisted' after 'copies'");
      if (how != "hoisted") failAt(at, fmt::format("expected 'hoisted' after 'copies', found '{}'", how));
      m.hoistCopies = true;
    }
    // `epilogue shared`, optional.
    if (optionalWord("epilogue", wordAt)) {
      at = (skipSpace(), pos_);
      std::string how = word("'shared' after 'epilogue'");
      if (how != "shared") failAt(at, fmt::format("expected 'shared' after 'epilogue', found '{}'", how));
      m.sharedEpilogue = true;
    }
    return m;
  }

  NestSchedule nest() {
    NestSchedule n;
    // `-` alone is a nest with nothing to schedule.
    if (peek('-')) {
      ++pos_;
      if (!atEnd() && !peek('|')) fail("expected '|' or the end of the text after '-'");
      return n;
    }
    std::deque<bool> saw(clauseTable().size(), false);  // (references to its elements: not a vector<bool>)
    do {
      size_t clauseStart = (skipSpace(), pos_);
      std::string name = word(clauseNames);
      expect(':', [&] { return fmt::format("after '{}'", name); });
      const ClauseRow* row = clauseRow(name);
      if (row) {
        bool& given = saw[row - clauseTable().data()];
        if (given && row->kind != ClauseKind::Keyword)
          failAt(clauseStart, fmt::format("'{}:' is given twice for this nest", name));
        clause(*row, n, clauseStart, given);
      } else {
        IndexSchedule is{name, {}};
        do {
          size_t partStart = (skipSpace(), pos_);
          std::string place = word("a placement (grid.x|y|z, thread.x|y|z, reg, serial, unroll)");
          auto p = parsePlacement(place);
          if (!p)
            failAt(partStart, fmt::format("unknown placement '{}' (expected grid.x|y|z, thread.x|y|z, "
                                          "reg, serial or unroll)", place));
          SchedulePart part{*p, std::nullopt};
          if (atNumber()) {
            if (is.parts.empty())
              fail(fmt::format("the first part of '{}' takes no factor: its extent is what the "
                               "other parts leave", name));
            part.factor = number();
          } else if (!is.parts.empty()) {
            fail(fmt::format("part '{}' of '{}' needs a factor (e.g. '{} 4')", place, name, place));
          }
          is.parts.push_back(part);
        } while (accept(','));
        n.indices.push_back(std::move(is));
      }
    } while (accept(';'));
    return n;
  }
};

}  // namespace

ScheduleParseResult parseSchedule(std::string_view text) {
  ScheduleParseResult r;
  try {
    r.schedule = ScheduleParser(text).parse();
  } catch (const ParseFailure& f) {
    r.error = f.message;
    r.column = (int)f.pos + 1;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Validation: the reasons why a nest has no plan (schedule/Plan.h).

ScheduleLimits deviceScheduleLimits(int64_t sharedPerBlockOptin, int64_t maxThreadsPerBlock, int64_t multiprocessors,
                                    int64_t sharedPerMultiprocessor) {
  ScheduleLimits limits;
  limits.maxSharedBytes = std::max(limits.maxSharedBytes, sharedPerBlockOptin);
  limits.maxThreadsPerBlock = maxThreadsPerBlock;
  limits.multiprocessors = multiprocessors;
  limits.sharedPerMultiprocessor = sharedPerMultiprocessor;
  return limits;
}

std::vector<std::string> validateSchedule(const Kernel& k, const Schedule& s, const ScheduleLimits& limits) {
  return planSchedule(k, s, limits).reasons;
}

// ---------------------------------------------------------------------------------------------
// Default schedule

namespace {

// A nest of few output points (fewer than 32768: under one block of 256 threads per multiprocessor
// of a large GPU, where a thread per point leaves most of it idle) summing over one long index
// (256 values or more, constant bounds): a block per point where its loads read the index
// contiguously, the index split over 256 threads and reduced across them (`i: grid.x; k: serial,
// thread.x 256`; without an output index over 128 blocks too: `k: serial, grid.x 128, thread.x
// 256`); where they read it with a stride but the innermost output index contiguously (b[k, j]
// summed over k), 32 points a block along that index and the sum over 8 threads each, 8 of each
// thread's rows in flight (`j: grid.x, thread.x 32; k: serial, unroll 8, thread.y 8`: one row at a
// time left a thread's loads waiting one after another, 3x slower on an H200; docs/bench.md,
// session 36). Below 128 points a block per point leaves most of the GPU
// idle: the sum is split across about 256 blocks in all (`i: grid.y; k: serial, grid.x 64, thread.x
// 256` for 4 rows). A thread per point walking rows of a[i, k] ran 20x slower
// than a block per row on an H200 (the Ozaki scheme's scale nests, n = 4096; docs/bench.md,
// session 33). nullopt where the rule does not apply or the plan refuses the schedule.
std::optional<NestSchedule> fewPointsSchedule(const Kernel& k, int nest, const std::vector<NestIndex>& indices) {
  std::vector<const NestIndex*> par, red;
  for (const NestIndex& ni : indices) (ni.parallel ? par : red).push_back(&ni);
  if (red.size() != 1 || par.size() > 3 || !red[0]->constantBounds || red[0]->dataDependent ||
      red[0]->hull.extent() < 256)
    return std::nullopt;
  int64_t points = 1;
  for (const NestIndex* ni : par) points *= std::max<int64_t>(1, ni->hull.extent());
  if (points >= 32768) return std::nullopt;
  // Whether every access that moves with the sum's index has unit stride along `along`'s loops
  // (or none: x[k] in y[j] = sum(k, a[k, j] * x[k]) is one value for a warp's points).
  const std::vector<Access> accesses = collectAccesses(k, nest);
  auto unitAlong = [&](const NestIndex& along) {
    for (const Access& a : accesses)
      for (const Loop* loop : red[0]->loops) {
        std::optional<int64_t> moves = strideAlong(k, a, loop->id);
        if (!moves || (*moves != 0 && a.isWrite)) return false;
        if (*moves == 0) continue;
        for (const Loop* l : along.loops)
          if (std::optional<int64_t> st = strideAlong(k, a, l->id); st != 1 && st != 0) return false;
      }
    return true;
  };
  const bool blockPerPoint = unitAlong(*red[0]);
  if (!blockPerPoint && (par.empty() || par.back()->hull.extent() < 32 || !unitAlong(*par.back()))) return std::nullopt;
  static const Placement grids[3] = {Placement::GridX, Placement::GridY, Placement::GridZ};
  // A block per point leaves most multiprocessors idle below a hundred points or so: a long sum is
  // then split across blocks too (grid.x; the points on the next grid axes), about 256 blocks in
  // all, each with 4 x 256 values or more (no output index: 128 blocks).
  const int64_t length = red[0]->hull.extent();
  int64_t split = 1;
  if (blockPerPoint && par.empty() && length >= 4 * 128 * 256) split = 128;
  if (blockPerPoint && !par.empty() && par.size() < 3 && points < 128)
    split = std::min((256 + points - 1) / points, length / (4 * 256));
  const size_t shift = split > 1 && !par.empty() ? 1 : 0;
  NestSchedule ns;
  for (size_t p = 0; p < par.size(); ++p) {
    IndexSchedule is{par[p]->name, {{grids[par.size() - 1 - p + shift], std::nullopt}}};
    if (!blockPerPoint && p + 1 == par.size()) is.parts.push_back({Placement::ThreadX, 32});
    ns.indices.push_back(std::move(is));
  }
  IndexSchedule sum{red[0]->name, {{Placement::Serial, std::nullopt}}};
  if (!blockPerPoint) {
    sum.parts.push_back({Placement::Unroll, 8});
    sum.parts.push_back({Placement::ThreadY, 8});
  } else {
    if (split > 1) sum.parts.push_back({Placement::GridX, split});
    sum.parts.push_back({Placement::ThreadX, 256});
  }
  ns.indices.push_back(std::move(sum));
  if (!planNest(k, nest, ns).ok()) return std::nullopt;
  return ns;
}

// The INT8 products of a rewriting policy (Kernel::policy: the Ozaki scheme, schedule/PolicyRewrite.h)
// on tensor cores, which the policy exists for: their thread-per-point default ran for minutes
// (docs/bench.md, session 35). The first form the target plans:
// wgmma with TMA in 192 KiB of shared memory (sm_90; K a multiple of 16), else mma.sync in 18 KiB
// (sm_80); wgmma is several times faster where it plans (docs/bench.md, session 36). Not wgmma by
// cp.async: its 512 threads spill where K is not a multiple of 16, and the tuner skips a spilling
// default. nullopt for every other nest (the schedules plan only for a contraction of i8
// operands) and where none plans.
std::optional<NestSchedule> policyProductsSchedule(const Kernel& k, int nest, const ScheduleLimits& limits) {
  if (k.policy.empty()) return std::nullopt;
  for (const char* text : {"mma: s8 wgmma m64n128k32 warpgroups 2x2 k 128 stages 4 swizzle 128 tma",
                           "mma: s8 m16n8k32 warps 2x2 tile 2x2 k 64 stages 3"}) {
    std::optional<Schedule> s = parseSchedule(text).schedule;
    if (s && planNest(k, nest, s->nests[0], limits).ok()) return s->nests[0];
  }
  return std::nullopt;
}

}  // namespace

Schedule defaultSchedule(const Kernel& k) { return defaultSchedule(k, ScheduleLimits{}); }

Schedule defaultSchedule(const Kernel& k, const ScheduleLimits& limits) {
  Schedule s;
  for (size_t n = 0; n < k.nests.size(); ++n) {
    if (auto scan = defaultScanSchedule(k, int(n))) {  // a scan: one pass (schedule/ScanPlan.h)
      s.nests.push_back(std::move(*scan));
      continue;
    }
    NestSchedule ns;
    auto indices = nestIndices(k, (int)n);
    std::vector<NestIndex> list = indices ? *indices : std::vector<NestIndex>{};
    std::vector<const NestIndex*> par;
    for (const NestIndex& ni : list)
      if (ni.parallel) par.push_back(&ni);
    // Parallel indices keep their order; the innermost gets thread.x, the next ones grid axes.
    static const Placement grids[3] = {Placement::GridX, Placement::GridY, Placement::GridZ};
    for (size_t p = 0; p < par.size(); ++p) {
      size_t fromInner = par.size() - 1 - p;
      int64_t extent = std::max<int64_t>(1, par[p]->hull.extent());
      IndexSchedule is{par[p]->name, {}};
      if (fromInner == 0) {
        int64_t tx = std::min<int64_t>(256, (extent + 31) / 32 * 32);
        is.parts = {{Placement::GridX, std::nullopt}, {Placement::ThreadX, tx}};
      } else if (fromInner < 3) {
        is.parts = {{grids[fromInner], std::nullopt}};
        // Grid y and z hold at most 65535 blocks: loop over the rest inside the thread.
        if (extent > 65535) is.parts.push_back({Placement::Serial, (extent + 65534) / 65535});
      } else {
        is.parts = {{Placement::Serial, std::nullopt}};
      }
      ns.indices.push_back(std::move(is));
    }
    for (const NestIndex& ni : list)
      if (!ni.parallel) ns.indices.push_back({ni.name, {{Placement::Serial, std::nullopt}}});
    if (auto products = policyProductsSchedule(k, int(n), limits)) ns = std::move(*products);
    else if (auto few = fewPointsSchedule(k, int(n), list)) ns = std::move(*few);
    s.nests.push_back(std::move(ns));
  }
  return s;
}

}  // namespace rtcg
