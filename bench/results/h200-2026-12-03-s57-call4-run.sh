#!/usr/bin/env bash
# Session 57, call 4 (one H200), e2a2f66 ('s57b' pack): a search of every example at examples/sizes.txt (ieee; under
# tf32x3 too where a contraction qualifies for the tensor cores), 48 candidates, 6 s each: the wrong counts.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s57; O=$OUT/c4; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s57b.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s57b/rtcgc; W=$P/m/s57b/rtcg-worker
TC=" matmul.rtcg matmul_flat.rtcg dg_diff.rtcg dg_diff_stacked.rtcg dg_lift.rtcg batched_matmul.rtcg trmm.rtcg syrk.rtcg sumfact.rtcg gemv.rtcg "
search() { # file precision defs...
  local f=$1 p=$2; shift 2
  echo "== $f $p $*" >> $O/searches.txt
  RTCG_CACHE_DIR=/tmp/c4 timeout 60 $R tune examples/$f "$@" --precision $p --max-candidates 48 --time-limit 6 --worker $W --db /tmp/c4.sqlite > $O/one.log 2>&1
  echo "rc=$?" >> $O/searches.txt; grep -E "search done|error" $O/one.log | cut -c1-260 >> $O/searches.txt; cat $O/one.log >> $O/searches.log
}
while read -r file bindings; do
  [[ -z "$file" || "$file" == \#* ]] && continue
  defs=(); for b in $bindings; do defs+=(-D "$b"); done
  search $file ieee "${defs[@]}"
  [[ "$TC" == *" $file "* ]] && search $file tf32x3 "${defs[@]}"
done < examples/sizes.txt
search dgemm.rtcg fp64x -D n=500
grep -c "^== " $O/searches.txt; grep -E "search done" $O/searches.txt | grep -vc " 0 wrong"; grep -B2 -E "rc=[1-9]" $O/searches.txt | head -20
grep -E "^==|search done" $O/searches.txt | sed -E 's/search done in ([0-9.]+ s): ([0-9]+) candidates.*, ([0-9]+) verified, ([0-9]+) wrong, ([0-9]+) faulted.*/\1 \2 cand \3 ok \4 wrong \5 faulted/' | paste - - | cut -c1-160
tar -C $OUT -czf $OUT/c4.tgz c4 && rm -rf $O
