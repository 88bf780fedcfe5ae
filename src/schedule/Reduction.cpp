// Reductions computed ahead of the statements and the plans built on them (schedule/Domain.h):
// the hoisted groups, `loads: early`, split reductions' reasons, outer register tiles and
// reductions split across blocks.
#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <set>

#include "ir/Analysis.h"
#include "ir/DataRanges.h"
#include "ir/Walk.h"
#include "schedule/Domain.h"

namespace rtcg {

void varIds(const Expr& e, VarKind kind, std::set<int>& out) {
  if (!e) return;
  visitExprs(e, [&](const Expr& x) {
    if (x->kind == ExprKind::Var && x->varKind == kind) out.insert(x->varId);
  });
}

void topReductions(const Expr& e, std::vector<Expr>& out) {
  if (!e) return;
  visitExprsWhile(e, [&](const Expr& x) {
    if (x->kind != ExprKind::Reduce) return true;
    out.push_back(x);
    return false;
  });
}

namespace {

bool readsArrayIn(const Expr& e, const std::set<int>& arrays) {
  return e && anyExpr(e, [&](const Expr& x) { return x->kind == ExprKind::Load && arrays.count(x->array); });
}

// A key equal for expressions equal up to the renaming of the loops in `canon`.
std::string structuralKey(const Expr& e, const std::map<int, std::string>& canon) {
  std::string s = fmt::format("({} {}", (int)e->kind, (int)e->type);
  switch (e->kind) {
    case ExprKind::IntImm: s += fmt::format(" {}", e->intValue); break;
    case ExprKind::FloatImm: s += fmt::format(" {}", e->floatValue); break;
    case ExprKind::Var: {
      auto it = e->varKind == VarKind::Index ? canon.find(e->varId) : canon.end();
      s += it != canon.end() ? " " + it->second : fmt::format(" v{}:{}", (int)e->varKind, e->varId);
      break;
    }
    case ExprKind::Load: s += fmt::format(" a{}", e->array); break;
    case ExprKind::Unary: s += fmt::format(" u{}", (int)e->unaryOp); break;
    case ExprKind::Binary: s += fmt::format(" b{}", (int)e->binaryOp); break;
    case ExprKind::Call: s += fmt::format(" f{}", (int)e->mathFn); break;
    case ExprKind::Cast:
    case ExprKind::Select: break;
    case ExprKind::Reduce: s += fmt::format(" r{}", (int)e->reduceOp); break;
  }
  for (const Expr& o : e->operands) s += " " + structuralKey(o, canon);
  return s + ")";
}

// The loop structure of a reduction, for fusing reductions over the same loops.
std::string loopsKey(const Expr& red) {
  std::map<int, std::string> canon;
  std::string s;
  for (size_t q = 0; q < red->loops.size(); ++q) {
    const Loop& l = red->loops[q];
    s += fmt::format("[{} {} {}]", l.name, structuralKey(l.lo, canon), structuralKey(l.hi, canon));
    canon[l.id] = fmt::format("r{}", q);
  }
  return s;
}

}  // namespace

std::vector<Expr> earlyStatementLoads(const Kernel& k, int nest, const NestSchedule& s) {
  std::set<int> staged, written;
  for (const std::string& a : s.shared) staged.insert(k.findParam(std::string(stagedArrayName(a))));
  std::vector<Expr> loads;
  for (const Stmt& st : k.nests[nest].body) {
    if (st.kind != StmtKind::Store) break;  // loads after a let may use it: left in place
    std::function<void(const Expr&)> walk = [&](const Expr& e) {
      if (e->kind == ExprKind::Reduce) return;
      if (e->kind == ExprKind::Load) {
        bool direct = true;
        for (const Expr& i : e->operands)
          visitExprs(i, [&](const Expr& x) {
            direct = direct && x->kind != ExprKind::Load && !(x->kind == ExprKind::Var && x->varKind == VarKind::Let);
          });
        bool sameElement = e->array != st.array;
        if (!sameElement && e->operands.size() == st.indices.size()) {
          sameElement = true;
          for (size_t d = 0; d < e->operands.size(); ++d)
            sameElement = sameElement && sameExpr(e->operands[d], st.indices[d]);
        }
        if (direct && sameElement && !written.count(e->array) && !staged.count(e->array)) loads.push_back(e);
        return;
      }
      for (const Expr& o : e->operands) walk(o);
    };
    walk(st.value);
    written.insert(st.array);
  }
  return loads;
}

namespace {

// The ids of the nest's loops with a reg part under `s`: all of `s` that its hoisted groups depend on.
std::vector<int> regLoopIds(const LoopNest& n, const NestSchedule& s) {
  std::vector<int> ids;
  for (const Loop& l : n.loops)
    if (const IndexSchedule* is = s.find(l.name))
      if (std::any_of(is->parts.begin(), is->parts.end(), [](const SchedulePart& p) { return p.place == Placement::Reg; }))
        ids.push_back(l.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// hoistedReductionGroups with the loops with reg parts given by id.
std::vector<std::vector<Expr>> hoistedGroupsWithRegLoops(const Kernel& k, int nest, const std::vector<int>& regLoops) {
  const LoopNest& n = k.nests[nest];
  std::set<int> written, regIds(regLoops.begin(), regLoops.end());
  for (const Stmt& st : n.body)
    if (st.kind == StmtKind::Store) written.insert(st.array);
  std::vector<std::vector<Expr>> groups;
  std::vector<std::string> keys;  // loopsKey of each group
  for (const Stmt& st : n.body) {
    std::vector<Expr> reds;
    topReductions(st.value, reds);
    for (const Expr& r : reds) {
      std::set<int> lets, dataBoundRefs;
      varIds(r, VarKind::Let, lets);
      for (const Loop& l : r->loops) {
        if (!isDataDependent(l)) continue;
        varIds(l.lo, VarKind::Index, dataBoundRefs);
        varIds(l.hi, VarKind::Index, dataBoundRefs);
      }
      // Affine bounds on a register-tile index (a triangle's rows `j in 0..i + 1`, i in registers):
      // the points' loops run over the union of their ranges, each point's updates guarded by its
      // own. A range read at a register index (a CSR row per point) stays in its statement.
      bool dataOnReg = std::any_of(dataBoundRefs.begin(), dataBoundRefs.end(), [&](int id) { return regIds.count(id) > 0; });
      if (!lets.empty() || readsArrayIn(r, written) || dataOnReg) continue;
      std::string key = loopsKey(r);
      auto it = std::find(keys.begin(), keys.end(), key);
      if (it == keys.end()) {
        groups.push_back({r});
        keys.push_back(std::move(key));
      } else {
        groups[it - keys.begin()].push_back(r);
      }
    }
  }
  return groups;
}

}  // namespace

std::vector<std::vector<Expr>> hoistedReductionGroups(const Kernel& k, int nest, const NestSchedule& s) {
  return hoistedGroupsWithRegLoops(k, nest, regLoopIds(k.nests[nest], s));
}

NestFacts::NestFacts(const Kernel& k, int nest) : k_(&k), nest_(nest), indices_(nestIndices(k, nest, &error_)) {}

const std::vector<std::vector<Expr>>& NestFacts::hoistedGroups(const NestSchedule& s) const {
  std::vector<int> key = regLoopIds(k_->nests[size_t(nest_)], s);
  auto it = groups_.find(key);
  if (it == groups_.end()) it = groups_.emplace(key, hoistedGroupsWithRegLoops(*k_, nest_, key)).first;
  return it->second;
}

bool isInBlockPlacement(Placement p) { return isThreadPlacement(p) || p == Placement::Reg; }

std::vector<std::string> splitReductionReasons(const Kernel& k, int nest, const NestSchedule& s,
                                               const NestFacts* known) {
  std::vector<std::string> out;
  std::optional<NestFacts> own;
  const NestFacts& facts = known ? *known : own.emplace(k, nest);
  const std::vector<NestIndex>* indices = facts.indices();
  if (!indices) return out;  // validation reports this
  std::set<int> hoistedLoops;
  for (const std::vector<Expr>& g : facts.hoistedGroups(s))
    for (const Expr& r : g)
      for (const Loop& l : r->loops) hoistedLoops.insert(l.id);
  for (const NestIndex& ni : *indices) {
    const IndexSchedule* is = s.find(ni.name);
    if (ni.parallel || !is) continue;
    bool threads = std::any_of(is->parts.begin(), is->parts.end(), [](const SchedulePart& p) { return isThreadPlacement(p.place); });
    bool blocks = std::any_of(is->parts.begin(), is->parts.end(), [](const SchedulePart& p) { return isGridPlacement(p.place); });
    if (!threads && !blocks) continue;
    const char* across = blocks ? (threads ? "threads and blocks" : "blocks") : "threads";
    // A data-dependent range (a CSR row) splits across the lanes of its row: each lane strides
    // through the row's values from its start, with the trip count computed from its bounds at run
    // time. Across blocks, the share of each block would need the same bounds everywhere.
    if (ni.dataDependent && blocks) {
      out.push_back(fmt::format("reduction index '{}' has a range that reads an array: it may be split across "
                                "threads (the lanes of a row), not across blocks", ni.name));
      continue;
    }
    // Bounds that vary with other indices (a triangle's row 0..i + 1) split the same way: each
    // loop's own range, lowered where its group is computed (the indices its bounds name are known
    // there: a bound on a register-tile index keeps the reduction in its statement, below), gives
    // the trip counts at run time, and every value past the range's end is guarded.
    for (const Loop* l : ni.loops) {
      if (ni.dataDependent && ni.loops.size() > 1) {
        out.push_back(fmt::format("reduction index '{}' has a range that reads an array and names {} reductions: "
                                  "only one such reduction may be split across threads", ni.name, ni.loops.size()));
        break;
      }
      if (!hoistedLoops.count(l->id)) {
        out.push_back(fmt::format("reduction over '{}' cannot be split across {}: it is computed inside a "
                                  "statement (it depends on a let, reads an array the nest writes, is nested in "
                                  "another reduction, or its range reads an array at a register-tile index)", ni.name, across));
        break;
      }
    }
  }
  return out;
}

OuterTile outerTile(const Kernel& k, int nest, const NestSchedule& s, const std::vector<std::vector<Expr>>& groups,
                    std::vector<std::string>& reasons) {
  OuterTile tile;
  const LoopNest& n = k.nests[nest];
  std::set<std::string> parallelNames;
  std::set<int> regIds;  // parallel loops with a register part
  for (const Loop& l : n.loops) {
    parallelNames.insert(l.name);
    if (const IndexSchedule* is = s.find(l.name))
      for (const SchedulePart& p : is->parts)
        if (p.place == Placement::Reg) regIds.insert(l.id);
  }
  for (const IndexSchedule& is : s.indices) {
    if (parallelNames.count(is.index)) continue;
    for (size_t p = 0; p < is.parts.size(); ++p) {
      if (is.parts[p].place != Placement::Reg) continue;
      if (!tile.index.empty()) {
        reasons.push_back(tile.index == is.index
                              ? fmt::format("reduction index '{}' has two reg parts (at most one)", is.index)
                              : fmt::format("reduction indices '{}' and '{}' both have reg parts: at most one reduction "
                                            "index per nest takes a register tile", tile.index, is.index));
        return tile;
      }
      tile.index = is.index;
      tile.part = p;
      tile.extent = is.parts[p].factor.value_or(1);
      if (p == stepPartOf(is))
        reasons.push_back(fmt::format("the reg part of '{}' would be its steps (its {} part): give '{}' a serial or "
                                      "unroll part ahead of the reg part", is.index, p == 0 ? "first" : "first non-grid",
                                      is.index));
    }
  }
  if (tile.index.empty() || !reasons.empty()) return tile;
  // Every reduction over the index is a one-index reduction of one hoisted group.
  std::vector<int> over;
  for (size_t g = 0; g < groups.size(); ++g)
    for (const Expr& r : groups[g])
      for (const Loop& l : r->loops)
        if (l.name == tile.index && std::find(over.begin(), over.end(), (int)g) == over.end()) over.push_back((int)g);
  size_t loopsOver = 0, hoistedOver = 0;
  std::function<void(const Expr&)> count = [&](const Expr& e) {
    if (e->kind == ExprKind::Reduce)
      for (const Loop& l : e->loops) loopsOver += l.name == tile.index;
    for (const Expr& o : e->operands) count(o);
  };
  for (const Stmt& st : n.body) count(st.value);
  for (int g : over)
    for (const Expr& r : groups[g]) hoistedOver += r->loops.size() == 1 && r->loops[0].name == tile.index;
  const std::string why = fmt::format("a reg part on reduction index '{}' tiles an outer reduction computed ahead of "
                                      "the statements, over that one index", tile.index);
  if (over.size() != 1 || hoistedOver != loopsOver) {
    reasons.push_back(why + (over.size() > 1 ? ": the reductions over it have different loops (bounds)"
                                             : ": a reduction over it is computed inside a statement (it depends on a "
                                               "let, reads an array the nest writes, is nested in another reduction, "
                                               "runs over several indices, or its bounds depend on a register-tile index)"));
    return tile;
  }
  tile.group = over[0];
  // The inner reductions, grouped by their loops; their bounds may not move with the outer index
  // (one pass serves all its values) nor with a register-tiled parallel index (one pass serves
  // every point).
  std::vector<std::string> keys;
  for (const Expr& r : groups[tile.group]) {
    const int outerId = r->loops[0].id;
    std::vector<Expr> inner;
    topReductions(r->operands[0], inner);
    for (const Expr& ir : inner) {
      std::set<int> boundRefs;
      for (const Loop& l : ir->loops) {
        varIds(l.lo, VarKind::Index, boundRefs);
        varIds(l.hi, VarKind::Index, boundRefs);
      }
      for (int id : boundRefs)
        if (id == outerId || regIds.count(id)) {
          reasons.push_back(fmt::format("the reduction over '{}' nested in the reduction over '{}' has bounds that "
                                        "depend on {}: a register tile of '{}' needs inner loops that serve all its "
                                        "values and points", ir->loops[0].name, tile.index,
                                        id == outerId ? "'" + tile.index + "'" : "a register-tiled parallel index",
                                        tile.index));
          return tile;
        }
      std::string key = loopsKey(ir);
      auto it = std::find(keys.begin(), keys.end(), key);
      if (it == keys.end()) {
        tile.inner.push_back({ir});
        keys.push_back(std::move(key));
      } else {
        tile.inner[it - keys.begin()].push_back(ir);
      }
    }
  }
  return tile;
}

CrossBlockPlan crossBlockPlan(const Kernel& k, int nest, const NestSchedule& s, const NestFacts* known) {
  CrossBlockPlan plan;
  std::optional<NestFacts> own;
  const NestFacts& facts = known ? *known : own.emplace(k, nest);
  if (!facts.indices()) return plan;
  for (const NestIndex& ni : *facts.indices()) {
    const IndexSchedule* is = s.find(ni.name);
    if (!is || is->parts.empty()) continue;
    bool badFactor = std::any_of(is->parts.begin(), is->parts.end(), [](const SchedulePart& p) { return p.factor && *p.factor <= 0; });
    if (badFactor) continue;
    std::vector<int64_t> ext = partExtents(*is, ni.hull.extent());
    for (size_t p = 0; p < ext.size(); ++p) {
      Placement pl = is->parts[p].place;
      if (ni.parallel) {
        if (isGridPlacement(pl)) plan.tiles *= ext[p];
        else if (isThreadPlacement(pl)) plan.slots *= ext[p];
        else if (pl == Placement::Reg) plan.regPoints *= ext[p];
        else plan.positions *= ext[p];
      } else if (isGridPlacement(pl) && (plan.index.empty() || plan.index == ni.name)) {
        plan.index = ni.name;
        plan.gridAxis[placementAxis(pl)] = true;
        plan.blocks *= ext[p];
      }
    }
  }
  if (!plan.any()) return plan;
  const std::vector<std::vector<Expr>>& groups = facts.hoistedGroups(s);
  for (size_t g = 0; g < groups.size(); ++g) {
    bool over = false;
    for (const Loop& l : groups[g][0]->loops) over = over || l.name == plan.index;
    if (!over) continue;
    plan.groups.push_back((int)g);
    for (const Expr& r : groups[g]) plan.values[r->type] += plan.regPoints;
  }
  plan.counters = plan.tiles * plan.positions;
  double bytes = 4.0 * (double)plan.counters;
  for (const auto& [t, v] : plan.values)
    bytes += (double)plan.counters * (double)v * (double)plan.slots * (double)plan.blocks * typeBytes(t);
  plan.scratchBytes = bytes;
  return plan;
}

size_t stepPartOf(const IndexSchedule& is) {
  size_t p = 0;
  while (p < is.parts.size() && isGridPlacement(is.parts[p].place)) ++p;
  return p;
}

int64_t stepSpanOf(const IndexSchedule& is) {
  int64_t span = 1;
  for (size_t p = stepPartOf(is) + 1; p < is.parts.size(); ++p) span *= is.parts[p].factor.value_or(1);
  return span;
}

}  // namespace rtcg
