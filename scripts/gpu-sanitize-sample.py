#!/usr/bin/env python3
"""The seeded sample of scripts/gpu-sanitize.sh for one example: reads `rtcgc tune --dry-run --json`
twice (the search's budgeted sample, then the whole ranked space) and prints up to N schedules,
one a line as `FAMILY<TAB>SCHEDULE`.

The budgeted sample already holds the families the model gives no credit to, but a family can
still miss it at small sizes; the sanitizers must meet every kind of code the emitter writes, so
the best-ranked candidate of each family the space has and the sample lacks replaces one of the
sample's last picks.
    usage: gpu-sanitize-sample.py SAMPLE.json SPACE.json N KERNEL.rtcg
"""
import json
import re
import sys

# Families by the schedule text (docs/rtcgc.md: the schedule's clauses) and the kernel's reduction
# indices. `split-k`: a reduction index with a grid part and staged tiles (blocks take shares of the
# staged steps); `cross-block`: a reduction index with a grid part otherwise (a grid-stride loop, the
# last block combines the partials); `pipelined`: a parallel index whose block walks several
# positions (a serial part after its grid part) with multi-buffered tiles; `mma`: tensor-core
# fragments (`mma:`, under --precision tf32x3/tf32, or FP64 mma on f64 kernels).
FAMILY_ORDER = ["mma", "split-k", "cross-block", "pipelined", "async", "early-loads", "staged"]


def clauses(schedule):
    """(index, parts) of every index clause of every nest."""
    for nest in schedule.split("|"):
        for clause in nest.split(";"):
            name, _, parts = clause.strip().partition(":")
            if re.fullmatch(r"[A-Za-z_]\w*", name) and name not in ("shared", "buffers", "copy", "loads", "blocks_per_sm", "stores", "mma"):
                yield name, parts


def families_of(schedule, reductions):
    out = set()
    for name, parts in clauses(schedule):
        if name in reductions and "grid." in parts:
            out.add("split-k" if "shared:" in schedule else "cross-block")
        if name not in reductions and re.search(r"grid\.[xyz][^;]*serial \d+", parts) and "buffers:" in schedule:
            out.add("pipelined")
    if "mma:" in schedule:
        out.add("mma")
    if "copy: async" in schedule:
        out.add("async")
    if "loads: early" in schedule:
        out.add("early-loads")
    if "shared:" in schedule:
        out.add("staged")
    return out


def family(schedule, reductions):
    fams = families_of(schedule, reductions)
    return next((f for f in FAMILY_ORDER if f in fams), "plain")


def reduction_indices(source):
    """The indices of sum/product/max/min in the kernel source: `sum(i in 0..m, j in 0..n, ...)`."""
    out = set()
    for m in re.finditer(r"\b(sum|product|max|min)\(", source):
        rest = source[m.end():]
        for idx in re.finditer(r"\s*(\w+) in [^,]+,", rest):
            if idx.start() != 0 and not rest[: idx.start()].rstrip().endswith(","):
                break
            out.add(idx.group(1))
            rest_pos = idx.end()
            if not re.match(r"\s*\w+ in ", rest[rest_pos:]):
                break
    return out


def main():
    sample_path, space_path, n, kernel_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    reductions = reduction_indices(open(kernel_file).read())
    sample = [c["schedule"] for c in json.load(open(sample_path))["candidates"]][:n]
    space = [c["schedule"] for c in json.load(open(space_path))["candidates"]]
    have = set().union(*(families_of(s, reductions) for s in sample)) if sample else set()
    missing = []
    for name in FAMILY_ORDER:
        if name in have:
            continue
        best = next((s for s in space if name in families_of(s, reductions) and s not in sample), None)
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
        print(f"{family(s, reductions)}\t{s}")


if __name__ == "__main__":
    main()
