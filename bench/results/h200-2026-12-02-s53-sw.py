#!/usr/bin/env python3
"""Probe transform (session 53): the emitted epilogue unchanged but repeated once per value of the block's N
origin under a switch (block_n_4 a literal in each case). Usage: sw.py IN.cu OUT.cu"""
import sys, re
src, dst = sys.argv[1:3]
s = open(src).read().split('\n')
start = next(i for i, l in enumerate(s) if 'const float rotated = __shfl_sync' in l)
turn = next(i for i, l in enumerate(s) if 'for (int turn = 0; turn < turns; ++turn) {' in l)
it = len(s[turn]) - len(s[turn].lstrip())
end = next(i for i in range(start, len(s)) if s[i] == ' ' * it + '}')
I = ' ' * (it + 2)
body = s[start:end]
L = [I + 'switch (block_n_4) {']
for bn in (0, 128, 256, 384):
    L.append(I + f'case {bn}: {{')
    L += ['  ' + re.sub(r'\bblock_n_4\b', str(bn), l) for l in body]
    L.append(I + '  break;')
    L.append(I + '}')
L.append(I + '}')
open(dst, 'w').write('\n'.join(s[:start] + L + s[end:]))
