#!/usr/bin/env bash
# Builds rtcg (Release) into build-gpu/ and packs what the GPU check needs into .gpu/ (ignored by
# git): stripped executables at their build-tree paths, and the shared libraries the GPU machine
# lacks. Carry `.gpu` to the GPU machine and run scripts/gpu-check.sh there (docs/gpu.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-gpu
export PATH=/usr/local/cuda/bin:$PATH
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build"
rm -rf "$root/.gpu"
mkdir -p "$root/.gpu/lib"
cd "$build"
# Every executable of the build, at its path in the build tree (tests have those paths built in),
# but those of the install prefix and the embedding examples' build (packed below, once): the
# device tool carries at most 64 MiB with the working tree.
find . -type f -perm -u+x ! -name '*.so*' ! -path './CMakeFiles/*' ! -path './prefix/*' ! -path './embed/*' \
  ! -name '*.sh' | while read -r f; do
  if file "$f" | grep -q 'ELF.*executable\|ELF.*pie'; then
    mkdir -p "$root/.gpu/build-gpu/$(dirname "$f")"
    strip -o "$root/.gpu/build-gpu/$f" "$f"
  fi
done
# The kernels test_cli exports at build time (cubins beside their headers; not executables), which
# its GPU tests (Export.*) load.
mkdir -p "$root/.gpu/build-gpu/tests/cli"
cp -r tests/cli/export "$root/.gpu/build-gpu/tests/cli/"
# CTest files so ctest can run there too.
find . -name 'CTestTestfile.cmake' -o -name '*_include.cmake' -o -name '*_tests.cmake' | while read -r f; do
  mkdir -p "$root/.gpu/build-gpu/$(dirname "$f")"
  cp "$f" "$root/.gpu/build-gpu/$f"
done
cp -L /usr/lib/x86_64-linux-gnu/libfmt.so.9 "$root/.gpu/lib/"
# The Python package's extension is built on the GPU machine (its Python, 3.12 there, is not this
# one) against the library built here: librtcg.a (position-independent) and what it links: fmt
# (above) and sqlite3 (scripts/gpu-python.sh). The extension includes only include/rtcg, which travels.
mkdir -p "$root/.gpu/py"
strip --strip-debug -o "$root/.gpu/py/librtcg.a" "$build/src/librtcg.a"
# (Not in .gpu/lib: the GPU machine's own libsqlite3, which its Python may load, stays in front;
# gpu-python.sh falls back to this copy only where there is none.)
cp -L /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 "$root/.gpu/py/"
# The embedding examples, built as a consumer of the installed package (the GPU machine has no
# -dev packages to configure them there).
cmake --install "$build" --prefix "$build/prefix" >/dev/null
cmake -S "$root/examples/embed" -B "$build/embed" -DCMAKE_PREFIX_PATH="$build/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build/embed" >/dev/null
mkdir -p "$root/.gpu/embed"
for p in matmul dg_diff raw_module; do strip -o "$root/.gpu/embed/$p" "$build/embed/$p"; done
# rtcg-scan's manifest of their kernels (written by the build where rtcg-scan is built), for the
# GPU check's ahead-of-time tuning (rtcgc tune --manifest); its file paths are this machine's,
# which does not matter for tuning.
if [[ -f "$build/embed/kernels.json" ]]; then
  cp "$build/embed/kernels.json" "$root/.gpu/embed/kernels.json"
else
  echo "gpu-pack: no $build/embed/kernels.json (rtcg-scan not built?): the GPU check will skip ahead-of-time tuning" >&2
fi
# Test binaries have the source tree's path built in; the GPU check links it to where it runs.
echo "$root" >"$root/.gpu/source-dir"
du -sh "$root/.gpu"
