#!/usr/bin/env bash
# Session 54, call 4 (one H200): Nsight Compute's stall reasons and instruction counts of the N8 modules
# (emitted stacked / dg_diff, and their sink forms): is dg_diff's extra time the epilogue's instructions,
# or instruction fetch (its module is twice the size)?
set -uo pipefail
cd $PWD/.probe-me/s54; O=$OUT/c4; mkdir -p $O
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
MET="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,sm__inst_executed_pipe_lsu.sum,smsp__inst_executed_op_global_st.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,smsp__pcsamp_warps_issue_stalled_no_instructions,sm__cycles_elapsed.avg"
for v in stacked.cubin:stacked dg_diff.cubin:dgdiff dg_diff-sink.cubin:dgdiff stacked-sink.cubin:stacked; do
  echo "== $v" >> $O/ncu.txt
  REPS=1 ROUNDS=1 timeout 120 $ncu --clock-control none --launch-skip 3 --launch-count 1 -k regex:dg_diff --metrics "$MET" python3 harness.py $v 2>&1 | grep -vE "^round|==PROF==" >> $O/ncu.txt
done
grep -E "==|duration|no_instruction|inst_executed.sum|global_st|gmma|issue_active|branch_resolving|wait_per|long_score|barrier_per|math_pipe|dispatch|mio|lg_thr|membar|sleeping|short_score" $O/ncu.txt | awk '{print $1, $NF}'
