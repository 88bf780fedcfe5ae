#!/usr/bin/env bash
# Prints the include graph between the folders of src/ (one line per folder: the folders whose
# headers it includes) and exits non-zero when the graph has a cycle, naming the folders on it.
# A cycle means two stages cannot be built, tested or read one without the other (the api <-> tune
# cycle of the "One plan per nest" issue); tests/layering runs this so that none comes back.
# Usage: scripts/include-graph.sh [--dot]   (--dot: the graph in Graphviz form instead)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/src"
folders=$(find . -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)

# Edges "from to": a file of src/FROM including "TO/..." where TO is another folder of src/
# (the public headers, include/rtcg, are no stage of their own).
edges() {
  for from in $folders; do
    grep -rhoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[A-Za-z0-9_]+/' "$from" 2>/dev/null |
      sed -E 's/.*"([A-Za-z0-9_]+)\//\1/' | sort -u |
      while read -r to; do
        if [[ $to != "$from" && -d $to ]]; then echo "$from $to"; fi
      done
  done
}
all=$(edges)

if [[ ${1:-} == --dot ]]; then
  echo "digraph includes {"
  while read -r a b; do [[ -n $a ]] && echo "  \"$a\" -> \"$b\";"; done <<<"$all"
  echo "}"
else
  for f in $folders; do
    echo "$f -> $(awk -v f="$f" '$1 == f { printf "%s%s", sep, $2; sep = " " }' <<<"$all")"
  done
fi

# tsort reports a loop on stderr and exits non-zero when the edges are not a partial order; each
# folder is also given as a self-pair so that folders without edges are nodes too.
if ! loop=$( { echo "$all"; for f in $folders; do echo "$f $f"; done; } | tsort 2>&1 >/dev/null); then
  echo "include cycle between the folders of src/:" >&2
  echo "$loop" | sed -n 's/^tsort: //p' >&2
  exit 1
fi
