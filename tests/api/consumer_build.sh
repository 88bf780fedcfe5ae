#!/bin/sh
# Installs an rtcg build into a temporary prefix, builds examples/embed against it the way a user's
# project would (find_package(rtcg) -> rtcg::rtcg), and runs the programs. Exit code 4 from a
# program (no CUDA device) is accepted, so the test passes on machines without a GPU.
#
# usage: consumer_build.sh RTCG_BUILD_DIR EMBED_SOURCE_DIR CMAKE GENERATOR CXX_COMPILER
set -eu
build_dir=$1 embed_dir=$2 cmake=$3 generator=$4 cxx=$5

work=$(mktemp -d "${TMPDIR:-/tmp}/rtcg-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$cmake" --install "$build_dir" --prefix "$work/prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; echo "consumer_build: installing $build_dir failed" >&2; exit 1; }
"$cmake" -S "$embed_dir" -B "$work/build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix"
"$cmake" --build "$work/build"

status=0
for program in matmul dg_diff; do
  rc=0
  "$work/build/$program" || rc=$?
  case $rc in
    0) echo "consumer_build: $program ok" ;;
    4) echo "consumer_build: $program built; not run (no CUDA device)" ;;
    *) echo "consumer_build: $program failed with exit code $rc" >&2; status=1 ;;
  esac
done
exit $status
