#!/usr/bin/env bash
# Session 43 call 2 (two H200s): issue 38's manifest at the bench sizes, warmed on the same candidates,
# ranks bound; per-key spans against mpirun's launch and exit.
set -uo pipefail
tar -xJf .probe/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
RTCG_MPI_PARTS="1" RTCG_MPI_KEYS=bench RTCG_MPI_WARMUP=1 RTCG_MPI_WARMUP_RANKS=2 RTCG_MPI_WARMUP_BUDGET=32 \
  RTCG_MPI_BIND=1 RTCG_MPI_BUDGET=32 OUT=/tmp/g bash scripts/gpu-mpi.sh > /dev/null 2>&1
echo rc=$?
cat /tmp/g/mpi/summary.txt | sed -n '/== 1. bound/,$p'
tar -czf $OUT/call2.tgz -C /tmp/g mpi --exclude='*.sqlite'
