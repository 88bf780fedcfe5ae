#!/usr/bin/env bash
# Helper branch `onesearch` (issue 38): one SGEMM n=4096 tf32x3 search of 480 candidates, 1 rank and
# 2 ranks each bound to its own share of the cores (as part 5 of scripts/gpu-mpi.sh: same binding,
# same arguments, rate = measured / (wall - reference)), with the base f68db64 (base) and the
# branch (new) alternating, after a warm-up search (vmstat beside it: the first search on a fresh
# machine has been compile-starved).
set -uo pipefail
root=$(pwd)
pk=$root/.probe/onesearch/pk
out=${OUT:-$root/gpu-out}
mkdir -p "$pk" "$out/logs"
tar xJf "$root/.probe/onesearch/pack.tar.xz" -C "$pk"
chmod +x "$pk"/*/tools/*/* "$pk"/mpi/bin/* 2>/dev/null
export LD_LIBRARY_PATH=$pk/mpi/lib:$pk/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export OPAL_PREFIX=$pk/mpi PRTE_PREFIX=$pk/mpi PMIX_PREFIX=$pk/mpi
mpi=("$pk/mpi/bin/mpirun" --allow-run-as-root --bind-to none)
exec > >(tee "$out/summary.txt") 2>&1
nvidia-smi --query-gpu=index,name,driver_version,persistence_mode --format=csv,noheader
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
echo "gpus=$gpus cores=$(nproc) loadavg=$(cat /proc/loadavg) uptime=$(cut -d' ' -f1 /proc/uptime)s"
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
tl={e['event']:e['seconds'] for e in j['timeline']}
print(f\"devices={j['devices']} measured={m} wrong={c['wrong']} wall={j['wallSeconds']:.2f}s reference={j['referenceSeconds']:.2f}s \"
      f\"rate={m/t:.2f}/s first={tl.get('first result',0):.2f}s best={j['best']['medianMs'] if j['best'] else None} {j['best']['schedule'] if j['best'] else ''}\")
print('   timeline: ' + ', '.join(f\"{e['event']} {e['seconds']:.2f}\" for e in j['timeline']))" "$1" 2>&1
}
search() {  # VERSION RANKS TAG [BUDGET] [unbound]
  local v=$1 r=$2 tag=$3 budget=${4:-480} b=("$bind")
  [[ ${5:-} == unbound ]] && b=()
  RTCG_CACHE_DIR=$(mktemp -d) timeout 120 "${mpi[@]}" -n "$r" "${b[@]}" "$pk/$v/tools/rtcgc/rtcgc" tune \
    examples/matmul.rtcg -D n=4096 --precision tf32x3 --max-candidates "$budget" --time-limit 0 --json \
    --db "$out/logs/$tag.sqlite" >"$out/logs/$tag.json" 2>"$out/logs/$tag.log"
  echo "== $tag ($v, $r rank(s), rc=$?): $(rate "$out/logs/$tag.json")"
  grep -h "ready on\|compiled .* candidates in" "$out/logs/$tag.log" | sed 's/^/   /'
}
vmstat 1 >"$out/logs/warmup-vmstat.txt" 2>&1 &
vm=$!
search new 1 warmup 480 unbound
kill "$vm"
grep -E "^\[ +[0-9.]+ s\] compiled" "$out/logs/warmup.log" | awk 'NR % 4 == 1' | head -12 | sed 's/^/   /'
for rep in 1 2; do
  for v in base new; do
    search $v 1 "$v-1-r$rep"
    search $v "$gpus" "$v-$gpus-r$rep"
  done
done
rm -f "$out"/logs/*.sqlite
tar czf "$out/logs.tgz" -C "$out" logs && rm -rf "$out/logs"
