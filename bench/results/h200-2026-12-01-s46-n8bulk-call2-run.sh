#!/usr/bin/env bash
# Session 46 helper n8bulk, call 2 (one H200): the bulk prototype with a branch-free split
# (gen_bulk2.py), and timing-only diagnostics that drop one part of a kernel (mkdiag.py; their
# results are wrong on purpose): where the time of the bulk form and of the current winner goes;
# and at n128 (gen_ldg.py) the producer's four warps loading u's rows by plain 128-byte warp loads
# and writing the big and small parts themselves, in place of the 4-byte cp.async and the split.
set -uo pipefail
cd .probe-n8bulk
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
o=/tmp/o2; rm -rf $o; mkdir -p $o
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $o/gpu.txt
G="128:1:384"; W="132:1:384:229456"
timeout 200 ./harness 101556 165 30 \
  "d_win_m64n128_st2_threads:d_win.cubin:d:$W" \
  "DIAG_win_nocopy:x_win_nocopy.cubin:d:$W" \
  "DIAG_win_nocopy_nosplit:x_win_nocopy_nosplit.cubin:d:$W" \
  "DIAG_win_noepi:x_win_noepi.cubin:d:$W" \
  "d_m64n128_st2_ldg8:dl8_n128.cubin:d:$W" \
  "d_m64n64_st2_bulk_call1:db_st2.cubin:d:$G:215712" \
  "d_m64n64_st2_bulk2:db2_st2.cubin:d:$G:215712" \
  "d_m64n64_st3_bulk2:db2_st3.cubin:d:$G:232096" \
  "DIAG_bulk2_nosplit:x_db2_nosplit.cubin:d:$G:215712" \
  "DIAG_bulk2_nowgmma:x_db2_nowgmma.cubin:d:$G:215712" \
  "DIAG_bulk2_noepi:x_db2_noepi.cubin:d:$G:215712" \
  "DIAG_bulk2_nosplit_nowgmma:x_db2_sync.cubin:d:$G:215712" \
  "s_win_m64n64_2x2_st3:s_win.cubin:s:794:4:512:131072" \
  "s_m64n128_st2_threads:s_n128.cubin:s:$W" \
  "s_m64n128_st2_ldg16:sl_n128.cubin:s:$W" \
  "s_m64n128_st2_ldg8:sl8_n128.cubin:s:$W" \
  "s_m64n64_st2_bulk2:sb2_st2.cubin:s:$G:215712" \
  "s_m64n64_st3_bulk2:sb2_st3.cubin:s:$G:232096" > $o/byhand.txt 2>&1; echo "rc=$?" >> $o/byhand.txt
for ts in "racecheck|k5_db2_st2|d|$G:215712" "synccheck|k5_db2_st2|d|$G:215712" "memcheck|k5_sb2_st3|s|$G:232096" \
          "racecheck|k5_dl8_n128|d|$W" "synccheck|k5_dl8_n128|d|$W" "memcheck|k5_sl8_n128|s|$W"; do
  IFS='|' read t c k s <<< "$ts"
  echo "== $t $c K=5003 Np=165" >> $o/sanitize.txt
  timeout 90 compute-sanitizer --tool $t --error-exitcode 9 ./harness 5003 165 1 "$c:$c.cubin:$k:$s" >> $o/sanitize.txt 2>&1; echo "rc=$?" >> $o/sanitize.txt
done
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
timeout 120 $NCU --section SpeedOfLight --section WarpStateStats --section SourceCounters --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --kernel-name dg_diff_0 --launch-skip 1 --launch-count 1 ./harness 101556 165 2 "db2_st2:db2_st2.cubin:d:$G:215712" > $o/ncu-db2_st2.txt 2>&1
timeout 120 $NCU --section SpeedOfLight --section WarpStateStats --section SourceCounters --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --kernel-name dg_diff_0 --launch-skip 1 --launch-count 1 ./harness 101556 165 2 "dl8_n128:dl8_n128.cubin:d:$W" > $o/ncu-dl8_n128.txt 2>&1
tar -czf $OUT/call2.tgz -C $o .
