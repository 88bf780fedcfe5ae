// The measuring worker's main loop (the whole of tools/rtcg-worker, kept in the library so that
// the protocol and the worker evolve together).
//
// Setup: re-parse and bind the kernel from the DSL source (deterministic), fill the same inputs
// as the parent (fillInputs with the seed, the scalars given), prove it with the input checksums,
// read the reference outputs, create the CUDA context, upload once. The context (the slowest
// part) is created on a thread of its own beside the rest: from the process's start when the
// command line names the device (`--serve --device N`: the parent starts the worker before it has
// the setup), else from the setup's arrival. Then per candidate: load the
// cubin, restore inputs and poison outputs, launch once, synchronize, download, verify against the
// reference (tune/Verify.h); if verified, time it (cuda::benchmark: warm-up, repeats, median, L2
// flushed) and read registers, local and shared memory and occupancy. A sticky CUDA error
// (illegal address, ...) is reported in a result with `fatal` set, and the worker exits: its
// context is unusable.
#pragma once

#include <optional>

namespace rtcg::worker {

// The measuring worker's command line: `--serve` (-1: the device comes with the setup) or
// `--serve --device N` (N >= 0: its context is created at once); nullopt for any other.
std::optional<int> serveArgs(int argc, char** argv);

// Serves the protocol (tune/WorkerProtocol.h) on `fd` until `quit`, end of input or a fatal
// error. Returns the process exit status: 0 after quit or end of input, 4 when setup found no device, 1 for other setup failures, 2 for a protocol error.
// After a fatal CUDA error it exits the process at once with status 3 (std::_Exit: the
// destructors would call into the lost context). Diagnostics go to stderr (the parent keeps its tail to explain a worker's death).
// `deviceOrdinal` (serveArgs) >= 0: the CUDA context on that device is begun before the setup
// arrives (used when the setup names the same device).
int serve(int fd, int deviceOrdinal = -1);

}  // namespace rtcg::worker
