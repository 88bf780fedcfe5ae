// The race check: the points of a nest's parallel domain are independent. No two points write the
// same element, and no point reads an element that another point writes.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "ir/Analysis.h"
#include "ir/Walk.h"

namespace rtcg {

namespace {

// Domains up to this many points are enumerated when the algebraic proof does not apply.
constexpr int64_t kEnumerationLimit = int64_t(1) << 20;

using Point = std::map<int, int64_t>;  // loop id -> value

struct NestInfo {
  const Kernel& k;
  const LoopNest& nest;
  LoopScope scope;
  std::vector<Interval> boxes;   // range of each parallel loop over the domain
  bool boxesKnown = true;        // false if some loop's range cannot be bounded
  std::vector<int64_t> widths;   // most iterations a loop has for one value of the outer loops
  bool rectangular = true;

  NestInfo(const Kernel& kernel, const LoopNest& n) : k(kernel), nest(n) {
    for (const Loop& l : n.loops) scope.push_back(&l);
    for (size_t i = 0; i < n.loops.size(); ++i) {
      const Loop& l = n.loops[i];
      LoopScope outer(scope.begin(), scope.begin() + i);
      auto w = rangeOf(binary(BinaryOp::Sub, l.hi, l.lo), outer);
      auto b = rangeOf(var(VarKind::Index, l.id, l.name, ScalarType::I32), scope);
      widths.push_back(w && !w->empty() ? w->hi : INT64_MAX);
      boxesKnown &= b.has_value();
      boxes.push_back(b ? *b : Interval{0, 0});
      rectangular &= l.lo->kind == ExprKind::IntImm && l.hi->kind == ExprKind::IntImm;
    }
  }

  Point pointAt(int64_t ordinal) const {
    Point found;
    enumerate([&](const Point& p, int64_t o) {
      if (o == ordinal) found = p;
      return o < ordinal;
    });
    return found;
  }

  std::string pointText(const Point& p) const {
    std::string out = "(";
    for (size_t i = 0; i < nest.loops.size(); ++i)
      out += fmt::format("{}{}={}", i ? ", " : "", nest.loops[i].name, p.at(nest.loops[i].id));
    return out + ")";
  }

  // Calls f on every point of the domain, in order; false if the domain is too large or a loop
  // bound cannot be evaluated (then nothing is known).
  // Points are numbered in enumeration order (see pointAt).
  bool enumerate(const std::function<bool(const Point&, int64_t)>& f) const {
    if (!boxesKnown) return false;
    int64_t total = 1;
    for (const Interval& b : boxes) {
      if (b.empty()) return true;
      if (b.extent() <= 0 || __builtin_mul_overflow(total, b.extent(), &total) || total > kEnumerationLimit)
        return false;
    }
    Point p;
    int64_t ordinal = 0;
    bool ok = true, stop = false;
    std::function<void(size_t)> rec = [&](size_t i) {
      if (!ok || stop) return;
      if (i == nest.loops.size()) {
        stop = !f(p, ordinal++);
        return;
      }
      const Loop& l = nest.loops[i];
      auto lo = evalInt(l.lo, p), hi = evalInt(l.hi, p);
      if (!lo || !hi) {
        ok = false;
        return;
      }
      for (int64_t v = *lo; v < *hi && ok && !stop; ++v) {
        p[l.id] = v;
        rec(i + 1);
      }
      p.erase(l.id);
    };
    rec(0);
    return ok;
  }
};

// Flat element offset of a store's indices at a point, or nullopt if not evaluable.
std::optional<int64_t> offsetAt(const std::vector<int64_t>& shape, const std::vector<Expr>& idx, const Point& p) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) {
    auto v = evalInt(idx[d], p);
    if (!v) return std::nullopt;
    off = off * shape[d] + *v;
  }
  return off;
}

std::string elementText(const Kernel& k, const Access& a, const Point& p) {
  std::string out = k.params[a.array].name + "[";
  for (size_t d = 0; d < a.indices.size(); ++d) {
    auto v = evalInt(a.indices[d], p);
    out += (d ? ", " : "") + (v ? fmt::format("{}", *v) : std::string("?"));
  }
  return out + "]";
}

// The mixed-radix argument: sorted by |coefficient|, each coefficient exceeds the largest offset
// the smaller ones can span over the box, so distinct points give distinct offsets.
// `constSpan` covers several stores whose forms differ only in their constants: the constant
// then acts as one more digit with coefficient 1 and that span.
bool provablyInjective(const AffineForm& f, const NestInfo& info, int64_t constSpan = 0) {
  if (!info.boxesKnown) return false;
  std::vector<std::pair<int64_t, int64_t>> terms;  // |coeff|, box extent - 1
  if (constSpan > 0) terms.push_back({1, constSpan});
  for (size_t i = 0; i < info.nest.loops.size(); ++i) {
    int64_t c = f.coeff(info.nest.loops[i].id);
    const Interval& b = info.boxes[i];
    if (b.extent() <= 1) continue;
    if (c == 0) return false;
    terms.push_back({c < 0 ? -c : c, b.hi - b.lo});
  }
  std::sort(terms.begin(), terms.end());
  int64_t span = 0;
  for (const auto& [c, w] : terms) {
    if (c <= span) return false;
    int64_t t;
    if (__builtin_mul_overflow(c, w, &t) || __builtin_add_overflow(span, t, &span)) return false;
  }
  return true;
}

// Looks for a small nonzero step d between points with sum(c * d) = 0: on a rectangular domain,
// the points x and x + d (both inside the box) then write the same element.
std::optional<std::pair<Point, Point>> smallCollision(const AffineForm& f, const NestInfo& info) {
  if (!info.rectangular || !info.boxesKnown) return std::nullopt;
  size_t n = info.nest.loops.size();
  std::vector<int64_t> lim(n);
  int64_t bound = 6;
  int64_t combos;
  do {
    combos = 1;
    for (size_t i = 0; i < n; ++i) {
      lim[i] = std::min<int64_t>(bound, info.boxes[i].extent() - 1);
      combos *= 2 * lim[i] + 1;
      if (combos > 2'000'000) break;
    }
  } while (combos > 2'000'000 && --bound > 0);
  if (combos > 2'000'000) return std::nullopt;
  std::vector<int64_t> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = -lim[i];
  while (true) {
    int64_t sum = 0;
    bool nonzero = false;
    for (size_t i = 0; i < n; ++i) {
      sum += f.coeff(info.nest.loops[i].id) * d[i];
      nonzero |= d[i] != 0;
    }
    if (nonzero && sum == 0) {
      Point x, y;
      for (size_t i = 0; i < n; ++i) {
        int id = info.nest.loops[i].id;
        x[id] = info.boxes[i].lo + std::max<int64_t>(0, -d[i]);
        y[id] = x[id] + d[i];
      }
      return std::make_pair(x, y);
    }
    size_t i = 0;
    while (i < n && d[i] == lim[i]) d[i] = -lim[i], ++i;
    if (i == n) return std::nullopt;
    ++d[i];
  }
}

class RaceChecker {
 public:
  RaceChecker(const Kernel& k, int nestIdx, Diagnostics& diags)
      : k_(k), info_(k, k.nests[nestIdx]), diags_(diags), accesses_(collectAccesses(k, nestIdx)) {}

  void run() {
    // A nest without loops is a single point; its statements simply run in order.
    if (info_.nest.loops.empty()) return;
    for (const Interval& b : info_.boxes)
      if (info_.boxesKnown && b.empty()) return;  // no point at all
    std::map<int, std::vector<const Access*>> storesByArray;
    for (const Access& a : accesses_)
      if (a.isWrite) storesByArray[a.array].push_back(&a);
    std::set<int> accumulated;
    for (const auto& [array, stores] : storesByArray) {
      if (std::none_of(stores.begin(), stores.end(), [](const Access* a) { return a->accumulate; })) {
        checkWrites(array, stores);
        continue;
      }
      accumulated.insert(array);
      checkAccumulations(stores);
    }
    for (const Access& a : accesses_) {
      if (a.isWrite || !storesByArray.count(a.array)) continue;
      if (accumulated.count(a.array)) reportAccumulatedRead(a, storesByArray[a.array]);
      else checkRead(a, storesByArray[a.array]);
    }
  }

 private:
  const Kernel& k_;
  NestInfo info_;
  Diagnostics& diags_;
  std::vector<Access> accesses_;

  const std::string& name(int array) const { return k_.params[array].name; }

  bool mentions(const Access& a, int loopId) const {
    bool found = false;
    for (const Expr& i : a.indices)
      visitExprs(i, [&](const Expr& e) {
        found |= e->kind == ExprKind::Var && e->varKind == VarKind::Index && e->varId == loopId;
      });
    return found;
  }

  // Accumulations may name one element from several points (that is what they are for), but the
  // array's every write in the nest is one with the same operator: a plain store's value would be
  // overwritten or added to in an order nothing fixes, and sum and max updates do not commute.
  void checkAccumulations(const std::vector<const Access*>& stores) {
    const Access* first = *std::find_if(stores.begin(), stores.end(), [](const Access* a) { return a->accumulate; });
    for (const Access* s : stores) {
      if (!s->accumulate) {
        diags_.error(s->loc, fmt::format("a plain store to {} in the loop nest that accumulates into it ({} {} ...): "
                                         "the order of the store and the updates is not defined. Store in an "
                                         "earlier loop nest, or accumulate here too",
                                         name(s->array), accessText(k_, first->array, first->indices),
                                         accumSymbol(first->accumOp)));
        return;
      }
      if (s->accumOp != first->accumOp) {
        diags_.error(s->loc, fmt::format("{} is accumulated into with both '{}' and '{}' in one loop nest; the "
                                         "result would depend on the order of the updates. Use one operator per "
                                         "array and loop nest",
                                         name(s->array), accumSymbol(first->accumOp), accumSymbol(s->accumOp)));
        return;
      }
    }
  }

  void reportAccumulatedRead(const Access& r, const std::vector<const Access*>& stores) {
    const Access& first = *stores[0];
    diags_.error(r.loc, fmt::format("the read {} sees {} while this loop nest accumulates into it ({} {} ...): its "
                                    "value would depend on the order of the updates. Read it in a later loop nest",
                                    accessText(k_, r.array, r.indices), name(r.array),
                                    accessText(k_, first.array, first.indices), accumSymbol(first.accumOp)));
  }

  void checkWrites(int array, const std::vector<const Access*>& stores) {
    bool allProved = true;
    std::vector<std::optional<AffineForm>> forms;
    for (const Access* s : stores) {
      if (s->indices.size() != arrayShape(k_, array).size()) return;  // reported by checkBounds
      if (s->indirect) {
        diags_.warning(s->loc, fmt::format("indirect store into {} cannot be proved free of races: two "
                                           "iterations may write the same element; it is checked at run time by "
                                           "the reference executor",
                                           name(array)));
        return;
      }
      auto f = flatOffset(k_, array, s->indices);
      forms.push_back(f);
      // A parallel loop that does not change the element written makes all its iterations
      // write the same one.
      for (size_t i = 0; i < info_.nest.loops.size(); ++i) {
        const Loop& l = info_.nest.loops[i];
        if (info_.widths[i] <= 1) continue;
        bool appears = f ? f->coeff(l.id) != 0 : mentions(*s, l.id);
        if (!appears) {
          diags_.error(s->loc, fmt::format("every iteration of '{}' writes the same element of {}; make it a "
                                           "reduction (sum({} in ...))",
                                           l.name, name(array), l.name));
          return;
        }
      }
      if (!f || !provablyInjective(*f, info_)) allProved = false;
    }
    // Different stores of the same array must write disjoint sets of elements (the same element
    // at the same point is fine: the statements run in order).
    if (allProved && !disjointStores(forms)) allProved = false;
    if (allProved) return;

    // No algebraic proof: look at every point when the domain is small enough.
    std::vector<int64_t> shape = arrayShape(k_, array);
    // element offset -> (point ordinal, store); points are kept as ordinals to stay small.
    std::unordered_map<int64_t, std::pair<int64_t, size_t>> seen;
    bool collided = false, evaluable = true;
    bool complete = info_.enumerate([&](const Point& p, int64_t ordinal) {
      for (size_t s = 0; s < stores.size(); ++s) {
        auto off = offsetAt(shape, stores[s]->indices, p);
        if (!off) {
          evaluable = false;
          return false;
        }
        auto [it, inserted] = seen.emplace(*off, std::make_pair(ordinal, s));
        if (!inserted && it->second.first != ordinal) {
          const Access& other = *stores[it->second.second];
          reportCollision(*stores[s], other, info_.pointAt(it->second.first), p);
          collided = true;
          return false;
        }
      }
      return true;
    });
    if (collided || (complete && evaluable)) return;

    // Too large to enumerate: an affine store may still have a collision among nearby points.
    if (stores.size() == 1 && forms[0]) {
      if (auto c = smallCollision(*forms[0], info_)) {
        reportCollision(*stores[0], *stores[0], c->first, c->second);
        return;
      }
    }
    diags_.warning(stores[0]->loc, fmt::format("cannot prove that the iterations of this loop nest write "
                                               "distinct elements of {}",
                                               name(array)));
  }

  // All forms are affine here. Either they differ only in their constants (c[2*i], c[2*i + 1]),
  // handled by the mixed-radix argument with the constant as a digit, or their ranges of
  // elements are disjoint.
  bool disjointStores(const std::vector<std::optional<AffineForm>>& forms) const {
    bool sameCoeffs = true;
    int64_t lo = forms[0]->constant, hi = lo;
    for (const auto& f : forms) {
      sameCoeffs &= f->coeffs == forms[0]->coeffs;
      lo = std::min(lo, f->constant);
      hi = std::max(hi, f->constant);
    }
    if (hi == lo) return true;
    if (sameCoeffs && provablyInjective(*forms[0], info_, hi - lo)) return true;
    for (size_t i = 0; i < forms.size(); ++i)
      for (size_t j = i + 1; j < forms.size(); ++j) {
        if (*forms[i] == *forms[j]) continue;
        auto ri = rangeOf(affineToExpr(*forms[i]), info_.scope);
        auto rj = rangeOf(affineToExpr(*forms[j]), info_.scope);
        if (!ri || !rj || !(ri->hi < rj->lo || rj->hi < ri->lo)) return false;
      }
    return true;
  }

  void reportCollision(const Access& s, const Access& other, const Point& p, const Point& q) {
    diags_.error(s.loc, fmt::format("iterations {} and {} of this loop nest both write {}; every iteration "
                                    "must write its own element",
                                    info_.pointText(p), info_.pointText(q), elementText(k_, other, p)));
  }

  void checkRead(const Access& r, const std::vector<const Access*>& stores) {
    const std::string& arr = name(r.array);
    const Access& first = *stores[0];
    if (!r.indirect) {
      auto rf = flatOffset(k_, r.array, r.indices);
      for (const Access* s : stores) {
        // Same element at the same point: the read sees this point's own value.
        if (rf) {
          auto sf = flatOffset(k_, s->array, s->indices);
          if (sf && *sf == *rf) return;
        }
        bool same = s->indices.size() == r.indices.size();
        for (size_t d = 0; same && d < r.indices.size(); ++d) same = sameExpr(s->indices[d], r.indices[d]);
        if (same && r.scope.size() == info_.nest.loops.size()) return;
      }
    }
    diags_.error(r.loc, fmt::format("cross-iteration dependence: the read {} may see an element of {} that "
                                    "another iteration of this loop nest writes (the store {}); a loop nest "
                                    "may only read the element it writes at the same point. {}",
                                    accessText(k_, r.array, r.indices), arr,
                                    accessText(k_, first.array, first.indices), recurrenceAdvice(r, first)));
  }

  // A read of the element just before the stored one (`y[i] = y[i - 1] + x[i]`) is a recurrence:
  // a running sum, product, max or min is a scan, written as a reduction over the prefix.
  std::string recurrenceAdvice(const Access& r, const Access& s) const {
    auto rf = flatOffset(k_, r.array, r.indices), sf = flatOffset(k_, s.array, s.indices);
    if (rf && sf && !r.indirect && !s.indirect && rf->coeffs == sf->coeffs && rf->constant < sf->constant)
      return "A running sum (or product, max, min) is a scan: write it as a reduction over the prefix, "
             "y[i] = sum(j in 0..i + 1, x[j]), which compiles to one pass (docs/language.md 5.2)";
    return "Split the computation into two loop nests";
  }
};

}  // namespace

bool checkRaces(const Kernel& k, Diagnostics& diags) {
  int errorsBefore = diags.errorCount();
  for (int n = 0; n < (int)k.nests.size(); ++n) RaceChecker(k, n, diags).run();
  return diags.errorCount() == errorsBefore;
}

}  // namespace rtcg

// ---------------------------------------------------------------------------------------------
// Fusion of consecutive nests (fusionConflicts, Analysis.h)

namespace rtcg {

namespace {

// Whether access `a` of a nest whose leading index is loop `lead` touches only elements of the
// point's own value of it: its first index is exactly that index (affine: coefficient 1, nothing
// else). Rank-0 arrays and indirect first indices never are.
bool atOwnLeadingPoint(const Access& a, int lead) {
  if (a.indices.empty() || a.indirect) return false;
  auto f = toAffine(a.indices[0]);
  return f && f->constant == 0 && f->coeffs.size() == 1 && f->coeff(lead) == 1;
}

}  // namespace

std::vector<std::string> fusionConflicts(const Kernel& k, int first, int count) {
  std::vector<std::string> reasons;
  const LoopNest& head = k.nests[size_t(first)];
  if (head.loops.empty()) {
    reasons.push_back(fmt::format("nest {} has no parallel index to share", first));
    return reasons;
  }
  const Loop& lead = head.loops[0];
  for (int n = first; n < first + count; ++n) {
    const LoopNest& nest = k.nests[size_t(n)];
    if (nest.loops.empty()) {
      reasons.push_back(fmt::format("nest {} has no parallel index to share", n));
      continue;
    }
    for (const Stmt& st : nest.body)
      if (st.kind == StmtKind::Store && st.accumulate) {
        reasons.push_back(fmt::format("nest {} accumulates into {} (its updates meet in device memory): it runs as a "
                                      "launch of its own",
                                      n, k.params[size_t(st.array)].name));
        break;
      }
    const Loop& l = nest.loops[0];
    auto constant = [](const Expr& e) { return e->kind == ExprKind::IntImm; };
    if (!constant(l.lo) || !constant(l.hi) || !constant(lead.lo) || !constant(lead.hi) ||
        l.lo->intValue != lead.lo->intValue || l.hi->intValue != lead.hi->intValue)
      reasons.push_back(fmt::format("nest {}'s leading index '{}' does not have the constant range of nest {}'s '{}'", n,
                                    l.name, first, lead.name));
    // One block runs every nest's points of one value of the shared index; an early exit of a
    // block outside a triangle would skip the later nests, so the domains are rectangular.
    for (const Loop& o : nest.loops)
      if (o.lo->kind != ExprKind::IntImm || o.hi->kind != ExprKind::IntImm)
        reasons.push_back(fmt::format("nest {}'s index '{}' has bounds that are not constant", n, o.name));
  }
  if (!reasons.empty()) return reasons;
  // Every array that one nest of the group writes and another one touches: each access to it in
  // the group is at the accessing point's own value of the shared index, so that one block (which
  // runs all nests for its values of the index, with a barrier between nests) sees the earlier
  // nests' results for its values and no other block's.
  std::map<int, std::set<int>> writers, users;  // array -> nests
  std::vector<std::vector<Access>> accesses;
  for (int n = first; n < first + count; ++n) {
    accesses.push_back(collectAccesses(k, n));
    for (const Access& a : accesses.back()) {
      users[a.array].insert(n);
      if (a.isWrite) writers[a.array].insert(n);
    }
  }
  for (const auto& [array, ws] : writers) {
    if (users[array].size() < 2) continue;
    for (int n = first; n < first + count; ++n)
      for (const Access& a : accesses[size_t(n - first)]) {
        if (a.array != array || atOwnLeadingPoint(a, k.nests[size_t(n)].loops[0].id)) continue;
        reasons.push_back(fmt::format("nest {} {} {} at another value of its leading index '{}' than the point's own "
                                      "({} is written by nest {} of the fused nests)",
                                      n, a.isWrite ? "writes" : "reads", accessText(k, a.array, a.indices),
                                      k.nests[size_t(n)].loops[0].name, k.params[size_t(array)].name, *ws.begin()));
        break;
      }
  }
  return reasons;
}

}  // namespace rtcg
