#!/usr/bin/env python3
"""Probe transform (session 53): dg_diff_stacked N8's pingpong epilogue with 16-byte stores. Per block N origin
(spec.py's switch) and row, h = columns before the row's first 16-byte boundary; lane w of a quad stores the
windows [h + 4k, h + 4k + 4), k = 4j + w, as one float4, each value fetched by two shuffles (a source lane
serves two windows of different chunks, so one round each); the h head columns and the tail past the last
whole window stored by their owners alone. Usage: vec.py IN.cu OUT.cu"""
import sys
src, dst = sys.argv[1:3]
bound = 'bound' in sys.argv[3:]
K, pitch, total = 101556, 495, 495
s = open(src).read().split('\n')
start = next(i for i, l in enumerate(s) if 'const float rotated = __shfl_sync' in l)
turn = next(i for i, l in enumerate(s) if 'for (int turn = 0; turn < turns; ++turn) {' in l)
it = len(s[turn]) - len(s[turn].lstrip())
end = next(i for i in range(start, len(s)) if s[i] == ' ' * it + '}')
I = ' ' * (it + 2)
L = [I + 'const int v_r = block_m_4 + warp_m + group;',
     I + 'const int v_lq = lane & 28;']
def E(c, r, el):  # value of chunk c, row r, element el (runtime el: an expression)
    if c >= 16: return '0.0f'
    return f'({el} ? acc{c}_{2 * r + 1} : acc{c}_{2 * r})'
L.append(I + 'switch (block_n_4) {')
for bn in (0, 128, 256, 384):
    ncols = min(128, total - bn)
    J = I + '  '
    L.append(I + f'case {bn}: {{')
    L.append(J + f'float* v_p0 = w + ((long long)v_r * {pitch} + {bn});')
    L.append(J + f'float* v_p1 = v_p0 + {8 * pitch};  // 8 rows on: 16-byte alignment unchanged (8 * pitch * 4 % 16 == 0)')
    L.append(J + 'const int v_h = (4 - (int)(((unsigned long long)v_p0 >> 2) & 3)) & 3;')
    for e in range(4):
        L.append(J + f'const int v_y{e} = v_h + {e}, v_l0{e} = v_y{e} >> 1, v_l1{e} = ((v_y{e} + 4) & 7) >> 1;')
        L.append(J + f'const bool v_c{e} = (v_y{e} + 4) >> 3, v_el{e} = v_y{e} & 1;')
        L.append(J + f'const int v_s{e} = v_lq | ((in_group & 1) ? v_l1{e} : v_l0{e});')
        L.append(J + f'const bool v_is0{e} = in_group == v_l0{e};')
    L.append(J + f'const int v_tail = v_h + (({ncols} - v_h) >> 2) * 4;')
    for r in (0, 1):
        R = J + '  '
        L.append(J + f'if (v_r + {8 * r} < {K}) {{')
        L.append(R + f'float* v_p = v_p{r};')
        for j in range(8):
            vals = []
            for e in range(4):
                x0, x1, x2 = E(2 * j, r, f'v_el{e}'), E(2 * j + 1, r, f'v_el{e}'), E(2 * j + 2, r, f'v_el{e}')
                if not bound: L.append(R + f'const float v_a{j}_{e} = __shfl_sync(4294967295u, v_is0{e} ? {x0} : (v_c{e} ? {x1} : {x0}), v_s{e});')
                if not bound: L.append(R + f'const float v_b{j}_{e} = __shfl_sync(4294967295u, v_is0{e} ? {x1} : (v_c{e} ? {x2} : {x1}), v_s{e});')
                vals.append(f'(in_group < 2 ? v_a{j}_{e} : v_b{j}_{e})' if not bound else f'acc{2 * j + e // 2}_{2 * r + e % 2}')
            # window k = 4j + in_group: columns v_h + 4k .. + 3
            kk = f'({4 * j} + in_group)'
            cond = '' if 4 * (4 * j + 3) + 6 < ncols else f'if (v_h + 4 * {kk} + 3 < {ncols}) '
            L.append(R + f'{cond}__stcs((float4*)(v_p + v_h + 4 * {kk}), make_float4({", ".join(vals)}));')
        # head (columns < h) and tail (past the last whole window, < ncols) by their owners
        tail_chunks = sorted({0} | {c for c in range(16) if 8 * c + 7 >= ncols - 3 and 8 * c < ncols})
        for c in tail_chunks:
            for el in (0, 1):
                colx = f'({8 * c + el} + 2 * in_group)'
                L.append(R + f'if ({colx} < v_h || ({colx} >= v_tail && {colx} < {ncols})) __stcs(v_p + {colx}, acc{c}_{2 * r + el});')
        L.append(J + '}')
    L.append(J + 'break;')
    L.append(I + '}')
L.append(I + '}')
open(dst, 'w').write('\n'.join(s[:start] + L + s[end:]))
