#!/usr/bin/env bash
# Session 54, call 10 (one H200): where the N8 gap to the stacked kernel stands after e80b481: the emitted modules
# and their store-free forms (sink.py) in harness.py (three rounds), and Nsight Compute's instruction counts and
# stall reasons of the emitted dg_diff (e80b481) beside the stacked one.
set -uo pipefail
cd $PWD/.probe-me/s54; O=$OUT/c10; mkdir -p $O
ROUNDS=3 timeout 200 python3 harness.py stacked.cubin:stacked dg_diff-new.cubin:dgdiff stacked-sink.cubin:stacked dg_diff-new-sink.cubin:dgdiff 2>&1 | tee $O/probe.txt
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
MET="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,smsp__inst_executed_op_global_st.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_requests_srcunit_tex_op_write.sum"
for v in stacked.cubin:stacked dg_diff-new.cubin:dgdiff; do
  echo "== $v" >> $O/ncu.txt
  REPS=1 ROUNDS=1 timeout 120 $ncu --clock-control none --launch-skip 3 --launch-count 1 -k regex:dg_diff --metrics "$MET" python3 harness.py $v 2>&1 | grep -vE "^round|==PROF==" >> $O/ncu.txt
done
grep -E "==|duration|inst_executed|issue_active|lts__|wait_per|long_score|no_instruction|dispatch|short_score|sleeping" $O/ncu.txt | awk '{print $1, $NF}'
