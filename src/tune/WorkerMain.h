// The measuring worker's main loop (the whole of tools/rtcg-worker, kept in the library so that
// the protocol and the worker evolve together).
//
// Setup: re-parse and bind the kernel from the DSL source (deterministic), fill the same inputs
// as the parent (fillInputs with the seed, the scalars given), prove it with the input checksums,
// read the reference outputs, create the CUDA context, upload once. Then per candidate: load the
// cubin, restore inputs and poison outputs, launch once, synchronize, download, verify against the
// reference (tune/Verify.h); if verified, time it (cuda::benchmark: warm-up, repeats, median, L2
// flushed) and read registers, local and shared memory and occupancy. A sticky CUDA error
// (illegal address, ...) is reported in a result with `fatal` set, and the worker exits: its
// context is unusable.
#pragma once

namespace rtcg::worker {

// Serves the protocol (tune/WorkerProtocol.h) on `fd` until `quit`, end of input or a fatal
// error. Returns the process exit status: 0 after quit or end of input, 4 when setup found no device, 1 for other setup failures, 2 for a protocol error.
// After a fatal CUDA error it exits the process at once with status 3 (std::_Exit: the
// destructors would call into the lost context). Diagnostics go to stderr (the parent keeps its tail to explain a worker's death).
int serve(int fd);

}  // namespace rtcg::worker
