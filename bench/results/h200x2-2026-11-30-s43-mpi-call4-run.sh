#!/usr/bin/env bash
# Session 43 call 4 (two H200s): issue 38 at a10bf6f: the bench-size manifest warmed on the same
# candidates, ranks bound; 1 rank, 2 ranks, then 1 rank again (the search's own spread).
set -uo pipefail
tar -xJf .probe/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
RTCG_MPI_PARTS="1" RTCG_MPI_KEYS=bench RTCG_MPI_WARMUP=1 RTCG_MPI_WARMUP_RANKS=2 RTCG_MPI_WARMUP_BUDGET=32 \
  RTCG_MPI_BIND=1 RTCG_MPI_BUDGET=32 RTCG_MPI_ONE_TWICE=1 OUT=/tmp/g bash scripts/gpu-mpi.sh > /dev/null 2>&1
sed -n '/== 1. warm-up/,$p' /tmp/g/mpi/summary.txt
tar -czf $OUT/call4.tgz --exclude='*.sqlite' -C /tmp/g mpi
