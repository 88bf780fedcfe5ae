// The interpreter of the reference register machine (Bytecode.h). The hot path is a switch over
// compact instructions on a flat register file; errors leave through cold, out-of-line throws.
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "reference/Bytecode.h"
#include "reference/HostArray.h"
#include "reference/Reference.h"
#include "ir/IntOps.h"
#include "support/Error.h"

namespace rtcg::refvm {
namespace {

[[noreturn]] __attribute__((noinline, cold)) void throwOutOfRange(const CompiledKernel& k, const AccessSite& s,
                                                                   const Slot* frame, size_t dim, int64_t idx) {
  std::string at;
  for (const auto& [name, reg] : s.loops) at += fmt::format("{}{}={}", at.empty() ? "" : ", ", name, frame[reg].i);
  throw Error(fmt::format("kernel '{}', line {}:{}: {} index {} is out of range for dimension {} of array '{}' "
                          "(extent {}){}",
                          k.kernelName, s.loc.line, s.loc.col, s.isStore ? "store" : "load", idx, dim, k.paramNames[s.array],
                          s.extents[dim], at.empty() ? "" : " at " + at));
}

// The range's values are the inputs' (CSR row offsets): say which row holds which bounds.
[[noreturn]] __attribute__((noinline, cold)) void throwBadRange(const CompiledKernel& k, const RangeSite& s,
                                                                 const Slot* frame, int64_t lo, int64_t hi) {
  std::string at;
  for (const auto& [name, reg] : s.loops) at += fmt::format("{}{}={}", at.empty() ? "" : ", ", name, frame[reg].i);
  std::string problem = hi < lo ? fmt::format("is decreasing ({} > {})", lo, hi)
                                : fmt::format("is {}..{}, outside [0, {}] (the extent of {})", lo, hi, s.extent,
                                              s.limitingArrays);
  throw Error(fmt::format("kernel '{}', line {}:{}: the range of '{}' ({}) {}{}", k.kernelName, s.loc.line, s.loc.col,
                          s.index, s.text, problem, at.empty() ? "" : " at " + at));
}

[[noreturn]] __attribute__((noinline, cold)) void throwDivZero(const CompiledKernel& k, int32_t site) {
  SourceLoc loc = k.opLocs[site];
  throw Error(fmt::format("kernel '{}', line {}:{}: integer division by zero", k.kernelName, loc.line, loc.col));
}

std::string describePoint(const std::vector<std::pair<std::string, int32_t>>& loops, const int64_t* values) {
  std::string s;
  for (size_t l = 0; l < loops.size(); ++l) s += fmt::format("{}{}={}", l ? ", " : "", loops[l].first, values[l]);
  return loops.size() == 1 ? s : "(" + s + ")";
}

[[noreturn]] __attribute__((noinline, cold)) void throwWriteConflict(const CompiledKernel& k, const AccessSite& s,
                                                                     const Slot* frame, const int64_t* first) {
  std::vector<int64_t> here, element;
  for (const auto& [name, reg] : s.loops) here.push_back(frame[reg].i);
  for (int32_t reg : s.indexRegs) element.push_back(frame[reg].i);
  throw WriteConflictError(fmt::format(
      "kernel '{}', line {}:{}: the points {} and {} both store to element [{}] of array '{}' (an indirect "
      "index): the result would depend on the order the points run in, and the points of a nest must write "
      "distinct elements",
      k.kernelName, s.loc.line, s.loc.col, describePoint(s.loops, first), describePoint(s.loops, here.data()),
      fmt::join(element, ", "), k.paramNames[s.array]));
}

// Records the point now running (the values of the store's enclosing loops: the nest's parallel
// indices) as the writer of element `off`; throws if another point of the nest wrote it before.
inline void claim(const CompiledKernel& k, const AccessSite& s, const Slot* frame, const ArrayView& a, int64_t off) {
  if (!a.owners) return;
  const size_t width = s.loops.size();
  int64_t* o = a.owners + off * int64_t(width + 1);
  if (o[0] == 0) {
    o[0] = 1;
    for (size_t l = 0; l < width; ++l) o[l + 1] = frame[s.loops[l].second].i;
    return;
  }
  for (size_t l = 0; l < width; ++l)
    if (o[l + 1] != frame[s.loops[l].second].i) throwWriteConflict(k, s, frame, o + 1);
}

inline int64_t offsetOf(const CompiledKernel& k, const AccessSite& s, const Slot* frame) {
  const int32_t* regs = s.indexRegs.data();
  const int64_t* ext = s.extents.data();
  const size_t n = s.indexRegs.size();
  if (n == 2) {  // the common case, unrolled
    const int64_t i0 = frame[regs[0]].i, i1 = frame[regs[1]].i;
    if (uint64_t(i0) >= uint64_t(ext[0])) throwOutOfRange(k, s, frame, 0, i0);
    if (uint64_t(i1) >= uint64_t(ext[1])) throwOutOfRange(k, s, frame, 1, i1);
    return i0 * ext[1] + i1;
  }
  int64_t off = 0;
  for (size_t d = 0; d < n; ++d) {
    const int64_t idx = frame[regs[d]].i;
    if (uint64_t(idx) >= uint64_t(ext[d])) throwOutOfRange(k, s, frame, d, idx);
    off = off * ext[d] + idx;
  }
  return off;
}

// Flat offset and flat stride of one DotSum operand over [lo, hi); false if its first or last
// index is out of bounds (indices are linear in v, so the ends bound all of them).
inline bool dotOperand(const DotOperand& op, const Slot* r, int64_t lo, int64_t hi, int64_t& offset, int64_t& step) {
  offset = 0;
  step = 0;
  for (size_t d = 0; d < op.extents.size(); ++d) {
    const int64_t base = r[op.baseRegs[d]].i, c = op.coeffs[d], ext = op.extents[d];
    const int64_t first = base + c * lo, last = base + c * (hi - 1);
    if (uint64_t(first) >= uint64_t(ext) || uint64_t(last) >= uint64_t(ext)) return false;
    offset = offset * ext + first;
    step = step * ext + c;
  }
  return true;
}

// Ogita, Rump and Oishi's Dot2: the sum of products as if accumulated in twice double precision,
// then rounded once (each product's error by fma, each addition's by TwoSum, both summed on the
// side). The reference is then far more accurate than any GPU order of the same sum, so a
// comparison measures the GPU's error, not the reference's (a plain f64 sum over K = 4096 is
// itself off by ~1e-15, as much as cuBLAS's DGEMM). The loop-carried chain stays one addition.
struct Dot2 {
  double sum = 0, err = 0;
  [[gnu::always_inline]] void add(double p) {
    const double s = sum + p, t = s - sum;
    err += (sum - (s - t)) + (p - t);
    sum = s;
  }
  [[gnu::always_inline]] void addProduct(double a, double b) {
    const double p = a * b;
    err += std::fma(a, b, -p);
    add(p);
  }
  // An infinity or NaN along the way: the plain sum's value (`sum` is exactly the plain running
  // sum, so IEEE's inf, -inf or NaN), not the NaN the error terms then hold.
  double value() const { return std::isfinite(sum) && std::isfinite(err) ? sum + err : sum; }
};

// The loops of runDot: a sum, or a sum of products (b at any stride). Generic and, on x86-64 CPUs
// that have it, compiled for the FMA instruction (std::fma is otherwise a library call per term).
// Always inlined, so that the FMA variant below compiles the same loop for its target.
template <bool Products>
[[gnu::always_inline]] inline double dotLoop(const double* a, int64_t stepA, const double* b, int64_t stepB, int64_t n) {
  Dot2 acc;
  for (int64_t v = 0; v < n; ++v) {
    if constexpr (Products) acc.addProduct(a[v * stepA], b[v * stepB]);
    else acc.add(a[v * stepA]);
  }
  return acc.value();
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("fma"))) double dotProductsFma(const double* a, int64_t stepA, const double* b, int64_t stepB,
                                                     int64_t n) {
  return dotLoop<true>(a, stepA, b, stepB, n);
}
const bool kHaveFma = __builtin_cpu_supports("fma");
#endif
inline double dotProducts(const double* a, int64_t stepA, const double* b, int64_t stepB, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (kHaveFma) return dotProductsFma(a, stepA, b, stepB, n);
#endif
  return dotLoop<true>(a, stepA, b, stepB, n);
}

inline bool runDot(const DotSum& dot, Slot* r, const ArrayView* arrays, double& result) {
  const int64_t lo = r[dot.lo].i, hi = r[dot.hi].i;
  if (hi <= lo) {
    result = 0.0;
    return true;
  }
  const int64_t n = hi - lo;
  int64_t offA, stepA;
  if (!dotOperand(dot.operands[0], r, lo, hi, offA, stepA)) return false;
  const double* a = static_cast<const double*>(arrays[dot.operands[0].array].data) + offA;
  if (dot.operands.size() == 1) {
    result = dotLoop<false>(a, stepA, nullptr, 0, n);
    return true;
  }
  int64_t offB, stepB;
  if (!dotOperand(dot.operands[1], r, lo, hi, offB, stepB)) return false;
  result = dotProducts(a, stepA, static_cast<const double*>(arrays[dot.operands[1].array].data) + offB, stepB, n);
  return true;
}

inline double fmaxNan(double a, double b) { return (a > b || std::isnan(a)) ? a : b; }
inline double fminNan(double a, double b) { return (a < b || std::isnan(a)) ? a : b; }

}  // namespace

namespace {

// Marks element `off` of the array of `s` as written, in the tracking instantiation only.
template <bool kTrackWrites>
inline void markWritten(const ArrayView* arrays, const AccessSite& s, int64_t off) {
  if constexpr (kTrackWrites) {
    if (uint8_t* w = arrays[s.array].written) w[off] = 1;
  }
}

// The integer element of type T that site `s` reads.
template <class T>
inline int64_t loadInt(const CompiledKernel& k, const AccessSite& s, const Slot* r, const ArrayView* arrays) {
  return static_cast<const T*>(arrays[s.array].data)[offsetOf(k, s, r)];
}

// Stores `v` as an element of type T at site `s` (converted modulo 2^bits, as the device's
// conversion wraps), marks it written and claims it.
template <class T, bool kTrackWrites>
inline void storeInt(const CompiledKernel& k, const AccessSite& s, const Slot* r, const ArrayView* arrays, int64_t v) {
  const int64_t off = offsetOf(k, s, r);
  static_cast<T*>(arrays[s.array].data)[off] = T(v);
  markWritten<kTrackWrites>(arrays, s, off);
  if (s.claims) claim(k, s, r, arrays[s.array], off);
}

template <bool kTrackWrites>
void run(const CompiledKernel& k, const Code& code, Slot* r, const ArrayView* arrays) {
  const Instr* ins = code.instrs.data();
  const int32_t n = int32_t(code.instrs.size());
  const AccessSite* sites = k.sites.data();
  const AffineSum* affines = k.affines.data();
  int32_t pc = 0;
  while (pc < n) {
    const Instr& I = ins[pc++];
    switch (I.op) {
      case Op::Move: r[I.dst] = r[I.a]; break;
      case Op::Jump: pc = I.c; break;
      case Op::JumpIfZero: if (!r[I.a].i) pc = I.c; break;
      case Op::JumpIfNonZero: if (r[I.a].i) pc = I.c; break;
      case Op::ForInit:
        r[I.dst].i = r[I.a].i;
        if (r[I.dst].i >= r[I.b].i) pc = I.c;
        break;
      case Op::ForNext:
        if (++r[I.dst].i < r[I.b].i) pc = I.c;
        break;
      case Op::CheckRange: {
        const int64_t lo = r[I.a].i, hi = r[I.b].i;
        if (hi < lo || lo < 0 || hi > k.ranges[size_t(I.c)].extent) throwBadRange(k, k.ranges[size_t(I.c)], r, lo, hi);
        break;
      }
      case Op::Affine: {
        const AffineSum& s = affines[I.a];
        int64_t v = s.constant;
        for (const auto& [coeff, reg] : s.terms) v = wrapAdd(v, wrapMul(coeff, r[reg].i));
        r[I.dst].i = v;
        break;
      }
      case Op::FAdd: r[I.dst].f = r[I.a].f + r[I.b].f; break;
      case Op::FSub: r[I.dst].f = r[I.a].f - r[I.b].f; break;
      case Op::FMul: r[I.dst].f = r[I.a].f * r[I.b].f; break;
      case Op::FDiv: r[I.dst].f = r[I.a].f / r[I.b].f; break;
      case Op::FNeg: r[I.dst].f = -r[I.a].f; break;
      case Op::FMin: r[I.dst].f = fminNan(r[I.a].f, r[I.b].f); break;
      case Op::FMax: r[I.dst].f = fmaxNan(r[I.a].f, r[I.b].f); break;
      case Op::FPow: r[I.dst].f = std::pow(r[I.a].f, r[I.b].f); break;
      case Op::FFma: r[I.dst].f = std::fma(r[I.a].f, r[I.b].f, r[I.c].f); break;
      case Op::FSqrt: r[I.dst].f = std::sqrt(r[I.a].f); break;
      case Op::FExp: r[I.dst].f = std::exp(r[I.a].f); break;
      case Op::FLog: r[I.dst].f = std::log(r[I.a].f); break;
      case Op::FSin: r[I.dst].f = std::sin(r[I.a].f); break;
      case Op::FCos: r[I.dst].f = std::cos(r[I.a].f); break;
      case Op::FAbs: r[I.dst].f = std::fabs(r[I.a].f); break;
      case Op::FFloor: r[I.dst].f = std::floor(r[I.a].f); break;
      case Op::FLt: r[I.dst].i = r[I.a].f < r[I.b].f; break;
      case Op::FLe: r[I.dst].i = r[I.a].f <= r[I.b].f; break;
      case Op::FGt: r[I.dst].i = r[I.a].f > r[I.b].f; break;
      case Op::FGe: r[I.dst].i = r[I.a].f >= r[I.b].f; break;
      case Op::FEq: r[I.dst].i = r[I.a].f == r[I.b].f; break;
      case Op::FNe: r[I.dst].i = r[I.a].f != r[I.b].f; break;
      case Op::IAdd: r[I.dst].i = wrapAdd(r[I.a].i, r[I.b].i); break;
      case Op::ISub: r[I.dst].i = wrapSub(r[I.a].i, r[I.b].i); break;
      case Op::IMul: r[I.dst].i = wrapMul(r[I.a].i, r[I.b].i); break;
      case Op::IDiv:
        if (r[I.b].i == 0) throwDivZero(k, I.c);
        r[I.dst].i = floorDiv(r[I.a].i, r[I.b].i);
        break;
      case Op::IMod:
        if (r[I.b].i == 0) throwDivZero(k, I.c);
        r[I.dst].i = floorMod(r[I.a].i, r[I.b].i);
        break;
      case Op::INeg: r[I.dst].i = wrapSub(0, r[I.a].i); break;
      case Op::IMin: r[I.dst].i = std::min(r[I.a].i, r[I.b].i); break;
      case Op::IMax: r[I.dst].i = std::max(r[I.a].i, r[I.b].i); break;
      case Op::IAbs: r[I.dst].i = r[I.a].i < 0 ? wrapSub(0, r[I.a].i) : r[I.a].i; break;
      case Op::IFma: r[I.dst].i = wrapAdd(wrapMul(r[I.a].i, r[I.b].i), r[I.c].i); break;
      case Op::ILt: r[I.dst].i = r[I.a].i < r[I.b].i; break;
      case Op::ILe: r[I.dst].i = r[I.a].i <= r[I.b].i; break;
      case Op::IGt: r[I.dst].i = r[I.a].i > r[I.b].i; break;
      case Op::IGe: r[I.dst].i = r[I.a].i >= r[I.b].i; break;
      case Op::IEq: r[I.dst].i = r[I.a].i == r[I.b].i; break;
      case Op::INe: r[I.dst].i = r[I.a].i != r[I.b].i; break;
      case Op::Not: r[I.dst].i = !r[I.a].i; break;
      case Op::FToF32: r[I.dst].f = double(float(r[I.a].f)); break;
      case Op::FToInt: r[I.dst].i = truncateToInt(r[I.a].f, ScalarType(I.b)); break;
      case Op::IToF: r[I.dst].f = double(r[I.a].i); break;
      case Op::IToF32: r[I.dst].f = double(float(r[I.a].i)); break;
      case Op::FToHalf: r[I.dst].f = roundToFloat(r[I.a].f, ScalarType(I.b)); break;
      case Op::IToHalf: r[I.dst].f = intToFloat(r[I.a].i, ScalarType(I.b)); break;
      case Op::IWrap: r[I.dst].i = wrapToInt(r[I.a].i, ScalarType(I.b)); break;
      case Op::ToBool: r[I.dst].i = r[I.a].i != 0; break;
      case Op::FToBool: r[I.dst].i = r[I.a].f != 0.0; break;
      case Op::DotF: {
        const DotSum& dot = k.dots[I.a];
        if (runDot(dot, r, arrays, r[I.dst].f)) pc = dot.skipPc;
        break;
      }
      case Op::LoadF: {
        const AccessSite& s = sites[I.a];
        r[I.dst].f = static_cast<const double*>(arrays[s.array].data)[offsetOf(k, s, r)];
        break;
      }
      case Op::LoadI32: r[I.dst].i = loadInt<int32_t>(k, sites[I.a], r, arrays); break;
      case Op::LoadI64: r[I.dst].i = loadInt<int64_t>(k, sites[I.a], r, arrays); break;
      case Op::LoadI8: r[I.dst].i = loadInt<int8_t>(k, sites[I.a], r, arrays); break;
      case Op::LoadU8: r[I.dst].i = loadInt<uint8_t>(k, sites[I.a], r, arrays); break;
      case Op::LoadU32: r[I.dst].i = loadInt<uint32_t>(k, sites[I.a], r, arrays); break;
      case Op::StoreF: {
        const AccessSite& s = sites[I.a];
        const int64_t off = offsetOf(k, s, r);
        static_cast<double*>(arrays[s.array].data)[off] = r[I.b].f;
        markWritten<kTrackWrites>(arrays, s, off);
        if (s.claims) claim(k, s, r, arrays[s.array], off);
        break;
      }
      case Op::StoreI32: storeInt<int32_t, kTrackWrites>(k, sites[I.a], r, arrays, r[I.b].i); break;
      case Op::StoreI64: storeInt<int64_t, kTrackWrites>(k, sites[I.a], r, arrays, r[I.b].i); break;
      case Op::StoreI8: storeInt<int8_t, kTrackWrites>(k, sites[I.a], r, arrays, r[I.b].i); break;
      case Op::StoreU8: storeInt<uint8_t, kTrackWrites>(k, sites[I.a], r, arrays, r[I.b].i); break;
      case Op::StoreU32: storeInt<uint32_t, kTrackWrites>(k, sites[I.a], r, arrays, r[I.b].i); break;
    }
  }
}

}  // namespace

void execute(const CompiledKernel& k, const Code& code, Slot* frame, const ArrayView* arrays, bool trackWrites) {
  if (trackWrites) run<true>(k, code, frame, arrays);
  else run<false>(k, code, frame, arrays);
}

}  // namespace rtcg::refvm
