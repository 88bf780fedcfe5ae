#!/usr/bin/env bash
# Writes the generated DSL lexer and parser (re2c and Bison output of grammar/) into DIR, for a build
# on a machine without those tools: cmake -DRTCG_GENERATED_FRONTEND_DIR=DIR (the Python package's
# build on the GPU machine, scripts/gpu-python.sh, or an sdist).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: scripts/frontend-sources.sh DIR}
mkdir -p "$dir"
bison -Wall -Werror --language=c++ -o "$dir/DslParser.cpp" --header="$dir/DslParser.hpp" "$root/grammar/parser.yy"
re2c -W -Werror --no-generation-date -o "$dir/DslLexer.cpp" "$root/grammar/lexer.re"
