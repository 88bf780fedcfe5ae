#!/usr/bin/env bash
# Session 43 call 3 (two H200s): issue 38 with the manifest dealt largest first: (a) where the 2-rank
# start-up goes (stamped logs of a one-key manifest, 1 and 2 ranks; mpirun alone); (b) whether the
# two 16-CPU shares of the host slow each other (a CPU-bound loop alone and beside the other);
# (c) the manifest at the bench sizes, warmed on the same candidates, ranks bound, twice.
set -uo pipefail
tar -xJf .probe/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
o=/tmp/g; mkdir -p $o/diag
export LD_LIBRARY_PATH=$PWD/.gpu/lib:$PWD/.gpu/mpi/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=$PWD/build-gpu/tools/rtcgc:$PWD/build-gpu/tools/rtcg-worker:$PATH
M=$PWD/.gpu/mpi/bin/mpirun; export OPAL_PREFIX=$PWD/.gpu/mpi PRTE_PREFIX=$PWD/.gpu/mpi PMIX_PREFIX=$PWD/.gpu/mpi
cat > /tmp/stamp.py <<'PY'
import sys, time
t0 = float(sys.argv[1])
for line in sys.stdin:
    sys.stdout.write(f"{time.time() - t0:7.3f} {line}")
PY
# (b) CPU shares: 16 busy loops on CPUs 0-15 alone, then with 16 more on 16-31.
cat > /tmp/busy.py <<'PY'
import time, sys
t = time.time(); x = 0
for i in range(12_000_000): x += i * i
print(f"{time.time() - t:.3f}")
PY
loop() { for c in $(seq $1 $2); do taskset -c $c python3 /tmp/busy.py & done; wait; }
{ echo "== 16 loops on CPUs 0-15 alone (s each):"; loop 0 15 | sort -n | tr '\n' ' '; echo
  echo "== 16 on 0-15 and 16 on 16-31 at once:"; loop 0 31 | sort -n | tr '\n' ' '; echo; } > $o/diag/cpu.txt 2>&1
# (a) start-up: a manifest of one small key.
python3 - <<'PY'
import json
src = open("examples/gemv.rtcg").read()
json.dump({"version": 1, "kernels": [{"file": "gemv.rtcg", "line": 1, "column": 1, "source": src, "sizes": {"m": 1024, "n": 1024},
  "sizesConstant": True, "errors": 0, "kernel": "gemv", "kernels": ["gemv"]}]}, open("/tmp/one.json", "w"))
json.dump({"version": 1, "kernels": []}, open("/tmp/none.json", "w"))
PY
for n in 1 2 1 2; do
  t0=$(date +%s.%N)
  RTCG_CACHE_DIR=$(mktemp -d) $M --allow-run-as-root --bind-to none -n $n rtcgc tune --manifest /tmp/one.json --max-candidates 4 --time-limit 20 --json --db /tmp/one-$n.sqlite 2>&1 >/dev/null | python3 /tmp/stamp.py $t0 | grep -v "compile worker .* started\|pruned" >> $o/diag/startup-$n.txt
  echo "exit $(python3 -c "import time;print(round(time.time()-$t0,3))")" >> $o/diag/startup-$n.txt
  t0=$(date +%s.%N)
  $M --allow-run-as-root --bind-to none -n $n true; echo "mpirun -n $n true: $(python3 -c "import time;print(round(time.time()-$t0,3))")" >> $o/diag/startup-$n.txt
  t0=$(date +%s.%N)
  RTCG_CACHE_DIR=$(mktemp -d) $M --allow-run-as-root --bind-to none -n $n rtcgc tune --manifest /tmp/none.json --json --db /tmp/none-$n.sqlite 2>&1 >/dev/null | python3 /tmp/stamp.py $t0 >> $o/diag/startup-$n.txt
  echo "empty manifest exit $(python3 -c "import time;print(round(time.time()-$t0,3))")" >> $o/diag/startup-$n.txt
done
# (c) the manifest, twice (the second run without another warm-up).
RTCG_MPI_PARTS="1" RTCG_MPI_KEYS=bench RTCG_MPI_WARMUP=1 RTCG_MPI_WARMUP_RANKS=2 RTCG_MPI_WARMUP_BUDGET=32 \
  RTCG_MPI_BIND=1 RTCG_MPI_BUDGET=32 OUT=$o/run1 bash scripts/gpu-mpi.sh > /dev/null 2>&1
RTCG_MPI_PARTS="1" RTCG_MPI_KEYS=bench RTCG_MPI_BIND=1 RTCG_MPI_BUDGET=32 OUT=$o/run2 bash scripts/gpu-mpi.sh > /dev/null 2>&1
for r in run1 run2; do echo "== $r"; sed -n '/== 1. manifest/p;/== 1 rank:/p;/== R ranks:/p;/== 3\./p' $o/$r/mpi/summary.txt; done
cat $o/diag/cpu.txt
tar -czf $OUT/call3.tgz --exclude='*.sqlite' -C $o .
