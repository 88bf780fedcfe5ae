#!/usr/bin/env bash
# Session 50, call 7 (one H200): pingpong's consumer index made warp-uniform (__shfl_sync from lane 0, a probe behind
# RTCG_UNIFORM=1) so that the ring steps and wgmma descriptors can live in uniform registers; the same schedules with and
# without, twice interleaved; R2UR / HGMMA counts in both cubins.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/uni.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/d7; mkdir -p $O
for c in n8_plain n8_uni; do cuobjdump -sass $P/$c.cubin > /tmp/$c.sass 2>&1; echo "$c R2UR $(grep -c R2UR /tmp/$c.sass) HGMMA $(grep -c HGMMA /tmp/$c.sass) lines $(wc -l < /tmp/$c.sass)" >> $O/sass-counts.txt; done
T="swizzle 128 tma producer persistent"
hand() { # file sizes schedule
  for v in plain uniform; do
    echo "== $v $1 $2 | $3" >> $O/byhand.txt
    if [ $v = uniform ]; then E="RTCG_UNIFORM=1"; else E=""; fi
    env $E RTCG_CACHE_DIR=/tmp/d7$v timeout 90 $P/m/uni/rtcgc run $P/$1.rtcg $2 --precision tf32x3 -s "$3" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
}
N8="-D K=101556 -D Np=165"
for i in 1 2; do
  hand dgdiff "$N8" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand stacked "$N8" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dgdiff "-D K=299551 -D Np=56" "mma: tf32x3 wgmma m64n192k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  hand stacked "-D K=199665 -D Np=84" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
done
cat $O/sass-counts.txt; grep -E "==|time|MISMATCH" $O/byhand.txt | cut -c1-150
