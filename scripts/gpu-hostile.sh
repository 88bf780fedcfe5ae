#!/usr/bin/env bash
# Issue 40's GPU confirmation, run on the GPU machine from the repository root with .gpu/ (made by
# scripts/gpu-pack.sh) beside it: the f32-rounding kernel of item 4 on the input 0.7 0.3 -0.7 (the
# reference said 6 / 0 / 6 where the device says 7 / 1 / 7: a false MISMATCH) and its siblings
# through a let, a quotient and a contraction the emitter now keeps apart (__fmul_rn), each at the
# issue's input and on random inputs; and item 1's n*m kernel, refused at n = m = 46341 (exit 1,
# was a MISMATCH of 0 against 2.1e6) and run at sizes that fit. Writes $OUT/hostile.log (default
# ./gpu-out); the last lines are one "rc=" per run: every run 0 but the refusal, which is 1. Then
# item 10's i64 outputs above 2^53 (compared exactly: "mismatched 0 of 100003, max abs 0 (exact) ok").
set -uo pipefail
root=$(pwd)
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
log=$out/hostile.log
[[ -e "$root/build-gpu" ]] || ln -s "$root/.gpu/build-gpu" "$root/build-gpu"
export LD_LIBRARY_PATH=$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export RTCG_CACHE_DIR=$(mktemp -d)
rtcgc=$root/build-gpu/tools/rtcgc/rtcgc
work=$(mktemp -d)

cat >"$work/round.rtcg" <<'K'
kernel round(n: int, x: f32[n], out a: i32[n], out b: i32[n], out c: f32[n], out d: i32[n], out e: i32[n]) {
  for i in 0..n {
    let t = x[i] * 10.0;
    a[i] = i32(x[i] * 10.0);
    b[i] = select(x[i] * 10.0 >= 7.0, 1, 0);
    c[i] = floor(x[i] * 10.0);
    d[i] = i32(t - 7.0 >= 0.0);
    e[i] = i32(x[i] * 10.0 - 7.0 + 0.5);
  }
}
K
printf '0.7 0.3 -0.7\n' >"$work/x.txt"
cat >"$work/nm.rtcg" <<'K'
kernel k(n: int, m: int, out y: f32[1]) {
  y[0] = sum(i in 0..n * m, 1.0f32) / 1024.0;
}
K
# Item 10: i64 outputs above 2^53, compared exactly ('mismatched 0 of N ... (exact) ok'), and
# item 12's literal rounded once from its digits (FLT_MAX, not infinity, on the device too).
cat >"$work/big.rtcg" <<'K'
kernel big(n: int, s: i64, out y: i64[n], out z: f32[n]) {
  for i in 0..n {
    y[i] = s * i64(1 + i % 3) + i64(i);
    z[i] = 3.4028235677973366e38;
  }
}
K
summary=()
run() {
  echo "== rtcgc $*" | tee -a "$log"
  "$rtcgc" "$@" >>"$log" 2>&1
  local rc=$?
  summary+=("rc=$rc  rtcgc $*")
}
: >"$log"
run run "$work/round.rtcg" -D n=3 --input "x=$work/x.txt" --repeats 3
run run "$work/round.rtcg" -D n=1000003 --repeats 3
run emit "$work/round.rtcg" -D n=3
run run "$work/nm.rtcg" -D n=46341 -D m=46341 --repeats 1
run run "$work/nm.rtcg" -D n=1000 -D m=1000 --repeats 3
run run "$work/big.rtcg" -D n=100003 -S s=9007199254740993 --repeats 3
printf '%s\n' "${summary[@]}" | tee -a "$log"
