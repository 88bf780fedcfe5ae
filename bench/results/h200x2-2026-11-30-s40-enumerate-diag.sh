#!/usr/bin/env bash
# Helper branch `enumerate`, call 2 (a diagnosis, not a comparison): what holds rank 0's measuring
# worker's setup to 1.6-2.0 s with 2 ranks (0.4-0.5 s with 1). The branch's rtcgc only (the pack of
# h200x2-2026-11-30-s40-enumerate-pack.sh), one SGEMM n=4096 tf32x3 search of 480 candidates on 2
# ranks as gpu-mpi.sh part 5 runs it (each rank bound to its 16 CPUs), after a small warm-up:
# with the default 16 compile workers per rank, with 2 (fewer processes starting NVRTC beside the
# workers' CUDA contexts), and unbound (every rank on all 32 CPUs).
set -uo pipefail
root=$(pwd)
out=${OUT:-$root/gpu-out}
export LD_LIBRARY_PATH=$root/.gpu/mpi/lib:$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export OPAL_PREFIX=$root/.gpu/mpi PRTE_PREFIX=$root/.gpu/mpi PMIX_PREFIX=$root/.gpu/mpi
mpi=("$root/.gpu/mpi/bin/mpirun" --allow-run-as-root --bind-to none)
bind=/tmp/bind.sh
printf '#!/bin/bash\nexec taskset -c "$([ "${OMPI_COMM_WORLD_LOCAL_RANK:-0}" = 0 ] && echo 0-15 || echo 16-31)" "$@"\n' >"$bind"
chmod +x "$bind"
mkdir -p "$out/logs"
exec > >(tee "$out/summary.txt") 2>&1
echo "cores=$(nproc) uptime=$(cut -d' ' -f1 /proc/uptime)s"
search() {  # TAG RANKS BUDGET [bind|unbound] [rtcgc options...]
  local tag=$1 r=$2 budget=$3 how=$4 b=("$bind")
  shift 4
  [[ $how == unbound ]] && b=()
  RTCG_CACHE_DIR=$(mktemp -d) timeout 40 "${mpi[@]}" -n "$r" "${b[@]}" "$root/.gpu/build-gpu/tools/rtcgc/rtcgc" tune \
    examples/matmul.rtcg -D n=4096 --precision tf32x3 --max-candidates "$budget" --time-limit 0 --json "$@" \
    --db "$out/logs/$tag.sqlite" >"$out/logs/$tag.json" 2>"$out/logs/$tag.log"
  echo "== $tag (rc=$?)"
  python3 -c "
import json,sys
j=json.load(open(sys.argv[1]))
c=j['counts']; m=c['verified']+c['wrong']+c['faulted']+c['timedOut']+c['launchFailed']
print(f\"   wall={j['wallSeconds']:.2f}s reference={j['referenceSeconds']:.2f}s rate={m/(j['wallSeconds']-j['referenceSeconds']):.2f}/s\")
print('   timeline: ' + ', '.join(f\"{e['event']} {e['seconds']:.2f}\" for e in j['timeline'] if not e['event'].startswith(('busy', 'refinement'))))" \
    "$out/logs/$tag.json" 2>&1
  grep -h "ready on\|compiling with" "$out/logs/$tag.log" | sed 's/^/   /'
}
search warmup 1 48 unbound
search c16-a 2 480 bind
search c2-a 2 480 bind --compile-threads 2
search c16-b 2 480 bind
search c2-b 2 480 bind --compile-threads 2
search unbound 2 480 unbound
rm -f "$out"/logs/*.sqlite
tar czf "$out/logs.tgz" -C "$out" logs && rm -rf "$out/logs"
