#!/usr/bin/env python3
"""The seeded sample of scripts/gpu-sanitize.sh for one example: reads `rtcgc tune --dry-run --json`
twice (the search's budgeted sample, then the whole ranked space) and prints up to N schedules,
one a line as `FAMILY<TAB>SCHEDULE`.

The budgeted sample already holds the families the model gives no credit to, but a family can
still miss it at small sizes; the sanitizers must meet every kind of code the emitter writes, so
the best-ranked candidate of each family the space has and the sample lacks replaces one of the
sample's last picks.
    usage: gpu-sanitize-sample.py SAMPLE.json SPACE.json N
"""
import json
import re
import sys

# Families by the schedule text (docs/rtcgc.md: the schedule's clauses). `split-k`: a reduction
# index with a grid part ahead of its step loop (staged split-K); `cross-block`: a reduction walked
# by a grid-stride loop whose partials the last block combines; `pipelined`: a block walking
# positions of a parallel index with multi-buffered tiles.
FAMILIES = [
    ("async", re.compile(r"copy: async")),
    ("pipelined", re.compile(r"grid\.[xyz], serial \d+[^|]*buffers:")),
    ("split-k", re.compile(r"(^|[;|] ?)\w+: grid\.[xyz][^;|]*, (serial|unroll)[^|]*shared:")),
    ("cross-block", re.compile(r"(^|[;|] ?)\w+: (serial|unroll)[^;|]*grid\.")),
    ("early-loads", re.compile(r"loads: early")),
    ("staged", re.compile(r"shared:")),
]


def family(schedule):
    for name, rx in FAMILIES:
        if rx.search(schedule):
            return name
    return "plain"


def families_of(schedule):
    return {name for name, rx in FAMILIES if rx.search(schedule)}


def main():
    sample_path, space_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sample = [c["schedule"] for c in json.load(open(sample_path))["candidates"]][:n]
    space = [c["schedule"] for c in json.load(open(space_path))["candidates"]]
    have = set().union(*(families_of(s) for s in sample)) if sample else set()
    missing = []
    for name, rx in FAMILIES:
        if name in have:
            continue
        best = next((s for s in space if rx.search(s) and s not in sample), None)
        if best is not None:
            missing.append(best)
    # Replace from the end (the random picks), keeping the best-predicted head of the sample.
    for i, s in enumerate(missing):
        pos = len(sample) - 1 - i
        if len(sample) < n:
            sample.append(s)
        elif pos >= 0:
            sample[pos] = s
    for s in sample:
        print(f"{family(s)}\t{s}")


if __name__ == "__main__":
    main()
