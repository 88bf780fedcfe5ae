// The coverage check (ir/Coverage.h): every element of an `out` array is written by some point.
#include "ir/Coverage.h"

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/Analysis.h"
#include "ir/Walk.h"

namespace rtcg {

namespace {

// Stores of up to this many points in all are enumerated (as the race check enumerates) into a
// bitmap of up to kElementLimit elements (a bit each: 8 MiB); beyond, only the counting argument
// and a plain cover decide. The check runs at every binding: these bound its cost.
constexpr int64_t kEnumerationLimit = int64_t(1) << 20;
constexpr int64_t kElementLimit = int64_t(1) << 26;
// A domain's points are counted exactly by visiting the points of its loops but the innermost,
// up to this many; beyond, the box of the loops bounds the count.
constexpr int64_t kCountLimit = int64_t(1) << 20;

using Point = std::map<int, int64_t>;  // loop id -> value

int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}
int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

// Calls f on every point of the loops [depth, loops.size()) of `nest` (the outer ones set in p)
// while f returns true. False when a bound cannot be evaluated (it reads an array) or f stopped.
bool forEachPoint(const LoopNest& nest, size_t depth, size_t end, Point& p, const std::function<bool(const Point&)>& f) {
  if (depth == end) return f(p);
  const Loop& l = nest.loops[depth];
  std::optional<int64_t> lo = evalInt(l.lo, p), hi = evalInt(l.hi, p);
  if (!lo || !hi) return false;
  bool go = true;
  for (int64_t v = *lo; v < *hi && go; ++v) {
    p[l.id] = v;
    go = forEachPoint(nest, depth + 1, end, p, f);
  }
  p.erase(l.id);
  return go;
}

// The points of a nest's domain: exact where the loops but the innermost have at most
// kCountLimit points (the innermost extents summed over them), else the box's count, an upper
// bound. nullopt when a bound reads an array.
std::optional<int64_t> pointCount(const LoopNest& nest) {
  if (nest.loops.empty()) return 1;
  LoopScope scope;
  for (const Loop& l : nest.loops) scope.push_back(&l);
  int64_t box = 1, outerBox = 1;
  for (size_t i = 0; i < nest.loops.size(); ++i) {
    std::optional<Interval> r = rangeOf(var(VarKind::Index, nest.loops[i].id, nest.loops[i].name, ScalarType::I32), scope);
    if (!r) return std::nullopt;
    box = saturatingMul(box, r->extent());
    if (i + 1 < nest.loops.size()) outerBox = saturatingMul(outerBox, r->extent());
  }
  if (box == 0 || outerBox > kCountLimit) return box;
  int64_t count = 0;
  Point p;
  const LoopNest& n = nest;
  bool evaluable = forEachPoint(n, 0, n.loops.size() - 1, p, [&](const Point& outer) {
    std::optional<int64_t> lo = evalInt(n.loops.back().lo, outer), hi = evalInt(n.loops.back().hi, outer);
    if (!lo || !hi) return false;
    count = saturatingAdd(count, std::max<int64_t>(0, *hi - *lo));
    return true;
  });
  return evaluable ? std::optional<int64_t>(count) : std::nullopt;
}

// One store into the array: its nest and its access (indices in loop indices only).
struct Store {
  int nest = -1;
  Access access;
};

// A store whose indices are distinct loop indices of its nest, each running over [0, extent) of
// its dimension (a dimension of extent 1 may be indexed by 0), and whose nest has no other loop:
// it writes every element.
bool plainCover(const Kernel& k, const Store& s, const std::vector<int64_t>& shape) {
  const LoopNest& nest = k.nests[size_t(s.nest)];
  std::set<int> used;
  for (size_t d = 0; d < shape.size(); ++d) {
    const Expr& idx = s.access.indices[d];
    if (idx->kind == ExprKind::IntImm && idx->intValue == 0 && shape[d] == 1) continue;
    if (idx->kind != ExprKind::Var || idx->varKind != VarKind::Index) return false;
    const Loop* loop = nullptr;
    for (const Loop& l : nest.loops)
      if (l.id == idx->varId) loop = &l;
    if (!loop || !used.insert(loop->id).second) return false;
    if (loop->lo->kind != ExprKind::IntImm || loop->lo->intValue != 0 || loop->hi->kind != ExprKind::IntImm ||
        loop->hi->intValue != shape[d])
      return false;
  }
  return used.size() == nest.loops.size();
}

std::string elementText(const std::string& name, const std::vector<int64_t>& shape, int64_t offset) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = offset % shape[d];
    offset /= shape[d];
  }
  return fmt::format("{}[{}]", name, fmt::join(index, ", "));
}

// Marks the elements the stores write; nullopt when a bound or an index cannot be evaluated.
std::optional<std::vector<bool>> writtenElements(const Kernel& k, const std::vector<Store>& stores,
                                                  const std::vector<int64_t>& shape, int64_t elements) {
  std::vector<bool> written(size_t(elements), false);
  std::set<int> nests;
  for (const Store& s : stores) nests.insert(s.nest);
  for (int n : nests) {
    Point p;
    const LoopNest& nest = k.nests[size_t(n)];
    bool complete = forEachPoint(nest, 0, nest.loops.size(), p, [&](const Point& point) {
      for (const Store& s : stores) {
        if (s.nest != n) continue;
        int64_t offset = 0;
        for (size_t d = 0; d < shape.size(); ++d) {
          std::optional<int64_t> v = evalInt(s.access.indices[d], point);
          if (!v) return false;
          if (*v < 0 || *v >= shape[d]) {  // out of bounds: the bounds check reports it
            offset = -1;
            break;
          }
          offset = offset * shape[d] + *v;
        }
        if (offset >= 0) written[size_t(offset)] = true;
      }
      return true;
    });
    if (!complete) return std::nullopt;
  }
  return written;
}

const char* kWhy = "every element of an 'out' array must be written (the others would hold whatever the memory "
                   "held, and no run could verify them); write them too, or declare it 'inout' to keep the "
                   "caller's values there";

// The check of one `out` array; false if it reported an error.
bool checkArray(const Kernel& k, int array, Diagnostics& diags) {
  const Param& param = k.params[size_t(array)];
  std::vector<Store> stores;
  std::string undecided;
  for (size_t n = 0; n < k.nests.size(); ++n)
    for (Access& a : collectAccesses(k, int(n)))
      if (a.isWrite && a.array == array) {
        if (a.indirect) undecided = "it is stored through an indirect index";
        stores.push_back({int(n), std::move(a)});
      }
  const std::vector<int64_t> shape = arrayShape(k, array);
  int64_t elements = 1;
  for (int64_t e : shape) elements = saturatingMul(elements, e);
  if (elements == 0 || stores.empty()) return true;  // an array never written is the frontend's error
  for (const Store& s : stores)
    if (s.access.indices.size() != shape.size()) return true;  // checkBounds reports it
  for (const Store& s : stores)  // the common case, decided without counting
    if (!s.access.indirect && plainCover(k, s, shape)) return true;
  auto warn = [&](const std::string& why) {
    diags.warning(param.loc, fmt::format("cannot prove with these sizes that every element of 'out' array '{}' is "
                                         "written ({}); an element left unwritten fails `rtcgc run --cpu` and the "
                                         "verification of every GPU run",
                                         param.name, why));
    return true;
  };
  if (!undecided.empty()) return warn(undecided);
  int64_t points = 0;
  for (const Store& s : stores) {
    std::optional<int64_t> c = pointCount(k.nests[size_t(s.nest)]);
    if (!c) return warn("a loop range of a nest that stores into it reads an array");
    points = saturatingAdd(points, *c);
  }
  if (points <= kEnumerationLimit && elements <= kElementLimit) {
    std::optional<std::vector<bool>> written = writtenElements(k, stores, shape, elements);
    if (!written) return warn("an index or a bound cannot be evaluated");
    int64_t missing = 0, first = -1;
    for (int64_t i = 0; i < elements; ++i)
      if (!(*written)[size_t(i)]) {
        if (first < 0) first = i;
        ++missing;
      }
    if (missing == 0) return true;
    diags.error(param.loc, fmt::format("'{}' is an 'out' array, but with these sizes no point writes {} ({} of its {} "
                                       "elements are never written): {}",
                                       param.name, elementText(param.name, shape, first), missing, elements, kWhy));
    return false;
  }
  if (points < elements) {
    diags.error(param.loc, fmt::format("'{}' is an 'out' array, but with these sizes its stores write at most {} of its "
                                       "{} elements: {}",
                                       param.name, points, elements, kWhy));
    return false;
  }
  return warn(fmt::format("its stores run at {} points, too many to enumerate, and none of them is a plain cover "
                          "of the array",
                          points));
}

}  // namespace

bool checkOutputsWritten(const Kernel& bound, Diagnostics& diags) {
  bool ok = true;
  for (size_t p = 0; p < bound.numSignatureParams(); ++p)
    if (bound.params[p].isArray() && bound.params[p].mode == ArrayMode::Out)
      ok = checkArray(bound, int(p), diags) && ok;
  return ok;
}

}  // namespace rtcg
