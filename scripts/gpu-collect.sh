#!/usr/bin/env bash
# Packs $OUT/logs into $OUT/results.tgz (one file comes back instead of many).
set -euo pipefail
out=${OUT:-$(pwd)/gpu-out}
tar czf "$out/results.tgz" -C "$out" logs && rm -rf "$out/logs"
ls -la "$out"
