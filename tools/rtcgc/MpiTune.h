// `rtcgc tune` under mpirun/srun: searches spread over the GPUs of several processes and nodes,
// one MPI rank per GPU (each rank measures on the device of its rank within its node: --devices,
// default every device, indexed by that local rank). Built when CMake finds MPI (RTCG_HAVE_MPI);
// without it, rtcgc launched as several ranks says so and stops instead of running the whole
// search on every rank.
//
//   --manifest  rank 0 deals the keys out one at a time: a rank that finishes a key asks for the
//               next, so fast and slow keys balance. Rank 0 tunes keys too, on a thread of its
//               own. Every rank's search reads the database (warm start, --resume) but only rank 0
//               writes it: the others send each finished search back over MPI as JSON
//               (tune/ResultJson.h) and rank 0 records it (recordSearch).
//   FILE -D     rank 0 runs the search (enumeration, compile pool, reference, policy) and the
//               other ranks compile and measure: each runs the measuring worker on its GPU, set up
//               with rank 0's setup message and reference outputs, and measures the candidates rank
//               0 sends, the worker protocol's frames (tune/WorkerProtocol.h) carried over MPI.
//               Each also hosts compile slots in rank 0's pool (its --compile-threads, default its
//               share of its node's cores, at most 16, as rank 0's own workers; told to rank 0 by a
//               gather before the search): a thread per slot
//               relays rank 0's compile frames to a compile worker on its node (CompileSlotHost,
//               tune/CompilePool.h: the compile timeout and restarts are that rank's) and sends the
//               reply back; rank 0 hands the cubins to whichever device is free. At the end each
//               rank stops its relay before it tells rank 0 so (kRelayDone).
//
// Before anything is measured every rank reports its device (name, architecture,
// multiprocessors); a rank whose device differs from rank 0's (or has none) stops the run with an
// error naming it. Every rank sends rank 0 its state once a second (the key and candidate it is
// at); rank 0 prints the ranks' states as keys finish and every 30 s. A rank silent for
// --rank-timeout seconds (default 120) is lost: under --manifest its key is reported as lost and
// the rest of the run goes on (mpirun must be told not to end the job when a process dies: Open
// MPI's --enable-recovery; by default it kills every rank); every finished key is in the database
// already, so `--resume` (which under MPI skips the keys the database has a finished search of)
// completes the lost ones. In a single search a lost rank (measuring, or holding compile work for
// rank 0's pool) stops the search (rank 0 has recorded every candidate measured until then;
// --resume continues). A GPU fault or hang never loses a
// rank: measuring runs in the rank's worker process, which is restarted (tune/WorkerProcess.h).
#pragma once

#include "TuneCommand.h"

// How many processes mpirun, mpiexec or srun started this command among, from their environment
// (Open MPI's OMPI_COMM_WORLD_SIZE, MPICH's PMI_SIZE, Slurm's SLURM_NTASKS with PMI/PMIx); 1 when
// not started by one.
int launcherRanks();

// Whether this rtcgc was built with MPI.
bool builtWithMpi();

// Runs the tune command as one rank of an MPI job (see above). Returns the exit status (as
// runTuneCommand's; a device mismatch is 1). In a build without MPI: says so, exit 2.
int runMpiTune(const TuneArgs& a);
