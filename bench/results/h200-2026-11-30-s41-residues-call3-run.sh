#!/usr/bin/env bash
# Issue 41, session 41, helper `residues`, call 3: the products (nest 5) of n = 8192 under three
# other schedules (per launch, rtcgc run; branch `residues` as in call 2, probe switches off).
set -uo pipefail
root=$(pwd)
P=$root/.probe/residues
tar -xJf $P/pack.tar.xz -C /tmp
G=/tmp/.gpu
export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
log=$OUT/summary.txt
t0=$(date +%s)
S8=$(python3 -c "import json;print(json.load(open('$P/s8192b4.json'))['workloads'][0]['schedule'])")
IFS='|' read -ra N <<< "$S8"
for v in "mma: s8 wgmma m64n192k32 warpgroups 2x1 k 128 stages 4 swizzle 128 tma producer persistent pingpong" \
         "mma: s8 wgmma m64n128k32 warpgroups 2x1 k 128 stages 4 swizzle 128 tma producer persistent pingpong" \
         "mma: s8 wgmma m64n128k32 warpgroups 2x1 k 128 stages 3 swizzle 128 tma epilogue shared"; do
  s=("${N[@]}"); s[4]=" $v "; t=$(IFS='|'; echo "${s[*]}")
  echo "== $v ($(( $(date +%s) - t0 )) s)" >> $log
  RTCG_CACHE_DIR=$(mktemp -d) timeout 60 $G/rtcgc run examples/dgemm.rtcg -D n=8192 --precision fp64x \
    --schedule "$t" --repeats 5 --reference-max-flops 3e8 2>&1 | grep -E "rel |time |per launch|rror" >> $log
done
echo "done $(( $(date +%s) - t0 )) s" >> $log
