#!/usr/bin/env python3
"""One markdown line per profiled kernel from Nsight Compute's CSV (`ncu --import R --csv --page
details`), for scripts/gpu-ncu-rows.sh: the row (the CSV's file name), the kernel, its launch, time,
the SM / memory / DRAM throughputs, issue slots busy, achieved occupancy and the three largest warp
stall reasons (warps stalled per issued instruction).

  scripts/ncu-summary.py ROW.csv [ROW2.csv ...]
"""
import csv
import os
import re
import sys

TIME_UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}
STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio")
COLUMNS = ["Compute (SM) Throughput", "Memory Throughput", "DRAM Throughput", "Issue Slots Busy",
           "Achieved Occupancy"]


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def kernels(path):
    """The kernels of one CSV, in launch order: {metric name: (unit, value)} plus the launch."""
    found = {}
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu prints notes before the table
    for rec in csv.DictReader(lines):
        key = rec.get("ID", "")
        k = found.setdefault(key, {"name": rec.get("Kernel Name", "?"), "block": rec.get("Block Size", ""),
                                   "grid": rec.get("Grid Size", ""), "metrics": {}})
        # A name can appear in two sections (Memory Throughput: % in SpeedOfLight, bytes/s in the
        # memory analysis): the first percentage wins, else the first value.
        name, unit = rec.get("Metric Name", ""), rec.get("Metric Unit", "")
        old = k["metrics"].get(name)
        if old is None or (old[0] != "%" and unit == "%"):
            k["metrics"][name] = (unit, rec.get("Metric Value", ""))
    return [found[key] for key in sorted(found, key=lambda s: int(s) if s.isdigit() else 0)]


def line(row, k):
    m = k["metrics"]
    unit, value = m.get("Duration", ("", ""))
    us = number(value)
    scale = TIME_UNITS.get(unit.strip().lower())
    us = us * scale if us is not None and scale is not None else None
    cells = [row, re.sub(r"\(.*", "", k["name"])[:64], f"{k['grid']}×{k['block']}",
             m.get("Registers Per Thread", ("", "?"))[1], f"{us:.1f}" if us is not None else f"{value} {unit}"]
    for c in COLUMNS:
        v = number(m.get(c, ("", ""))[1])
        cells.append(f"{v:.0f}%" if v is not None else "–")
    stalls = []
    for name, (_, value) in m.items():
        hit, v = STALL.fullmatch(name), number(value)
        if hit and v is not None and hit.group(1) != "selected" and not hit.group(1).endswith("_not_issued"):
            stalls.append((v, hit.group(1)))
    stalls.sort(reverse=True)
    cells.append(", ".join(f"{n} {v:.1f}" for v, n in stalls[:3]) or "–")
    return "| " + " | ".join(cells) + " |"


def main(paths):
    print("| row | kernel | grid×block | regs | µs | SM | memory | DRAM | issue busy | occupancy | top stalls (per issue) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        row = os.path.basename(path)[: -len(".csv")]
        try:
            ks = kernels(path)
        except (OSError, csv.Error) as e:
            print(f"| {row} | (no profile: {e}) |")
            continue
        if not ks:
            print(f"| {row} | (no kernel profiled: see the row's ncu log) |")
        for k in ks:
            print(line(row, k))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
