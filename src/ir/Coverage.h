// The coverage check of a bound kernel: every element of each `out` array is written. An element
// no point writes holds whatever the memory held (on a GPU, anything; the reference executor
// counts it as unwritten), so such a kernel can never verify: `rtcgc run --cpu` failed on it while
// `check -D` said it was well-formed (docs/language.md's own `lower` example, issue 40).
#pragma once

#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace rtcg {

// For every `out` array (locals and inout arrays are exempt: an inout array keeps the caller's
// values where the kernel does not write), at the array's declaration:
//  - an error when some element is proved never written: by enumerating the storing points where
//    the nests are small enough (the message names the first such element), else when the
//    storing points are fewer than the elements (each point stores one element per store);
//  - a warning when it cannot be decided: stores through an indirect index or in a range that
//    reads an array, or domains too large to enumerate whose stores are not a plain cover (one
//    store whose indices are distinct parallel loop indices each spanning its whole dimension).
// Returns false if it reported an error.
bool checkOutputsWritten(const Kernel& bound, Diagnostics& diags);

}  // namespace rtcg
