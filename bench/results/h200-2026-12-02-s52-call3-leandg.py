#!/usr/bin/env python3
"""Probe transform (session 52, call 3): dg_diff N8's pingpong epilogue, each chunk inside one
statement with a lean path where the tile's rows are all inside (block_m + 64 <= K): the chunk's
pointer once a row, the row's alignment ((row + chunk_i) odd: 4 bytes past 8), one float2 store a
row (aligned (2t, 2t + 1); odd (2t + 1, 2t + 2), lane 3's column 7 and lane 0's column 0 alone).
Other chunks and tiles keep the emitted code. Usage: leandg.py IN.cu OUT.cu"""
import re, sys
s = open(sys.argv[1]).read().split('\n')
out = []; i = 0; rot = []; chunk = None
while i < len(s):
    l = s[i]
    m = re.match(r'\s*const float (rotated(_\d+)?) = __shfl_sync\(4294967295u, acc(\d+)_(\d), ', l)
    if m: rot.append(m.group(1))
    m = re.match(r'\s*const int chunk_q(_\d+)? = \(?block_n_4( \+ (\d+))?\)? / 165;', l)
    if m: chunk = int(m.group(3) or 0) // 8
    m = re.match(r'(\s*)if \((chunk_i(_\d+)?) \+ 8 < 165\) \{', l)
    if m:
        ind = m.group(1); ci = m.group(2); c = chunk
        j = next(k for k in range(i + 1, len(s)) if s[k] == ind + '} else {')
        body = s[i + 1:j]
        arr = re.match(r'\s*float\* (chunk_array(_\d+)?) = ', body[0]).group(1)
        r0, r2 = rot[-2], rot[-1]
        i2 = ind + '    '
        lean = [ind + '  ' + body[0].strip(), ind + '  if (block_m_4 + 64 <= 101556) {',
                i2 + 'const int lean_r = block_m_4 + warp_m + group;',
                i2 + f'const int lean_odd = (lean_r + {ci}) & 1;',
                i2 + f'float* lean_p0 = &{arr}[lean_r * 165 + {ci} + in_group * 2];',
                i2 + 'float* lean_p1 = lean_p0 + 8 * 165;']
        for p, a, b, r in (('lean_p0', 0, 1, r0), ('lean_p1', 2, 3, r2)):
            lean += [i2 + f'if (!lean_odd || in_group != 3) __stcs((float2*)({p} + lean_odd), make_float2(lean_odd ? acc{c}_{b} : acc{c}_{a}, lean_odd ? {r} : acc{c}_{b}));',
                     i2 + f'if (lean_odd && in_group == 3) __stcs({p} + 1, acc{c}_{b});',
                     i2 + f'if (lean_odd && in_group == 0) __stcs({p}, acc{c}_{a});']
        lean += [ind + '  } else {'] + ['  ' + b for b in body[1:]] + [ind + '  }']
        out.append(l); out += lean; i = j; chunk = None; continue
    out.append(l); i += 1
open(sys.argv[2], 'w').write('\n'.join(out))
