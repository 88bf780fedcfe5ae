#!/usr/bin/env bash
# Session 57, call 2 (one H200), e2a2f66 ('s57b' pack): gpu-check.sh's five one-step lines (verified against the
# CPU reference), then issue 36's DG rows under tf32x3 in one bench_suite process (48 candidates, peers in the
# same run) and the sum-factorisation rows with their PyTorch peers timed first (as scripts/bench.sh does).
set -uo pipefail
P=$PWD/.probe-me; S=$P/s57; O=$OUT/c2; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s57b.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s57b/rtcgc; F=$S/dg64s.rtcg; B=$P/m/s57b/bench_suite
while read -r kk np s; do
  echo "== check K=$kk Np=$np $s" >> $O/checks.txt
  RTCG_CACHE_DIR=/tmp/c2 timeout 60 $R run $F -D K=$kk -D Np=$np -s "$s" --repeats 20 2>&1 | grep -E "rel [0-9]|rror|time" | grep -v "again after" >> $O/checks.txt
done <<'L'
100003 20 mma: f64 m16n8k4 warps 2x2 tile 2x4 k 20
100003 19 mma: f64 m16n8k4 warps 2x2 tile 2x4 k 20
77777 23 mma: f64 m16n8k8 warps 2x2 tile 2x4 k 24
77777 17 mma: f64 m8n8k4 warps 4x2 tile 2x4 k 20
77777 27 mma: f64 m16n8k4 warps 4x1 tile 1x8 k 20 epilogue shared
L
ROWS=dg_diff_stacked_tf32x3_N5,dg_diff_stacked_tf32x3_N6,dg_diff_stacked_tf32x3_N7,dg_diff_stacked_tf32x3_N8,dg_diff_tf32x3_N5,dg_diff_tf32x3_N6,dg_diff_tf32x3_N7,dg_diff_tf32x3_N8,dg_lift_tf32x3_N3,dg_lift_tf32x3_N5,dg_lift_tf32x3_N7
RTCG_CACHE_DIR=/tmp/c2b timeout 420 $B --only $ROWS --out /tmp/b2dg --max-candidates 48 --time-limit 12 --worker $P/m/s57b/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-dg.log; cp /tmp/b2dg/bench.json $O/bench-dg.json
SF=sumfact_tf32x3_p5,sumfact_tf32x3_p7,sumfact_tf32x3_p9
timeout 60 python3 bench/peers/torch_peers.py --bench-suite $B --out $O/torch-peers.json --only $SF > $O/torch-peers.log 2>&1
RTCG_CACHE_DIR=/tmp/c2s timeout 100 $B --only $SF --peer-times $O/torch-peers.json --out /tmp/b2sf --max-candidates 48 --time-limit 12 --worker $P/m/s57b/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-sf.log; cp /tmp/b2sf/bench.json $O/bench-sf.json
grep -E "==|rel|time" $O/checks.txt | cut -c1-150
grep -hE "^(dg_|sumfact)|search done" $O/bench-*.log | cut -c1-230; tail -n 3 $O/torch-peers.log
tar -C $OUT -czf $OUT/c2.tgz c2 && rm -rf $O
