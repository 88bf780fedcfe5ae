#!/usr/bin/env python3
"""Probe transform (session 52, call 3): dg_diff_stacked N8's pingpong epilogue with a lean path for
interior tiles (the whole 64 x 128 tile inside w): each thread's two rows' pointers once, a row's
alignment once (rows of 495 floats: odd rows start 4 bytes past 8), per chunk and row one float2
store (aligned rows (2t, 2t + 1); odd rows (2t + 1, 2t + 2), lane 3's second from the next chunk's
lane 0), odd rows' column 0 and 127 alone. Edge tiles keep the emitted epilogue.
Usage: lean.py IN.cu OUT.cu [--skip] (--skip: the whole epilogue skipped, a timing bound)."""
import re, sys
s = open(sys.argv[1]).read().split('\n')
skip = '--skip' in sys.argv
start = next(i for i, l in enumerate(s) if 'const float rotated = __shfl_sync' in l)
turn = next(i for i, l in enumerate(s) if 'for (int turn = 0; turn < turns; ++turn) {' in l)
ind_turn = len(s[turn]) - len(s[turn].lstrip())
end = next(i for i in range(start, len(s)) if s[i] == ' ' * ind_turn + '}')  # the turn loop's close
ind = ' ' * (ind_turn + 2)
old = s[start:end]
if skip:
    new = [ind + 'if (u[0] == 1234.5f) {'] + old + [ind + '}']
else:
    L = [ind + 'if (block_n_4 + 128 <= 495 && block_m_4 + 64 <= 101556) {']
    i2 = ind + '  '
    L += [i2 + 'const int lean_r = block_m_4 + warp_m + group;',
          i2 + 'const int lean_odd = lean_r & 1;',
          i2 + 'float* lean_p0 = &w[lean_r * 495 + block_n_4 + in_group * 2 + lean_odd];',
          i2 + 'float* lean_p1 = lean_p0 + 8 * 495;',
          i2 + 'const int lean_src = (lane & 28) | (in_group + 1 & 3);']
    for c in range(16):
        L += [i2 + f'const float lean_n{c}_0 = __shfl_sync(4294967295u, acc{c}_0, lean_src);',
              i2 + f'const float lean_n{c}_2 = __shfl_sync(4294967295u, acc{c}_2, lean_src);']
    for c in range(16):
        for (row, a, b) in (('lean_p0', 0, 1), ('lean_p1', 2, 3)):
            nxt = f'(in_group == 3 ? lean_n{c + 1}_{a} : lean_n{c}_{a})' if c < 15 else f'lean_n{c}_{a}'
            v = f'make_float2(lean_odd ? acc{c}_{b} : acc{c}_{a}, lean_odd ? {nxt} : acc{c}_{b})'
            st = f'__stcs((float2*)({row} + {8 * c}), {v});'
            L.append(i2 + (f'if (!lean_odd || in_group != 3) {st}' if c == 15 else st))
    L += [i2 + 'if (lean_odd && in_group == 0) { __stcs(lean_p0 - 1, acc0_0); __stcs(lean_p1 - 1, acc0_2); }',
          i2 + 'if (lean_odd && in_group == 3) { __stcs(lean_p0 + 120, acc15_1); __stcs(lean_p1 + 120, acc15_3); }',
          ind + '} else {']
    new = L + ['  ' + l for l in old] + [ind + '}']
open(sys.argv[2], 'w').write('\n'.join(s[:start] + new + s[end:]))
