#!/usr/bin/env bash
# Issue 36's widened qualification on the GPU in one call, from the repository root with .gpu/
# beside it (scripts/gpu-pack.sh), as scripts/gpu-check.sh runs:
#   1. mma schedules of the stacked contraction (dg_diff's three statements: f32 under tf32x3 and
#      tf32, f64, bf16) and of collapsed rows (sum factorisation along the last and the middle axis,
#      p = 5, 7, 9) on every family (mma.sync with and without stages, `fragments 2`, wgmma, the
#      shared epilogue) against the CPU reference at sizes no tile divides;
#   2. compute-sanitizer (memcheck, racecheck, synccheck) on a sample of dg_diff's and sumfact's
#      tf32x3 spaces;
#   3. bench rows (scripts/bench.sh --only ROWS, peers in the same run): by default issue 36's new
#      rows (dg_diff tf32x3 N5-N8, dg_diff f64 N3/5/7, sum factorisation p = 5, 7, 9).
# Writes everything under $OUT/rows (default ./gpu-out/rows) and prints a summary last.
#   usage: [MAX_CANDIDATES=N] scripts/gpu-rows.sh [--bench ROWS|none] [--skip-examples] [--skip-sanitize] [--time-limit S]
set -uo pipefail
root=$(pwd)
rows="dg_tc3,dg_f64,sumfact" skip_examples=0 skip_sanitize=0 limit=15
while [[ $# -gt 0 ]]; do
  case $1 in
    --bench) rows=$2; shift ;;
    --skip-examples) skip_examples=1 ;;
    --skip-sanitize) skip_sanitize=1 ;;
    --time-limit) limit=$2; shift ;;
    *) echo "gpu-rows.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
base=${OUT:-$root/gpu-out}
out=$base/rows
mkdir -p "$out"
source "$root/scripts/gpu-env.sh"
gpu_env "$root" "$out"

# The kernels beside the examples: dg_diff in f64 and bf16, sum factorisation along the middle
# axis and in f64.
cat >"$out/rows.rtcg" <<'EOF'
kernel dgd64(K: int, Np: int, Dr: f64[Np, Np], Ds: f64[Np, Np], Dt: f64[Np, Np], u: f64[K, Np],
             out ur: f64[K, Np], out us: f64[K, Np], out ut: f64[K, Np]) {
  for k in 0..K, i in 0..Np {
    ur[k, i] = sum(j in 0..Np, Dr[i, j] * u[k, j]);
    us[k, i] = sum(j in 0..Np, Ds[i, j] * u[k, j]);
    ut[k, i] = sum(j in 0..Np, Dt[i, j] * u[k, j]);
  }
}
kernel dgdbf(K: int, Np: int, Dr: bf16[Np, Np], Ds: bf16[Np, Np], Dt: bf16[Np, Np], u: bf16[K, Np],
             out ur: f32[K, Np], out us: f32[K, Np], out ut: f32[K, Np]) {
  for k in 0..K, i in 0..Np {
    ur[k, i] = sum(j in 0..Np, f32(Dr[i, j]) * f32(u[k, j]));
    us[k, i] = sum(j in 0..Np, f32(Ds[i, j]) * f32(u[k, j]));
    ut[k, i] = sum(j in 0..Np, f32(Dt[i, j]) * f32(u[k, j]));
  }
}
kernel sfmid(E: int, p: int, A: f32[p, p], u: f32[E, p, p, p], inout v: f32[E, p, p, p]) {
  for e in 0..E, a in 0..p, i in 0..p, c in 0..p {
    v[e, a, i, c] = v[e, a, i, c] + 0.5 * sum(j in 0..p, A[i, j] * u[e, a, j, c]);
  }
}
kernel sf64(E: int, p: int, A: f64[p, p], u: f64[E, p, p, p], out v: f64[E, p, p, p]) {
  for e in 0..E, a in 0..p, b in 0..p, i in 0..p {
    v[e, a, b, i] = sum(j in 0..p, A[i, j] * u[e, a, b, j]);
  }
}
EOF

# 1. Every family against the reference (rtcgc run: a full reference run).
log=$out/examples.log
: >"$log"
run() {
  local file=$1; shift
  echo "== $file $*" >>"$log"
  timeout 120 rtcgc run "$file" "$@" --repeats 5 >>"$log" 2>&1
  echo "rc=$?" >>"$log"
}
if [[ $skip_examples -eq 0 ]]; then
  for np in 35 56; do
    for s in "tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16" "tf32x3 m16n8k8 warps 2x2 tile 2x4 k 16 stages 3" \
             "tf32 m16n8k8 warps 2x2 tile 4x2 k 8 stages 2 epilogue shared" \
             "tf32x3 wgmma m64n64k8 warpgroups 2x1 k 16 stages 3" "tf32 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 epilogue shared"; do
      run examples/dg_diff.rtcg -D K=77777 -D Np=$np --precision tf32 --schedule "mma: $s"
    done
    for s in "f64 m8n8k4 warps 2x2 tile 2x2 k 8" "f64 m16n8k8 warps 2x2 tile 2x2 k 8 stages 3" \
             "f64 m16n8k4 warps 2x2 tile 2x2 k 8 stages 2 fragments 2" "f64 m16n8k16 warps 2x2 tile 2x2 k 16 stages 2 epilogue shared"; do
      run "$out/rows.rtcg" -k dgd64 -D K=33333 -D Np=$np --schedule "mma: $s"
    done
    for s in "bf16 m16n8k16 warps 2x2 tile 2x2 k 32 stages 3" "bf16 wgmma m64n64k16 warpgroups 2x1 k 64 stages 2 epilogue shared"; do
      run "$out/rows.rtcg" -k dgdbf -D K=33333 -D Np=$np --schedule "mma: $s"
    done
  done
  for p in 5 7 9; do
    for s in "tf32x3 m16n8k8 warps 2x2 tile 1x4 k 8" "tf32x3 m16n8k8 warps 1x4 tile 1x4 k 8 stages 2 epilogue shared" \
             "tf32x3 wgmma m64n128k8 warpgroups 1x1 k 8 stages 2" "tf32 m16n8k8 warps 2x2 tile 1x2 k 16 stages 2"; do
      run examples/sumfact.rtcg -D E=20011 -D p=$p --precision tf32 --schedule "mma: $s"
      run "$out/rows.rtcg" -k sfmid -D E=20011 -D p=$p --precision tf32 --schedule "mma: $s"
    done
    run "$out/rows.rtcg" -k sf64 -D E=20011 -D p=$p --schedule "mma: f64 m16n8k8 warps 2x2 tile 1x2 k 8 stages 2"
  done
fi
mismatches=$(grep -c MISMATCH "$log" || true)
failures=$(grep -c '^rc=[1-9]' "$log" || true)

# 2. compute-sanitizer on a sample of the tf32x3 spaces (mma candidates among them).
sanitize_line="sanitizer: skipped"
if [[ $skip_sanitize -eq 0 ]]; then
  OUT=$out timeout 170 scripts/gpu-sanitize.sh --only '^(dg_diff|sumfact)\.rtcg$' --precision tf32x3 \
    --per-example 8 --budget 140 >"$out/sanitize.log" 2>&1
  sanitize_line="sanitizer: rc=$? $(tail -3 "$out/sanitize/summary.txt" 2>/dev/null | tr '\n' ' ')"
fi

# 3. The bench rows, each against its peer in this run.
bench_line="bench: skipped"
if [[ "$rows" != none ]]; then
  BENCH_STATE=${BENCH_STATE:-/tmp/rtcg-bench} OUT=$out timeout 420 scripts/bench.sh --only "$rows" \
    --max-candidates "${MAX_CANDIDATES:-48}" --time-limit "$limit" >"$out/bench.log" 2>&1
  bench_line="bench: rc=$? ($out/bench/bench.json)"
fi

echo
echo "== summary"
echo "examples: $(grep -c '^== ' "$log") runs, $mismatches mismatches, $failures failed runs ($log)"
echo "$sanitize_line"
echo "$bench_line"
[[ -f "$out/bench.log" ]] && grep -E '^(dg_|sumfact)|speed|ratio' "$out/bench.log" | head -40
[[ $mismatches -eq 0 && $failures -eq 0 ]]
