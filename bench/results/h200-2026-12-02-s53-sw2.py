#!/usr/bin/env python3
"""Probe transform (session 53): sw.py's copies of the stacked epilogue per N origin, with each chunk row whose
columns are inside N for every lane and row kind at that origin reduced to `if (row_inside) pair` (no column
test, no single-value branch). Usage: sw2.py IN.cu OUT.cu (IN: sw.py's output)"""
import sys, re
src, dst = sys.argv[1:3]
t = open(src).read()
N = 495
pat = re.compile(r'^(\s*)if \((row_inside(?:_\d+)?) && (\d+) < (row_left(?:_\d+)?)\) \{\n(\s*__stcs\(\(float2\*\).*;)\n\1\} else \{\n\s*if \(.*\) \{\n\s*__stcs\(.*;\n\s*\}\n\1\}\n', re.M)
parts = re.split(r'(\n\s*case (\d+): \{\n)', t)
# parts: [pre, hdr, bn, body, hdr, bn, body...]
out = [parts[0]]; n = 0
for i in range(1, len(parts), 3):
    hdr, bn, body = parts[i], int(parts[i + 1]), parts[i + 2]
    def rep(m):
        global n
        ind, inside, c, left, pair = m.groups()
        if int(c) < N - bn - 7:  # row_left >= N - (bn + 6 + 1) for every lane and kind
            n += 1
            return f'{ind}if ({inside}) {{\n{pair}\n{ind}}}\n'
        return m.group(0)
    out += [hdr, parts[i + 1], pat.sub(rep, body)]
# re-join without the captured bn strings
res = out[0]
for i in range(1, len(out), 3): res += out[i] + out[i + 2]
print(n, 'simplified', file=sys.stderr)
open(dst, 'w').write(res)
