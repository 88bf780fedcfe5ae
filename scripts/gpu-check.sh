#!/usr/bin/env bash
# The whole GPU check, run on the GPU machine from the repository root with .gpu/ (made by
# scripts/gpu-pack.sh) beside it. Writes logs and results under $OUT (default ./gpu-out).
# Prints a summary table last.
set -uo pipefail
root=$(pwd)
# Logs go to $OUT/logs (default ./gpu-out/logs); scripts/gpu-collect.sh packs them into one file
# (the device tool brings back at most 8 files).
out=${OUT:-$root/gpu-out}/logs
mkdir -p "$out"
source "$root/scripts/gpu-env.sh"
gpu_env "$root" "$out"

summary=()
# The test binaries with GPU tests (the others are CPU-only and run in CI).
for t in tests/runtime/test_runtime tests/api/test_api tests/tuner/test_tuner tests/cli/test_cli; do
  name=$(basename "$t")
  timeout 600 "build-gpu/$t" --gtest_brief=1 >"$out/$name.log" 2>&1
  rc=$?
  passed=$(grep -c '^\[       OK \]' "$out/$name.log" || true)
  line=$(grep -E '^\[  (PASSED|FAILED)  \]' "$out/$name.log" | tr '\n' ' ')
  skipped=$(grep -E '^\[  SKIPPED \] [0-9]+ test' "$out/$name.log" | head -1)
  summary+=("$(printf '%-16s rc=%-3s %s %s' "$name" "$rc" "$line" "$skipped")")
done

# Every example on the GPU against the CPU reference, at the sizes of examples/sizes.txt and at
# sizes that do not divide the block sizes.
: >"$out/examples.log"
run_example() {
  local file=$1; shift
  echo "== $file $*" >>"$out/examples.log"
  rtcgc run "examples/$file" "$@" --repeats 20 >>"$out/examples.log" 2>&1
  echo "rc=$?" >>"$out/examples.log"
}
while read -r file bindings; do
  [[ -z "$file" || "$file" == \#* ]] && continue
  defs=(); for b in $bindings; do defs+=(-D "$b"); done
  run_example "$file" "${defs[@]}"
done <examples/sizes.txt
run_example matmul.rtcg -D n=1500
run_example matmul.rtcg -D n=17
run_example matmul_flat.rtcg -D n=333
run_example axpby.rtcg -D n=1000003
run_example dot.rtcg -D n=77777
run_example transpose.rtcg -D m=4097 -D n=1023
run_example gemv.rtcg -D m=8191 -D n=8191
run_example dg_diff.rtcg -D K=77777 -D Np=56
run_example dg_lift.rtcg -D K=33333 -D Np=35 -D Nfp=15
run_example dg_face_gather.rtcg -D K=33333 -D Np=35 -D Nfaces=4 -D Nfp=15
run_example batched_matmul.rtcg -D nb=65536 -D n=16
run_example batched_matmul.rtcg -D nb=1001 -D n=20
run_example gemm_bf16.rtcg -D n=1031
run_example gemm_bf16.rtcg -D n=257 --schedule "i: grid.y, thread.y 8, reg 4; j: grid.x, thread.x 16, reg 4; k: serial, unroll 8; shared: a^T, b; buffers: 2"
# Reductions split across blocks (partials in global scratch, the last block combines them).
run_example dot.rtcg -D n=67108864 --schedule "i: serial, unroll 4, grid.x 264, thread.x 256"
run_example dot.rtcg -D n=1000003 --schedule "i: serial, grid.x 37, thread.x 128"
run_example gemv.rtcg -D m=4 -D n=1048573 --schedule "i: grid.y; j: serial, grid.x 66, thread.x 256"
run_example gemv.rtcg -D m=5 -D n=300007 --schedule "i: serial, thread.y 2; j: serial, unroll 4, grid.x 40, thread.x 128"
# Split-K with staged steps (each block walks its share of k through shared memory).
run_example matmul.rtcg -D n=1000 --schedule "i: grid.y, thread.y 16, reg 8; j: grid.x, reg 2, thread.x 16, reg 4; k: grid.z, serial 63, unroll 8; shared: a^T, b"
run_example matmul.rtcg -D n=777 --schedule "i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32, reg 4; k: grid.z, serial 13, unroll 16; shared: a^T, b; buffers: 2"
# Split-K against wave quantization: SGEMM n=3000 in 64 x 64 tiles split in two (72 MB of scratch).
run_example matmul.rtcg -D n=3000 --schedule "i: grid.y, thread.y 8, reg 8; j: grid.x, thread.x 16, reg 4; k: grid.z, serial 94, unroll 16; shared: a^T, b"
# Tiles over 48 KiB (dynamic shared memory up to the device's opt-in limit).
run_example dg_diff.rtcg -D K=10007 -D Np=84 --schedule "k: grid.x, thread.y 4; i: serial, thread.x 84; j: serial, unroll 4; shared: Dr, Ds, Dt, u"
# Pipelined positions (blocks walking 16 positions of k, the next tiles copied during this one's
# arithmetic) and early statement loads, at the benchmark's DG sizes.
run_example dg_diff.rtcg -D K=479322 -D Np=35 --schedule "k: grid.x, serial 16, thread.y 8, reg 8; i: serial, thread.x 35; j: serial, unroll 35; shared: Dr, u^T, Ds, Dt; buffers: 2"
run_example dg_lift.rtcg -D K=340630 -D Np=56 -D Nfp=21 --schedule "k: grid.x, serial 16, thread.y 16; i: serial, thread.x 14, reg 4; f: serial, unroll 84; shared: invJ, LIFT, flux; buffers: 3; copy: async; loads: early"
# Tensor cores (`mma:`) on every qualifying example at sizes no tile divides: 3xTF32 and TF32
# (each verified against its policy's tolerance), and FP64 mma on an f64 lifting and matmul.
mma() { local p=$1 s=$2 file=$3; shift 3; run_example "$file" "$@" --precision "$p" --schedule "mma: $s"; }
mma tf32x3 "tf32x3 m16n8k8 warps 2x2 tile 4x4 k 16" matmul.rtcg -D n=1000
mma tf32x3 "tf32x3 m16n8k8 warps 2x2 tile 2x4 k 32" matmul.rtcg -D n=777
mma tf32 "tf32 m16n8k8 warps 2x2 tile 4x4 k 16" matmul.rtcg -D n=1001
mma tf32x3 "tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16" matmul_flat.rtcg -D n=333
mma tf32x3 "tf32x3 m16n8k8 warps 1x2 tile 1x1 k 8" batched_matmul.rtcg -D nb=1001 -D n=20
mma tf32 "tf32 m16n8k8 warps 1x1 tile 1x2 k 16" batched_matmul.rtcg -D nb=65536 -D n=16
mma tf32x3 "tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16" dg_diff_stacked.rtcg -D K=77777 -D Np=35
mma tf32x3 "tf32x3 m16n8k8 warps 1x4 tile 2x2 k 16" dg_lift.rtcg -D K=33333 -D Np=35 -D Nfp=15
mma tf32 "tf32 m16n8k8 warps 2x2 tile 2x2 k 32" dg_lift.rtcg -D K=33333 -D Np=35 -D Nfp=15
# cp.async pipelines (2 to 4 stages; the batch on grid.x past grid.z's 65535).
mma tf32x3 "tf32x3 m16n8k8 warps 2x4 tile 4x4 k 8 stages 3" matmul.rtcg -D n=1000
mma tf32x3 "tf32x3 m16n8k8 warps 2x2 tile 2x4 k 16 stages 4" matmul.rtcg -D n=777
mma tf32 "tf32 m16n8k8 warps 2x4 tile 4x4 k 8 stages 3" matmul.rtcg -D n=1001
mma tf32x3 "tf32x3 m16n8k8 warps 1x1 tile 1x2 k 8 stages 2" batched_matmul.rtcg -D nb=65536 -D n=16
mma tf32x3 "tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3" dg_diff_stacked.rtcg -D K=77777 -D Np=35
mma tf32x3 "tf32x3 m16n8k8 warps 1x4 tile 2x2 k 8 stages 3" dg_lift.rtcg -D K=33333 -D Np=35 -D Nfp=15
# Stacked statements (dg_diff's three matrices on u) and collapsed rows (sum factorisation): the
# whole family sweep of these is scripts/gpu-rows.sh.
mma tf32x3 "tf32x3 m16n8k8 warps 2x2 tile 2x4 k 16 stages 3" dg_diff.rtcg -D K=77777 -D Np=56
mma tf32x3 "tf32x3 wgmma m64n64k8 warpgroups 2x1 k 16 stages 3" dg_diff.rtcg -D K=77777 -D Np=35
mma tf32 "tf32 m16n8k8 warps 2x2 tile 4x2 k 8 stages 2 epilogue shared" dg_diff.rtcg -D K=77777 -D Np=35
mma tf32x3 "tf32x3 m16n8k8 warps 2x2 tile 1x4 k 8" sumfact.rtcg -D E=20011 -D p=7
mma tf32x3 "tf32x3 wgmma m64n128k8 warpgroups 1x1 k 8 stages 2" sumfact.rtcg -D E=20011 -D p=9
# Output rows of an odd number of floats (float2 pairs from each row's own alignment, EmitMma.cpp
# oddPairStores): N = 8's forms, one statement and dg_diff's three, and a bf16 GEMM at n = 1003.
ring="swizzle 128 tma producer persistent"
mma tf32x3 "tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $ring pingpong resident a" dg_diff_stacked.rtcg -D K=77777 -D Np=165
mma tf32x3 "tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $ring pingpong resident a" dg_diff.rtcg -D K=77777 -D Np=165
mma tf32x3 "tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $ring resident a" dg_diff.rtcg -D K=77777 -D Np=35
# dg_diff's odd rows under pingpong take the epilogue once per N origin (EmitMma.cpp epiloguePerOrigin):
# 3 and 2 origins (Np = 99, 45), streaming stores.
mma tf32x3 "tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $ring pingpong resident a" dg_diff.rtcg -D K=77777 -D Np=99
run_example dg_diff.rtcg -D K=77777 -D Np=45 --precision tf32x3 --schedule "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $ring pingpong resident a"
mma ieee "bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 3" gemm_bf16.rtcg -D n=1003
# Tiles over 48 KiB (dynamic shared memory, up to the device's opt-in limit).
mma tf32x3 "tf32x3 m16n8k8 warps 2x4 tile 4x4 k 32 stages 3" matmul.rtcg -D n=1000
mma tf32 "tf32 m16n8k8 warps 2x4 tile 4x4 k 32 stages 4" matmul.rtcg -D n=2049
cat >"$out/mma64.rtcg" <<'EOF64'
kernel lift64(K: int, Np: int, F: int, LIFT: f64[Np, F], flux: f64[K, F], invJ: f64[K], inout rhs: f64[K, Np]) {
  for k in 0..K, i in 0..Np {
    rhs[k, i] = rhs[k, i] + invJ[k] * sum(f in 0..F, LIFT[i, f] * flux[k, f]);
  }
}
kernel dgemm(n: int, a: f64[n, n], b: f64[n, n], out c: f64[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
  }
}
kernel dgdiff64(K: int, Np: int, D: f64[3 * Np, Np], u: f64[K, Np], out w: f64[K, 3 * Np]) {
  for k in 0..K, m in 0..3 * Np {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
EOF64
run64() {
  echo "== mma64.rtcg $*" >>"$out/examples.log"
  rtcgc run "$out/mma64.rtcg" "$@" --repeats 20 >>"$out/examples.log" 2>&1
  echo "rc=$?" >>"$out/examples.log"
}
run64 -k lift64 -D K=33333 -D Np=35 -D F=60 --schedule "mma: f64 m8n8k4 warps 2x2 tile 2x2 k 16"
run64 -k dgemm -D n=1001 --schedule "mma: f64 m8n8k4 warps 2x2 tile 4x4 k 16"
run64 -k dgemm -D n=1001 --schedule "mma: f64 m8n8k4 warps 2x4 tile 4x2 k 8 stages 3"
# FP64's sm_90 shapes (m16n8k4/k8/k16: 16-byte copies, 4 stages, the shared epilogue).
run64 -k dgemm -D n=1001 --schedule "mma: f64 m16n8k16 warps 2x2 tile 4x4 k 16 stages 3"
run64 -k dgemm -D n=1001 --schedule "mma: f64 m16n8k8 warps 2x4 tile 2x4 k 16 stages 4 epilogue shared"
run64 -k dgemm -D n=1001 --schedule "mma: f64 m16n8k4 warps 2x2 tile 2x2 k 8"
run64 -k lift64 -D K=33333 -D Np=35 -D F=60 --schedule "mma: f64 m16n8k16 warps 2x2 tile 2x2 k 16 stages 3"
# cp.async rings over reductions of fewer steps than stages (f64 DG differentiation, Np = 35: 3
# steps of 16), where a wait that counted empty groups read stages before they landed, and
# `fragments 2` rings of as many steps as stages or more (fewer are refused with the reason).
run64 -k dgdiff64 -D K=100000 -D Np=35 --schedule "mma: f64 m16n8k4 warps 2x2 tile 1x1 k 16 stages 4 epilogue shared"
run64 -k dgdiff64 -D K=100000 -D Np=35 --schedule "mma: f64 m16n8k4 warps 2x2 tile 1x1 k 8 stages 4 fragments 2 epilogue shared"
run64 -k dgdiff64 -D K=100000 -D Np=35 --schedule "mma: f64 m16n8k8 warps 2x2 tile 1x1 k 16 stages 3 fragments 2 epilogue shared"
run64 -k dgdiff64 -D K=100000 -D Np=32 --schedule "mma: f64 m16n8k4 warps 4x1 tile 1x1 k 8 stages 4 fragments 2"
run64 -k dgdiff64 -D K=100001 -D Np=35 --schedule "mma: f64 m16n8k8 warps 2x2 tile 2x1 k 16 stages 4"
run64 -k dgdiff64 -D K=100001 -D Np=20 --schedule "mma: f64 m16n8k4 warps 2x2 tile 1x1 k 4 stages 4 fragments 2"
# The fitted grids of `persistent resident a` (space/MmaFamily.cpp keptFitVariants): N tiles of 120
# and 56 rows over D's 3 Np, steps that divide the reduction, at element counts no tile divides; and
# a block of more threads than A's runs a step (its last warps copy the kept D alone).
run64 -k dgdiff64 -D K=100003 -D Np=120 --schedule "stores: streaming; mma: f64 m16n8k8 warps 4x5 tile 1x3 k 24 stages 4 persistent resident a fragments 2"
run64 -k dgdiff64 -D K=100003 -D Np=56 --schedule "mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4 persistent resident a fragments 2"
run64 -k dgdiff64 -D K=77777 -D Np=50 --schedule "mma: f64 m16n8k8 warps 4x5 tile 1x3 k 16 stages 3 persistent resident a fragments 2"
# `pingpong` on that ring: a ring and a named barrier a warp row (kept and streamed B, 2 to 4 rows).
run64 -k dgdiff64 -D K=100003 -D Np=120 --schedule "mma: f64 m16n8k8 warps 4x3 tile 1x5 k 24 stages 4 persistent pingpong resident a fragments 2"
run64 -k dgdiff64 -D K=77777 -D Np=56 --schedule "mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4 persistent pingpong resident a fragments 2"
run64 -k dgdiff64 -D K=77777 -D Np=35 --schedule "mma: f64 m16n8k4 warps 4x2 tile 1x2 k 8 stages 4 persistent pingpong fragments 2"
run64 -k dgdiff64 -D K=100003 -D Np=27 --schedule "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 3 persistent pingpong resident a fragments 2"
# Sizes every block tile and step divides: the rings' cp.async runs copied without bounds (the row
# groups', the block's ring with a kept B).
run64 -k dgdiff64 -D K=100000 -D Np=120 --schedule "stores: streaming; mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 persistent pingpong resident a fragments 2"
run64 -k dgdiff64 -D K=100000 -D Np=64 --schedule "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 4 persistent resident a fragments 2"
# The reduction in one step of its own length (space/MmaFamily.cpp): where it is that length (Np
# 20), where the step pads it (19, 17) and where it leaves a partial second step (23 with k 24 of
# m16n8k8 is one step; 27 with k 20 is two), at element counts no block tile divides.
run64 -k dgdiff64 -D K=100003 -D Np=20 --schedule "mma: f64 m16n8k4 warps 2x2 tile 2x4 k 20"
run64 -k dgdiff64 -D K=100003 -D Np=19 --schedule "mma: f64 m16n8k4 warps 2x2 tile 2x4 k 20"
run64 -k dgdiff64 -D K=77777 -D Np=23 --schedule "mma: f64 m16n8k8 warps 2x2 tile 2x4 k 24"
run64 -k dgdiff64 -D K=77777 -D Np=17 --schedule "mma: f64 m8n8k4 warps 4x2 tile 2x4 k 20"
run64 -k dgdiff64 -D K=77777 -D Np=27 --schedule "mma: f64 m16n8k4 warps 4x1 tile 1x8 k 20 epilogue shared"
# Hopper's warpgroup MMA (wgmma through shared-memory descriptors, sm_90a) at sizes no tile divides.
run_example gemm_bf16.rtcg -D n=1003 --schedule "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 32 stages 3 epilogue shared"
run_example gemm_bf16.rtcg -D n=1000 --schedule "mma: bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 4"
run_example matmul.rtcg -D n=1003 --precision tf32 --schedule "mma: tf32 wgmma m64n64k8 warpgroups 2x2 k 32 stages 3"
# `stores: streaming` beside `mma:` (the epilogue's stores __stcs), register and shared epilogues,
# mma.sync and wgmma, at sizes no tile divides.
run_example gemm_bf16.rtcg -D n=1003 --schedule "stores: streaming; mma: bf16 m16n8k16 warps 2x2 tile 2x2 k 32 stages 3"
# INT8 tensor cores (s8 m16n8k32): exact i32 sums at sizes no tile or step divides (K = 1008: rows
# 16-byte aligned, 16-byte cp.async; else byte by byte), the i8 range in full.
run_example gemm_i8.rtcg -D m=1003 -D n=517 -D K=1000
run_example gemm_i8.rtcg -D m=1003 -D n=517 -D K=1008 --schedule "mma: s8 m16n8k32 warps 2x2 tile 2x2 k 64 stages 3"
run_example gemm_i8.rtcg -D m=1003 -D n=517 -D K=999 --schedule "mma: s8 m16n8k32 warps 2x1 tile 2x4 k 128 stages 4 epilogue shared"
run_example gemm_i8.rtcg -D m=257 -D n=130 -D K=77 --schedule "mma: s8 m16n8k32 warps 1x1 tile 1x1 k 32"
run_example gemm_i8.rtcg -D m=1003 -D n=517 -D K=1008 --schedule "mma: s8 wgmma m64n128k32 warpgroups 2x1 k 128 stages 3 swizzle 128"
run_example gemm_i8.rtcg -D m=1003 -D n=517 -D K=999 --schedule "mma: s8 wgmma m64n64k32 warpgroups 1x1 k 64 stages 3"
run_example gemm_i8.rtcg -D m=1003 -D n=512 -D K=1008 --schedule "mma: s8 wgmma m64n128k32 warpgroups 2x1 k 128 stages 4 swizzle 128 tma producer"
# The Ozaki scheme II policies (fp64x, fp32x: issue 41): the rewritten kernels at their default
# schedules, and with the products' nest (its first index `modulus`) on s8 tensor cores.
ozaki() {
  local p=$1 m=$2 file=$3; shift 3
  local s
  s=$(rtcgc explain "examples/$file" "$@" --precision "$p" | sed -n '1s/^kernel .* schedule: //p')
  s=$(awk -v m="mma: $m" 'BEGIN { FS = " [|] "; OFS = " | " } { for (i = 1; i <= NF; i++) if ($i ~ /^modulus:/) $i = m; print }' <<<"$s")
  run_example "$file" "$@" --precision "$p" --schedule "$s"
}
run_example dgemm.rtcg -D n=1283 --precision fp64x
run_example dgemm.rtcg -D n=301 --precision fp64x   # the scheme cannot pay: the contraction stays as written
run_example matmul.rtcg -D n=777 --precision fp32x
ozaki fp64x "s8 m16n8k32 warps 2x2 tile 2x2 k 64 stages 3" dgemm.rtcg -D n=1283
ozaki fp64x "s8 m16n8k32 warps 2x1 tile 2x4 k 128 stages 4 epilogue shared" dgemm.rtcg -D n=2048
ozaki fp64x "s8 wgmma m64n128k32 warpgroups 2x2 k 128 stages 3 swizzle 128" dgemm.rtcg -D n=2048
ozaki fp32x "s8 m16n8k32 warps 2x2 tile 2x2 k 64 stages 3" matmul.rtcg -D n=1003
# The products' operands (kernel-local, batched over the moduli) copied by TMA, rows no box divides.
ozaki fp64x "s8 wgmma m64n128k32 warpgroups 2x2 k 128 stages 4 swizzle 128 tma epilogue shared" dgemm.rtcg -D n=1296
ozaki fp32x "s8 wgmma m64n128k32 warpgroups 2x1 k 128 stages 4 swizzle 128 tma producer" matmul.rtcg -D n=1008
run_example gemm_bf16.rtcg -D n=1003 --schedule "stores: streaming; mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 32 stages 3 epilogue shared"
run_example matmul.rtcg -D n=1003 --precision tf32x3 --schedule "stores: streaming; mma: tf32x3 m16n8k8 warps 2x2 tile 4x4 k 16 stages 3 epilogue shared"
run64 -k dgemm -D n=1001 --schedule "stores: streaming; mma: f64 m16n8k16 warps 2x4 tile 2x2 k 16 stages 4 epilogue shared"
# wgmma with 128-byte swizzled tiles, and filled by TMA from tensor maps encoded at launch (TMA
# needs rows 16-byte apart: n = 1000), at sizes no tile divides.
run_example gemm_bf16.rtcg -D n=1000 --schedule "mma: bf16 wgmma m64n128k16 warpgroups 2x2 k 64 stages 4 swizzle 128 tma epilogue shared"
run_example gemm_bf16.rtcg -D n=1000 --schedule "mma: bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 3 swizzle 128 tma"
run_example gemm_bf16.rtcg -D n=1003 --schedule "mma: bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 3 swizzle 128 epilogue shared"
run_example matmul.rtcg -D n=1003 --precision tf32 --schedule "mma: tf32 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128"
# TF32 through A's registers (matmul transposed), two register sets (3-4 stages) or one (2 stages,
# 4 warpgroups), and tf32x3 on wgmma (the split tiles, partial sums per step), TMA and cp.async.
run_example matmul.rtcg -D n=1000 --precision tf32 --schedule "mma: tf32 wgmma m64n256k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma"
run_example matmul.rtcg -D n=1003 --precision tf32 --schedule "mma: tf32 wgmma m64n128k8 warpgroups 2x2 k 32 stages 3 swizzle 128 epilogue shared"
run_example matmul.rtcg -D n=1000 --precision tf32 --schedule "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 16 stages 2"
run_example matmul.rtcg -D n=1000 --precision tf32x3 --schedule "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma epilogue shared"
run_example matmul.rtcg -D n=1003 --precision tf32x3 --schedule "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3 swizzle 128"
run_example matmul.rtcg -D n=1003 --precision tf32x3 --schedule "mma: tf32x3 wgmma m64n32k8 warpgroups 2x1 k 16 stages 2"
# A producer warpgroup (`producer`: TMA issue and tf32x3's split beside the consumers, mbarriers
# between them; setmaxnreg where the consumers need it), consumers in turn or alone, n = 1000 (TMA).
run_example matmul.rtcg -D n=1000 --precision tf32x3 --schedule "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer"
run_example matmul.rtcg -D n=1000 --precision tf32x3 --schedule "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3 swizzle 128 tma producer"
run_example matmul.rtcg -D n=1000 --precision tf32 --schedule "mma: tf32 wgmma m64n256k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer"
run_example gemm_bf16.rtcg -D n=1000 --schedule "mma: bf16 wgmma m64n128k16 warpgroups 2x2 k 64 stages 4 swizzle 128 tma producer"
# FP64 with double-buffered fragment registers (`fragments 2`).
run_example dgemm.rtcg -D n=1001 --schedule "mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 4 fragments 2"
run_example dgemm.rtcg -D n=1001 --schedule "mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2 epilogue shared"
# Tiles staged per step along triangular ranges over each block's hull, and cyclic rows (each
# block's rows spread over the triangle), on reduction ranges and output domains.
run_example trmm.rtcg -D n=1001 --schedule "i: grid.y, thread.y 8, reg 8; j: grid.x, thread.x 16, reg 4; k: serial, unroll 16; shared: a^T, b; buffers: 3; copy: async"
run_example trmm.rtcg -D n=1001 --schedule "i: serial, grid.y 5, thread.y 8, reg 8; j: grid.x, thread.x 16, reg 4; k: serial, unroll 8; shared: a^T, b; buffers: 2"
run_example trmv.rtcg -D n=8191 --schedule "i: serial, grid.x 1056; j: serial, unroll 2, thread.x 256, unroll 4"
run_example trmv.rtcg -D n=8191 --schedule "i: grid.x, thread.y 4; j: serial, unroll 2, thread.x 64, unroll 4; shared: a; buffers: 3; copy: async"
run_example syrk.rtcg -D n=1001 -D K=257 --schedule "i: serial, grid.y 3, thread.y 8, reg 4; j: grid.x, thread.x 16, reg 4; k: serial, unroll 8; shared: a[i,k]^T, a[j,k]^T"
# Rows kept in registers across fused nests (`keep:`), with the neighbouring-values order and
# streaming stores, at row lengths no thread count divides.
keep() { local file=$1 nest=$2; shift 2; run_example "$file" "$@" --schedule "$nest; fuse: 3; keep: x | $nest | $nest; stores: streaming"; }
keep softmax.rtcg "i: grid.x; j: serial, unroll 4, thread.x 256" -D m=1001 -D n=1031
keep softmax.rtcg "i: grid.x; j: serial, thread.x 1024, unroll 4" -D m=37 -D n=16381
keep layernorm.rtcg "i: grid.x, thread.y 8; j: serial, thread.x 32, unroll 4" -D m=1001 -D n=257
keep layernorm.rtcg "i: grid.x; j: serial, thread.x 1024, unroll 4" -D m=37 -D n=16381
# Long CSR rows handed to the whole block from a row a thread.
run_example spmv.rtcg -D n=100003 -D nnz=700021 --schedule "i: grid.x, thread.x 128; p: serial, unroll 4; long_rows: 16"
run_example spmv.rtcg -D n=100003 -D nnz=700021 --schedule "i: grid.x, thread.x 256; p: serial; long_rows: 32"
# Accumulations (issue 37): global atomics, the block's copy in shared memory, warp aggregation and
# both, on grid-stride loops, a partial last warp (80 threads) and register points, n no block divides.
run_example histogram.rtcg -D n=1000003 -D bins=256 --schedule "i: serial, grid.x 264, thread.x 256; accumulate: shared"
run_example histogram.rtcg -D n=1000003 -D bins=256 --schedule "i: serial, grid.x 528, thread.x 80; aggregate: warp"
run_example histogram.rtcg -D n=1000003 -D bins=7 --schedule "i: grid.x, thread.x 32, reg 3; accumulate: shared; aggregate: warp"
run_example histogram.rtcg -D n=1000003 -D bins=65537
run_example histogram_weighted.rtcg -D n=1000003 -D bins=1000 --schedule "i: serial, grid.x 264, thread.x 160; accumulate: shared; aggregate: warp"
# u32 counts (starting values over the whole u32 range, so that bins wrap past 2^32) in every schedule kind.
run_example histogram_u32.rtcg -D n=1000003 -D bins=256
run_example histogram_u32.rtcg -D n=1000003 -D bins=256 --schedule "i: serial, grid.x 264, thread.x 256; accumulate: shared"
run_example histogram_u32.rtcg -D n=1000003 -D bins=256 --schedule "i: serial, grid.x 528, thread.x 80; aggregate: warp"
run_example histogram_u32.rtcg -D n=1000003 -D bins=4099 --schedule "i: serial, grid.x 264, thread.x 256; accumulate: shared copies 2; aggregate: warp"
run_example assemble.rtcg -D K=100003 -D Np=20 -D N=9001 --schedule "k: serial, grid.x 528, thread.y 5; j: thread.x; accumulate: shared"
run_example assemble.rtcg -D K=100003 -D Np=20 -D N=400009 --schedule "k: grid.x, thread.y 5; j: thread.x; aggregate: warp"
# Scans (issue 37): the look-back (tiles no size divides, f32 packed status words, i32 exclusive),
# lines per warp and per thread, rows and a segmented sum, each against the reference.
run_example cumsum.rtcg -D n=1000003 --schedule "scan: lookback threads 256 items 7"
run_example cumsum.rtcg -D n=1000003 --schedule "scan: lookback threads 128 items 16"
run_example cumsum.rtcg -D n=100003 --schedule "scan: lines lanes 32 items 4 threads 32"
run_example exclusive_scan.rtcg -D n=1000003 --schedule "scan: lookback threads 512 items 5"
run_example row_cumsum.rtcg -D m=1001 -D n=3001 --schedule "scan: lines lanes 32 items 3 threads 256"
run_example row_cumsum.rtcg -D m=1001 -D n=3001 --schedule "scan: lookback threads 128 items 3"
run_example row_cumsum.rtcg -D m=1001 -D n=3001 --schedule "scan: lines lanes 1 items 4 threads 96"
run_example segmented_sum.rtcg -D n=1000003 --schedule "scan: lookback threads 256 items 9"
run_example segmented_sum.rtcg -D n=1000003 --schedule "scan: lines lanes 32 items 2 threads 64"
mismatches=$(grep -c MISMATCH "$out/examples.log" || true)
failures=$(grep -c '^rc=[1-9]' "$out/examples.log" || true)

# The embedding examples (built on the packing machine as consumers of the installed package).
: >"$out/embed.log"
for p in matmul dg_diff; do
  echo "== embed/$p" >>"$out/embed.log"
  .gpu/embed/$p >>"$out/embed.log" 2>&1
  echo "rc=$?" >>"$out/embed.log"
done
# Ahead-of-time tuning of the embedded kernels: each program with a fresh cache directory (the
# default schedule), then `rtcgc tune --manifest` of rtcg-scan's manifest into that directory's
# tuning database (the one the programs read by default), then each program again (the tuned
# schedule from the database). The programs print "NAME: time X ms per launch (ORIGIN schedule; ...)".
aot_summary="embed ahead-of-time tuning: not run (no .gpu/embed/kernels.json)"
if [[ -f .gpu/embed/kernels.json ]]; then
  aot=$(mktemp -d)
  for p in matmul dg_diff; do
    echo "== embed/$p, default schedule (fresh RTCG_CACHE_DIR)" >>"$out/embed.log"
    RTCG_CACHE_DIR=$aot .gpu/embed/$p >>"$out/embed.log" 2>&1
    echo "rc=$?" >>"$out/embed.log"
  done
  echo "== rtcgc tune --manifest .gpu/embed/kernels.json --max-candidates 60 --time-limit 20" >>"$out/embed.log"
  RTCG_CACHE_DIR=$aot timeout 900 rtcgc tune --manifest .gpu/embed/kernels.json --max-candidates 60 \
    --time-limit 20 >"$out/embed-tune.log" 2>"$out/embed-tune.err"
  tune_rc=$?
  # The per-kernel tables and the manifest table (stdout); the search's progress is in embed-tune.err.
  cat "$out/embed-tune.log" >>"$out/embed.log"
  grep -E '^rtcgc tune: [^[].*: (skipped|duplicate|failed): |^rtcgc tune: [0-9]+ kernels? in the manifest|^rtcgc: error' \
    "$out/embed-tune.err" >>"$out/embed.log"
  echo "rc=$tune_rc" >>"$out/embed.log"
  for p in matmul dg_diff; do
    echo "== embed/$p, after rtcgc tune --manifest" >>"$out/embed.log"
    RTCG_CACHE_DIR=$aot .gpu/embed/$p >>"$out/embed.log" 2>&1
    echo "rc=$?" >>"$out/embed.log"
  done
  # One line: each kernel's time before and after, e.g. "matmul 0.41 ms (default) -> 0.06 ms (tuning database)".
  aot_summary="embed ahead-of-time tuning (rtcgc tune rc=$tune_rc):"
  for p in matmul dg_diff; do
    times=$(grep -E "^$p: time " "$out/embed.log" | tail -2 |
      sed -E 's/^[a-z_]+: time ([0-9.]+) ms per launch \(([a-z ]+) schedule.*/\1 ms (\2)/' | paste -sd'>' | sed 's/>/ -> /')
    aot_summary+=" $p ${times:-?};"
  done
  echo "$aot_summary" >>"$out/embed.log"
  rm -rf "$aot"
fi
# Cold (NVRTC) and warm (disk cache) start, DSL string to launchable kernel, in fresh processes.
probe=build-gpu/tests/api/api_cache_probe
if [[ -x $probe ]]; then
  d=$(mktemp -d)
  for run in cold warm warm; do
    echo "== $run: $(RTCG_CACHE_DIR=$d $probe 500 2>&1 | tr '\n' ' ')" >>"$out/embed.log"
  done
fi

echo
echo "== GPU check summary ($(head -2 "$out/device.txt" | tail -1))"
printf '%s\n' "${summary[@]}"
grep -E '^(== |rc=)' "$out/embed.log" | paste -sd' '
echo "$aot_summary"
echo "examples: $(grep -c '^== ' "$out/examples.log") runs, $failures non-zero exits, $mismatches mismatches"
grep -E '^  [a-z]+: rel' "$out/examples.log" | awk '{print $3}' | sort -g | tail -1 | sed 's/^/largest relative error: /'
