#!/usr/bin/env bash
# Session 43 call 8 (one H200): writing the reference file, old (ede2b58: its bytes copied into one
# string first) against new (the values written from the arrays): searches of 8 candidates of
# transpose 8192^2 and axpby 2^26 (a 537 MB reference file), after a warm-up, alternating.
set -uo pipefail
mkdir -p old new
tar -xJf .probe/s43/old.tar.xz -C old; tar -xJf .probe/pack.tar.xz -C new
export LD_LIBRARY_PATH=$PWD/new/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
o=/tmp/o8; rm -rf $o; mkdir -p $o
tune() {  # build file sizes... tag
  local b=$1 f=$2 tag=$3; shift 3
  RTCG_CACHE_DIR=$(mktemp -d) timeout 120 $b/.gpu/build-gpu/tools/rtcgc/rtcgc tune examples/$f "$@" --max-candidates 8 \
    --worker $b/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker --db - --json > $o/$tag.json 2> $o/$tag.log
  python3 - "$o/$tag.json" "$tag" >> $o/summary.txt <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); t = {e["event"]: e["seconds"] for e in j["timeline"]}
print(f"{sys.argv[2]:22} wall {j['wallSeconds']:6.2f} s  reference done {t.get('reference done', 0):5.2f}  first result {t.get('first result', 0):5.2f}  last {t.get('last result', 0):5.2f}  best {j['best']['medianMs']:.4f} ms")
PY
}
tune old transpose.rtcg warm-transpose -D m=8192 -D n=8192
tune old axpby.rtcg warm-axpby -D n=67108864
for r in 1 2; do
  for b in old new; do tune $b transpose.rtcg $b-transpose-$r -D m=8192 -D n=8192; tune $b axpby.rtcg $b-axpby-$r -D n=67108864; done
done
cat $o/summary.txt; grep -h "default schedule measured" $o/*-1.log $o/*-2.log | cut -c1-120
tar -czf $OUT/call8.tgz -C /tmp o8
rm -rf old new
