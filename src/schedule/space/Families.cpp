// The family table: every family of schedules the space generates for a nest, in generation order
// (the order decides the model's ties, Space.h). A new family is a file of src/schedule/space/
// with its generator (and its applicability test), declared and listed here. Beside it, the
// clause table (schedule/Schedule.cpp, clauseTable) says how each clause is parsed and printed,
// its distance and the sampling family of its non-default values.
#include "schedule/space/NestSpace.h"

namespace rtcg::space {

// Generators and their applicability tests, one file each (space/<Name>Family.cpp).
bool isSequential(NestSpace&);
void sequentialVariants(NestSpace&);
bool hasParallelIndices(NestSpace&);
void parallelVariants(NestSpace&);
bool packedApplies(NestSpace&);
void packedVariants(NestSpace&);
bool splitApplies(NestSpace&);
void splitVariants(NestSpace&);
bool crossBlockApplies(NestSpace&);
void crossBlockVariants(NestSpace&);
bool outerTileApplies(NestSpace&);
void outerTileVariants(NestSpace&);
bool rowApplies(NestSpace&);
void rowVariants(NestSpace&);
bool cyclicApplies(NestSpace&);
void cyclicVariants(NestSpace&);
bool streamingApplies(NestSpace&);
void streamingVariants(NestSpace&);
bool accumulationApplies(NestSpace&);
void accumulationVariants(NestSpace&);
bool mmaApplies(NestSpace&);
void mmaVariants(NestSpace&);

const std::vector<SpaceFamily>& spaceFamilies() {
  static const std::vector<SpaceFamily> rows = {
      // One thread, the reductions unrolled (a nest without parallel indices).
      {"sequential", isSequential, sequentialVariants},
      // Threads and register tiles, each placement also staged (StagedFamily.cpp).
      {"SIMT tiles", hasParallelIndices, parallelVariants},
      // The innermost short parallel indices whole on the thread axes (PackedFamily.cpp).
      {"packed lanes", packedApplies, packedVariants},
      {"split reductions", splitApplies, splitVariants},
      {"cross-block reductions", crossBlockApplies, crossBlockVariants},
      {"outer register tiles", outerTileApplies, outerTileVariants},
      {"rows", rowApplies, rowVariants},
      // Siblings of the best candidates so far: after the families above.
      {"cyclic rows", cyclicApplies, cyclicVariants},
      {"accumulation", accumulationApplies, accumulationVariants},
      // Each arithmetic's wgmma schedules (WgmmaFamily.cpp), then its mma ones.
      {"mma", mmaApplies, mmaVariants},
      // After mma: the best candidates may be tensor-core ones, whose stores stream too.
      {"streaming stores", streamingApplies, streamingVariants},
  };
  return rows;
}

}  // namespace rtcg::space
