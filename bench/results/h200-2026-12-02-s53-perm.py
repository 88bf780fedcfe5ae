#!/usr/bin/env python3
"""Probe transform (session 53): the stacked N8 module with each consumer warp's 16 rows of one parity. The
producer puts global row block_m + 32 (w / 2) + 2 i + w % 2 at tile row 16 w + i (its loads of u by threads:
row load_row + j becomes load_row / 32 * 32 + load_row / 16 % 2 + 2 j), and the epilogue's rows follow
(group g of warp w: rows 32 (w / 2) + 2 g + w % 2 and 16 more), so that a warp's rows all start 8-byte aligned
or all 4 bytes past (odd pitch 495). With `split`, the epilogue is emitted twice under a warp-uniform test:
aligned warps store (2t, 2t + 1) pairs with no rotation shuffle or select. Usage: perm.py IN.cu OUT.cu [split]"""
import sys, re
src, dst = sys.argv[1:3]
split = 'split' in sys.argv[3:]
t = open(src).read()
t, n1 = re.subn(r'\b((?:block_m|next_m)\w*) \+ \(load_row \+ (\d+)\)', r'\1 + (load_row / 32 * 32 + load_row / 16 % 2 + 2 * \2)', t)
t, n2 = re.subn(r'\b((?:block_m|next_m)\w*) \+ load_row\b(?! \+)', r'\1 + (load_row / 32 * 32 + load_row / 16 % 2)', t)
t, n3 = re.subn(r'const int row_m = block_m_4 \+ warp_m \+ group;', 'const int row_m = block_m_4 + warp_m / 32 * 32 + warp_m / 16 % 2 + 2 * group;', t)
t, n4 = re.subn(r'const int row_m_2 = block_m_4 \+ warp_m \+ group \+ 8;', 'const int row_m_2 = block_m_4 + warp_m / 32 * 32 + warp_m / 16 % 2 + 2 * group + 16;', t)
print('loads', n1, n2, 'rows', n3, n4, file=sys.stderr)
assert n3 == 1 and n4 == 1 and n1 > 0 and n2 > 0
if split:
    s = t.split('\n')
    start = next(i for i, l in enumerate(s) if 'const float rotated = __shfl_sync' in l)
    turn = next(i for i, l in enumerate(s) if 'for (int turn = 0; turn < turns; ++turn) {' in l)
    it = len(s[turn]) - len(s[turn].lstrip())
    end = next(i for i in range(start, len(s)) if s[i] == ' ' * it + '}')
    body = s[start:end]
    decl = [l for l in body if re.match(r'^\s*(const int row_|float\* row_|const bool row_)', l)]
    rest = [l for l in body if l not in decl]
    I = ' ' * (it + 2)
    even = [re.sub(r'\brow_odd(_2)?\b', '0', l) for l in rest]
    new = decl + [I + 'if (row_odd == 0 && row_odd_2 == 0) {'] + ['  ' + l for l in even] + [I + '} else {'] + ['  ' + l for l in rest] + [I + '}']
    t = '\n'.join(s[:start] + new + s[end:])
open(dst, 'w').write(t)
