#!/usr/bin/env bash
# One SGEMM n=4096 tf32x3 search of 480 candidates, 1 rank and 2 ranks each bound to its own share
# of the cores (as part 5 of scripts/gpu-mpi.sh), with main's rtcgc (base, 7e1b8f5) and branch
# refine's (new: lookahead what the devices hold; round: lookahead a round), alternating, after a
# warm-up search.
set -uo pipefail
tar xJf build-refine-dev/refine-pack.tar.xz -C build-refine-dev
root=$(pwd)
out=${OUT:-$root/gpu-out}
mkdir -p "$out/logs"
chmod +x "$root"/build-refine-dev/*/tools/*/* "$root"/build-refine-dev/mpi/bin/* 2>/dev/null
export LD_LIBRARY_PATH=$root/build-refine-dev/mpi/lib:$root/build-refine-dev/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export OPAL_PREFIX=$root/build-refine-dev/mpi PRTE_PREFIX=$root/build-refine-dev/mpi PMIX_PREFIX=$root/build-refine-dev/mpi
mpi=("$root/build-refine-dev/mpi/bin/mpirun" --allow-run-as-root --bind-to none)
exec > >(tee "$out/summary.txt") 2>&1
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
echo "gpus=$gpus cores=$(nproc)"
python3 - "$gpus" >"$out/cpusets.txt" <<'PY'
import collections, subprocess, sys
gpus = int(sys.argv[1])
cores = collections.OrderedDict()
for line in subprocess.run(["lscpu", "-p=CPU,CORE,SOCKET"], capture_output=True, text=True).stdout.splitlines():
    if line.startswith("#"):
        continue
    cpu, core, socket = line.split(",")
    cores.setdefault((socket, core), []).append(cpu)
keys = list(cores)
per = max(1, len(keys) // gpus)
for r in range(gpus):
    print(",".join(c for k in keys[r * per:(r + 1) * per] for c in cores[k]))
PY
bind=$out/bind.sh
printf '#!/bin/bash\nexec taskset -c "$(sed -n "$((${OMPI_COMM_WORLD_LOCAL_RANK:-0} + 1))p" %q)" "$@"\n' "$out/cpusets.txt" >"$bind"
chmod +x "$bind"
echo "CPU shares: $(tr '\n' ' ' <"$out/cpusets.txt")"
rate() {
  python3 -c "
import json,sys
j=json.load(open(sys.argv[1]))
c=j['counts']; m=c['verified']+c['wrong']+c['faulted']+c['timedOut']+c['launchFailed']
t=j['wallSeconds']-j['referenceSeconds']
print(f\"devices={j['devices']} measured={m} refined={c.get('refined')} wall={j['wallSeconds']:.2f}s reference={j['referenceSeconds']:.2f}s \"
      f\"rate={m/t:.2f}/s best={j['best']['medianMs'] if j['best'] else None}\")" "$1" 2>&1
}
search() {  # VERSION RANKS TAG [BUDGET]
  local v=$1 r=$2 tag=$3 budget=${4:-480}
  RTCG_CACHE_DIR=$(mktemp -d) timeout 300 "${mpi[@]}" -n "$r" "$bind" "$root/build-refine-dev/$v/tools/rtcgc/rtcgc" tune \
    examples/matmul.rtcg -D n=4096 --precision tf32x3 --max-candidates "$budget" --time-limit 0 --json --timeline \
    --db "$out/logs/$tag.sqlite" >"$out/logs/$tag.json" 2>"$out/logs/$tag.log"
  echo "== $tag ($v, $r rank(s), rc=$?): $(rate "$out/logs/$tag.json")"
  grep -E "refinement batch|last result|busy: device|busy: ranking" "$out/logs/$tag.log" | sed 's/^/   /'
}
search new 1 warmup 48
for rep in 1 2; do
  for v in base new round; do
    search $v 1 "$v-1-r$rep"
    search $v "$gpus" "$v-$gpus-r$rep"
  done
done
rm -f "$out"/logs/*.sqlite
tar czf "$out/logs.tgz" -C "$out" logs && rm -rf "$out/logs"
