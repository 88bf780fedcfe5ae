#!/usr/bin/env python3
"""Probe transform (session 53): the stacked N8 epilogue's per-chunk `if (A) { pair } else { if (B) { single } }`
made two independent guarded stores, `if (A) pair; if (!(A) && (B)) single;`, so that ptxas can predicate them
instead of branching around each (BSSY / BRA / BSYNC per chunk row). Usage: flat.py IN.cu OUT.cu"""
import sys, re
src, dst = sys.argv[1:3]
t = open(src).read()
pat = re.compile(r'^(\s*)if \((.*)\) \{\n(\s*__stcs\(\(float2\*\).*;)\n\1\} else \{\n\s*if \((.*)\) \{\n(\s*__stcs\(.*;)\n\s*\}\n\1\}\n', re.M)
n = 0
def rep(m):
    global n; n += 1
    ind, a, s1, b, s2 = m.groups()
    return f'{ind}if ({a}) {{\n{s1}\n{ind}}}\n{ind}if (!({a}) && ({b})) {{\n{s2}\n{ind}}}\n'
t = pat.sub(rep, t)
print(n, 'flattened', file=sys.stderr)
open(dst, 'w').write(t)
