#!/usr/bin/env python3
"""Session 52, call 2: reads Nsight Compute's source page (`ncu -i R --page source --csv --print-source sass`,
the -source.csv.xz files, unpacked) and prints the stall samples per block of SASS lines (`blocks W`), or
per given line ranges the stall reasons' shares (`ranges LO-HI ...`; the regions of docs/bench.md's session
52: the stacked module's consumer steps 200-500, epilogue 500-1500, producer 3300-4100).
Usage: stalls.py FILE.csv blocks [W] | stalls.py FILE.csv ranges LO-HI ..."""
import collections, csv, sys
rows = list(csv.reader(open(sys.argv[1])))
h, d = rows[1], rows[2:]
iS, iSrc, iE = h.index("Warp Stall Sampling (All Samples)"), h.index("Source"), h.index("Instructions Executed")
total = sum(int(r[iS]) for r in d)
if sys.argv[2] == "blocks":
    w = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    for b in range(0, len(d), w):
        chunk = d[b:b + w]
        s, e = sum(int(r[iS]) for r in chunk), sum(int(r[iE]) for r in chunk)
        ops = collections.Counter((r[iSrc].split()[1] if r[iSrc].split()[0].startswith('@') else r[iSrc].split()[0]).split('.')[0]
                                  for r in chunk if r[iSrc].split())
        print(f"{b:5d} samples {s:6d} {100 * s / total:5.1f}%  executed {e:10d}  [{','.join(k for k, _ in ops.most_common(5))}]")
else:
    cols = [c for c in h if c.startswith('stall_') and 'Not Issued' not in c]
    for r in sys.argv[3:]:
        lo, hi = map(int, r.split('-'))
        t = {c: sum(int(x[h.index(c)] or 0) for x in d[lo:hi]) for c in cols}
        s = sum(t.values()) or 1
        print(f"{r:10s} {s:6d}  " + '  '.join(f"{c[6:]} {100 * v / s:.0f}%" for c, v in sorted(t.items(), key=lambda x: -x[1])[:7]))
