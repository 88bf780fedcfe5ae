#!/usr/bin/env python3
"""Session 54 probe transform: dg_diff N8's per-origin epilogue rewritten in the stacked kernel's form.
Per N origin (a literal) the tile's columns split into runs of whole chunks inside one array
(segments); per segment and row one pointer, its alignment and the columns left once a tile; each
chunk row then one branch-guarded float2 (odd rows shifted by one, lane 3 taking the next chunk's
first value), as the stacked module's; chunks that cross an array's end or the last column store
single values. Usage: seg.py IN.cu OUT.cu [nap] [plain]"""
import sys
src, dst = sys.argv[1:3]
nap = 'nap' in sys.argv[3:]
st = '__stcs' if 'plain' not in sys.argv[3:] else ''
K, NP, TOT, BN = 101556, 165, 495, 128
ARR = ['ur', 'us', 'ut']
def store(p, v):
    return f'{st}({p}, {v});' if st else f'*({p}) = {v};'
def store2(p, a, b):
    return f'{st}((float2*)({p}), make_float2({a}, {b}));' if st else f'*(float2*)({p}) = make_float2({a}, {b});'
s = open(src).read().split('\n')
start = next(i for i, l in enumerate(s) if l == '      if (block_n_4 == 0) {')
end = next(i for i in range(start + 1, len(s)) if s[i] == '      }' and not s[i + 1].startswith('      } else'))
I = '      '
L = [I + 'const int e_row = block_m_4 + warp_m + group;',
     I + f'const bool e_in0 = e_row < {K}, e_in1 = e_row + 8 < {K};',
     I + 'const int e_src = (lane & 28) | (in_group + 1 & 3);']
def body(bn, J):
    out = []
    info = []
    for j in range(BN // 8):
        cols = [bn + 8 * j + t for t in range(8)]
        cs = [(c // NP, c % NP) if c < TOT else None for c in cols]
        clean = all(cs) and all(x[0] == cs[0][0] for x in cs) and cs[7][1] == cs[0][1] + 7
        info.append((cs, clean))
    segs = []  # (first chunk, last chunk, array, inner0)
    for j, (cs, clean) in enumerate(info):
        if not clean: continue
        if segs and segs[-1][1] == j - 1 and segs[-1][2] == cs[0][0]:
            segs[-1][1] = j
        else:
            segs.append([j, j, cs[0][0], cs[0][1]])
    segof = {}
    for n, (j1, j2, a, i0) in enumerate(segs):
        for j in range(j1, j2 + 1): segof[j] = n
        for r in (0, 1):
            out.append(J + f'float* s{n}_{r} = &{ARR[a]}[(e_row + {8 * r}) * {NP} + ({i0} + in_group * 2)];')
        out.append(J + f'const int s{n}_odd = (int)(((unsigned long long)s{n}_0 & 4) != 0);')
        out.append(J + f'const int s{n}_left = {8 * (j2 - j1 + 1)} - (in_group * 2 + s{n}_odd);')
        for r in (0, 1):
            out.append(J + f's{n}_{r} += s{n}_odd;')
    rot = set()
    def rotated(j):
        if j in rot or j >= BN // 8: return
        rot.add(j)
        out.append(J + f'const float e_n{j}_0 = __shfl_sync(4294967295u, acc{j}_0, e_src);')
        out.append(J + f'const float e_n{j}_1 = __shfl_sync(4294967295u, acc{j}_2, e_src);')
    first = True
    for j, (cs, clean) in enumerate(info):
        if not any(cs): continue
        if not first and nap: out.append(J + 'rtcg_epilogue_yield();')
        first = False
        if clean:
            n = segof[j]; j1, j2 = segs[n][0], segs[n][1]
            c = j - j1
            rotated(j)
            nxt = j + 1 <= j2
            if nxt: rotated(j + 1)
            for r in (0, 1):
                v0, v1 = f'acc{j}_{2 * r}', f'acc{j}_{2 * r + 1}'
                nb = f'(in_group == 3 ? e_n{j + 1}_{r} : e_n{j}_{r})' if nxt else f'e_n{j}_{r}'
                odd = f's{n}_odd != 0'
                out.append(J + f'if (e_in{r} && {8 * c + 1} < s{n}_left) {{')
                out.append(J + '  ' + store2(f's{n}_{r} + {8 * c}', f'{odd} ? {v1} : {v0}', f'{odd} ? {nb} : {v1}'))
                out.append(J + f'}} else if (e_in{r} && {8 * c} < s{n}_left) {{')
                out.append(J + '  ' + store(f's{n}_{r} + {8 * c}', f'{odd} ? {v1} : {v0}'))
                out.append(J + '}')
                if j == j1:
                    out.append(J + f'if (e_in{r} && {odd} && in_group == 0) {{')
                    out.append(J + '  ' + store(f's{n}_{r} - 1', v0))
                    out.append(J + '}')
        else:
            # single values: column 8j + 2 in_group + e; the chunk's arrays change at offset b
            arrs = sorted({x[0] for x in cs if x})
            nvalid = sum(1 for x in cs if x)
            for r in (0, 1):
                for e in (0, 1):
                    v = f'acc{j}_{2 * r + e}'
                    t = f'(in_group * 2 + {e})'
                    if len(arrs) == 1:
                        a = arrs[0]; i0 = cs[0][1]
                        p = f'&{ARR[a]}[(e_row + {8 * r}) * {NP} + ({i0} + {t})]'
                    else:
                        b = next(k for k in range(8) if cs[k] and cs[k][0] != cs[0][0])
                        a0, i0, a1 = cs[0][0], cs[0][1], cs[b][0]
                        p = (f'({t} < {b} ? &{ARR[a0]}[(e_row + {8 * r}) * {NP} + ({i0} + {t})] : '
                             f'&{ARR[a1]}[(e_row + {8 * r}) * {NP} + ({t} - {b})])')
                    cond = f'e_in{r}' + (f' && {t} < {nvalid}' if nvalid < 8 else '')
                    out.append(J + f'if ({cond}) {{')
                    out.append(J + '  ' + store(p, v))
                    out.append(J + '}')
    return out
for q in range(4):
    bn = q * BN
    head = (I + f'if (block_n_4 == {bn}) {{') if q == 0 else (I + f'}} else if (block_n_4 == {bn}) {{')
    L.append(head)
    L += body(bn, I + '  ')
L.append(I + '}')
out = s[:start] + L + s[end + 1:]
open(dst, 'w').write('\n'.join(out))
print('epilogue lines', end + 1 - start, '->', len(L))
