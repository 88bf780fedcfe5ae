#!/usr/bin/env bash
# Session 49, call 6 (one H200): the lifting N5 and dg_diff N6 rows at 200 candidates on the new build (call 4/5's 48-candidate
# searches ended 4% below session 47's); SASS of lifting N5's two pingpong forms, old and new.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/new.tar.xz; chmod +x $P/m/main/* $P/m/new/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c6; mkdir -p $O
for c in l_old64 l_new64 l_old56 l_new56; do /usr/local/cuda/bin/cuobjdump -sass $P/$c.cubin > $O/$c.sass 2>&1 || (which cuobjdump nvdisasm > $O/which.txt); done
B=$P/m/new/bench_suite; W=$P/m/new/rtcg-worker
RTCG_CACHE_DIR=/tmp/c6b timeout 400 $B --only dg_lift_tf32x3_N5,dg_diff_tf32x3_N6 --out /tmp/b6 --max-candidates 200 --time-limit 60 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b6/bench.json $O/bench.json
tail -5 $O/bench.log | cut -c1-200
