// The streaming stores family: `stores: streaming` siblings of the model's best few candidates.
// The model gives streaming stores no credit (SpaceModel.h), so they tie with their siblings, and
// sampling measures a few of the family; siblings of every candidate would only double the space.
#include "schedule/space/NestSpace.h"

namespace rtcg::space {

// Every nest: the first sibling says whether a store can stream.
bool streamingApplies(NestSpace&) { return true; }

// None when the nest has no store that can stream (the first sibling's plan says so).
void streamingVariants(NestSpace& s) {
  std::vector<NestSchedule> siblings;
  for (size_t i : s.bestKept(4))
    if (!s.kept[i].plan->schedule.streamingStores) siblings.push_back(s.kept[i].plan->schedule);
  for (NestSchedule& ns : siblings) {
    ns.streamingStores = true;
    const size_t before = s.pruned.size();
    if (!s.add(ns, Group::Plain) && s.pruned.size() > before) return;  // no store streams here
  }
}

}  // namespace rtcg::space
