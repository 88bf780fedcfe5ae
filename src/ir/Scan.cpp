// Recognition of scans in their triangular form (ir/Scan.h).
#include "ir/Scan.h"

#include <fmt/format.h>

namespace rtcg {

namespace {

bool isIndex(const Expr& e, int loopId) {
  return e->kind == ExprKind::Var && e->varKind == VarKind::Index && e->varId == loopId;
}

std::optional<int64_t> intConst(const Expr& e) {
  if (e->kind == ExprKind::IntImm && isInteger(e->type)) return e->intValue;
  return std::nullopt;
}

// `s + 1` or `1 + s`: true; `s`: false; else nothing.
std::optional<bool> inclusiveEnd(const Expr& hi, int scanLoop) {
  if (isIndex(hi, scanLoop)) return false;
  if (hi->kind != ExprKind::Binary || hi->binaryOp != BinaryOp::Add) return std::nullopt;
  const Expr &a = hi->operands[0], &b = hi->operands[1];
  if ((isIndex(a, scanLoop) && intConst(b) == 1) || (isIndex(b, scanLoop) && intConst(a) == 1)) return true;
  return std::nullopt;
}

bool scannable(ScalarType t) {
  return t == ScalarType::I32 || t == ScalarType::I64 || t == ScalarType::U32 || t == ScalarType::F32 ||
         t == ScalarType::F64;
}

}  // namespace

std::optional<ScanForm> recogniseScan(const Kernel& k, int nest) {
  if (!k.isBound() || nest < 0 || nest >= int(k.nests.size())) return std::nullopt;
  const LoopNest& n = k.nests[size_t(nest)];
  if (n.body.size() != 1 || n.loops.empty()) return std::nullopt;
  const Stmt& st = n.body[0];
  if (st.kind != StmtKind::Store || st.accumulate) return std::nullopt;
  const Expr& red = st.value;
  if (red->kind != ExprKind::Reduce || red->loops.size() != 1) return std::nullopt;
  const Param& y = k.params[size_t(st.array)];
  if (!scannable(y.type) || red->type != y.type || st.indices.size() != n.loops.size()) return std::nullopt;
  // The store indices: the nest's indices, each once, each over the whole extent of its dimension.
  std::vector<int64_t> shape;
  std::vector<int> loopOfDim;
  for (size_t d = 0; d < st.indices.size(); ++d) {
    const Expr& e = st.indices[d];
    int loop = -1;
    for (size_t l = 0; l < n.loops.size(); ++l)
      if (isIndex(e, n.loops[l].id)) loop = int(l);
    if (loop < 0) return std::nullopt;
    for (int seen : loopOfDim)
      if (seen == loop) return std::nullopt;
    loopOfDim.push_back(loop);
    const Loop& L = n.loops[size_t(loop)];
    auto extent = intConst(y.shape[d]);
    if (!extent || intConst(L.lo) != 0 || intConst(L.hi) != *extent) return std::nullopt;
    shape.push_back(*extent);
  }
  // The reduction: j from 0 or head[...] to the scanned index (+ 1).
  const Loop& j = red->loops[0];
  ScanForm f;
  f.out = st.array;
  f.op = red->reduceOp;
  f.type = y.type;
  int scanDim = -1;
  for (size_t d = 0; d < loopOfDim.size() && scanDim < 0; ++d)
    if (auto incl = inclusiveEnd(j.hi, n.loops[size_t(loopOfDim[d])].id)) {
      scanDim = int(d);
      f.exclusive = !*incl;
    }
  if (scanDim < 0) return std::nullopt;
  f.dim = scanDim;
  auto sameIndices = [&](const Expr& load, int exceptDim) {
    if (load->operands.size() != st.indices.size()) return false;
    for (size_t d = 0; d < st.indices.size(); ++d)
      if (!isIndex(load->operands[d], int(d) == exceptDim ? j.id : n.loops[size_t(loopOfDim[d])].id)) return false;
    return true;
  };
  if (intConst(j.lo) != 0) {
    const Expr& lo = j.lo;
    if (lo->kind != ExprKind::Load || !sameIndices(lo, -1)) return std::nullopt;
    const Param& h = k.params[size_t(lo->array)];
    if (h.type != ScalarType::I32 || h.mode != ArrayMode::In || h.shape.size() != shape.size()) return std::nullopt;
    for (size_t d = 0; d < shape.size(); ++d)
      if (intConst(h.shape[d]) != shape[d]) return std::nullopt;
    f.head = lo->array;
  }
  const Expr& body = red->operands[0];
  if (body->kind != ExprKind::Load || body->array == f.out || !sameIndices(body, scanDim)) return std::nullopt;
  const Param& x = k.params[size_t(body->array)];
  if (x.type != f.type || x.shape.size() != shape.size()) return std::nullopt;
  for (size_t d = 0; d < shape.size(); ++d)
    if (intConst(x.shape[d]) != shape[d]) return std::nullopt;
  f.in = body->array;
  f.length = shape[size_t(scanDim)];
  for (int d = 0; d < scanDim; ++d) f.outer *= shape[size_t(d)];
  for (size_t d = size_t(scanDim) + 1; d < shape.size(); ++d) f.inner *= shape[d];
  return f;
}

std::string describeScan(const Kernel& k, const ScanForm& s) {
  return fmt::format("{} {}{} of '{}' into '{}' along dimension {} ({} line{} of {}{})", s.exclusive ? "exclusive" : "inclusive",
                     s.head >= 0 ? "segmented " : "", reduceName(s.op), k.params[size_t(s.in)].name,
                     k.params[size_t(s.out)].name, s.dim, s.lines(), s.lines() == 1 ? "" : "s", s.length,
                     s.head >= 0 ? fmt::format(", segments from '{}'", k.params[size_t(s.head)].name) : "");
}

}  // namespace rtcg
