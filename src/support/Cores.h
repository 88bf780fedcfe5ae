// The CPU cores this process may run on: its affinity mask (what taskset, mpirun --bind-to or a
// batch system's binding, such as srun's, leaves it), not every core of the machine, which
// std::thread::hardware_concurrency counts. Compile pools size themselves by it, so a rank bound
// to 8 cores of a node starts 8 compile workers, not the node's 64.
#pragma once

namespace rtcg {

int usableCores();  // at least 1

// Whether the affinity mask leaves out some of the machine's cores (a bound process).
bool boundToSomeCores();

}  // namespace rtcg
