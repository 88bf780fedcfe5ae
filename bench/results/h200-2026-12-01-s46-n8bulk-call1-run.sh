#!/usr/bin/env bash
# Session 46 helper n8bulk, call 1 (one H200): the hand prototype of u by one bulk copy a block tile
# (gen_bulk.py over rtcgc's emitted m64n64 persistent pingpong resident a modules) beside the current
# winners and cublasSgemm in one process (harness.cu); compute-sanitizer at K = 5003; Nsight Compute.
set -uo pipefail
cd .probe-n8bulk
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
o=/tmp/o1; rm -rf $o; mkdir -p $o
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $o/gpu.txt
G="128:1:384"
timeout 200 ./harness 101556 165 30 \
  "d_win_m64n128_st2_threads:d_win.cubin:d:132:1:384:229456" \
  "d_m64n64_st2_threads:d_st2.cubin:d:$G:131152" \
  "d_m64n64_st2_bulk:db_st2.cubin:d:$G:215712" \
  "d_m64n64_st3_bulk:db_st3.cubin:d:$G:232096" \
  "s_win_m64n64_2x2_st3:s_win.cubin:s:794:4:512:131072" \
  "s_m64n64_st2_threads:s_st2.cubin:s:$G:131152" \
  "s_m64n64_st2_bulk:sb_st2.cubin:s:$G:215712" \
  "s_m64n64_st3_bulk:sb_st3.cubin:s:$G:232096" > $o/byhand.txt 2>&1; echo "rc=$?" >> $o/byhand.txt
for ts in "racecheck|k5_db_st2|d|215712" "memcheck|k5_sb_st3|s|232096"; do
  IFS='|' read t c k s <<< "$ts"
  echo "== $t $c K=5003 Np=165" >> $o/sanitize.txt
  timeout 90 compute-sanitizer --tool $t --error-exitcode 9 ./harness 5003 165 1 "$c:$c.cubin:$k:$G:$s" >> $o/sanitize.txt 2>&1; echo "rc=$?" >> $o/sanitize.txt
done
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for c in db_st2; do
  timeout 90 $NCU --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    --kernel-name dg_diff_0 --launch-skip 1 --launch-count 1 ./harness 101556 165 2 "$c:$c.cubin:d:$G:$([ $c = db_st2 ] && echo 215712 || echo 232096)" > $o/ncu-$c.txt 2>&1
done
tar -czf $OUT/call1.tgz -C $o .
