#!/usr/bin/env python3
"""Probe transform (session 53): __nanosleep(NS) before each epilogue chunk after the first (before its rotation
shuffles: `rotated_N` of the emitted forms, `sp_nC_0` of spec.py's), so that a consumer's stores leave issue slots
and memory-pipe room to the other warps. Usage: nap.py IN.cu OUT.cu NS"""
import sys, re
src, dst, ns = sys.argv[1], sys.argv[2], int(sys.argv[3])
every = int(sys.argv[4]) if len(sys.argv) > 4 else 1
k = 0
lines = open(src).read().split('\n'); out = []; n = 0
start = next(i for i, l in enumerate(lines) if re.match(r'^\s*const float (rotated(_\d+)?|sp_n\d+_0) = __shfl_sync', l))
pat = re.compile(r'^\s*const float (rotated_\d+|sp_n\d+_0) = __shfl_sync')
for i, l in enumerate(lines):
    if i > start and pat.match(l) and not re.match(r'^\s*const float rotated_\d+ = __shfl_sync', lines[i - 1]):
        k += 1
        if k % every == 0: out.append(re.match(r'^(\s*)', l).group(1) + f'__nanosleep({ns});'); n += 1
    out.append(l)
print(dst, n, file=sys.stderr)
open(dst, 'w').write('\n'.join(out))
