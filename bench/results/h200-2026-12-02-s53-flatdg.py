#!/usr/bin/env python3
"""Probe transform (session 53): dg_diff's point blocks `if (m < M && n < N) { decls; if (a) {st} if (b) {st} ... }`
made `{ const bool g = m < M && n < N; decls; if (g && (a)) {st} ... }`, so that ptxas can predicate the stores
instead of branching around each point. Usage: flatdg.py IN.cu OUT.cu"""
import sys, re
src, dst = sys.argv[1:3]
L = open(src).read().split('\n')
out = []; n = 0; i = 0
guard = re.compile(r'^(\s*)if \((m_?\d* < \d+ && n_?\d* < \d+)\) \{$')
while i < len(L):
    m = guard.match(L[i])
    if not m:
        out.append(L[i]); i += 1; continue
    ind, cond = m.groups()
    # the block's end: the line `ind}` after i
    j = next(k for k in range(i + 1, len(L)) if L[k] == ind + '}')
    body = L[i + 1:j]
    g = f'guard_{n}'; n += 1
    out.append(f'{ind}{{ const bool {g} = {cond};')
    for l in body:
        mm = re.match(r'^(\s*)if \((.*)\) \{$', l)
        if mm: out.append(f'{mm.group(1)}if ({g} && ({mm.group(2)})) {{')
        elif re.match(r'^\s*__stcs', l): out.append(l.replace('__stcs', f'if ({g}) __stcs', 1))
        else: out.append(l)
    out.append(ind + '}')
    i = j + 1
print(n, 'guards', file=sys.stderr)
open(dst, 'w').write('\n'.join(out))
