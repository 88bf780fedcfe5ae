#include "codegen/Emitter.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <numeric>
#include <set>

#include "codegen/CAst.h"
#include "codegen/CPrinter.h"
#include "schedule/Domain.h"
#include "support/Error.h"

namespace rtcg {

namespace C = rtcg::c;

namespace {

// ---------------------------------------------------------------------------------------------
// Unique C identifiers. DSL names are kept where possible; clashes with C/CUDA words, the
// functions the emitted code calls, and earlier names get a numeric suffix.

const std::set<std::string>& reservedWords() {
  static const std::set<std::string> words = {
      // C/C++ keywords and type words
      "auto", "bool", "break", "case", "char", "class", "const", "constexpr", "continue", "default",
      "delete", "do", "double", "else", "enum", "extern", "false", "float", "for", "goto", "if",
      "inline", "int", "long", "namespace", "new", "operator", "private", "public", "register",
      "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template",
      "this", "true", "typedef", "union", "unsigned", "using", "virtual", "void", "volatile",
      "while", "asm", "catch", "throw", "try", "typename", "friend", "mutable", "explicit",
      "export", "decltype", "nullptr", "alignas", "alignof", "static_assert", "thread_local",
      "and", "or", "not", "xor", "bitand", "bitor", "compl",
      // CUDA built-ins
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3",
      // functions the emitted code calls
      "sqrt", "sqrtf", "exp", "expf", "log", "logf", "sin", "sinf", "cos", "cosf", "fabs", "fabsf",
      "abs", "llabs", "fmin", "fminf", "fmax", "fmaxf", "min", "max", "pow", "powf", "fma", "fmaf",
      "floor", "floorf", "fmod", "fmodf", "__int_as_float", "__longlong_as_double",
      "rtcg_floordiv", "rtcg_floormod", "__syncthreads", "__shfl_down_sync", "rtcg_smem_f32",
      "rtcg_smem_f64", "rtcg_smem_i32", "rtcg_smem_i64", "__threadfence", "__ldcg", "atomicInc", "atomicAdd",
      "__ldg", "__shfl_xor_sync", "__builtin_assume_aligned", "float4", "int4", "double2", "longlong2",
      "make_float4", "make_int4", "make_double2", "make_longlong2", "rtcg_cp_async4", "rtcg_cp_async8",
      "rtcg_cp_async16", "rtcg_cp_async_commit", "rtcg_cp_async_wait0", "rtcg_cp_async_wait1", "rtcg_cp_async_wait2"};
  return words;
}

class Names {
 public:
  std::string fresh(const std::string& base) {
    std::string s;
    for (char ch : base) s += (std::isalnum((unsigned char)ch) || ch == '_') ? ch : '_';
    if (s.empty() || std::isdigit((unsigned char)s[0])) s = "v_" + s;
    if (s.rfind("__", 0) == 0) s = "v" + s;  // leading __ is reserved for the implementation
    std::string name = s;
    for (int n = 2; reservedWords().count(name) || used_.count(name); ++n) name = fmt::format("{}_{}", s, n);
    used_.insert(name);
    return name;
  }

 private:
  std::set<std::string> used_;
};

// ---------------------------------------------------------------------------------------------
// Small IR helpers

void collectVarIds(const Expr& e, VarKind kind, std::set<int>& out) {
  if (!e) return;
  if (e->kind == ExprKind::Var && e->varKind == kind) out.insert(e->varId);
  for (const Expr& o : e->operands) collectVarIds(o, kind, out);
  for (const Loop& l : e->loops) {
    collectVarIds(l.lo, kind, out);
    collectVarIds(l.hi, kind, out);
  }
}

const char* mathName(MathFn fn, ScalarType t) {
  bool f32 = t == ScalarType::F32;
  switch (fn) {
    case MathFn::Sqrt: return f32 ? "sqrtf" : "sqrt";
    case MathFn::Exp: return f32 ? "expf" : "exp";
    case MathFn::Log: return f32 ? "logf" : "log";
    case MathFn::Sin: return f32 ? "sinf" : "sin";
    case MathFn::Cos: return f32 ? "cosf" : "cos";
    case MathFn::Abs: return f32 ? "fabsf" : "fabs";
    case MathFn::Min: return f32 ? "fminf" : "fmin";
    case MathFn::Max: return f32 ? "fmaxf" : "fmax";
    case MathFn::Pow: return f32 ? "powf" : "pow";
    case MathFn::Fma: return f32 ? "fmaf" : "fma";
    case MathFn::Floor: return f32 ? "floorf" : "floor";
  }
  RTCG_ASSERT(false, "bad MathFn");
}

// The CUDA vector type of 16 bytes of `t` (f32, i32, f64, i64).
std::string vectorTypeName(ScalarType t) {
  switch (t) {
    case ScalarType::F32: return "float4";
    case ScalarType::I32: return "int4";
    case ScalarType::F64: return "double2";
    case ScalarType::I64: return "longlong2";
    case ScalarType::Bool: break;
  }
  RTCG_ASSERT(false, "no 16-byte vector of this element type");
}

C::ExprP literalOf(ScalarType t, int64_t iv, double fv) {
  switch (t) {
    case ScalarType::Bool: return C::boolLit(iv != 0);
    case ScalarType::I32: return C::intLit(iv);
    case ScalarType::I64: return C::intLit(iv, true);
    case ScalarType::F32: return C::floatLit(fv, true);
    case ScalarType::F64: return C::floatLit(fv, false);
  }
  RTCG_ASSERT(false, "bad ScalarType");
}

C::ExprP reductionIdentity(ReduceOp op, ScalarType t) {
  const double inf = std::numeric_limits<double>::infinity();
  bool i64 = t == ScalarType::I64;
  int64_t lowest = i64 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int32_t>::min();
  int64_t highest = i64 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int32_t>::max();
  switch (op) {
    case ReduceOp::Sum: return literalOf(t, 0, 0.0);
    case ReduceOp::Product: return literalOf(t, 1, 1.0);
    case ReduceOp::Max: return literalOf(t, lowest, -inf);
    case ReduceOp::Min: return literalOf(t, highest, inf);
  }
  RTCG_ASSERT(false, "bad ReduceOp");
}

// acc = acc (op) v
C::Stmt combine(ReduceOp op, ScalarType t, const C::ExprP& acc, const C::ExprP& v) {
  switch (op) {
    case ReduceOp::Sum: return C::assign(acc, "+=", v);
    case ReduceOp::Product: return C::assign(acc, "*=", v);
    case ReduceOp::Max:
      return C::assign(acc, "=", C::call(isFloat(t) ? mathName(MathFn::Max, t) : "max", {acc, v}));
    case ReduceOp::Min:
      return C::assign(acc, "=", C::call(isFloat(t) ? mathName(MathFn::Min, t) : "min", {acc, v}));
  }
  RTCG_ASSERT(false, "bad ReduceOp");
}

C::Unroll unrollOf(Placement p) { return p == Placement::Unroll ? C::Unroll::Full : C::Unroll::Never; }

// Partials the last block of a reduction split across blocks reads per group of points before
// combining them (crossBlockCombine): a few dozen loads in flight hide the memory latency without
// holding many registers.
constexpr int64_t kCombineLoadsInFlight = 32;

// ---------------------------------------------------------------------------------------------
// One loop nest.

// Where an index value is first known: at the top of the kernel (grid/thread parts only),
// inside the serial loops of parallel indices, or per register-tile point.
enum class Level { Top = 0, Group = 1, Point = 2 };

struct ParallelIndex {
  const NestIndex* ni = nullptr;
  const Loop* loop = nullptr;
  const IndexSchedule* sched = nullptr;
  std::vector<int64_t> ext, stride;
  Level level = Level::Top;
  Level guardLevel = Level::Top;
  bool exact = false;           // the parts cover the domain exactly: no guard
  C::ExprP base;                // lo + grid/thread terms
  std::vector<std::string> loopVars;  // per part, for serial/unroll parts
  std::string pointName;              // C name of a per-point index
};

// A staged array's tile in shared memory, as the reads served from it see it.
struct StageRef {
  std::string storage;  // the shared array
  C::ExprP offset;      // of the tile (the buffer read) in it, in elements
  std::vector<C::ExprP> origins;  // per dimension: the array index of the tile's first element
  std::vector<int64_t> pitch;     // per dimension: elements between consecutive indices in the tile
  // Per dimension: the extent to clamp indices into (0: none), for whole dimensions that the
  // block's points overrun (StagedDim::clipped). In-domain indices are in range already; a point
  // outside the domain then reads inside the tile, never past it.
  std::vector<int64_t> clampTo;
};

// Where a tile copy goes, and whether the reads of the environment are pointed at it afterwards.
struct TileTarget {
  C::ExprP buffer;  // which buffer of a double-buffered tile (null: the first)
  bool pointReads = true;
};

// Per-point environment for lowering IR expressions.
struct Env {
  std::map<int, C::ExprP> vars;                     // loop and let ids
  std::map<const ExprNode*, C::ExprP> hoisted;      // reductions computed ahead, by node
  std::map<int, StageRef> staged;                   // arrays read from shared memory, by param
};

class NestEmitter {
 public:
  NestEmitter(const Kernel& k, int nest, const NestSchedule& s, bool& needFloorInt, bool& needFloorLL)
      : k_(k), nestIdx_(nest), nest_(k.nests[nest]), sched_(s), needFloorInt_(needFloorInt),
        needFloorLL_(needFloorLL) {}

  // Module-scope arrays the function uses (global scratch of a reduction split across blocks) are
  // appended to `globals`.
  C::Function emit(LaunchSpec& launch, const std::string& indexType, std::vector<C::GlobalArray>& globals);

 private:
  const Kernel& k_;
  int nestIdx_;
  const LoopNest& nest_;
  const NestSchedule& sched_;
  bool& needFloorInt_;
  bool& needFloorLL_;
  Names names_;
  std::string idx_;  // "int" or "long long"
  std::vector<std::string> paramNames_;
  std::vector<NestIndex> indices_;
  std::vector<ParallelIndex> par_;
  std::map<int, IndexRange> ranges_;  // every loop id of the nest -> hull of its values
  std::map<int, std::string> letNames_;

  struct RegPart {
    int par;   // index into par_
    int part;  // part number in its schedule
    int64_t extent;
  };
  std::vector<RegPart> regParts_;
  int64_t regPoints_ = 1;

  // Cooperative code (shared-memory staging): every thread of the block reaches every
  // __syncthreads, so threads outside the domain do not return early; their work is guarded.
  bool cooperative_ = false;
  StagingPlan plan_;
  std::vector<std::vector<Expr>> groups_;  // hoisted reductions, grouped by loops
  struct TileStorage {
    std::string storage;
    int64_t offset = 0;
  };
  std::vector<TileStorage> tiles_;  // per plan_.arrays entry
  C::ExprP tid_;                    // linear thread index in the block
  int64_t threads_ = 1;             // threads per block
  // Split reductions: the thread axes of reduction indices. A thread's reduction lane (its
  // coordinates on those axes) and slot (its other coordinates) index the combine buffers.
  bool redAxis_[3] = {false, false, false};
  int64_t lanes_ = 1;               // threads that share one output point
  C::ExprP lane_, slot_;
  std::map<ScalarType, std::string> combineBuffers_;
  // A group reduced over some of the reduction thread axes only combines the lanes of those (the
  // threads that differ on the other axes hold the same partial): lane and slot per axis mask.
  struct LaneSet {
    C::ExprP lane, slot;
    int64_t lanes = 1;
  };
  std::map<int, LaneSet> laneSets_;  // by mask of thread axes (bit a for axis a)
  int fullMask_ = 0;                 // every reduction thread axis
  int groupMask(const std::vector<Expr>& g) const;
  bool splitGroup(const std::vector<Expr>& g) const { return groupMask(g) != 0; }
  // The accumulator types that need a combine buffer in shared memory (with reduction thread
  // axes): those of groups split across threads and of values combined across blocks, each once,
  // in that order.
  std::vector<ScalarType> combineBufferTypes() const {
    std::vector<ScalarType> types;
    auto add = [&](ScalarType t) {
      if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
    };
    for (const std::vector<Expr>& g : groups_)
      if (splitGroup(g))
        for (const Expr& r : g) add(r->type);
    for (const auto& [t, v] : xb_.values) add(t);
    return types;
  }
  void combineLanes(ReduceOp op, ScalarType t, const C::ExprP& acc, std::vector<C::Stmt>& out, int mask);

  // A reduction split across blocks (crossBlockPlan): the scratch arrays and this block's place.
  CrossBlockPlan xb_;
  std::map<ScalarType, std::string> partials_;  // global partials array per accumulator type
  std::string arrivals_;                        // global arrival counters
  std::string lastBlock_;                       // shared flag: this block arrived last
  C::ExprP tile_, rblock_;                      // linear tile and block-within-tile coordinates
  void crossBlockCombine(const std::vector<std::map<const ExprNode*, C::ExprP>>& accs, const C::ExprP& position,
                         std::vector<C::Stmt>& out, std::vector<std::vector<C::Stmt>> pointStatements);

  const IndexSchedule& scheduleOf(const std::string& name) const {
    const IndexSchedule* s = sched_.find(name);
    RTCG_ASSERT(s != nullptr, "validated schedule lacks index " + name);
    return *s;
  }
  // An index constant: int, or long long when it does not fit.
  static C::ExprP lit(int64_t v) {
    return C::intLit(v, v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max());
  }

  C::ExprP lower(const Expr& e, Env& env, std::vector<C::Stmt>& out);
  C::ExprP lowerAccess(int array, const std::vector<Expr>& indices, Env& env, std::vector<C::Stmt>& out);
  C::ExprP lowerReduction(const Expr& e, Env& env, std::vector<C::Stmt>& out);
  void emitReductionLoops(const std::vector<Loop>& loops, size_t q, Env env, std::vector<C::Stmt>& out,
                          const std::function<void(Env&, std::vector<C::Stmt>&)>& inner, int stageGroup = -1);
  C::ExprP uniformBase(const ParallelIndex& p, const C::ExprP& pipelinedAt = nullptr) const;
  std::map<std::string, C::ExprP> tileBases(const C::ExprP& stepBase = nullptr, const C::ExprP& pipelinedAt = nullptr) const;
  enum class TileCopy { Direct, LoadToRegisters, StoreFromRegisters, Async };
  StageRef tileRef(size_t t, const std::map<std::string, C::ExprP>& bases, const C::ExprP& buffer,
                   std::vector<C::Stmt>& out);
  void stageTile(size_t t, const std::map<std::string, C::ExprP>& bases, Env& env, std::vector<C::Stmt>& out,
                 TileCopy mode = TileCopy::Direct, const std::vector<std::string>& regs = {},
                 const TileTarget& target = TileTarget());
  void stageStep(int group, const C::ExprP& stepBase, Env& env, std::vector<C::Stmt>& out,
                 TileCopy mode = TileCopy::Direct, const TileTarget& target = TileTarget());
  void readStep(int group, const C::ExprP& stepBase, const C::ExprP& buffer, Env& env, std::vector<C::Stmt>& out);
  int64_t copyTrips(size_t t) const;
  int64_t copyVector(size_t t) const;
  bool asyncRuns(size_t t) const;
  int64_t baseDivisor(const std::string& key, int group) const;
  bool declarePrefetch(int group, std::vector<C::Stmt>& out);
  // The base of a step and whether it exists: step n from the first one (fromStart) or n after
  // the current one.
  using StepAt = std::function<std::pair<C::ExprP, C::ExprP>(int64_t n, bool fromStart)>;
  void copyStep(int group, const C::ExprP& step, const StepAt& stepAt, Env& env, std::vector<C::Stmt>& before,
                std::vector<C::Stmt>& stage, std::vector<C::Stmt>& after);
  std::map<size_t, std::vector<std::string>> prefetchRegs_;  // per staged tile: prefetch registers
  // Positions pipelined (see findPositionPipeline): the step group whose one step per position is
  // copied ahead, and the serial part of a parallel index whose positions are pipelined.
  struct PositionPipeline {
    int group = -1;
    ParallelIndex* par = nullptr;
    size_t part = 0;
    C::ExprP stepBase;  // the reduction's lo: the one step's base
  };
  PositionPipeline pipe_;
  struct LoopPart {
    ParallelIndex* p;
    size_t part;
  };
  void findPositionPipeline(const std::vector<LoopPart>& loopParts, size_t& pipeLoop);
  std::map<std::string, C::ExprP> stepBases(int group, const C::ExprP& stepBase) const;
  bool hasStepStaging(int group) const;
  bool readsOnlyTiles(const std::vector<Expr>& g, const Env& env) const;
  bool nonNegative(const Expr& e) const;

  C::ExprP indexValue(const ParallelIndex& p, const std::vector<int64_t>* regValues);
  C::ExprP guardOf(const ParallelIndex& p, Env& env, std::vector<C::Stmt>& out);
  std::vector<int64_t> regValuesOf(int64_t point) const;
  void declarePointIndices(int64_t point, Env& env, std::vector<C::Stmt>& out, C::ExprP& guard);
  void emitStatements(Env& env, std::vector<C::Stmt>& out);
};

bool NestEmitter::nonNegative(const Expr& e) const {
  auto r = rangeOfInt(e, k_, ranges_);
  return r && r->lo >= 0;
}

C::ExprP NestEmitter::lowerAccess(int array, const std::vector<Expr>& indices, Env& env, std::vector<C::Stmt>& out) {
  const Param& p = k_.params[array];
  RTCG_ASSERT(p.shape.size() == indices.size(), "access rank differs from the array's");
  auto staged = env.staged.find(array);
  if (staged != env.staged.end()) {
    // Served from the shared tile: (index - origin) * pitch per dimension.
    const StageRef& ref = staged->second;
    std::vector<C::ExprP> terms{ref.offset};
    for (size_t d = 0; d < indices.size(); ++d) {
      C::ExprP e = lower(indices[d], env, out);
      if (ref.clampTo[d] > 0) e = C::call("min", {C::call("max", {e, lit(0)}), lit(ref.clampTo[d] - 1)});
      const C::ExprP& o = ref.origins[d];
      bool zero = o->kind == C::ExprKind::IntLit && o->intValue == 0;
      terms.push_back(C::product(zero ? e : C::binary("-", e, o), lit(ref.pitch[d])));
    }
    return C::index(C::name(ref.storage), C::sum(terms));
  }
  C::ExprP flat;
  for (size_t d = 0; d < indices.size(); ++d) {
    C::ExprP e = lower(indices[d], env, out);
    if (d == 0) {
      flat = idx_ == "long long" && indices.size() > 1 ? C::castTo("long long", e) : e;
      continue;
    }
    auto extent = constIntValue(p.shape[d], k_);
    RTCG_ASSERT(extent.has_value(), "array extent of a bound kernel is not constant");
    flat = C::sum({C::product(flat, lit(*extent)), e});
  }
  if (!flat) flat = lit(0);  // a zero-dimensional array has one element
  return C::index(C::name(paramNames_[array]), flat);
}

C::ExprP NestEmitter::lower(const Expr& e, Env& env, std::vector<C::Stmt>& out) {
  auto op = [&](int i) { return lower(e->operands[i], env, out); };
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm: return literalOf(e->type, e->intValue, e->floatValue);
    case ExprKind::Var:
      switch (e->varKind) {
        case VarKind::Size:
        case VarKind::Scalar:
          RTCG_ASSERT(e->varId >= 0 && e->varId < (int)paramNames_.size(), "bad parameter id");
          return C::name(paramNames_[e->varId]);
        case VarKind::Index:
        case VarKind::Let: {
          auto it = env.vars.find(e->varId);
          RTCG_ASSERT(it != env.vars.end(), "variable '" + e->name + "' used outside its scope");
          return it->second;
        }
      }
      RTCG_ASSERT(false, "bad VarKind");
    case ExprKind::Load: {
      auto it = env.hoisted.find(e.get());  // loaded ahead of the reductions (`loads: early`)
      if (it != env.hoisted.end()) return it->second;
      return lowerAccess(e->array, e->operands, env, out);
    }
    case ExprKind::Unary: return C::unary(e->unaryOp == UnaryOp::Neg ? "-" : "!", op(0));
    case ExprKind::Binary: {
      C::ExprP a = op(0), b = op(1);
      ScalarType t = e->operands[0]->type;
      if ((e->binaryOp == BinaryOp::Div || e->binaryOp == BinaryOp::Mod) && isInteger(t)) {
        // Floor semantics: C's truncating / and % agree when both sides are non-negative.
        if (nonNegative(e->operands[0]) && nonNegative(e->operands[1]))
          return C::binary(opSymbol(e->binaryOp), a, b);
        (t == ScalarType::I64 ? needFloorLL_ : needFloorInt_) = true;
        return C::call(e->binaryOp == BinaryOp::Div ? "rtcg_floordiv" : "rtcg_floormod", {a, b});
      }
      if (e->binaryOp == BinaryOp::Mod && isFloat(t)) return C::call(t == ScalarType::F32 ? "fmodf" : "fmod", {a, b});
      return C::binary(opSymbol(e->binaryOp), a, b);
    }
    case ExprKind::Call: {
      std::vector<C::ExprP> args;
      for (size_t i = 0; i < e->operands.size(); ++i) args.push_back(op((int)i));
      ScalarType t = e->operands[0]->type;
      if (isFloat(t)) return C::call(mathName(e->mathFn, t), args);
      if (e->mathFn == MathFn::Min || e->mathFn == MathFn::Max)
        return C::call(e->mathFn == MathFn::Min ? "min" : "max", args);
      if (e->mathFn == MathFn::Abs) return C::call(t == ScalarType::I64 ? "llabs" : "abs", args);
      // Other functions of integers are computed in double and converted back.
      for (auto& a : args) a = C::castTo("double", a);
      return C::castTo(cudaTypeName(e->type), C::call(mathName(e->mathFn, ScalarType::F64), args));
    }
    case ExprKind::Cast: return C::castTo(cudaTypeName(e->type), op(0));
    case ExprKind::Select: return C::ternary(op(0), op(1), op(2));
    case ExprKind::Reduce: {
      auto it = env.hoisted.find(e.get());
      if (it != env.hoisted.end()) return it->second;
      return lowerReduction(e, env, out);
    }
  }
  RTCG_ASSERT(false, "bad ExprKind");
}

// A reduction computed where it is used: an accumulator and its loops.
C::ExprP NestEmitter::lowerReduction(const Expr& e, Env& env, std::vector<C::Stmt>& out) {
  std::string acc = names_.fresh(fmt::format("{}_{}", reduceName(e->reduceOp), e->loops.front().name));
  out.push_back(C::decl(cudaTypeName(e->type), acc, reductionIdentity(e->reduceOp, e->type), false));
  emitReductionLoops(e->loops, 0, env, out, [&](Env& inner, std::vector<C::Stmt>& body) {
    C::ExprP v = lower(e->operands[0], inner, body);
    body.push_back(combine(e->reduceOp, e->type, C::name(acc), v));
  });
  return C::name(acc);
}

// The loops of reduction loops[q..], split as the schedule says, around `inner`. With
// `stageGroup` (a hoisted group with arrays staged per step), every iteration of the outer part of
// the first loop copies the step's tiles into shared memory, between barriers, before the inner parts.
void NestEmitter::emitReductionLoops(const std::vector<Loop>& loops, size_t q, Env env, std::vector<C::Stmt>& out,
                                     const std::function<void(Env&, std::vector<C::Stmt>&)>& inner, int stageGroup) {
  if (q == loops.size()) {
    inner(env, out);
    return;
  }
  const bool staging = q == 0 && stageGroup >= 0 && hasStepStaging(stageGroup);
  const Loop& l = loops[q];
  const IndexSchedule& is = scheduleOf(l.name);
  C::ExprP lo = lower(l.lo, env, out), hi = lower(l.hi, env, out);
  auto isCoordinate = [](Placement pl) { return isThreadPlacement(pl) || isGridPlacement(pl); };
  if (is.parts.size() == 1 && !isCoordinate(is.parts[0].place)) {
    std::string v = names_.fresh(l.name);
    env.vars[l.id] = C::name(v);
    std::vector<C::Stmt> body, after;
    if (staging) {
      // Each step is one iteration: the tile is the footprint of this value of the index.
      bool zeroLo = lo->kind == C::ExprKind::IntLit && lo->intValue == 0;
      C::ExprP step = zeroLo ? C::name(v) : C::binary("-", C::name(v), lo);
      StepAt stepAt = [&](int64_t n, bool fromStart) {
        C::ExprP at = C::sum({fromStart ? lo : C::name(v), lit(n)});
        return std::pair{at, C::binary("<", at, hi)};
      };
      copyStep(stageGroup, step, stepAt, env, out, body, after);
    }
    emitReductionLoops(loops, q + 1, env, body, inner);
    for (C::Stmt& st : after) body.push_back(std::move(st));
    if (staging) body.push_back(C::syncThreads());  // the tile is read by all before the next copy
    out.push_back(C::forLoop(idx_, v, lo, hi, unrollOf(is.parts[0].place), std::move(body)));
    return;
  }
  auto clo = constIntValue(l.lo, k_), chi = constIntValue(l.hi, k_);
  int64_t innerProduct = 1;
  for (size_t p = 1; p < is.parts.size(); ++p) innerProduct *= *is.parts[p].factor;
  std::vector<int64_t> ext;
  C::ExprP firstTrip;
  bool exact = false;
  if (clo && chi) {
    ext = partExtents(is, std::max<int64_t>(0, *chi - *clo));
    firstTrip = lit(ext[0]);
    exact = ext[0] * innerProduct == *chi - *clo;
  } else {
    ext = partExtents(is, 1);
    // ceil((hi - lo) / inner); an empty range gives a trip count <= 0 with C division too.
    firstTrip = C::binary("/", C::sum({C::binary("-", hi, lo), lit(innerProduct - 1)}), lit(innerProduct));
  }
  // The part whose iterations are the steps (staging: the first part not on the grid; the grid
  // parts ahead of it are the block's share of the values, planStaging allows nothing else
  // there), and the values one step covers.
  const size_t sp = staging ? stepPartOf(is) : 0;
  const int64_t stepSpan = staging ? stepSpanOf(is) : innerProduct;
  std::vector<std::string> vars;
  std::vector<C::ExprP> terms{lo};
  std::vector<C::ExprP> shareSteps;  // the block's first step: its grid coordinates, in steps
  int64_t stride = innerProduct;
  static const char* axisField[3] = {"x", "y", "z"};
  for (size_t p = 0; p < is.parts.size(); ++p) {
    if (p > 0) stride /= ext[p];
    Placement pl = is.parts[p].place;
    if (isCoordinate(pl)) {
      // A split reduction: this part is the thread's (or the block's) coordinate, not a loop.
      vars.push_back("");
      const char* coord = isThreadPlacement(pl) ? "threadIdx" : "blockIdx";
      C::ExprP c = C::castTo(idx_, C::member(C::name(coord), axisField[placementAxis(pl)]));
      terms.push_back(C::product(c, lit(stride)));
      if (p < sp) shareSteps.push_back(C::product(c, lit(stride / stepSpan)));
      continue;
    }
    vars.push_back(names_.fresh(fmt::format("{}_{}", l.name, p)));
    terms.push_back(C::product(C::name(vars.back()), lit(stride)));
  }
  // Steps of this block: all of the first part's, or (split-K) the step part's factor.
  const C::ExprP stepTrips = sp == 0 ? firstTrip : lit(ext[sp]);
  std::vector<C::Stmt> stage, after;
  if (staging) {
    // Step n of the block covers lo + (share + n) * span .. + span - 1. Prefetched: this step's
    // registers go to shared memory, then the next step's loads are issued before this step's
    // arithmetic.
    StepAt stepAt = [&](int64_t n, bool fromStart) {
      C::ExprP number = fromStart ? lit(n) : C::sum({C::name(vars[sp]), lit(n)});
      std::vector<C::ExprP> at{lo};
      for (const C::ExprP& share : shareSteps) at.push_back(C::product(share, lit(stepSpan)));
      at.push_back(C::product(number, lit(stepSpan)));
      return std::pair{C::sum(at), C::binary("<", number, stepTrips)};
    };
    copyStep(stageGroup, C::name(vars[sp]), stepAt, env, out, stage, after);
  }
  std::string v = names_.fresh(l.name);
  env.vars[l.id] = C::name(v);
  // The loops of the parts after the step part around the body, the body guarded by v < hi or not.
  auto innerParts = [&](bool guard) {
    std::vector<C::Stmt> body{C::decl(idx_, v, C::sum(terms))};
    if (!guard) {
      emitReductionLoops(loops, q + 1, env, body, inner);
    } else {
      std::vector<C::Stmt> guarded;
      emitReductionLoops(loops, q + 1, env, guarded, inner);
      body.push_back(C::ifThen(C::binary("<", C::name(v), hi), std::move(guarded)));
    }
    for (size_t p = is.parts.size(); p-- > sp + 1;) {
      if (isCoordinate(is.parts[p].place)) continue;
      std::vector<C::Stmt> loop{
          C::forLoop(idx_, vars[p], lit(0), lit(ext[p]), unrollOf(is.parts[p].place), std::move(body))};
      body = std::move(loop);
    }
    return body;
  };
  // When the range does not divide and inner parts are unrolled, every step but the last runs
  // the unrolled body without the guard (which would keep neighbouring reads from merging into
  // vector loads); the steps are uniform across the block, so the branch does not diverge.
  bool peel = !exact && clo && chi && !isCoordinate(is.parts[sp].place) &&
              std::any_of(is.parts.begin() + sp + 1, is.parts.end(), [](const SchedulePart& part) { return part.place == Placement::Unroll; });
  std::vector<C::Stmt> body;
  if (peel) {
    int64_t fullSteps = (*chi - *clo) / stepSpan;
    std::vector<C::ExprP> number = shareSteps;
    number.push_back(C::name(vars[sp]));
    body.push_back(C::ifThen(C::binary("<", C::sum(number), lit(fullSteps)), innerParts(false), innerParts(true)));
  } else {
    body = innerParts(!exact);
  }
  if (staging) {
    stage.insert(stage.end(), std::make_move_iterator(body.begin()), std::make_move_iterator(body.end()));
    stage.insert(stage.end(), std::make_move_iterator(after.begin()), std::make_move_iterator(after.end()));
    stage.push_back(C::syncThreads());
    body = std::move(stage);
  }
  // The step part's loop (the first part's without staging); parts ahead of it are grid parts.
  if (!isCoordinate(is.parts[sp].place)) {
    std::vector<C::Stmt> loop{C::forLoop(idx_, vars[sp], lit(0), stepTrips, unrollOf(is.parts[sp].place), std::move(body))};
    body = std::move(loop);
  }
  for (C::Stmt& s : body) out.push_back(std::move(s));
}

int NestEmitter::groupMask(const std::vector<Expr>& g) const {
  int mask = 0;
  for (const Loop& l : g[0]->loops)
    for (const SchedulePart& p : scheduleOf(l.name).parts)
      if (isThreadPlacement(p.place)) mask |= 1 << placementAxis(p.place);
  return mask;
}

// acc = the combination of acc over the lanes (thread axes in `mask`) of this thread's slot, in
// every lane: a tree in shared memory (lane l takes in lane l + s for s = half the next power of
// two of the lane count, down to 1; lanes that do not exist are skipped, so any lane count works
// and no identity is needed), between barriers. Every thread of the block runs it (uniform code).
//
// Lanes that are whole warps or aligned parts of one (the lanes are thread.x alone, a power of two,
// and every warp of the block is full) combine with register shuffles instead: a butterfly of
// __shfl_xor_sync over up to 32 lanes leaves the same bits in every lane (a + b and b + a round
// alike), and more than 32 lanes then combine their warps' values in shared memory, in warp order.
void NestEmitter::combineLanes(ReduceOp op, ScalarType t, const C::ExprP& acc, std::vector<C::Stmt>& out, int mask) {
  const LaneSet& ls = laneSets_.at(mask);
  C::ExprP buf = C::name(combineBuffers_.at(t));
  const bool powerOfTwo = (ls.lanes & (ls.lanes - 1)) == 0;
  if (mask == 1 && powerOfTwo && threads_ % 32 == 0) {
    const int64_t width = std::min<int64_t>(ls.lanes, 32);
    for (int64_t offset = width / 2; offset >= 1; offset /= 2)
      out.push_back(combine(op, t, acc, C::call("__shfl_xor_sync", {C::uintLit(0xffffffffu), acc, lit(offset)})));
    if (ls.lanes <= 32) return;
    const int64_t warps = ls.lanes / 32;
    C::ExprP first = C::product(ls.slot, lit(warps));
    out.push_back(C::ifThen(C::binary("==", C::binary("%", ls.lane, lit(32)), lit(0)),
                            {C::assign(C::index(buf, C::sum({first, C::binary("/", ls.lane, lit(32))})), "=", acc)}));
    out.push_back(C::syncThreads());
    out.push_back(C::assign(acc, "=", C::index(buf, first)));
    for (int64_t w = 1; w < warps; ++w) out.push_back(combine(op, t, acc, C::index(buf, C::sum({first, lit(w)}))));
    out.push_back(C::syncThreads());  // every warp has read before the buffer is reused
    return;
  }
  C::ExprP mine = C::sum({C::product(ls.slot, lit(ls.lanes)), ls.lane});
  out.push_back(C::assign(C::index(buf, mine), "=", acc));
  out.push_back(C::syncThreads());
  int64_t pow2 = 1;
  while (pow2 < ls.lanes) pow2 *= 2;
  for (int64_t step = pow2 / 2; step >= 1; step /= 2) {
    int64_t active = std::min(step, ls.lanes - step);  // lanes l < active have a partner l + step
    out.push_back(C::ifThen(C::binary("<", ls.lane, lit(active)),
                            {combine(op, t, C::index(buf, mine), C::index(buf, C::sum({mine, lit(step)})))}));
    out.push_back(C::syncThreads());
  }
  out.push_back(C::assign(acc, "=", C::index(buf, C::product(ls.slot, lit(ls.lanes)))));
  out.push_back(C::syncThreads());  // every lane has read before the buffer is reused
}

// The combination across the blocks of a tile (see crossBlockPlan in schedule/Domain.h), at one
// position of the serial parts of the parallel indices (`position`, linear): every block stores
// its partials (`accs`, per register point, already combined over the block's lanes) and counts
// itself in; the last block, point by point, reads back every block's partials of the point in
// block order into `accs`, combines them, and runs the point's statements (`pointStatements`).
// In groups of points whose partials are about kCombineLoadsInFlight loads: all of a group's reads
// first, then its statements. All points' reads first left NVCC 384 loads of a 128-point tile split
// in three to hoist, and it spilled 48 registers; one point at a time serialized the tile on
// memory latency (a point's reads wait for the previous point's store, which the reads may alias
// for all the compiler knows: SGEMM n=500 split in two, 0.0174 -> 0.0233 ms on an H100).
void NestEmitter::crossBlockCombine(const std::vector<std::map<const ExprNode*, C::ExprP>>& accs,
                                    const C::ExprP& position, std::vector<C::Stmt>& out,
                                    std::vector<std::vector<C::Stmt>> pointStatements) {
  const int64_t R = xb_.blocks, S = xb_.slots;
  // Lanes and slots over every reduction thread axis; without any, each thread is a slot.
  C::ExprP lane = lanes_ > 1 ? lane_ : lit(0);
  C::ExprP slot = lanes_ > 1 ? slot_ : tid_;
  C::ExprP counter = C::sum({C::product(tile_, lit(xb_.positions)), position});
  out.push_back(C::comment(fmt::format(
      "Combine across the {} blocks of this output tile: each block stores its partials in global scratch;\n"
      "the last block to arrive combines them all in block order (the same result whichever block is last)",
      R)));
  if (counter->kind != C::ExprKind::IntLit) {
    std::string n = names_.fresh("counter");
    out.push_back(C::decl(idx_, n, counter));
    counter = C::name(n);
  }
  struct Value {
    const Expr* red;
    int64_t point;
    ScalarType type;
    int64_t index;  // v among the values of its type
  };
  std::vector<Value> values;
  std::map<ScalarType, int64_t> nextIndex;
  for (int g : xb_.groups)
    for (const Expr& r : groups_[g])
      for (int64_t pt = 0; pt < xb_.regPoints; ++pt) values.push_back({&r, pt, r->type, nextIndex[r->type]++});
  auto at = [&](const Value& v, const C::ExprP& block) {
    if (lanes_ == 1) {
      // ((counter * values + v) * blocks + block) * slots + slot: neighbouring threads store and
      // read neighbouring partials.
      C::ExprP row = C::sum({C::product(counter, lit(xb_.values.at(v.type) * R)), lit(v.index * R), block});
      return C::index(C::name(partials_.at(v.type)), C::sum({C::product(row, lit(S)), slot}));
    }
    // ((counter * values + v) * slots + slot) * blocks + block: the lanes of a slot read
    // neighbouring blocks' partials.
    C::ExprP row = C::sum({C::product(counter, lit(xb_.values.at(v.type) * S)), lit(v.index * S), slot});
    return C::index(C::name(partials_.at(v.type)), C::sum({C::product(row, lit(R)), block}));
  };
  std::vector<C::Stmt> store;
  for (const Value& v : values) store.push_back(C::assign(at(v, rblock_), "=", accs[v.point].at(v.red->get())));
  store.push_back(C::exprStmt(C::call("__threadfence", {})));  // the partials are visible before the count
  if (lanes_ > 1) out.push_back(C::ifThen(C::binary("==", lane_, lit(0)), std::move(store)));
  else for (C::Stmt& st : store) out.push_back(std::move(st));
  out.push_back(C::syncThreads());
  // atomicInc wraps the counter back to 0 at the last arrival: ready for the next launch.
  std::string arrived = names_.fresh("arrived");
  C::ExprP count = C::call("atomicInc", {C::unary("&", C::index(C::name(arrivals_), counter)), C::uintLit((uint32_t)(R - 1))});
  std::vector<C::Stmt> arrive{C::decl("unsigned int", arrived, count),
                              C::assign(C::name(lastBlock_), "=", C::binary("==", C::name(arrived), C::uintLit((uint32_t)(R - 1))))};
  if (threads_ > 1) out.push_back(C::ifThen(C::binary("==", tid_, lit(0)), std::move(arrive)));
  else for (C::Stmt& st : arrive) out.push_back(std::move(st));
  out.push_back(C::syncThreads());

  std::vector<C::Stmt> last{C::exprStmt(C::call("__threadfence", {}))};
  int64_t trips = (R + lanes_ - 1) / lanes_;
  RTCG_ASSERT(int64_t(pointStatements.size()) == xb_.regPoints, "one list of statements per register point");
  const int64_t loadsPerPoint = std::max<int64_t>(1, int64_t(values.size()) / xb_.regPoints * trips);
  const int64_t groupPoints = std::max<int64_t>(1, kCombineLoadsInFlight / loadsPerPoint);
  for (int64_t first = 0; first < xb_.regPoints; first += groupPoints) {
    const int64_t end = std::min(xb_.regPoints, first + groupPoints);
    for (const Value& v : values) {
      if (v.point < first || v.point >= end) continue;
      const C::ExprP& acc = accs[v.point].at(v.red->get());
      last.push_back(C::assign(acc, "=", reductionIdentity(v.red->get()->reduceOp, v.type)));
      std::string c = names_.fresh("c"), b = names_.fresh("b");
      std::vector<C::Stmt> body{C::decl(idx_, b, C::sum({C::product(C::name(c), lit(lanes_)), lane}))};
      C::Stmt add = combine(v.red->get()->reduceOp, v.type, acc, C::call("__ldcg", {C::unary("&", at(v, C::name(b)))}));
      if (trips * lanes_ != R) body.push_back(C::ifThen(C::binary("<", C::name(b), lit(R)), {add}));
      else body.push_back(add);
      last.push_back(C::forLoop(idx_, c, lit(0), lit(trips), C::Unroll::Default, std::move(body)));
    }
    for (int64_t pt = first; pt < end; ++pt) {
      if (lanes_ > 1)
        for (const Value& v : values)
          if (v.point == pt) combineLanes(v.red->get()->reduceOp, v.type, accs[v.point].at(v.red->get()), last, fullMask_);
      for (C::Stmt& st : pointStatements[pt]) last.push_back(std::move(st));
    }
  }
  out.push_back(C::ifThen(C::name(lastBlock_), std::move(last)));
}

// Whether every array the reductions of group `g` read is served from a shared tile (in `env`),
// and they contain no nested reduction: then a point outside the domain reads inside the tiles
// (a tile spans the block's points, or is the whole array with clamped indices: StageRef::clampTo).
bool NestEmitter::readsOnlyTiles(const std::vector<Expr>& g, const Env& env) const {
  std::function<bool(const Expr&)> ok = [&](const Expr& e) {
    if (e->kind == ExprKind::Reduce) return false;
    if (e->kind == ExprKind::Load && !env.staged.count(e->array)) return false;
    for (const Expr& o : e->operands)
      if (!ok(o)) return false;
    return true;
  };
  for (const Expr& r : g)
    if (!ok(r->operands[0])) return false;
  return true;
}

bool NestEmitter::hasStepStaging(int group) const {
  for (const StagedArray& sa : plan_.arrays)
    if (sa.level == StageLevel::Step && sa.group == group) return true;
  return false;
}

void NestEmitter::stageStep(int group, const C::ExprP& stepBase, Env& env, std::vector<C::Stmt>& out,
                            TileCopy mode, const TileTarget& target) {
  const std::map<std::string, C::ExprP> bases = stepBases(group, stepBase);
  for (size_t t = 0; t < plan_.arrays.size(); ++t)
    if (plan_.arrays[t].level == StageLevel::Step && plan_.arrays[t].group == group)
      stageTile(t, bases, env, out, mode,
                mode == TileCopy::Direct || mode == TileCopy::Async ? std::vector<std::string>{} : prefetchRegs_.at(t),
                target);
}

// Points the reads of `env` at buffer `buffer` of the step tiles of `group` (the step at `stepBase`).
void NestEmitter::readStep(int group, const C::ExprP& stepBase, const C::ExprP& buffer, Env& env,
                           std::vector<C::Stmt>& out) {
  const std::map<std::string, C::ExprP> bases = stepBases(group, stepBase);
  for (size_t t = 0; t < plan_.arrays.size(); ++t)
    if (plan_.arrays[t].level == StageLevel::Step && plan_.arrays[t].group == group)
      env.staged[plan_.arrays[t].array] = tileRef(t, bases, buffer, out);
}

// The copy of a step's tiles of `group` (the step number `step`, counting from 0, whose base and
// those of the others `stepAt` gives) into shared memory: `before` goes ahead of the loop over steps, `stage` at the start of each
// step, `after` at its end, followed by the caller's barrier; `env` then reads the step's tiles.
// One buffer: each step copies its tiles, then a barrier. Prefetched (declarePrefetch): the first
// step is loaded into registers ahead of the loop; each step stores its registers, and after the
// barrier issues the loads of the next step (when there is one) so they overlap the step's
// arithmetic.
// Two buffers (`buffers: 2`): the first step is copied into buffer 0 ahead of the loop; step s
// reads buffer s % 2 and copies step s + 1 into the other one (prefetched: loads at the start,
// stores at the end), so the caller's one barrier per step both publishes the next tiles and
// frees the ones just read.
void NestEmitter::copyStep(int group, const C::ExprP& step, const StepAt& stepAt, Env& env,
                           std::vector<C::Stmt>& before, std::vector<C::Stmt>& stage, std::vector<C::Stmt>& after) {
  Env scratch = env;  // copies that the reads of this step do not see
  const C::ExprP first = stepAt(0, true).first, base = stepAt(0, false).first;
  const auto [next, hasNext] = stepAt(1, false);
  if (sched_.asyncCopy) {
    // N buffers, N - 1 steps in flight (cp.async groups, one per step, committed in step order):
    // steps 0 .. N-2 are issued ahead of the loop; step s issues step s + N - 1 into the buffer
    // step s - 1 read (every thread passed the barrier that ended step s - 1), computes from
    // buffer s % N, then waits for its own copies of step s + 1, and the caller's barrier makes
    // everyone's copies visible. A step past the end commits an empty group, which keeps the
    // count of pending groups the same in every step.
    const int64_t buffers = sched_.buffers;
    const std::string wait = fmt::format("rtcg_cp_async_wait{}", buffers - 2);
    auto issue = [&](int64_t n, bool fromStart, const C::ExprP& buffer, std::vector<C::Stmt>& out) {
      auto [at, exists] = stepAt(n, fromStart);
      std::vector<C::Stmt> copies;
      stageStep(group, at, scratch, copies, TileCopy::Async, TileTarget{buffer, false});
      out.push_back(C::ifThen(exists, std::move(copies)));
      out.push_back(C::exprStmt(C::call("rtcg_cp_async_commit", {})));
    };
    for (int64_t n = 0; n + 1 < buffers; ++n) issue(n, true, lit(n), before);
    before.push_back(C::exprStmt(C::call(wait, {})));
    before.push_back(C::syncThreads());
    issue(buffers - 1, false, C::binary("%", C::sum({step, lit(buffers - 1)}), lit(buffers)), stage);
    readStep(group, base, C::binary("%", step, lit(buffers)), env, stage);
    after.push_back(C::exprStmt(C::call(wait, {})));
    return;
  }
  const bool prefetch = declarePrefetch(group, before);
  if (sched_.buffers > 1) {
    const C::ExprP current = C::binary("&", step, lit(1));
    const C::ExprP other = C::binary("&", C::sum({step, lit(1)}), lit(1));
    const TileTarget first0{lit(0), false}, toOther{other, false};
    std::vector<C::Stmt> copies;
    if (prefetch) {
      stageStep(group, first, scratch, before, TileCopy::LoadToRegisters);
      stageStep(group, first, scratch, before, TileCopy::StoreFromRegisters, first0);
      stageStep(group, next, scratch, copies, TileCopy::LoadToRegisters);
      stage.push_back(C::ifThen(hasNext, std::move(copies)));
      std::vector<C::Stmt> stores;
      stageStep(group, next, scratch, stores, TileCopy::StoreFromRegisters, toOther);
      after.push_back(C::ifThen(hasNext, std::move(stores)));
    } else {
      stageStep(group, first, scratch, before, TileCopy::Direct, first0);
      stageStep(group, next, scratch, copies, TileCopy::Direct, toOther);
      stage.push_back(C::ifThen(hasNext, std::move(copies)));
    }
    before.push_back(C::syncThreads());
    readStep(group, base, current, env, stage);
    return;
  }
  if (!prefetch) {
    stageStep(group, base, env, stage);
    stage.push_back(C::syncThreads());
    return;
  }
  stageStep(group, first, scratch, before, TileCopy::LoadToRegisters);
  stageStep(group, base, env, stage, TileCopy::StoreFromRegisters);
  stage.push_back(C::syncThreads());
  std::vector<C::Stmt> loads;
  stageStep(group, next, scratch, loads, TileCopy::LoadToRegisters);
  stage.push_back(C::ifThen(hasNext, std::move(loads)));
}

// Registers for prefetching the step tiles of `group`, declared into `out`: a step is prefetched
// (loaded into registers while the previous one is computed) when its tiles take at most 16
// elements per thread. False (nothing declared) otherwise.
bool NestEmitter::declarePrefetch(int group, std::vector<C::Stmt>& out) {
  int64_t elements = 0;
  for (size_t t = 0; t < plan_.arrays.size(); ++t)
    if (plan_.arrays[t].level == StageLevel::Step && plan_.arrays[t].group == group) elements += copyTrips(t);
  if (elements == 0 || elements > 16) return false;
  for (size_t t = 0; t < plan_.arrays.size(); ++t) {
    if (plan_.arrays[t].level != StageLevel::Step || plan_.arrays[t].group != group) continue;
    const Param& param = k_.params[plan_.arrays[t].array];
    std::vector<std::string>& regs = prefetchRegs_[t];
    regs.clear();
    for (int64_t c = 0; c < copyTrips(t); ++c) {
      regs.push_back(names_.fresh(fmt::format("pf_{}_{}", param.name, c)));
      out.push_back(C::decl(cudaTypeName(param.type), regs.back(), literalOf(param.type, 0, 0.0), false));
    }
  }
  return true;
}

// lo plus the grid and serial/unroll parts of a parallel index: the same for every thread of the
// block at a position of the serial loops.
// `pipelinedAt` (positions pipelined): the value the pipelined part's loop variable takes instead
// of the variable itself, for a copy that is for another position.
C::ExprP NestEmitter::uniformBase(const ParallelIndex& p, const C::ExprP& pipelinedAt) const {
  static const char* axisField[3] = {"x", "y", "z"};
  std::vector<C::ExprP> terms{lit(p.ni->hull.lo)};
  for (size_t part = 0; part < p.ext.size(); ++part) {
    Placement pl = p.sched->parts[part].place;
    if (isGridPlacement(pl))
      terms.push_back(C::product(C::castTo(idx_, C::member(C::name("blockIdx"), axisField[placementAxis(pl)])),
                                 lit(p.stride[part])));
    else if (pl == Placement::Serial || pl == Placement::Unroll)
      terms.push_back(C::product(pipelinedAt && pipe_.par == &p && pipe_.part == part ? pipelinedAt : C::name(p.loopVars[part]),
                                 lit(p.stride[part])));
  }
  return C::sum(terms);
}

// The uniform-based keys of staged boxes (StagedDim::coeffs) at the current position: "p:<name>"
// for each parallel index and, with `stepBase`, "step" for the staged reduction step.
std::map<std::string, C::ExprP> NestEmitter::tileBases(const C::ExprP& stepBase, const C::ExprP& pipelinedAt) const {
  std::map<std::string, C::ExprP> bases;
  if (stepBase) bases["step"] = stepBase;
  for (const ParallelIndex& p : par_) bases["p:" + p.loop->name] = uniformBase(p, pipelinedAt);
  return bases;
}

// The bases of the step tiles of `group` at `stepBase`: the step's first value of the reduction
// or, when the group's steps are pipelined across positions, the position (the value of the
// pipelined loop part's variable) whose one step is meant.
std::map<std::string, C::ExprP> NestEmitter::stepBases(int group, const C::ExprP& stepBase) const {
  if (group != pipe_.group) return tileBases(stepBase);
  return tileBases(pipe_.stepBase, stepBase);
}

// Positions pipelined: when a block takes the whole reduction of the group staged per step in one
// step, that step's tiles move only with the serial parts of parallel indices, and copying them
// with 'buffers: N' would just stall each position on its own copy. With one serial part of more
// than one position innermost ('k: grid.x, serial 16, thread.y 8, ...'), the copies run N - 1
// positions ahead instead, as they run steps ahead along a reduction (copyStep): a block then
// streams its tiles while it computes, like a persistent GEMM kernel. Sets pipe_ and the loop
// part (index into `loopParts`) when that applies.
void NestEmitter::findPositionPipeline(const std::vector<LoopPart>& loopParts, size_t& pipeLoop) {
  if (sched_.buffers < 2 || xb_.any()) return;
  int group = -1;
  for (size_t g = 0; g < groups_.size(); ++g)
    if (hasStepStaging((int)g)) {
      if (group >= 0) return;  // several step groups: each keeps its own steps
      group = (int)g;
    }
  if (group < 0) return;
  const Loop& l = groups_[group][0]->loops.front();
  const IndexSchedule& is = scheduleOf(l.name);
  auto clo = constIntValue(l.lo, k_), chi = constIntValue(l.hi, k_);
  if (!clo || !chi || stepPartOf(is) != 0 || stepSpanOf(is) < *chi - *clo) return;
  // The innermost serial part of more than one position; inner ones have one position each.
  size_t q = loopParts.size();
  while (q > 0 && loopParts[q - 1].p->ext[loopParts[q - 1].part] == 1) --q;
  if (q == 0) return;
  const LoopPart& lp = loopParts[q - 1];
  if (lp.p->sched->parts[lp.part].place != Placement::Serial) return;
  // The tiles must move with it (else one copy per block would do: a Block-level tile).
  bool moves = false;
  for (const StagedArray& sa : plan_.arrays)
    if (sa.level == StageLevel::Step && sa.group == group)
      moves = moves || movesWith(sa, lp.p->loop->name);
  if (!moves) return;
  pipe_.group = group;
  pipe_.par = lp.p;
  pipe_.part = lp.part;
  pipe_.stepBase = lit(*clo);
  pipeLoop = q - 1;
}

// The tile `t` as reads see it: its buffer's offset, per dimension the origin (declared into
// `out` when not constant) and the pitch in the tile's storage order.
StageRef NestEmitter::tileRef(size_t t, const std::map<std::string, C::ExprP>& bases, const C::ExprP& buffer,
                              std::vector<C::Stmt>& out) {
  const StagedArray& sa = plan_.arrays[t];
  const size_t rank = sa.dims.size();
  C::ExprP offset = lit(tiles_[t].offset);
  if (buffer) offset = C::sum({offset, C::product(buffer, lit(sa.elements))});
  StageRef ref{tiles_[t].storage, offset, {}, storedPitches(sa), std::vector<int64_t>(rank, 0)};
  for (size_t d = 0; d < rank; ++d)
    if (sa.dims[d].clipped) ref.clampTo[d] = sa.dims[d].extent;
  const std::string& arr = paramNames_[sa.array];
  for (size_t d = 0; d < rank; ++d) {
    std::vector<C::ExprP> terms{lit(sa.dims[d].constant)};
    for (const auto& [key, c] : sa.dims[d].coeffs) terms.push_back(C::product(bases.at(key), lit(c)));
    C::ExprP origin = C::sum(terms);
    if (origin->kind != C::ExprKind::IntLit) {
      std::string n = names_.fresh(fmt::format("{}_o{}", arr, d));
      out.push_back(C::decl(idx_, n, origin));
      origin = C::name(n);
    }
    ref.origins.push_back(origin);
  }
  return ref;
}

// The cooperative copy of tile `t` of the plan: element e of the tile (row-major over its box) is
// loaded by thread e % threads, so consecutive threads load consecutive elements of a row
// (coalesced). Elements outside the array are set to zero (no point in the domain reads them).
// TileCopy::Direct copies global -> shared and points the reads of `env` at the tile; a prefetched
// step splits the copy in two: LoadToRegisters (global -> the thread's registers `regs`, one per
// element it copies; `env` is not changed) and StoreFromRegisters (registers -> shared, and the
// reads of `env` point at the tile).
void NestEmitter::stageTile(size_t t, const std::map<std::string, C::ExprP>& bases, Env& env,
                            std::vector<C::Stmt>& out, TileCopy mode, const std::vector<std::string>& regs,
                            const TileTarget& target) {
  const StagedArray& sa = plan_.arrays[t];
  const Param& param = k_.params[sa.array];
  const std::string& arr = paramNames_[sa.array];
  const size_t rank = sa.dims.size();

  std::vector<std::string> box;
  int64_t total = 1;
  for (const StagedDim& d : sa.dims) {
    box.push_back(fmt::format("{}", d.size));
    total *= d.size;
  }
  static const char* const verbs[] = {"Stage {} in shared memory", "Load a step's tile of {} into registers",
                                      "Store the registers' tile of {} in shared memory",
                                      "Copy a step's tile of {} into shared memory asynchronously (cp.async)"};
  std::string where;
  if (target.buffer && mode != TileCopy::LoadToRegisters)
    where = target.buffer->kind == C::ExprKind::IntLit ? fmt::format(" (buffer {})", target.buffer->intValue)
                                                        : " (the other buffer)";
  out.push_back(C::comment(fmt::format("{}{}: a tile of {} elements, copied by all {} threads",
                                       fmt::format(fmt::runtime(verbs[(int)mode]), param.name), where,
                                       rank ? fmt::format("{}", fmt::join(box, " x ")) : "1", threads_)));
  StageRef ref = tileRef(t, bases, target.buffer, out);

  // The copy of the run of V elements that starts at element `e` (a multiple of V: the run lies
  // in one row of the box, see copyVector), into shared memory or the registers `runRegs`. A run
  // of V > 1 is one 16-byte load; it lies wholly inside the array or wholly outside.
  const int64_t V = copyVector(t);
  auto copyRun = [&](const C::ExprP& e, const std::vector<std::string>& runRegs) {
    std::vector<C::Stmt> copy;
    int64_t after = total;
    C::ExprP inside, tileIndex = ref.offset, flat;
    std::string en = names_.fresh("e");
    copy.push_back(C::decl(idx_, en, e));
    for (size_t d = 0; d < rank; ++d) {
      after /= sa.dims[d].size;
      C::ExprP ed = C::name(en);
      if (after > 1) ed = C::binary("/", ed, lit(after));
      if (d > 0) ed = C::binary("%", ed, lit(sa.dims[d].size));
      std::string ln = names_.fresh(fmt::format("{}_{}", en, d));
      copy.push_back(C::decl(idx_, ln, ed));
      tileIndex = C::sum({tileIndex, C::product(C::name(ln), lit(ref.pitch[d]))});
      if (mode == TileCopy::StoreFromRegisters) continue;
      C::ExprP gv = C::sum({ref.origins[d], C::name(ln)});
      std::string gn = names_.fresh(fmt::format("g_{}", d));
      copy.push_back(C::decl(idx_, gn, gv));
      if (!sa.dims[d].whole) {
        C::ExprP in = C::binary("&&", C::binary(">=", C::name(gn), lit(0)), C::binary("<", C::name(gn), lit(sa.dims[d].extent)));
        inside = inside ? C::binary("&&", inside, in) : in;
      }
      flat = d == 0 ? (idx_ == "long long" && rank > 1 ? C::castTo("long long", C::name(gn)) : C::name(gn))
                    : C::sum({C::product(flat, lit(sa.dims[d].extent)), C::name(gn)});
    }
    // Element v of the run: v further along the last dimension.
    auto tileAt = [&](int64_t v) {
      C::ExprP i = v == 0 ? tileIndex : C::sum({tileIndex, lit(v * ref.pitch[rank - 1])});
      return C::index(C::name(ref.storage), i);
    };
    if (mode == TileCopy::StoreFromRegisters) {
      for (int64_t v = 0; v < V; ++v) copy.push_back(C::assign(tileAt(v), "=", C::name(runRegs[v])));
      return copy;
    }
    if (!flat) flat = lit(0);
    if (mode == TileCopy::Async) {
      // cp.async: 16 bytes at once where the run is one aligned row piece in shared memory too,
      // else element by element; elements outside the array are zero-filled (0 bytes read).
      const int bytes = typeBytes(param.type);
      auto source = [&](int64_t v) {
        C::ExprP at = C::unary("&", C::index(C::name(arr), v == 0 ? flat : C::sum({flat, lit(v)})));
        return inside ? C::ternary(inside, at, C::name(arr)) : at;
      };
      auto size = [&](int64_t n) { return inside ? C::ternary(inside, lit(n), lit(0)) : lit(n); };
      if (V > 1 && asyncRuns(t)) {
        copy.push_back(C::exprStmt(C::call("rtcg_cp_async16", {C::unary("&", tileAt(0)), source(0), size(16)})));
      } else {
        for (int64_t v = 0; v < V; ++v)
          copy.push_back(C::exprStmt(C::call(fmt::format("rtcg_cp_async{}", bytes),
                                             {C::unary("&", tileAt(v)), source(v), size(bytes)})));
      }
      return copy;
    }
    auto dest = [&](int64_t v) { return mode == TileCopy::LoadToRegisters ? C::name(runRegs[v]) : tileAt(v); };
    if (V == 1) {
      C::ExprP value = C::index(C::name(arr), flat);
      if (inside) value = C::ternary(inside, value, literalOf(param.type, 0, 0.0));
      copy.push_back(C::assign(dest(0), "=", value));
      return copy;
    }
    // One 16-byte load through the read-only data cache.
    const std::string vt = vectorTypeName(param.type);
    C::ExprP value = C::call("__ldg", {C::castTo("const " + vt + "*", C::unary("&", C::index(C::name(arr), flat)))});
    if (inside) {
      std::vector<C::ExprP> zeros(V, literalOf(param.type, 0, 0.0));
      value = C::ternary(inside, value, C::call("make_" + vt, zeros));
    }
    std::string vn = names_.fresh("run");
    copy.push_back(C::decl(vt, vn, value));
    static const char* const lanes[4] = {"x", "y", "z", "w"};
    for (int64_t v = 0; v < V; ++v) copy.push_back(C::assign(dest(v), "=", C::member(C::name(vn), lanes[v])));
    return copy;
  };
  auto guarded = [&](const C::ExprP& e, std::vector<C::Stmt> copy) {
    std::vector<C::Stmt> body;
    if (total % (threads_ * V) != 0) body.push_back(C::ifThen(C::binary("<", e, lit(total)), std::move(copy)));
    else body = std::move(copy);
    return body;
  };
  // Run r = c * threads + tid starts at element r * V: consecutive threads copy consecutive runs.
  auto runStart = [&](const C::ExprP& r) { return V == 1 ? r : C::product(r, lit(V)); };
  int64_t trips = (total / V + threads_ - 1) / threads_;
  if (mode == TileCopy::Direct || mode == TileCopy::Async) {
    std::string c = names_.fresh("c");
    C::ExprP e = runStart(C::sum({C::product(C::name(c), lit(threads_)), tid_}));
    out.push_back(C::forLoop(idx_, c, lit(0), lit(trips), C::Unroll::Default, guarded(e, copyRun(e, {}))));
  } else {
    // V named registers per trip, so the copies are straight-line code.
    RTCG_ASSERT((int64_t)regs.size() == trips * V, "prefetch registers do not match the copy's trips");
    for (int64_t c = 0; c < trips; ++c) {
      C::ExprP e = runStart(C::sum({lit(c * threads_), tid_}));
      std::vector<std::string> runRegs(regs.begin() + c * V, regs.begin() + (c + 1) * V);
      out.push_back(C::block(guarded(e, copyRun(e, runRegs))));
    }
  }
  if (mode != TileCopy::LoadToRegisters && target.pointReads) env.staged[sa.array] = std::move(ref);
}

// Elements each thread copies per step for tile `t` (whole runs of copyVector(t) elements).
int64_t NestEmitter::copyTrips(size_t t) const {
  int64_t total = 1;
  for (const StagedDim& d : plan_.arrays[t].dims) total *= d.size;
  const int64_t V = copyVector(t);
  return (total / V + threads_ - 1) / threads_ * V;
}

// Elements per 16-byte load of the copy of tile `t`: 16 / element size when every run of that
// many elements along the box's last dimension starts 16-byte aligned in the array (the box's
// rows and the array's rows hold whole runs, and the box's origin along the last dimension is a
// multiple of the run in every block and step), else 1 (element by element). Aligned runs never
// straddle the array's edge: each one is inside the array or outside it as a whole.
int64_t NestEmitter::copyVector(size_t t) const {
  const StagedArray& sa = plan_.arrays[t];
  const int bytes = typeBytes(k_.params[sa.array].type);
  if (sa.dims.empty() || (bytes != 4 && bytes != 8)) return 1;
  const int64_t V = 16 / bytes;
  const StagedDim& last = sa.dims.back();
  if (last.size % V != 0 || last.extent % V != 0) return 1;
  int64_t divisor = last.constant;
  for (const auto& [key, c] : last.coeffs) divisor = std::gcd(divisor, c * baseDivisor(key, sa.group));
  return divisor % V == 0 ? V : 1;
}

// Whether the runs of tile `t` (copyVector) are also 16-byte aligned runs in shared memory, so
// that one 16-byte cp.async copies each: the tile's rows are stored contiguously (not
// transposed) and every row, tile and buffer starts at a multiple of the run.
bool NestEmitter::asyncRuns(size_t t) const {
  const StagedArray& sa = plan_.arrays[t];
  const int64_t V = copyVector(t);
  if (V == 1 || sa.dims.empty() || sa.order.back() != sa.dims.size() - 1) return false;
  // Row pitches are products of the padded extents that include the last one.
  return tiles_[t].offset % V == 0 && sa.elements % V == 0 && sa.padded.back() % V == 0;
}

// A number that divides every value of the uniform base `key` (tileBases): the gcd of the
// index's lo and the strides of its grid and loop parts ("p:<name>"), or of the staged
// reduction's lo and the span of its step ("step", for the steps of hoisted group `group`).
int64_t NestEmitter::baseDivisor(const std::string& key, int group) const {
  if (key == "step") {
    if (group < 0 || group >= (int)groups_.size()) return 1;
    const Loop& l = groups_[group][0]->loops.front();
    const IndexSchedule& is = scheduleOf(l.name);
    auto lo = constIntValue(l.lo, k_);
    // Steps start at lo + (the block's share + n) * span (stepPartOf).
    const size_t sp = stepPartOf(is);
    if (!lo || sp + 1 >= is.parts.size() || isThreadPlacement(is.parts[sp].place)) return 1;
    return std::gcd(*lo, stepSpanOf(is));
  }
  for (const ParallelIndex& p : par_)
    if (key == "p:" + p.loop->name) {
      int64_t divisor = p.ni->hull.lo;
      for (size_t part = 0; part < p.ext.size(); ++part) {
        Placement pl = p.sched->parts[part].place;
        if (isGridPlacement(pl) || pl == Placement::Serial || pl == Placement::Unroll)
          divisor = std::gcd(divisor, p.stride[part]);
      }
      return divisor;
    }
  return 1;
}

std::vector<int64_t> NestEmitter::regValuesOf(int64_t point) const {
  // Mixed radix, the first reg part most significant.
  std::vector<int64_t> v(regParts_.size());
  for (size_t r = regParts_.size(); r-- > 0;) {
    v[r] = point % regParts_[r].extent;
    point /= regParts_[r].extent;
  }
  return v;
}

// The value of a parallel index at the current loop position and register point.
C::ExprP NestEmitter::indexValue(const ParallelIndex& p, const std::vector<int64_t>* regValues) {
  std::vector<C::ExprP> terms{p.base};
  int pi = (int)(&p - par_.data());
  for (size_t part = 0; part < p.sched->parts.size(); ++part) {
    Placement pl = p.sched->parts[part].place;
    if (pl == Placement::Serial || pl == Placement::Unroll) {
      terms.push_back(C::product(C::name(p.loopVars[part]), lit(p.stride[part])));
    } else if (pl == Placement::Reg) {
      RTCG_ASSERT(regValues != nullptr, "register part outside a point");
      for (size_t r = 0; r < regParts_.size(); ++r)
        if (regParts_[r].par == pi && regParts_[r].part == (int)part)
          terms.push_back(lit((*regValues)[r] * p.stride[part]));
    }
  }
  return C::sum(terms);
}

// The condition under which index `p` is inside the domain (null when it always is).
C::ExprP NestEmitter::guardOf(const ParallelIndex& p, Env& env, std::vector<C::Stmt>& out) {
  if (p.exact) return nullptr;
  C::ExprP v = env.vars.at(p.loop->id);
  C::ExprP cond = C::binary("<", v, lower(p.loop->hi, env, out));
  if (!constIntValue(p.loop->lo, k_)) cond = C::binary("&&", C::binary(">=", v, lower(p.loop->lo, env, out)), cond);
  return cond;
}

// !e, written without the `!` where the operator can be flipped: !(a < b) is a >= b.
static C::ExprP negate(const C::ExprP& e) {
  if (e->kind == C::ExprKind::Binary) {
    static const std::map<std::string, std::string> flipped = {{"<", ">="}, {">=", "<"}, {">", "<="},
                                                               {"<=", ">"}, {"==", "!="}, {"!=", "=="}};
    auto it = flipped.find(e->text);
    if (it != flipped.end()) return C::binary(it->second, e->args[0], e->args[1]);
    if (e->text == "&&") return C::binary("||", negate(e->args[0]), negate(e->args[1]));
  }
  return C::unary("!", e);
}

static C::ExprP andAll(C::ExprP a, C::ExprP b) {
  if (!a) return b;
  if (!b) return a;
  return C::binary("&&", a, b);
}

void NestEmitter::declarePointIndices(int64_t point, Env& env, std::vector<C::Stmt>& out, C::ExprP& guard) {
  std::vector<int64_t> rv = regValuesOf(point);
  for (ParallelIndex& p : par_) {
    if (p.level != Level::Point) continue;
    // Every point declares its indices in a scope of its own, under the same names.
    if (p.pointName.empty()) p.pointName = names_.fresh(p.loop->name);
    const std::string& n = p.pointName;
    out.push_back(C::decl(idx_, n, indexValue(p, &rv)));
    env.vars[p.loop->id] = C::name(n);
  }
  for (ParallelIndex& p : par_)
    if (p.guardLevel == Level::Point) guard = andAll(guard, guardOf(p, env, out));
}

void NestEmitter::emitStatements(Env& env, std::vector<C::Stmt>& out) {
  for (const Stmt& s : nest_.body) {
    if (s.kind == StmtKind::Let) {
      auto it = letNames_.find(s.letId);
      if (it == letNames_.end()) it = letNames_.emplace(s.letId, names_.fresh(s.letName)).first;
      C::ExprP v = lower(s.value, env, out);
      out.push_back(C::decl(cudaTypeName(s.value->type), it->second, v));
      env.vars[s.letId] = C::name(it->second);
    } else {
      C::ExprP target = lowerAccess(s.array, s.indices, env, out);
      C::ExprP v = lower(s.value, env, out);
      out.push_back(C::assign(target, "=", v));
    }
  }
}

C::Function NestEmitter::emit(LaunchSpec& launch, const std::string& indexType, std::vector<C::GlobalArray>& globals) {
  idx_ = indexType;
  std::string err;
  auto indices = nestIndices(k_, nestIdx_, &err);
  RTCG_ASSERT(indices.has_value(), "validated nest has unbounded indices: " + err);
  indices_ = *indices;
  for (const NestIndex& ni : indices_)
    for (const Loop* l : ni.loops) ranges_[l->id] = ni.hull;

  C::Function fn;
  fn.kind = C::FunctionKind::Kernel;
  fn.name = fmt::format("{}_{}", k_.name, nestIdx_);
  launch.function = fn.name;
  // The global scratch of a reduction split across blocks, named after the function (unique in
  // the module) and before anything else so that no parameter or local hides it.
  xb_ = crossBlockPlan(k_, nestIdx_, sched_);
  if (xb_.any()) {
    for (const auto& [t, v] : xb_.values) partials_[t] = names_.fresh(fmt::format("{}_partials_{}", fn.name, typeName(t)));
    arrivals_ = names_.fresh(fn.name + "_arrivals");
  }

  // Parameters: sizes are already substituted into the bound IR as constants (the header comment
  // lists their values); everything else is an argument.
  // Arrays arrive as `<name>_arg` and are read through `<name>`, declared 16-byte aligned: rtcg's
  // arrays are whole device allocations (256-byte aligned; Executable::launch checks every pointer), and
  // with the alignment known NVVM merges neighbouring accesses into 16-byte vector loads and stores.
  std::vector<C::Stmt> body;
  std::vector<C::Stmt> aligned;
  for (size_t i = 0; i < k_.params.size(); ++i) {
    const Param& p = k_.params[i];
    paramNames_.push_back(names_.fresh(p.name));
    if (p.kind == ParamKind::Size) continue;
    launch.params.push_back((int)i);
    C::Param cp{cudaTypeName(p.type), paramNames_.back()};
    if (p.isArray()) {
      cp.pointer = cp.restrict = true;
      cp.constPointee = !p.isWritten();
      cp.name = names_.fresh(p.name + "_arg");
      std::string pointer = fmt::format("{}{}*", cp.constPointee ? "const " : "", cp.type);
      aligned.push_back(C::decl(pointer + " __restrict__", paramNames_.back(),
                                C::castTo(pointer, C::call("__builtin_assume_aligned", {C::name(cp.name), lit(16)})),
                                false));
    }
    fn.params.push_back(cp);
  }
  if (!aligned.empty()) {
    body.push_back(C::comment("Arrays are whole device allocations: 16-byte aligned (checked at launch)"));
    for (C::Stmt& st : aligned) body.push_back(std::move(st));
  }

  // Parallel indices: part extents and strides, and where each value becomes known.
  for (const NestIndex& ni : indices_) {
    if (!ni.parallel) continue;
    ParallelIndex p;
    p.ni = &ni;
    p.loop = ni.loops.front();
    p.sched = &scheduleOf(ni.name);
    p.ext = partExtents(*p.sched, ni.hull.extent());
    p.stride.assign(p.ext.size(), 1);
    for (size_t q = p.ext.size() - 1; q-- > 0;) p.stride[q] = p.stride[q + 1] * p.ext[q + 1];
    int64_t covered = p.stride[0] * p.ext[0];
    p.exact = ni.constantBounds && covered == ni.hull.extent();
    for (const SchedulePart& part : p.sched->parts) {
      if (part.place == Placement::Reg) p.level = Level::Point;
      else if ((part.place == Placement::Serial || part.place == Placement::Unroll) && p.level == Level::Top)
        p.level = Level::Group;
    }
    p.loopVars.resize(p.ext.size());
    par_.push_back(std::move(p));
  }
  // A guard is checked once every index its bounds mention is known.
  for (ParallelIndex& p : par_) {
    p.guardLevel = p.level;
    std::set<int> refs;
    collectVarIds(p.loop->lo, VarKind::Index, refs);
    collectVarIds(p.loop->hi, VarKind::Index, refs);
    for (const ParallelIndex& o : par_)
      if (refs.count(o.loop->id)) p.guardLevel = std::max(p.guardLevel, o.level);
  }
  groups_ = hoistedReductionGroups(k_, nestIdx_, sched_);
  plan_ = planStaging(k_, nestIdx_, sched_);
  RTCG_ASSERT(plan_.errors.empty(), "validated staging has errors");
  cooperative_ = !plan_.arrays.empty();
  // Cooperative code guards each point instead of returning early or skipping whole groups.
  if (cooperative_)
    for (ParallelIndex& p : par_) p.guardLevel = Level::Point;

  // Launch shape and the grid/thread part of each index.
  static const char* axisField[3] = {"x", "y", "z"};
  int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  Env env;
  for (ParallelIndex& p : par_) {
    std::vector<C::ExprP> terms{lit(p.ni->hull.lo)};
    for (size_t part = 0; part < p.ext.size(); ++part) {
      Placement pl = p.sched->parts[part].place;
      int axis = placementAxis(pl);
      if (axis < 0) continue;
      (isGridPlacement(pl) ? grid : block)[axis] *= p.ext[part];
      C::ExprP coord = C::castTo(idx_, C::member(C::name(isGridPlacement(pl) ? "blockIdx" : "threadIdx"), axisField[axis]));
      terms.push_back(C::product(coord, lit(p.stride[part])));
    }
    C::ExprP value = C::sum(terms);
    if (p.level == Level::Top) {
      std::string n = names_.fresh(p.loop->name);
      body.push_back(C::decl(idx_, n, value));
      env.vars[p.loop->id] = C::name(n);
      p.base = C::name(n);
    } else if (value->kind == C::ExprKind::IntLit) {
      p.base = value;
    } else {
      std::string n = names_.fresh(p.loop->name + "_base");
      body.push_back(C::decl(idx_, n, value));
      p.base = C::name(n);
    }
  }
  for (const NestIndex& ni : indices_) {
    if (ni.parallel) continue;
    const IndexSchedule& is = scheduleOf(ni.name);
    std::vector<int64_t> ext = partExtents(is, ni.hull.extent());
    for (size_t part = 0; part < ext.size(); ++part)
      if (isThreadPlacement(is.parts[part].place)) {
        block[placementAxis(is.parts[part].place)] *= ext[part];
        redAxis_[placementAxis(is.parts[part].place)] = true;
        fullMask_ |= 1 << placementAxis(is.parts[part].place);
        cooperative_ = true;
      } else if (isGridPlacement(is.parts[part].place)) {
        grid[placementAxis(is.parts[part].place)] *= ext[part];
      }
  }
  // The blocks of a tile meet at barriers around the arrival count: cooperative code.
  if (xb_.any()) cooperative_ = true;
  for (int a = 0; a < 3; ++a) {
    launch.grid[a] = (uint32_t)grid[a];
    launch.block[a] = (uint32_t)block[a];
  }
  if (cooperative_)
    for (ParallelIndex& p : par_) p.guardLevel = Level::Point;
  fn.launchBounds = (int)(block[0] * block[1] * block[2]);
  fn.minBlocks = (int)sched_.blocksPerSM;
  threads_ = block[0] * block[1] * block[2];

  if (cooperative_) {
    // tid = threadIdx.x + bx * (threadIdx.y + by * threadIdx.z), axes of extent 1 left out.
    C::ExprP tid;
    for (int a = 2; a >= 0; --a) {
      if (block[a] == 1) continue;
      C::ExprP t = C::castTo(idx_, C::member(C::name("threadIdx"), axisField[a]));
      tid = tid ? C::sum({t, C::product(lit(block[a]), tid)}) : t;
    }
    if (!tid) {
      tid_ = lit(0);
    } else {
      std::string n = names_.fresh("tid");
      body.push_back(C::decl(idx_, n, tid));
      tid_ = C::name(n);
    }
    // Tiles: static shared arrays up to 48 KiB, else slices of dynamic shared memory. The static
    // limit covers what is declared below too: a combine buffer per accumulator type (with
    // reduction thread axes) and the last-block flag (a reduction split across blocks); a 48 KiB
    // tile plus the 1-byte flag does not compile.
    int64_t staticExtra = xb_.any() ? 16 : 0;
    {
      int64_t lanes = 1;
      for (int a = 0; a < 3; ++a)
        if (fullMask_ & (1 << a)) lanes *= block[a];
      if (lanes > 1)
        for (ScalarType t : combineBufferTypes()) staticExtra += threads_ * typeBytes(t);
    }
    const bool dynamic = plan_.bytes + staticExtra > 48 * 1024;
    int64_t byteOffset = 0;
    std::set<ScalarType> externTypes;
    for (const StagedArray& sa : plan_.arrays) {
      ScalarType t = k_.params[sa.array].type;
      if (dynamic) {
        static const std::map<ScalarType, const char*> storage = {{ScalarType::F32, "rtcg_smem_f32"},
                                                                   {ScalarType::F64, "rtcg_smem_f64"},
                                                                   {ScalarType::I32, "rtcg_smem_i32"},
                                                                   {ScalarType::I64, "rtcg_smem_i64"}};
        if (externTypes.insert(t).second) body.push_back(C::externSharedArray(cudaTypeName(t), storage.at(t)));
        tiles_.push_back({storage.at(t), byteOffset / typeBytes(t)});
        byteOffset += (sa.bytes + 15) / 16 * 16;
      } else {
        std::string n = names_.fresh("s_" + k_.params[sa.array].name);
        body.push_back(C::sharedArray(cudaTypeName(t), n, sa.elements * sa.buffers));
        tiles_.push_back({n, 0});
      }
    }
    if (dynamic) launch.dynamicSharedBytes = (uint32_t)byteOffset;

    // lane = coordinates on the reduction axes, slot = the other coordinates (x fastest); per mask
    // of reduction axes (every one, and the axes of each split group).
    auto laneSet = [&](int mask) {
      if (laneSets_.count(mask)) return;
      int64_t laneScale = 1, slotScale = 1;
      std::vector<C::ExprP> laneTerms, slotTerms;
      for (int a = 0; a < 3; ++a) {
        if (block[a] == 1) continue;
        C::ExprP t = C::castTo(idx_, C::member(C::name("threadIdx"), axisField[a]));
        if (mask & (1 << a)) laneTerms.push_back(C::product(t, lit(laneScale))), laneScale *= block[a];
        else slotTerms.push_back(C::product(t, lit(slotScale))), slotScale *= block[a];
      }
      LaneSet ls;
      ls.lanes = laneScale;
      if (laneScale > 1) {
        std::string ln = names_.fresh("lane"), sn = names_.fresh("slot");
        body.push_back(C::decl(idx_, ln, C::sum(laneTerms)));
        body.push_back(C::decl(idx_, sn, C::sum(slotTerms)));
        ls.lane = C::name(ln);
        ls.slot = C::name(sn);
      }
      laneSets_[mask] = ls;
    };
    laneSet(fullMask_);
    lanes_ = laneSets_.at(fullMask_).lanes;
    if (lanes_ > 1) {
      lane_ = laneSets_.at(fullMask_).lane;
      slot_ = laneSets_.at(fullMask_).slot;
      for (const std::vector<Expr>& g : groups_)
        if (splitGroup(g)) laneSet(groupMask(g));
      // One combine buffer per accumulator type, a value per thread.
      for (ScalarType t : combineBufferTypes()) {
        std::string n = names_.fresh(fmt::format("red_{}", typeName(t)));
        body.push_back(C::sharedArray(cudaTypeName(t), n, threads_));
        combineBuffers_[t] = n;
      }
    }
    if (xb_.any()) {
      // This block's tile (grid coordinates of the parallel indices) and its place in the tile
      // (coordinates on the reduction's grid axes), x fastest.
      std::vector<C::ExprP> tileTerms, blockTerms;
      int64_t tileScale = 1, blockScale = 1;
      for (int a = 0; a < 3; ++a) {
        if (grid[a] == 1) continue;
        C::ExprP b = C::castTo(idx_, C::member(C::name("blockIdx"), axisField[a]));
        if (xb_.gridAxis[a]) blockTerms.push_back(C::product(b, lit(blockScale))), blockScale *= grid[a];
        else tileTerms.push_back(C::product(b, lit(tileScale))), tileScale *= grid[a];
      }
      auto declared = [&](const char* base, const std::vector<C::ExprP>& terms) {
        if (terms.empty()) return lit(0);
        std::string n = names_.fresh(base);
        body.push_back(C::decl(idx_, n, C::sum(terms)));
        return C::name(n);
      };
      tile_ = declared("tile", tileTerms);
      rblock_ = declared("block_in_tile", blockTerms);
      lastBlock_ = names_.fresh("last_block");
      body.push_back(C::sharedScalar("bool", lastBlock_));
    }
  }

  // Threads outside the domain leave at once.
  C::ExprP topGuard;
  for (ParallelIndex& p : par_)
    if (p.guardLevel == Level::Top) topGuard = andAll(topGuard, guardOf(p, env, body));
  if (topGuard) body.push_back(C::ifThen(negate(topGuard), {C::returnStmt()}));

  // Tiles staged once per block.
  {
    const std::map<std::string, C::ExprP> bases = tileBases();
    bool any = false;
    for (size_t t = 0; t < plan_.arrays.size(); ++t)
      if (plan_.arrays[t].level == StageLevel::Block && !plan_.arrays[t].movesWithSerial) {
        stageTile(t, bases, env, body);
        any = true;
      }
    if (any) body.push_back(C::syncThreads());
  }

  // Register tile points, in clause order.
  for (const IndexSchedule& is : sched_.indices)
    for (size_t pi = 0; pi < par_.size(); ++pi)
      if (par_[pi].sched == &is)
        for (size_t part = 0; part < is.parts.size(); ++part)
          if (is.parts[part].place == Placement::Reg) {
            regParts_.push_back({(int)pi, (int)part, par_[pi].ext[part]});
            regPoints_ *= par_[pi].ext[part];
          }

  // Reductions computed ahead of the statements (so that register-tile points share one pass over
  // the reduction loops, and reductions over the same loops share one loop): those that depend on
  // no let, read no array this nest writes, and whose bounds do not depend on a register index.
  // Reductions computed ahead of the statements (so that register-tile points share one pass over
  // the reduction loops, and reductions over the same loops share one loop): see
  // hoistedReductionGroups.
  std::vector<Expr> hoisted;
  for (const std::vector<Expr>& g : groups_) hoisted.insert(hoisted.end(), g.begin(), g.end());
  const std::vector<std::vector<Expr>>& groups = groups_;

  // The work of one thread at one position of the serial loops of parallel indices; `position`
  // is that position, linear (set below, once the loops are named).
  C::ExprP position = lit(0);
  std::vector<C::Stmt> pipeBefore;  // positions pipelined: goes ahead of the pipelined loop
  std::function<std::vector<C::Stmt>(Env)> group = [&](Env genv) {
    std::vector<C::Stmt> out;
    for (ParallelIndex& p : par_) {
      if (p.level != Level::Group) continue;
      std::string n = names_.fresh(p.loop->name);
      out.push_back(C::decl(idx_, n, indexValue(p, nullptr)));
      genv.vars[p.loop->id] = C::name(n);
    }
    C::ExprP groupGuard;
    for (ParallelIndex& p : par_)
      if (p.guardLevel == Level::Group) groupGuard = andAll(groupGuard, guardOf(p, genv, out));
    // Tiles that move with the serial parts of parallel indices: staged per position, read by all
    // before the next position's copy.
    bool stagedHere = false;
    {
      const std::map<std::string, C::ExprP> bases = tileBases();
      for (size_t t = 0; t < plan_.arrays.size(); ++t)
        if (plan_.arrays[t].level == StageLevel::Block && plan_.arrays[t].movesWithSerial) {
          stageTile(t, bases, genv, out);
          stagedHere = true;
        }
      if (stagedHere) out.push_back(C::syncThreads());
    }
    std::vector<C::Stmt> work;
    // Positions pipelined: this position's copies for later ones are issued first, and its reads
    // point at its buffer; `pipeAfter` (waits or the prefetched stores) and a barrier end it.
    std::vector<C::Stmt> pipeAfter;
    if (pipe_.group >= 0) {
      const C::ExprP here = C::name(pipe_.par->loopVars[pipe_.part]);
      const int64_t positions = pipe_.par->ext[pipe_.part];
      StepAt positionAt = [&](int64_t n, bool fromStart) {
        C::ExprP at = fromStart ? lit(n) : C::sum({here, lit(n)});
        return std::pair{at, C::binary("<", at, lit(positions))};
      };
      out.push_back(C::comment(fmt::format("Tiles of later positions of '{}' are copied ahead ({} buffers)",
                                           pipe_.par->loop->name, sched_.buffers)));
      copyStep(pipe_.group, here, positionAt, genv, pipeBefore, out, pipeAfter);
    }
    // Accumulators, per reduction and register point.
    std::vector<std::map<const ExprNode*, C::ExprP>> accs(regPoints_);
    for (const Expr& r : hoisted)
      for (int64_t pt = 0; pt < regPoints_; ++pt) {
        std::string base = fmt::format("{}_{}", reduceName(r->reduceOp), r->loops.front().name);
        std::string n = names_.fresh(regPoints_ > 1 ? fmt::format("{}_r{}", base, pt) : base);
        work.push_back(C::decl(cudaTypeName(r->type), n, reductionIdentity(r->reduceOp, r->type), false));
        accs[pt][r.get()] = C::name(n);
      }
    // `loads: early`: the statements' own loads, per register point, ahead of the reductions.
    std::vector<std::map<const ExprNode*, C::ExprP>> early(regPoints_);
    if (sched_.earlyLoads) {
      const std::vector<Expr> loads = earlyStatementLoads(k_, nestIdx_, sched_);
      if (!loads.empty())
        work.push_back(C::comment("The statements' loads, issued ahead of the reductions so that they overlap the arithmetic"));
      for (int64_t pt = 0; pt < regPoints_ && !loads.empty(); ++pt) {
        std::vector<std::string> vars;
        for (const Expr& l : loads) {
          std::string n = names_.fresh(fmt::format("{}_early{}", paramNames_[l->array], regPoints_ > 1 ? fmt::format("_r{}", pt) : ""));
          work.push_back(C::decl(cudaTypeName(l->type), n, literalOf(l->type, 0, 0.0), false));
          early[pt][l.get()] = C::name(n);
          vars.push_back(n);
        }
        Env penv = genv;
        std::vector<C::Stmt> pbody;
        C::ExprP guard;
        declarePointIndices(pt, penv, pbody, guard);
        std::vector<C::Stmt> assigns;
        for (size_t q = 0; q < loads.size(); ++q)
          assigns.push_back(C::assign(C::name(vars[q]), "=", lowerAccess(loads[q]->array, loads[q]->operands, penv, assigns)));
        if (guard) pbody.push_back(C::ifThen(guard, std::move(assigns)));
        else for (C::Stmt& st : assigns) pbody.push_back(std::move(st));
        work.push_back(C::block(std::move(pbody)));
      }
    }
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const std::vector<Expr>& g = groups[gi];
      emitReductionLoops(g[0]->loops, 0, genv, work, [&](Env& renv, std::vector<C::Stmt>& rbody) {
        for (const Expr& r : g)
          for (size_t q = 0; q < r->loops.size(); ++q) renv.vars[r->loops[q].id] = renv.vars.at(g[0]->loops[q].id);
        for (int64_t pt = 0; pt < regPoints_; ++pt) {
          Env penv = renv;
          std::vector<C::Stmt> pbody;
          C::ExprP guard;
          declarePointIndices(pt, penv, pbody, guard);
          std::vector<C::Stmt> updates;
          for (const Expr& r : g) {
            C::ExprP v = lower(r->operands[0], penv, updates);
            updates.push_back(combine(r->reduceOp, r->type, accs[pt].at(r.get()), v));
          }
          // A point outside the domain that reads only shared tiles accumulates garbage it never
          // stores: no guard, so that the points' reads can merge into vector loads.
          if (guard && !readsOnlyTiles(g, renv)) pbody.push_back(C::ifThen(guard, std::move(updates)));
          else for (C::Stmt& s : updates) pbody.push_back(std::move(s));
          if (regPoints_ > 1) rbody.push_back(C::block(std::move(pbody)));
          else for (C::Stmt& s : pbody) rbody.push_back(std::move(s));
        }
      }, (int)gi == pipe_.group ? -1 : (int)gi);
      if (splitGroup(g)) {
        work.push_back(C::comment("Combine the partial results of the threads that share an output point"));
        for (const Expr& r : g)
          for (int64_t pt = 0; pt < regPoints_; ++pt)
            combineLanes(r->reduceOp, r->type, accs[pt].at(r.get()), work, groupMask(g));
      }
    }
    // The statements, per register point; with a reduction split across blocks, in the last block only.
    std::vector<std::vector<C::Stmt>> pointStatements(regPoints_);
    for (int64_t pt = 0; pt < regPoints_; ++pt) {
      std::vector<C::Stmt>& statements = pointStatements[pt];
      Env penv = genv;
      penv.hoisted = accs[pt];
      penv.hoisted.insert(early[pt].begin(), early[pt].end());
      std::vector<C::Stmt> pbody;
      C::ExprP guard;
      declarePointIndices(pt, penv, pbody, guard);
      std::vector<C::Stmt> stmts;
      emitStatements(penv, stmts);
      // Every lane holds the combined value; the first one stores.
      if (lanes_ > 1) guard = andAll(guard, C::binary("==", lane_, lit(0)));
      if (guard) pbody.push_back(C::ifThen(guard, std::move(stmts)));
      else for (C::Stmt& s : stmts) pbody.push_back(std::move(s));
      if (regPoints_ > 1) {
        std::vector<int64_t> rv = regValuesOf(pt);
        std::vector<std::string> coords;
        for (size_t r = 0; r < regParts_.size(); ++r)
          coords.push_back(fmt::format("{} {}", par_[regParts_[r].par].loop->name, rv[r]));
        statements.push_back(C::comment(fmt::format("register point {} of {} ({})", pt + 1, regPoints_, fmt::join(coords, ", "))));
        statements.push_back(C::block(std::move(pbody)));
      } else {
        for (C::Stmt& s : pbody) statements.push_back(std::move(s));
      }
    }
    if (xb_.any()) {
      crossBlockCombine(accs, position, work, std::move(pointStatements));
    } else {
      for (std::vector<C::Stmt>& statements : pointStatements)
        for (C::Stmt& s : statements) work.push_back(std::move(s));
    }
    if (groupGuard) out.push_back(C::ifThen(groupGuard, std::move(work)));
    else for (C::Stmt& s : work) out.push_back(std::move(s));
    if (pipe_.group >= 0) {
      for (C::Stmt& s : pipeAfter) out.push_back(std::move(s));
      out.push_back(C::syncThreads());  // the position's tiles are read by all before the next copy
    }
    if (stagedHere) out.push_back(C::syncThreads());
    return out;
  };

  // Serial and unrolled parts of parallel indices, in clause order, around the group.
  std::vector<LoopPart> loopParts;
  for (const IndexSchedule& is : sched_.indices)
    for (ParallelIndex& p : par_)
      if (p.sched == &is)
        for (size_t part = 0; part < is.parts.size(); ++part)
          if (is.parts[part].place == Placement::Serial || is.parts[part].place == Placement::Unroll) {
            p.loopVars[part] = names_.fresh(fmt::format("{}_{}", p.loop->name, part));
            loopParts.push_back({&p, part});
          }
  {
    std::vector<C::ExprP> terms;
    int64_t scale = 1;
    for (size_t q = loopParts.size(); q-- > 0;) {
      terms.push_back(C::product(C::name(loopParts[q].p->loopVars[loopParts[q].part]), lit(scale)));
      scale *= loopParts[q].p->ext[loopParts[q].part];
    }
    position = C::sum(terms);
  }
  size_t pipeLoop = loopParts.size();
  findPositionPipeline(loopParts, pipeLoop);
  std::vector<C::Stmt> inner = group(env);
  for (size_t q = loopParts.size(); q-- > 0;) {
    const LoopPart& lp = loopParts[q];
    std::vector<C::Stmt> loop;
    if (q == pipeLoop)  // the first positions' copies, ahead of the pipelined loop
      for (C::Stmt& s : pipeBefore) loop.push_back(std::move(s));
    loop.push_back(C::forLoop(idx_, lp.p->loopVars[lp.part], lit(0), lit(lp.p->ext[lp.part]),
                              unrollOf(lp.p->sched->parts[lp.part].place), std::move(inner)));
    inner = std::move(loop);
  }
  for (C::Stmt& s : inner) body.push_back(std::move(s));
  fn.body = std::move(body);

  // The header comment.
  std::vector<std::string> sizes;
  for (const auto& [n, v] : k_.sizes) sizes.push_back(fmt::format("{} = {}", n, v));
  fn.commentLines = {
      fmt::format("Kernel {}, loop nest {} of {}", k_.name, nestIdx_, k_.nests.size()),
      fmt::format("Sizes: {}", sizes.empty() ? "none" : fmt::format("{}", fmt::join(sizes, ", "))),
      fmt::format("Schedule: {}", printNestSchedule(sched_)),
      fmt::format("Launch: grid ({}, {}, {}), block ({}, {}, {})", grid[0], grid[1], grid[2], block[0], block[1], block[2]),
  };
  if (xb_.any()) {
    // The global scratch: partials per accumulator type and the arrival counters.
    std::vector<std::string> arrays;
    for (const auto& [t, v] : xb_.values) {
      int64_t n = xb_.counters * v * xb_.slots * xb_.blocks;
      globals.push_back({cudaTypeName(t), partials_.at(t), n, {}});
      arrays.push_back(partials_.at(t));
    }
    globals.push_back({"unsigned int", arrivals_, xb_.counters, {}});
    globals.front().commentLines = {
        fmt::format("Global scratch of {}: the reduction over '{}' is split across {} blocks per output tile", fn.name,
                    xb_.index, xb_.blocks)};
    fn.commentLines.push_back(fmt::format("Global scratch: the reduction over '{}' is split across {} blocks per output tile;",
                                          xb_.index, xb_.blocks));
    fn.commentLines.push_back(fmt::format("  the partials go through {} and the last block to arrive (counted in {},",
                                          fmt::join(arrays, ", "), arrivals_));
    fn.commentLines.push_back("  which it resets to 0) combines them. Two overlapping launches of this kernel would share");
    fn.commentLines.push_back("  the scratch: launch it once at a time (in stream order).");
    launch.usesGlobalScratch = true;
    launch.arrivalCounters = arrivals_;
    launch.arrivalCounterCount = (uint32_t)xb_.counters;
  }
  return fn;
}

// __device__ helpers for floor division and modulo of possibly negative integers.
std::vector<C::Function> floorHelpers(const std::string& type) {
  C::Param a{type, "a"}, b{type, "b"};
  C::Function div{C::FunctionKind::DeviceInline, type, "rtcg_floordiv", {a, b}, 0,
                  {fmt::format("Floor division of {} (rounds toward -infinity).", type)}, {}};
  C::ExprP na = C::name("a"), nb = C::name("b"), q = C::name("q"), r = C::name("r"), zero = C::intLit(0);
  auto signsDiffer = [&](C::ExprP x) { return C::binary("!=", C::binary("<", x, zero), C::binary("<", nb, zero)); };
  div.body = {C::decl(type, "q", C::binary("/", na, nb)),
              C::returnStmt(C::ternary(C::binary("&&", C::binary("!=", C::binary("*", q, nb), na), signsDiffer(na)),
                                       C::binary("-", q, C::intLit(1)), q))};
  C::Function mod{C::FunctionKind::DeviceInline, type, "rtcg_floormod", {a, b}, 0,
                  {fmt::format("Floor modulo of {} (the result has the sign of b).", type)}, {}};
  mod.body = {C::decl(type, "r", C::binary("%", na, nb)),
              C::returnStmt(C::ternary(C::binary("&&", C::binary("!=", r, zero), signsDiffer(r)), C::binary("+", r, nb), r))};
  return {div, mod};
}

// The cp.async helpers of `copy: async` (fixed text). Before sm_80 and in the host emulation of
// the tests (which defines its own, checking alignment) they are plain copies, which the
// barriers around each step make correct too.
const char* const asyncCopyHelpers = R"(// Copies global -> shared memory for tiles staged steps ahead ('copy: async'): cp.async on sm_80
// and later (src_bytes < size zero-fills the rest), plain copies before.
#ifndef RTCG_HOST_EMULATION
#if __CUDA_ARCH__ >= 800
#define RTCG_CP_ASYNC(kind, size) \
  asm volatile("cp.async." kind ".shared.global [%0], [%1], " #size ", %2;\n" \
               :: "r"((unsigned int)__cvta_generic_to_shared(dst)), "l"(src), "r"(src_bytes) : "memory")
__device__ __forceinline__ void rtcg_cp_async4(void* dst, const void* src, int src_bytes) { RTCG_CP_ASYNC("ca", 4); }
__device__ __forceinline__ void rtcg_cp_async8(void* dst, const void* src, int src_bytes) { RTCG_CP_ASYNC("ca", 8); }
__device__ __forceinline__ void rtcg_cp_async16(void* dst, const void* src, int src_bytes) { RTCG_CP_ASYNC("cg", 16); }
__device__ __forceinline__ void rtcg_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void rtcg_cp_async_wait0() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ void rtcg_cp_async_wait1() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }
__device__ __forceinline__ void rtcg_cp_async_wait2() { asm volatile("cp.async.wait_group 2;\n" ::: "memory"); }
#else
__device__ __forceinline__ void rtcg_cp_async4(void* dst, const void* src, int src_bytes) {
  *(int*)dst = src_bytes ? *(const int*)src : 0;
}
__device__ __forceinline__ void rtcg_cp_async8(void* dst, const void* src, int src_bytes) {
  *(long long*)dst = src_bytes ? *(const long long*)src : 0;
}
__device__ __forceinline__ void rtcg_cp_async16(void* dst, const void* src, int src_bytes) {
  *(int4*)dst = src_bytes ? *(const int4*)src : make_int4(0, 0, 0, 0);
}
__device__ __forceinline__ void rtcg_cp_async_commit() {}
__device__ __forceinline__ void rtcg_cp_async_wait0() {}
__device__ __forceinline__ void rtcg_cp_async_wait1() {}
__device__ __forceinline__ void rtcg_cp_async_wait2() {}
#endif
#endif)";

}  // namespace

EmittedModule emitCuda(const Kernel& k, const Schedule& s) { return emitCuda(k, s, ScheduleLimits{}); }

EmittedModule emitCuda(const Kernel& k, const Schedule& s, const ScheduleLimits& limits) {
  std::vector<std::string> reasons = validateSchedule(k, s, limits);
  if (!reasons.empty())
    throw Error(fmt::format("cannot emit kernel '{}' with schedule '{}':\n  {}", k.name, printSchedule(s),
                            fmt::join(reasons, "\n  ")));

  // Indices are int unless some array or index range needs 64 bits.
  bool wide = false;
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (!k.params[i].isArray()) continue;
    int64_t elements = 1;
    for (const Expr& d : k.params[i].shape) {
      auto v = constIntValue(d, k);
      RTCG_ASSERT(v.has_value(), "array extent of a bound kernel is not constant");
      elements = *v > 0 && elements > (int64_t(1) << 62) / *v ? (int64_t(1) << 62) : elements * *v;
    }
    if (elements >= (int64_t(1) << 31)) wide = true;
  }
  for (size_t n = 0; n < k.nests.size(); ++n) {
    auto indices = nestIndices(k, (int)n);
    RTCG_ASSERT(indices.has_value(), "validated nest has unbounded indices");
    for (const NestIndex& ni : *indices)
      if (ni.hull.lo < std::numeric_limits<int32_t>::min() / 2 || ni.hull.hi > std::numeric_limits<int32_t>::max() / 2)
        wide = true;
  }
  const std::string indexType = wide ? "long long" : "int";

  EmittedModule m;
  C::Module mod;
  mod.commentLines = {fmt::format("Generated by rtcg from kernel '{}'. Do not edit.", k.name)};
  bool needInt = false, needLL = false;
  std::vector<C::Function> kernels;
  for (size_t n = 0; n < k.nests.size(); ++n) {
    LaunchSpec launch;
    std::vector<C::GlobalArray> globals;
    kernels.push_back(NestEmitter(k, (int)n, s.nests[n], needInt, needLL).emit(launch, indexType, globals));
    for (C::GlobalArray& g : globals) mod.globals.push_back(std::move(g));
    m.launches.push_back(std::move(launch));
  }
  if (std::any_of(s.nests.begin(), s.nests.end(), [](const NestSchedule& ns) { return ns.asyncCopy; }))
    mod.preludes.push_back(asyncCopyHelpers);
  if (needInt)
    for (C::Function& f : floorHelpers("int")) mod.functions.push_back(std::move(f));
  if (needLL)
    for (C::Function& f : floorHelpers("long long")) mod.functions.push_back(std::move(f));
  for (C::Function& f : kernels) mod.functions.push_back(std::move(f));
  m.source = C::printModule(mod);
  return m;
}

}  // namespace rtcg
