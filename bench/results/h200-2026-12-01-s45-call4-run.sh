#!/usr/bin/env bash
# Session 45, lead's call 4 (one H200): compute-sanitizer on merged main's hoisted copies with the
# vector shared epilogue: n = 512 (tiles divide: the split loops), 1000 (vectors, tiles pass the
# edge), 1003 (scalar); the N3 vector form at K = 20011.
set -uo pipefail
P=$PWD/.probe-me; mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*
export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; R=$P/m/main/rtcgc
S="stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 4 fragments 2 copies hoisted epilogue shared"
for t in memcheck racecheck synccheck; do
  for n in 512 1000 1003; do echo "== $t n=$n"; timeout 60 compute-sanitizer --tool $t $R run examples/dgemm.rtcg -D n=$n -s "$S" --repeats 1 2>&1 | grep -E "rel |SUMMARY|error"; done
  echo "== $t N3 K=20011"; timeout 60 compute-sanitizer --tool $t $R run $P/dg64.rtcg -D K=20011 -D Np=20 -s "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 fragments 2 epilogue shared" --repeats 1 2>&1 | grep -E "rel |SUMMARY|error"
done > $OUT/sanitize.txt 2>&1
