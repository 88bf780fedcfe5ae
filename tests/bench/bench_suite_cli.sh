#!/bin/sh
# Checks of bench_suite that need no GPU: `bench_suite_cli.sh CHECK BINARY`.
#   list:     --list prints every workload (30) and exits 0
#   no-gpu:   a real run with the devices hidden exits 4 and says why
#   bad-only: an unknown --only entry exits 1 naming it
#   bad-schedules: --schedules with a missing or malformed file exits 1 before any GPU work, naming it
#   bad-peer-times: --peer-times with a missing or malformed file exits 1 before any GPU work, naming it
set -u
check=$1
bin=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$tmp/out"; echo "--- stderr"; cat "$tmp/err"; exit 1; }
case $check in
  list)
    "$bin" --list >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc -eq 0 ] || fail "--list exited $rc"
    for w in sgemm_500 sgemm_4096 sgemv_8192 transpose_8192x8192 transpose_4097x1023 'dot_2^26' \
             batched_16x16x65536 dg_diff_N1 dg_diff_N8 dg_diff_stacked_N1 dg_diff_stacked_N8 dg_lift_N3 \
             dg_lift_N5 dg_lift_N7 dg_diff_tf32x3_N8 dg_diff_f64_N7 sumfact_tf32x3_p9 sgemm_tf32x3_4096 sgemm_tf32x3_8192 sgemm_tf32_4096 dgemm_2048 batched_tf32x3_16x16x65536 \
             dg_diff_stacked_tf32x3_N8 dg_lift_tf32x3_N7 trmv_16384 syrk_4096x1024 softmax_8192x2048 \
             layernorm_8192x2048 nearest_16384_D64 gemm_bf16_4096 dgemm_fp64x_8192 sgemm_fp32x_4096 igemm_4096 dg_diff_fp64x_N3 dg_diff_fp64x_N7; do
      grep -q "^$w " "$tmp/out" || fail "--list does not show $w"
    done
    n=$(grep -c -E '^(sgemm|sgemv|transpose|dot|batched|dg_|dgemm|gemm_bf16|igemm|spmv|trmv|syrk|softmax|layernorm|nearest|sumfact)' "$tmp/out")
    [ "$n" -eq 86 ] || fail "--list shows $n workloads, expected 86 (30, 4 CSR, 12 beyond rectangles, 22 on tensor cores, issue 36's 10 and issue 41's 8)"
    "$bin" --list --only sgemm,dg_lift_N5 >"$tmp/out" 2>"$tmp/err" || fail "--list --only failed"
    n=$(grep -c -E '^(sgemm|dg_lift)' "$tmp/out")
    [ "$n" -eq 7 ] || fail "--only sgemm,dg_lift_N5 selects $n workloads, expected 7"
    ;;
  no-gpu)
    CUDA_VISIBLE_DEVICES= "$bin" --only dot --out "$tmp/out-dir" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc -eq 4 ] || fail "a run without a device exited $rc, expected 4"
    grep -q "no CUDA device" "$tmp/err" || fail "no message about the missing device"
    ;;
  bad-only)
    "$bin" --list --only sgemm,nonesuch >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc -eq 1 ] || fail "--only nonesuch exited $rc, expected 1"
    grep -q "unknown workload 'nonesuch'" "$tmp/err" || fail "the message does not name the unknown workload"
    ;;
  bad-schedules)
    "$bin" --only dot --schedules "$tmp/missing.json" --out "$tmp/out-dir" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc -eq 1 ] || fail "--schedules with a missing file exited $rc, expected 1"
    grep -q "cannot read $tmp/missing.json" "$tmp/err" || fail "the message does not name the missing file"
    printf '{"workloads": [' >"$tmp/cut.json"
    "$bin" --only dot --schedules "$tmp/cut.json" --out "$tmp/out-dir" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc -eq 1 ] || fail "--schedules with a cut-off file exited $rc, expected 1"
    grep -q "cut.json: not JSON" "$tmp/err" || fail "the message does not say the file is not JSON"
    # A second file that is missing is refused too, even after a good first one.
    "$bin" --only dot --schedules "$root/bench/results/h100-2026-11-25-tall.json" --schedules "$tmp/missing.json" \
      --out "$tmp/out-dir" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc -eq 1 ] || fail "a second --schedules with a missing file exited $rc, expected 1"
    grep -q "cannot read $tmp/missing.json" "$tmp/err" || fail "the message does not name the second, missing file"
    "$bin" --only dot --schedules "$tmp/cut.json" --default-schedule >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc -eq 1 ] || fail "--schedules with --default-schedule exited $rc, expected 1"
    [ ! -e "$tmp/out-dir/bench.json" ] || fail "a refused run wrote bench.json"
    ;;
  bad-peer-times)
    "$bin" --only softmax --peer-times "$tmp/missing.json" --out "$tmp/out-dir" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc -eq 1 ] || fail "--peer-times with a missing file exited $rc, expected 1"
    grep -q "peer-times $tmp/missing.json: cannot read" "$tmp/err" || fail "the message does not name the missing file"
    printf '{"workloads": {"softmax_8192x2048": {"peer": "torch.softmax"}}}' >"$tmp/no-ms.json"
    "$bin" --only softmax --peer-times "$tmp/no-ms.json" --out "$tmp/out-dir" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ $rc -eq 1 ] || fail "--peer-times without a time exited $rc, expected 1"
    grep -q 'workload softmax_8192x2048: needs a "peer" string and an "ms" number' "$tmp/err" || fail "the message does not name the workload"
    [ ! -e "$tmp/out-dir/bench.json" ] || fail "a refused run wrote bench.json"
    ;;
  *) echo "unknown check $check"; exit 2 ;;
esac
echo "PASS: $check"
