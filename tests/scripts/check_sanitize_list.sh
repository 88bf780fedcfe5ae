#!/usr/bin/env bash
# scripts/gpu-sanitize.sh --list, without a GPU: for the examples whose spaces hold them, the sample
# has the default schedule and candidates of every family (split-K, a reduction across blocks,
# pipelined positions, cp.async copies, loads ahead of the reductions), each with a schedule the
# dry run printed, at sizes no tile divides. Five examples keep it short; they hold every family.
#   usage: check_sanitize_list.sh SOURCE_DIR   (RTCGC: the rtcgc to use)
set -euo pipefail
list=$("$1/scripts/gpu-sanitize.sh" --list --per-example 100 --only '^(matmul|dot|gemv|dg_lift|batched_matmul)\.rtcg$')
fail=0
expect() {  # FILE KIND [SCHEDULE-REGEX]: at least one case of the kind (and its schedule matching)
  local n
  n=$(awk -F'\t' -v f="$1" -v k="$2" -v rx="${3:-}" '$1 == f && $3 == k && $4 ~ rx' <<<"$list" | wc -l)
  if [[ $n -eq 0 ]]; then echo "no $2 case of $1 ${3:-}" >&2; fail=1; fi
}
for f in matmul dot gemv dg_lift batched_matmul; do
  expect "$f.rtcg" default
  n=$(awk -F'\t' -v f="$f.rtcg" '$1 == f && $3 != "default"' <<<"$list" | wc -l)
  [[ $n -ge 13 && $n -le 100 ]] || { echo "$f.rtcg: $n sampled candidates" >&2; fail=1; }
done
expect matmul.rtcg split-k 'k: grid\.[xyz]'
expect matmul.rtcg async 'copy: async'
expect dot.rtcg cross-block 'i: serial.*grid\.'
expect gemv.rtcg cross-block 'j: serial.*grid\.'
expect dg_lift.rtcg early-loads 'loads: early'
expect batched_matmul.rtcg pipelined 'b: grid\.[xyz], serial [0-9]+.*buffers:'
# Sizes that divide no tile: matmul's n is odd.
grep -qP '^matmul\.rtcg\tn=257\t' <<<"$list" || { echo "matmul not at n=257" >&2; fail=1; }
# Deterministic: the same seed gives the same sample.
again=$("$1/scripts/gpu-sanitize.sh" --list --per-example 100 --only '^dot\.rtcg$')
[[ "$again" == "$(grep -P '^dot\.rtcg\t' <<<"$list")" ]] || { echo "the sample of dot changed between runs" >&2; fail=1; }
exit $fail
