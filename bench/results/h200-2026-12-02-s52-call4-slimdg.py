#!/usr/bin/env python3
"""Probe transform (session 52, call 4): dg_diff N8's pingpong epilogue replaced by a slim one (the
emitted one removed): per chunk its statement q and column i0 once (warp-uniform); a chunk inside
one statement stores a float2 a row ((row + i0) even: (2t, 2t + 1); odd: (2t + 1, 2t + 2) with
the next lane's first, lane 3's column 7 and lane 0's column 0 alone); a chunk across two
statements stores each value alone. Usage: slimdg.py IN.cu OUT.cu"""
import sys
s = open(sys.argv[1]).read().split('\n')
start = next(i for i, l in enumerate(s) if 'const float rotated = __shfl_sync' in l)
turn = next(i for i, l in enumerate(s) if 'for (int turn = 0; turn < turns; ++turn) {' in l)
it = len(s[turn]) - len(s[turn].lstrip())
end = next(i for i in range(start, len(s)) if s[i] == ' ' * it + '}')
ind = ' ' * (it + 2); i2 = ind + '  '; i3 = i2 + '  '
L = [ind + 'const int slim_r = block_m_4 + warp_m + group;',
     ind + 'const bool slim_ok0 = slim_r < 101556, slim_ok1 = slim_r + 8 < 101556;',
     ind + 'const int slim_src = (lane & 28) | (in_group + 1 & 3);']
for c in range(16):
    L += [ind + '{',
          i2 + f'const float slim_n0 = __shfl_sync(4294967295u, acc{c}_0, slim_src);',
          i2 + f'const float slim_n2 = __shfl_sync(4294967295u, acc{c}_2, slim_src);',
          i2 + f'const int slim_q = (block_n_4 + {8 * c}) / 165;',
          i2 + f'const int slim_i = block_n_4 + {8 * c} - slim_q * 165;',
          i2 + 'if (slim_i + 8 <= 165) {',
          i3 + 'if (slim_q < 3) {',
          i3 + '  float* slim_a = slim_q == 0 ? ur : slim_q == 1 ? us : ut;',
          i3 + '  const int slim_odd = (slim_r + slim_i) & 1;',
          i3 + '  float* slim_p0 = slim_a + ((long long)slim_r * 165 + slim_i + in_group * 2);',
          i3 + '  float* slim_p1 = slim_p0 + 8 * 165;']
    for (p, a, b, ok, n) in (('slim_p0', 0, 1, 'slim_ok0', 'slim_n0'), ('slim_p1', 2, 3, 'slim_ok1', 'slim_n2')):
        L += [i3 + f'  if ({ok} && (!slim_odd || in_group != 3)) __stcs((float2*)({p} + slim_odd), make_float2(slim_odd ? acc{c}_{b} : acc{c}_{a}, slim_odd ? {n} : acc{c}_{b}));',
              i3 + f'  if ({ok} && slim_odd && in_group == 3) __stcs({p} + 1, acc{c}_{b});',
              i3 + f'  if ({ok} && slim_odd && in_group == 0) __stcs({p}, acc{c}_{a});']
    L += [i3 + '}', i2 + '} else {']
    for e in (0, 1):
        L += [i3 + '{',
              i3 + f'  const int slim_c = slim_i + in_group * 2 + {e};',
              i3 + '  const int slim_w = slim_c >= 165;',
              i3 + '  const int slim_qq = slim_q + slim_w, slim_cc = slim_c - slim_w * 165;',
              i3 + '  if (slim_qq < 3) {',
              i3 + '    float* slim_a = slim_qq == 0 ? ur : slim_qq == 1 ? us : ut;',
              i3 + f'    if (slim_ok0) __stcs(slim_a + ((long long)slim_r * 165 + slim_cc), acc{c}_{e});',
              i3 + f'    if (slim_ok1) __stcs(slim_a + ((long long)(slim_r + 8) * 165 + slim_cc), acc{c}_{e + 2});',
              i3 + '  }', i3 + '}']
    L += [i2 + '}', ind + '}']
open(sys.argv[2], 'w').write('\n'.join(s[:start] + L + s[end:]))
