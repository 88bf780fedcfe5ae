#!/usr/bin/env python3
"""Probe transform (session 53): the N8 pingpong epilogue emitted once per value of the tile's N origin
(block_n_4 is one of 0/128/256/384 per block: 132 blocks, 4 N tiles), so each chunk's statement, column and
bounds are constants; per tile each used statement's two row pointers and their alignment once; a clean chunk
stores a float2 a row (odd rows: (2t+1, 2t+2) with the next lane's first, lane 3 the next chunk's first where it
continues the run), other chunks a value at a time. Usage: spec.py stacked|dgdiff IN.cu OUT.cu [wu]"""
import sys
kind, src, dst = sys.argv[1:4]
wu = 'wu' in sys.argv[4:]
scal = 'scal' in sys.argv[4:]
br = 'br' in sys.argv[4:]
K = 101556
if kind == 'stacked': arrays, pitch, total = ['w'], 495, 495
else: arrays, pitch, total = ['ur', 'us', 'ut'], 165, 495
def col(x):  # -> (statement, inner column) or None
    if x >= total: return None
    return (x // pitch, x % pitch) if kind != 'stacked' else (0, x)
s = open(src).read().split('\n')
start = next(i for i, l in enumerate(s) if 'const float rotated = __shfl_sync' in l)
turn = next(i for i, l in enumerate(s) if 'for (int turn = 0; turn < turns; ++turn) {' in l)
it = len(s[turn]) - len(s[turn].lstrip())
end = next(i for i in range(start, len(s)) if s[i] == ' ' * it + '}')
I = ' ' * (it + 2)
L = [I + 'const int sp_r = block_m_4 + warp_m + group;',
     I + 'const bool sp_ok0 = sp_r < %d, sp_ok1 = sp_r + 8 < %d;' % (K, K),
     I + 'const int sp_src = (lane & 28) | (in_group + 1 & 3);']
L.append(I + 'switch (block_n_4) {')
for bn in (0, 128, 256, 384):
    J = I + '  '
    L.append(I + f'case {bn}: {{')
    if br: L.append(I + '  int sp_opaque; asm volatile("mov.u32 %0, 0;" : "=r"(sp_opaque));')
    chunks = []
    for c in range(16):
        cols = [col(bn + 8 * c + j) for j in range(8)]
        clean = all(cols) and all(x[0] == cols[0][0] for x in cols) and cols[7][1] == cols[0][1] + 7
        chunks.append((cols, clean))
    used = sorted({x[0] for cols, _ in chunks for x in cols if x})
    for q in used:
        for r in (0, 1):
            L.append(J + f'float* sp_p{q}_{r} = {arrays[q]} + ((long long)(sp_r + {8 * r}) * {pitch} + in_group * 2);')
            L.append(J + f'const int sp_o{q}_{r} = (int)(((unsigned long long)sp_p{q}_{r} & 4) != 0);')
    have = set()
    def shfl(c):
        if c in have: return
        have.add(c)
        L.append(J + f'const float sp_n{c}_0 = __shfl_sync(4294967295u, acc{c}_0, sp_src);')
        L.append(J + f'const float sp_n{c}_1 = __shfl_sync(4294967295u, acc{c}_2, sp_src);')
    for c, (cols, clean) in enumerate(chunks):
        if not any(cols): continue
        if clean and scal:
            q, i0 = cols[0]
            for r in (0, 1):
                a, b = f'acc{c}_{2 * r}', f'acc{c}_{2 * r + 1}'
                odd = f'sp_o{q}_{r}' if i0 % 2 == 0 else f'(sp_o{q}_{r} ^ 1)'
                p = f'sp_p{q}_{r} + {i0}'
                L.append(J + f'if (sp_ok{r}) {{ if ({odd} == 0) __stcs((float2*)({p}), make_float2({a}, {b})); else {{ __stcs({p}, {a}); __stcs({p} + 1, {b}); }} }}')
        elif clean:
            q, i0 = cols[0]
            ncols, nclean = chunks[c + 1] if c + 1 < 16 else (None, False)
            pair_next = nclean and ncols[0][0] == q and ncols[0][1] == i0 + 8
            shfl(c)
            if pair_next: shfl(c + 1)
            pcols, pclean = chunks[c - 1] if c > 0 else (None, False)
            first = not (pclean and pcols[0][0] == q and pcols[7][1] == i0 - 1)
            for r in (0, 1):
                a, b = f'acc{c}_{2 * r}', f'acc{c}_{2 * r + 1}'
                odd = f'sp_o{q}_{r}' if i0 % 2 == 0 else f'(sp_o{q}_{r} ^ 1)'
                nx = f'(in_group == 3 ? sp_n{c + 1}_{r} : sp_n{c}_{r})' if pair_next else f'sp_n{c}_{r}'
                p = f'sp_p{q}_{r} + {i0}'
                if br:
                    run_end = (pitch if kind != 'stacked' else total) if pair_next else i0 + 8
                    L.append(J + f'{{ const int sp_odd = {odd};')
                    L.append(J + f'  if (sp_ok{r} && {i0} + 2 * in_group + sp_odd + 1 < {run_end} + sp_opaque) {{')
                    L.append(J + f'    __stcs((float2*)({p} + sp_odd), make_float2(sp_odd ? {b} : {a}, sp_odd ? {nx} : {b}));')
                    L.append(J + '  } else {')
                    L.append(J + f'    if (sp_ok{r} && sp_odd != 0 && in_group == 3) {{')
                    L.append(J + f'      __stcs({p} + 1, {b});')
                    L.append(J + '    }')
                    L.append(J + '  }')
                    if first:
                        L.append(J + f'  if (sp_ok{r} && sp_odd != 0 && in_group == 0) {{')
                        L.append(J + f'    __stcs({p}, {a});')
                        L.append(J + '  }')
                    L.append(J + '}')
                    continue
                L.append(J + f'{{ const int sp_odd = {odd};')
                cond = 'true' if pair_next else '(sp_odd == 0 || in_group != 3)'
                L.append(J + f'  if (sp_ok{r} && {cond}) __stcs((float2*)({p} + sp_odd), make_float2(sp_odd ? {b} : {a}, sp_odd ? {nx} : {b}));')
                if not pair_next:
                    L.append(J + f'  if (sp_ok{r} && sp_odd != 0 && in_group == 3) __stcs({p} + 1, {b});')
                if first:
                    L.append(J + f'  if (sp_ok{r} && sp_odd != 0 && in_group == 0) __stcs({p}, {a});')
                L.append(J + '}')
        else:
            for j, x in enumerate(cols):
                if not x: continue
                q, i = x
                t, e = j // 2, j % 2
                for r in (0, 1):
                    L.append(J + f'if (sp_ok{r} && in_group == {t}) __stcs(sp_p{q}_{r} + ({i} - {2 * t}), acc{c}_{2 * r + e});')
    L.append(J + 'break;')
    L.append(I + '}')
L.append(I + '}')
out = s[:start] + L + s[end:]
t = '\n'.join(out)
if wu:
    assert 'const int consumer = warp / 4;' in t
    t = t.replace('const int consumer = warp / 4;', 'const int consumer = __shfl_sync(4294967295u, warp / 4, 0);')
open(dst, 'w').write(t)
