#include "schedule/Schedule.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <set>

#include "ir/Walk.h"
#include "schedule/Domain.h"
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

// ---------------------------------------------------------------------------------------------
// Printing

std::string printIndexSchedule(const IndexSchedule& s) {
  std::string out = s.index + ":";
  for (size_t p = 0; p < s.parts.size(); ++p) {
    out += p == 0 ? " " : ", ";
    out += placementName(s.parts[p].place);
    if (s.parts[p].factor) out += fmt::format(" {}", *s.parts[p].factor);
  }
  return out;
}

std::string printNestSchedule(const NestSchedule& s) {
  std::vector<std::string> clauses;
  for (const IndexSchedule& i : s.indices) clauses.push_back(printIndexSchedule(i));
  if (!s.shared.empty()) {
    std::vector<std::string> arrays;
    for (const std::string& a : s.shared) arrays.push_back(s.isTransposed(a) ? a + "^T" : a);
    clauses.push_back(fmt::format("shared: {}", fmt::join(arrays, ", ")));
  }
  if (s.buffers > 1) clauses.push_back(fmt::format("buffers: {}", s.buffers));
  if (s.asyncCopy) clauses.push_back("copy: async");
  if (s.earlyLoads) clauses.push_back("loads: early");
  if (s.blocksPerSM > 0) clauses.push_back(fmt::format("blocks_per_sm: {}", s.blocksPerSM));
  if (clauses.empty()) return "-";
  return fmt::format("{}", fmt::join(clauses, "; "));
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
  void expect(char c, const char* what) {
    if (accept(c)) return;
    if (atEnd()) fail(fmt::format("expected '{}' {}, found the end of the text", c, what));
    fail(fmt::format("expected '{}' {}, found '{}'", c, what, t_[pos_]));
  }

  // A name: letters, digits, '_' and '.' (for grid.x), starting with a letter or '_'.
  std::string word(const char* what) {
    skipSpace();
    size_t start = pos_;
    if (pos_ < t_.size() && (std::isalpha((unsigned char)t_[pos_]) || t_[pos_] == '_')) {
      while (pos_ < t_.size() && (std::isalnum((unsigned char)t_[pos_]) || t_[pos_] == '_' || t_[pos_] == '.'))
        ++pos_;
    }
    if (pos_ == start) {
      if (pos_ >= t_.size()) fail(fmt::format("expected {}, found the end of the text", what));
      fail(fmt::format("expected {}, found '{}'", what, t_[pos_]));
    }
    return std::string(t_.substr(start, pos_ - start));
  }

  // A clause that takes one of two keywords (`copy: async|registers`, `loads: early|late`), after
  // its name and ':'; true for `yes`. `saw` refuses the clause a second time in the nest.
  bool keywordClause(size_t clauseStart, bool& saw, const char* name, const char* yes, const char* no) {
    if (saw) failAt(clauseStart, fmt::format("'{}:' is given twice for this nest", name));
    saw = true;
    size_t at = (skipSpace(), pos_);
    std::string value = word(fmt::format("'{}' or '{}' after '{}:'", yes, no, name).c_str());
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

  NestSchedule nest() {
    NestSchedule n;
    // `-` alone is a nest with nothing to schedule.
    if (peek('-')) {
      ++pos_;
      if (!atEnd() && !peek('|')) fail("expected '|' or the end of the text after '-'");
      return n;
    }
    bool sawShared = false, sawBlocks = false, sawBuffers = false, sawCopy = false, sawLoads = false;
    do {
      size_t clauseStart = (skipSpace(), pos_);
      std::string name = word("an index name, 'shared', 'buffers', 'copy', 'loads' or 'blocks_per_sm'");
      expect(':', fmt::format("after '{}'", name).c_str());
      if (name == "blocks_per_sm") {
        if (sawBlocks) failAt(clauseStart, "'blocks_per_sm:' is given twice for this nest");
        sawBlocks = true;
        size_t at = (skipSpace(), pos_);
        if (!atNumber()) fail("expected a number of blocks after 'blocks_per_sm:'");
        n.blocksPerSM = number();
        if (n.blocksPerSM < 1 || n.blocksPerSM > 32) failAt(at, "blocks_per_sm must be between 1 and 32");
      } else if (name == "buffers") {
        if (sawBuffers) failAt(clauseStart, "'buffers:' is given twice for this nest");
        sawBuffers = true;
        size_t at = (skipSpace(), pos_);
        if (!atNumber()) fail("expected a number of buffers (1 to 4) after 'buffers:'");
        n.buffers = number();
        if (n.buffers < 1 || n.buffers > 4) failAt(at, "buffers must be between 1 and 4");
      } else if (name == "copy") {
        n.asyncCopy = keywordClause(clauseStart, sawCopy, "copy", "async", "registers");
      } else if (name == "loads") {
        n.earlyLoads = keywordClause(clauseStart, sawLoads, "loads", "early", "late");
      } else if (name == "shared") {
        if (sawShared) failAt(clauseStart, "'shared:' is given twice for this nest");
        sawShared = true;
        do {
          n.shared.push_back(word("an array name"));
          // `a^T`: the tile is stored with its dimensions reversed.
          if (accept('^')) {
            size_t at = pos_;
            if (pos_ >= t_.size() || t_[pos_] != 'T') failAt(at, "expected 'T' after '^' (a transposed tile: 'a^T')");
            ++pos_;
            n.transposed.push_back(n.shared.back());
          }
        } while (accept(','));
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
// Validation

namespace {

// Arrays a nest reads and writes (by param index).
void arraysOf(const Expr& e, std::set<int>& reads) {
  if (!e) return;
  visitExprs(e, [&](const Expr& x) {
    if (x->kind == ExprKind::Load) reads.insert(x->array);
  });
}

void validateNest(const Kernel& k, int nestIdx, const NestSchedule& ns, const ScheduleLimits& lim,
                  std::vector<std::string>& out) {
  const std::string where = k.nests.size() > 1 ? fmt::format("nest {}: ", nestIdx) : "";
  auto reason = [&](std::string msg) { out.push_back(where + msg); };
  const size_t reasonsBefore = out.size();

  std::string err;
  auto indices = nestIndices(k, nestIdx, &err);
  if (!indices) {
    reason(err);
    return;
  }
  std::vector<std::string> names;
  for (const NestIndex& ni : *indices) names.push_back(ni.name);

  std::set<std::string> seen;
  const IndexSchedule* gridUse[3] = {nullptr, nullptr, nullptr};
  const IndexSchedule* threadUse[3] = {nullptr, nullptr, nullptr};
  int64_t blockDim[3] = {1, 1, 1}, gridDim[3] = {1, 1, 1};
  int64_t regPoints = 1;
  const IndexSchedule* crossBlock = nullptr;  // the reduction index with grid parts
  bool crossBlockTwice = false;

  for (const IndexSchedule& is : ns.indices) {
    auto it = std::find_if(indices->begin(), indices->end(), [&](const NestIndex& ni) { return ni.name == is.index; });
    if (it == indices->end()) {
      reason(names.empty() ? fmt::format("'{}' is not an index of the nest (it has no indices)", is.index)
                           : fmt::format("'{}' is not an index of the nest (its indices are {})", is.index,
                                         fmt::join(names, ", ")));
      continue;
    }
    if (!seen.insert(is.index).second) {
      reason(fmt::format("index '{}' is scheduled twice", is.index));
      continue;
    }
    if (is.parts.empty()) {
      reason(fmt::format("index '{}' has no parts", is.index));
      continue;
    }
    bool factorsOk = true;
    for (size_t p = 0; p < is.parts.size(); ++p) {
      const SchedulePart& part = is.parts[p];
      if (p == 0 && part.factor) {
        reason(fmt::format("the first part of '{}' takes no factor: its extent is what the other parts leave", is.index));
        factorsOk = false;
      } else if (p > 0 && !part.factor) {
        reason(fmt::format("part {} ('{}') of '{}' needs a factor", p + 1, placementName(part.place), is.index));
        factorsOk = false;
      } else if (p > 0 && *part.factor <= 0) {
        reason(fmt::format("factor {} of part '{}' of '{}' must be positive", *part.factor,
                           placementName(part.place), is.index));
        factorsOk = false;
      } else if (p > 0 && *part.factor > (int64_t(1) << 31)) {
        reason(fmt::format("factor {} of part '{}' of '{}' is too large", *part.factor,
                           placementName(part.place), is.index));
        factorsOk = false;
      }
    }
    if (!factorsOk) continue;

    std::vector<int64_t> ext = partExtents(is, it->hull.extent());
    for (size_t p = 0; p < is.parts.size(); ++p) {
      Placement pl = is.parts[p].place;
      if (!it->parallel) {
        if (isThreadPlacement(pl)) {
          // A reduction split across the threads of a block: each thread accumulates a partial,
          // then the partials are combined (splitReductionReasons checks the rest).
          int axis = placementAxis(pl);
          if (threadUse[axis]) reason(fmt::format("{} is used twice (by '{}' and '{}')", placementName(pl),
                                                  threadUse[axis]->index, is.index));
          threadUse[axis] = &is;
          blockDim[axis] *= ext[p];
        } else if (isGridPlacement(pl)) {
          // A reduction split across blocks (crossBlockPlan checks the scratch it needs).
          int axis = placementAxis(pl);
          if (gridUse[axis]) reason(fmt::format("{} is used twice (by '{}' and '{}')", placementName(pl),
                                                gridUse[axis]->index, is.index));
          gridUse[axis] = &is;
          gridDim[axis] *= ext[p];
          if (!crossBlock) crossBlock = &is;
          else if (crossBlock != &is && !crossBlockTwice) {
            crossBlockTwice = true;
            reason(fmt::format("reduction indices '{}' and '{}' both have grid parts: at most one reduction "
                               "index per nest can be split across blocks", crossBlock->index, is.index));
          }
        } else if (pl == Placement::Reg)
          reason(fmt::format("reduction index '{}' cannot be on reg: reduction indices take serial, unroll, "
                             "thread and grid parts", is.index));
        else if (pl == Placement::Unroll && ext[p] > 1024)
          reason(fmt::format("unrolling {} iterations of '{}' is too much (at most 1024)", ext[p], is.index));
        continue;
      }
      int axis = placementAxis(pl);
      if (isGridPlacement(pl)) {
        if (gridUse[axis]) reason(fmt::format("{} is used twice (by '{}' and '{}')", placementName(pl),
                                              gridUse[axis]->index, is.index));
        gridUse[axis] = &is;
        gridDim[axis] *= ext[p];
      } else if (isThreadPlacement(pl)) {
        if (threadUse[axis]) reason(fmt::format("{} is used twice (by '{}' and '{}')", placementName(pl),
                                                threadUse[axis]->index, is.index));
        threadUse[axis] = &is;
        blockDim[axis] *= ext[p];
      } else if (pl == Placement::Reg) {
        regPoints *= ext[p];
      } else if (pl == Placement::Unroll && ext[p] > 1024) {
        reason(fmt::format("unrolling {} iterations of '{}' is too much (at most 1024)", ext[p], is.index));
      }
    }
  }
  for (const NestIndex& ni : *indices)
    if (!seen.count(ni.name))
      reason(fmt::format("{} index '{}' has no clause (e.g. '{}: serial')",
                         ni.parallel ? "parallel" : "reduction", ni.name, ni.name));

  static const char* axisName[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a) {
    if (blockDim[a] > lim.maxBlockDim[a])
      reason(fmt::format("{} threads on thread.{} (at most {})", blockDim[a], axisName[a], lim.maxBlockDim[a]));
    if (gridDim[a] > lim.maxGridDim[a])
      reason(fmt::format("{} blocks on grid.{} (at most {})", gridDim[a], axisName[a], lim.maxGridDim[a]));
  }
  int64_t threads = blockDim[0] * blockDim[1] * blockDim[2];
  if (threads > lim.maxThreadsPerBlock)
    reason(fmt::format("{} threads per block (at most {})", threads, lim.maxThreadsPerBlock));
  // 2048 resident threads per multiprocessor on every architecture rtcg targets (sm_70..sm_90).
  if (ns.blocksPerSM > 0 && threads * ns.blocksPerSM > 2048)
    reason(fmt::format("blocks_per_sm {} with {} threads per block exceeds the 2048 threads of a multiprocessor",
                       ns.blocksPerSM, threads));
  if (regPoints > lim.maxRegTile)
    reason(fmt::format("register tile of {} points per thread is too large (at most {})", regPoints, lim.maxRegTile));

  for (const std::string& r : splitReductionReasons(k, nestIdx, ns, &*indices)) reason(r);
  if (crossBlock && out.size() == reasonsBefore) {
    CrossBlockPlan cb = crossBlockPlan(k, nestIdx, ns);
    if (cb.scratchBytes > (double)lim.maxGlobalScratchBytes)
      reason(fmt::format("splitting '{}' across {} blocks for {} output tiles needs {:.0f} bytes of global scratch "
                         "(at most {})", cb.index, cb.blocks, cb.counters, cb.scratchBytes, lim.maxGlobalScratchBytes));
  }

  // Shared-memory staging.
  std::set<int> reads, writes;
  for (const Stmt& s : k.nests[nestIdx].body) {
    arraysOf(s.value, reads);
    for (const Expr& i : s.indices) arraysOf(i, reads);
    if (s.kind == StmtKind::Store) writes.insert(s.array);
  }
  std::set<std::string> sharedSeen;
  for (const std::string& a : ns.shared) {
    int p = k.findParam(a);
    if (!sharedSeen.insert(a).second) reason(fmt::format("array '{}' is staged twice", a));
    else if (p < 0) reason(fmt::format("'{}' in shared: is not a parameter of kernel '{}'", a, k.name));
    else if (!k.params[p].isArray()) reason(fmt::format("'{}' in shared: is not an array", a));
    else if (writes.count(p) || k.params[p].isWritten())
      reason(fmt::format("array '{}' is written and cannot be staged in shared memory (only read-only "
                         "arrays are staged)", a));
    else if (!reads.count(p)) reason(fmt::format("array '{}' is not read in this nest", a));
  }
  for (const std::string& a : ns.transposed) {
    int p = k.findParam(a);
    if (std::find(ns.shared.begin(), ns.shared.end(), a) == ns.shared.end())
      reason(fmt::format("array '{}' is marked transposed but is not staged in 'shared:'", a));
    if (p >= 0 && k.params[p].isArray() && k.params[p].shape.size() < 2)
      reason(fmt::format("array '{}' has one dimension: its tile cannot be transposed ('{}^T')", a, a));
  }
  if (ns.buffers > 1 && ns.shared.empty())
    reason(fmt::format("'buffers: {}' multi-buffers tiles staged per reduction step, but nothing is staged "
                       "('shared:')", ns.buffers));
  if (ns.asyncCopy && ns.buffers < 2)
    reason("'copy: async' copies tiles one or more steps ahead and needs 'buffers: 2' or more");
  if (!ns.asyncCopy && ns.buffers > 2)
    reason(fmt::format("'buffers: {}' keeps {} steps in flight, which only asynchronous copies do: add 'copy: async'",
                       ns.buffers, ns.buffers - 1));
  if (ns.earlyLoads) {
    if (hoistedReductionGroups(k, nestIdx, ns).empty())
      reason("'loads: early' issues the statements' loads ahead of their reductions, but no reduction of this "
             "nest is computed ahead of its statements");
    else if (crossBlock)
      reason("'loads: early' does not combine with a reduction split across blocks (the statements run in the "
             "last block of each tile only)");
    else if (earlyStatementLoads(k, nestIdx, ns).empty())
      reason("'loads: early' issues the statements' loads ahead of their reductions, but the statements read "
             "nothing outside them that can be loaded early (an array not staged, not written before, read at "
             "the element the statement writes)");
  }
  if (ns.shared.empty() || out.size() != reasonsBefore) return;
  StagingPlan plan = planStaging(k, nestIdx, ns, &*indices);
  for (const std::string& e : plan.errors) reason(e);
  if (plan.errors.empty() && ns.buffers > 1 &&
      std::none_of(plan.arrays.begin(), plan.arrays.end(), [](const StagedArray& sa) { return sa.level == StageLevel::Step; }))
    reason(fmt::format("'buffers: {}' multi-buffers tiles staged per reduction step, but every staged array is "
                       "staged once per block", ns.buffers));
  if (plan.bytes > lim.maxSharedBytes)
    reason(fmt::format("staging needs {} bytes of shared memory (at most {})", plan.bytes, lim.maxSharedBytes));
}

}  // namespace

ScheduleLimits deviceScheduleLimits(int64_t sharedPerBlockOptin, int64_t maxThreadsPerBlock) {
  ScheduleLimits limits;
  limits.maxSharedBytes = std::max(limits.maxSharedBytes, sharedPerBlockOptin);
  limits.maxThreadsPerBlock = maxThreadsPerBlock;
  return limits;
}

std::vector<std::string> validateSchedule(const Kernel& k, const Schedule& s, const ScheduleLimits& limits) {
  std::vector<std::string> out;
  if (!k.isBound()) {
    out.push_back(fmt::format("kernel '{}' has unbound size parameters: bind them before scheduling", k.name));
    return out;
  }
  if (s.nests.size() != k.nests.size()) {
    out.push_back(fmt::format("the schedule has {} nest schedule{} but kernel '{}' has {} loop nest{} "
                              "(separate nest schedules with '|')",
                              s.nests.size(), s.nests.size() == 1 ? "" : "s", k.name, k.nests.size(),
                              k.nests.size() == 1 ? "" : "s"));
    return out;
  }
  for (size_t n = 0; n < s.nests.size(); ++n) validateNest(k, (int)n, s.nests[n], limits, out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Default schedule

Schedule defaultSchedule(const Kernel& k) {
  Schedule s;
  for (size_t n = 0; n < k.nests.size(); ++n) {
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
    s.nests.push_back(std::move(ns));
  }
  return s;
}

}  // namespace rtcg
