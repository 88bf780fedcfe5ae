#!/bin/sh
# Installs an rtcg build into a temporary prefix and builds examples/embed against it the way a
# user's project would (find_package(rtcg) -> rtcg::rtcg).
#
# Default mode: builds matmul and dg_diff; where the package has rtcg-scan, checks that the build
# wrote kernels.json listing both kernels and that `rtcgc tune --manifest kernels.json` validates
# it (without a GPU it must then exit 4, no device). Runs the programs; exit code 4 (no CUDA device)
# is accepted, so the test passes on machines without a GPU. With a GPU it also tunes the manifest
# (a few candidates) into a fresh cache directory and checks that the programs then take their
# schedule from the tuning database.
#
# Mode "broken": configures with -DRTCG_EMBED_BROKEN=ON; the build must fail with rtcg-scan's
# diagnostic of broken.cpp: the message, the C++ source line and the caret.
#
# usage: consumer_build.sh RTCG_BUILD_DIR EMBED_SOURCE_DIR CMAKE GENERATOR CXX_COMPILER [broken]
set -eu
build_dir=$1 embed_dir=$2 cmake=$3 generator=$4 cxx=$5 mode=${6:-default}

work=$(mktemp -d "${TMPDIR:-/tmp}/rtcg-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

"$cmake" --install "$build_dir" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; echo "consumer_build: installing $build_dir failed" >&2; exit 1; }

if [ "$mode" = broken ]; then
  if [ ! -x "$prefix/bin/rtcg-scan" ]; then
    echo "consumer_build: the package has no rtcg-scan; nothing to test" >&2
    exit 1
  fi
  "$cmake" -S "$embed_dir" -B "$work/build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" -DRTCG_EMBED_BROKEN=ON
  if "$cmake" --build "$work/build" --target broken >"$work/build.log" 2>&1; then
    cat "$work/build.log"
    echo "consumer_build: the build with broken.cpp succeeded; rtcg-scan should have failed it" >&2
    exit 1
  fi
  cat "$work/build.log"
  # The diagnostic, exactly: file:line:col: error: message, the C++ line, the caret under `xs`.
  printf '%s\n' \
    "$embed_dir/broken.cpp:19:40: error: unknown array 'xs'; did you mean 'x'?" \
    "          for i in 0..n { y[i] = alpha * xs[i]; }" \
    "$(printf '%41s' '')^~" \
    "rtcg-scan: 1 error in embedded kernels" >"$work/expected.txt"
  # grep -F -x per line would lose the order: compare the block of lines from the diagnostic on.
  first=$(head -1 "$work/expected.txt")
  n=$(grep -n -F -x -- "$first" "$work/build.log" | head -1 | cut -d: -f1)
  if [ -z "$n" ]; then
    echo "consumer_build: the build output lacks '$first'" >&2
    exit 1
  fi
  tail -n "+$n" "$work/build.log" | head -4 >"$work/actual.txt"
  if ! cmp -s "$work/expected.txt" "$work/actual.txt"; then
    echo "consumer_build: rtcg-scan's diagnostic differs from the expected one:" >&2
    diff "$work/expected.txt" "$work/actual.txt" >&2 || true
    exit 1
  fi
  if [ -e "$work/build/broken" ]; then
    echo "consumer_build: broken was linked although its scan failed" >&2
    exit 1
  fi
  echo "consumer_build: the build failed at rtcg-scan's diagnostic, as expected"
  exit 0
fi

"$cmake" -S "$embed_dir" -B "$work/build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix"
"$cmake" --build "$work/build"

manifest=$work/build/kernels.json
scanned=no
if [ -x "$prefix/bin/rtcg-scan" ]; then
  scanned=yes
  for kernel in matmul dg_diff; do
    if ! grep -q "\"kernel\": \"$kernel\"" "$manifest" 2>/dev/null; then
      [ -e "$manifest" ] && cat "$manifest"
      echo "consumer_build: $manifest does not list the kernel $kernel" >&2
      exit 1
    fi
  done
  echo "consumer_build: kernels.json lists matmul and dg_diff"
else
  echo "consumer_build: the package has no rtcg-scan: no manifest to check"
fi

# Runs both programs; $1 names the step. Sets $ran to yes when they ran on a GPU.
status=0 ran=no
run_programs() {
  for program in matmul dg_diff; do
    rc=0
    "$work/build/$program" >"$work/$program.out" 2>&1 || rc=$?
    cat "$work/$program.out"
    case $rc in
      0) echo "consumer_build: $1: $program ok"; ran=yes ;;
      4) echo "consumer_build: $program built; not run (no CUDA device)" ;;
      *) echo "consumer_build: $1: $program failed with exit code $rc" >&2; status=1 ;;
    esac
  done
}

RTCG_CACHE_DIR=$work/cache
export RTCG_CACHE_DIR
run_programs "default schedule"

if [ $scanned = yes ]; then
  rc=0
  "$prefix/bin/rtcgc" tune --manifest "$manifest" --max-candidates 4 --time-limit 10 >"$work/tune.log" 2>&1 || rc=$?
  cat "$work/tune.log"
  if ! grep -q "2 kernels in the manifest, 2 to tune" "$work/tune.log"; then
    echo "consumer_build: rtcgc tune --manifest did not plan both kernels" >&2
    status=1
  elif [ $ran = no ]; then
    [ $rc = 4 ] || { echo "consumer_build: rtcgc tune --manifest without a GPU exited $rc, not 4" >&2; status=1; }
  elif [ $rc != 0 ]; then
    echo "consumer_build: rtcgc tune --manifest failed with exit code $rc" >&2
    status=1
  else
    run_programs "tuned"
    for program in matmul dg_diff; do
      grep -q "schedule (tuning database)" "$work/$program.out" ||
        { echo "consumer_build: $program did not use the tuned schedule" >&2; status=1; }
    done
  fi
fi
exit $status
