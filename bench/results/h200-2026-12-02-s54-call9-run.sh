#!/usr/bin/env bash
# Session 54, call 9 (one H200): scripts/gpu-check.sh's fp64x / fp32x lines (issue 41) on e80b481's rtcgc,
# each against the CPU reference, and compute-sanitizer memcheck / racecheck on fp64x's TMA form at n = 1296.
set -uo pipefail
P=$PWD/.probe-me; O=$OUT/c9; mkdir -p $O; E=examples
mkdir -p $P/m; tar -C $P/m -xJf $P/cur.tar.xz; tar -C $P/m -xJf $P/new.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/new/rtcgc; export RTCG_CACHE_DIR=/tmp/c9
run_example() { local file=$1; shift; echo "== $file $*" >> $O/examples.log; timeout 120 $R run "$E/$file" "$@" --repeats 20 >> $O/examples.log 2>&1; echo "rc=$?" >> $O/examples.log; }
ozaki() {
  local p=$1 m=$2 file=$3; shift 3
  local s
  s=$($R explain "$E/$file" "$@" --precision "$p" | sed -n '1s/^kernel .* schedule: //p')
  s=$(awk -v m="mma: $m" 'BEGIN { FS = " [|] "; OFS = " | " } { for (i = 1; i <= NF; i++) if ($i ~ /^modulus:/) $i = m; print }' <<<"$s")
  run_example "$file" "$@" --precision "$p" --schedule "$s"
}
run_example dgemm.rtcg -D n=1283 --precision fp64x
run_example dgemm.rtcg -D n=301 --precision fp64x
run_example matmul.rtcg -D n=777 --precision fp32x
ozaki fp64x "s8 m16n8k32 warps 2x2 tile 2x2 k 64 stages 3" dgemm.rtcg -D n=1283
ozaki fp64x "s8 m16n8k32 warps 2x1 tile 2x4 k 128 stages 4 epilogue shared" dgemm.rtcg -D n=2048
ozaki fp64x "s8 wgmma m64n128k32 warpgroups 2x2 k 128 stages 3 swizzle 128" dgemm.rtcg -D n=2048
ozaki fp32x "s8 m16n8k32 warps 2x2 tile 2x2 k 64 stages 3" matmul.rtcg -D n=1003
ozaki fp64x "s8 wgmma m64n128k32 warpgroups 2x2 k 128 stages 4 swizzle 128 tma epilogue shared" dgemm.rtcg -D n=1296
ozaki fp32x "s8 wgmma m64n128k32 warpgroups 2x1 k 128 stages 4 swizzle 128 tma producer" matmul.rtcg -D n=1008
echo "== dg64.rtcg K=77777 Np=35 fp64x (kept as written)" >> $O/examples.log; timeout 120 $R run $P/s54/dg64.rtcg -D K=77777 -D Np=35 --precision fp64x --repeats 20 >> $O/examples.log 2>&1; echo "rc=$?" >> $O/examples.log
for tool in memcheck racecheck; do
  echo "== $tool fp64x dgemm n=1296" >> $O/sanitizer.txt
  timeout 150 compute-sanitizer --tool $tool $R run $E/dgemm.rtcg -D n=1296 --precision fp64x --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
done
grep -E "^==|rc=|rel [0-9]|time" $O/examples.log | grep -v "again after" | cut -c1-170; cat $O/sanitizer.txt
tar -C $OUT -czf $OUT/c9.tgz c9 && rm -rf $O
