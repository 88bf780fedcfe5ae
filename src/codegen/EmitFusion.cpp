// Nests fused into one launch (`fuse: N`, FusionGroup in schedule/Plan.h): each nest's code is
// emitted as for a launch of its own (its plan is cooperative, so no thread leaves early), then
// the bodies go into one function, each in a block of its own, with a barrier between them. The
// block owns the same values of the shared index in every nest, so after the barrier it sees what
// the earlier nests stored for them (__syncthreads orders the block's global and shared memory).
#include <fmt/format.h>

#include <algorithm>

#include "codegen/EmitContext.h"
#include "codegen/CudaTypes.h"

namespace rtcg::emit {

C::Function emitFusedNests(const Kernel& k, const SchedulePlan& plan, const FusionGroup& g, ModuleNeeds& needs,
                           const std::string& indexType, int arrayAlignment, const std::set<int>& localsInShared,
                           LaunchSpec& launch) {
  const int last = g.first + g.count - 1;
  C::Function fused;
  std::vector<C::Stmt> body;
  // The shared locals: the block's rows of each, named after the local's module global (which
  // no nest's code names otherwise: it is not declared).
  std::map<int, std::string> rows;
  for (int p : g.sharedLocals) {
    rows[p] = localArrayName(k, p) + "_rows";
    body.push_back(C::sharedArray(cudaTypeName(k.params[size_t(p)].type), rows[p], g.rows));
  }
  if (!rows.empty()) {
    std::vector<std::string> names;
    for (const auto& [p, storage] : rows) names.push_back(k.params[size_t(p)].name);
    body.insert(body.begin(), C::comment(fmt::format("Local {} of the block's {} value{} of '{}', in shared memory",
                                                     fmt::join(names, ", "), g.rows, g.rows == 1 ? "" : "s", g.index)));
  }
  // Kept rows (`keep:`, EmitKeptRows.cpp): the thread's array of each, for every nest's code.
  std::vector<std::string> kept;
  for (const KeptRow& r : g.kept) {
    kept.push_back(k.params[size_t(r.array)].name + "_kept");
    body.push_back(C::comment(fmt::format("Row {}[{}] kept in registers: the thread's {} value{} of '{}'",
                                          k.params[size_t(r.array)].name, r.access, r.count, r.count == 1 ? "" : "s",
                                          r.index)));
    body.push_back(C::localArray(cudaTypeName(k.params[size_t(r.array)].type), kept.back(), r.count));
  }
  for (int n = g.first; n <= last; ++n) {
    EmitContext ctx(k, plan.nests[size_t(n)], needs, indexType);
    ctx.arrayAlignment = arrayAlignment;
    for (const auto& [p, storage] : rows) ctx.names.fresh(storage);  // no name of the nest hides it
    for (size_t r = 0; r < g.kept.size(); ++r) {
      ctx.names.fresh(kept[r]);
      const std::vector<int>& readers = g.kept[r].readers;
      if (std::find(readers.begin(), readers.end(), n) != readers.end())
        ctx.kept.push_back({&g.kept[r], kept[r], readers.front() == n});
    }
    ctx.rowStorage = rows;
    ctx.localsInShared = localsInShared;
    ctx.rowBase = C::sum({lit(g.lo), C::product(coordinate(ctx, "blockIdx", g.axis), lit(g.rows))});
    LaunchSpec own;
    std::vector<C::GlobalArray> globals;  // none: a reduction split across blocks is not fused
    C::Function fn = emitNest(ctx, own, globals);
    if (n == g.first) {
      launch = own;
      fused.kind = fn.kind;
      fused.params = fn.params;
      fused.launchBounds = fn.launchBounds;
      fused.minBlocks = fn.minBlocks;
      fused.commentLines = {fmt::format("Kernel {}, loop nests {} to {} of {}, fused in one launch over '{}'", k.name,
                                        g.first, last, k.nests.size(), g.index)};
    } else {
      body.push_back(C::comment(fmt::format("Nest {} reads what nest {} stored for the block's values of '{}'", n,
                                            n - 1, g.index)));
      body.push_back(C::syncThreads());
    }
    // The nest's own header lines (sizes, schedule, launch), after the first one.
    for (size_t line = 1; line < fn.commentLines.size(); ++line) {
      const std::string& text = fn.commentLines[line];
      if (text.rfind("Sizes:", 0) != 0) fused.commentLines.push_back(fmt::format("Nest {}: {}", n, text));
      else if (n == g.first) fused.commentLines.push_back(text);
    }
    body.push_back(C::comment(fmt::format("Loop nest {}", n)));
    body.push_back(C::block(std::move(fn.body)));
  }
  fused.name = fmt::format("{}_{}_{}", k.name, g.first, last);
  launch.function = fused.name;
  fused.body = std::move(body);
  return fused;
}

}  // namespace rtcg::emit
