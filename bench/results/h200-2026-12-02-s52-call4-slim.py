#!/usr/bin/env python3
"""Probe transform (session 52, call 4): dg_diff_stacked N8's pingpong epilogue replaced by a slim one
for every tile (the emitted one removed, so the module's code shrinks): a thread's two rows' pointers
and alignment once (rows of 495 floats: odd rows start 4 bytes past 8), the columns left to the
tile's edge once; per chunk and row one float2 store (aligned rows (2t, 2t + 1); odd rows (2t + 1,
2t + 2), lane 3's second from the next chunk's lane 0), or the one value where the row ends or the
tile does; odd rows' column 0 by lane 0. Usage: slim.py IN.cu OUT.cu"""
import sys
s = open(sys.argv[1]).read().split('\n')
start = next(i for i, l in enumerate(s) if 'const float rotated = __shfl_sync' in l)
turn = next(i for i, l in enumerate(s) if 'for (int turn = 0; turn < turns; ++turn) {' in l)
it = len(s[turn]) - len(s[turn].lstrip())
end = next(i for i in range(start, len(s)) if s[i] == ' ' * it + '}')
ind = ' ' * (it + 2)
L = [ind + 'const int slim_r = block_m_4 + warp_m + group;',
     ind + 'const int slim_odd = slim_r & 1;',
     ind + 'const int slim_first = block_n_4 + in_group * 2 + slim_odd;',
     ind + 'const int slim_left = 495 - slim_first;',  # columns from the pair's first to the row's end
     ind + 'const bool slim_ok0 = slim_r < 101556, slim_ok1 = slim_r + 8 < 101556;',
     ind + 'float* slim_p0 = w + ((long long)slim_r * 495 + slim_first);',
     ind + 'float* slim_p1 = slim_p0 + 8 * 495;',
     ind + 'const int slim_src = (lane & 28) | (in_group + 1 & 3);',
     ind + 'const bool slim_last = slim_odd && in_group == 3;']
def shuffles(c):
    return [ind + f'const float slim_n{c}_0 = __shfl_sync(4294967295u, acc{c}_0, slim_src);',
            ind + f'const float slim_n{c}_2 = __shfl_sync(4294967295u, acc{c}_2, slim_src);']
L += shuffles(0)
for c in range(16):
    if c < 15: L += shuffles(c + 1)  # the next chunk's, which lane 3's odd-row pairs take
    for (p, a, b, ok) in (('slim_p0', 0, 1, 'slim_ok0'), ('slim_p1', 2, 3, 'slim_ok1')):
        nxt = f'(in_group == 3 ? slim_n{c + 1}_{a} : slim_n{c}_{a})' if c < 15 else f'slim_n{c}_{a}'
        x = f'(slim_odd ? acc{c}_{b} : acc{c}_{a})'
        y = f'(slim_odd ? {nxt} : acc{c}_{b})'
        pair = f'{ok} && {8 * c + 1} < slim_left' + (' && !slim_last' if c == 15 else '')
        L.append(ind + f'if ({pair}) __stcs((float2*)({p} + {8 * c}), make_float2({x}, {y}));')
        L.append(ind + f'else if ({ok} && {8 * c} < slim_left) __stcs({p} + {8 * c}, {x});')
L.append(ind + 'if (slim_odd && in_group == 0) { if (slim_ok0) __stcs(slim_p0 - 1, acc0_0); if (slim_ok1) __stcs(slim_p1 - 1, acc0_2); }')
open(sys.argv[2], 'w').write('\n'.join(s[:start] + L + s[end:]))
