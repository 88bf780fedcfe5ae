#!/usr/bin/env bash
# Session 60, call 5 (one H200), probe tree s60c: which bounds matter, by rtcgc run (verified, median of 30, L2 flushed):
# RTCG_PROBE_INSIDE 0 (as main), 1 (no bounds on copies nor epilogue points), 2 (copies only), 3 (epilogue only) on f64
# DG N7's winner and DGEMM n = 2048's, twice, cublasDgemm by CuPy in the same call.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s60; O=$OUT/c5; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s60c.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s60c/rtcgc; F=$S/dgdiff64.rtcg; TP="persistent pingpong resident a fragments 2"
python3 $S/cublas64t.py 120 >> $O/byhand.txt
for i in 1 2; do for v in 0 1 2 3; do
  echo "== N7 INSIDE=$v" >> $O/byhand.txt; RTCG_PROBE_INSIDE=$v RTCG_CACHE_DIR=/tmp/c5i$v timeout 60 $R run $F -D K=100000 -D Np=120 -s "stores: streaming; mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 $TP" --repeats 30 2>&1 | grep -E "time|rror" >> $O/byhand.txt
done; done
for i in 1 2; do for v in 0 3; do
  echo "== dgemm 2048 INSIDE=$v" >> $O/byhand.txt; RTCG_PROBE_INSIDE=$v RTCG_CACHE_DIR=/tmp/c5d$v timeout 90 $R run $S/dgemm.rtcg -D n=2048 -s "stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 4 fragments 2 copies hoisted epilogue shared" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
done; done
python3 -c "
import cupy as cp, numpy as np
a=cp.random.standard_normal((2048,2048)); b=cp.random.standard_normal((2048,2048)); c=cp.empty((2048,2048)); f=cp.empty(256<<20,dtype=cp.uint8); ts=[]
for r in range(33):
    f.fill(r&255); s,e=cp.cuda.Event(),cp.cuda.Event(); s.record(); cp.matmul(a,b,out=c); e.record(); e.synchronize()
    if r>=3: ts.append(cp.cuda.get_elapsed_time(s,e))
print(f'cublasDgemm n=2048: {np.median(ts):.4f} ms')" >> $O/byhand.txt
python3 $S/cublas64t.py 120 >> $O/byhand.txt
grep -E "==|time|cublas|rror" $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//' | cut -c1-150
tar -C $OUT -czf $OUT/c5.tgz c5 && rm -rf $O
