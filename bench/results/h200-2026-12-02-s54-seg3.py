#!/usr/bin/env python3
"""Session 54 probe transform: seg.py's form with runs cut at the statements' (and N's) ends instead
of at whole chunks: a chunk across a statement's end belongs to both runs (the first stores its
columns below the end under the columns-left compare, the second its columns from the start on,
under a compare with the start, the start column alone where it begins 4 bytes past 8), so no
chunk stores point by point. Usage: seg2.py IN.cu OUT.cu [nap]"""
import sys
src, dst = sys.argv[1:3]
nap = 'nap' in sys.argv[3:]
K, NP, TOT, BN = 101556, 165, 495, 128
ARR = ['ur', 'us', 'ut']
s = open(src).read().split('\n')
start = next(i for i, l in enumerate(s) if l == '      if (block_n_4 == 0) {')
end = next(i for i in range(start + 1, len(s)) if s[i] == '      }' and not s[i + 1].startswith('      } else'))
I = '      '
L = [I + 'const int e_row = block_m_4 + warp_m + group;',
     I + f'const bool e_in0 = e_row < {K}, e_in1 = e_row + 8 < {K};',
     I + 'const int e_src = (lane & 28) | (in_group + 1 & 3);']
def body(bn, J):
    out = []
    lo_t, hi_t = bn, min(bn + BN, TOT)
    runs = []  # (q, first tile col, end tile col)
    c = lo_t
    while c < hi_t:
        q = c // NP; e = min(hi_t, (q + 1) * NP)
        runs.append((q, c - bn, e - bn)); c = e
    chunks = (hi_t - lo_t + 7) // 8
    rot = set()
    def rotated(j):
        if j in rot or j >= BN // 8: return
        rot.add(j)
        out.append(J + f'const float e_n{j}_0 = __shfl_sync(4294967295u, acc{j}_0, e_src);')
        out.append(J + f'const float e_n{j}_1 = __shfl_sync(4294967295u, acc{j}_2, e_src);')
    declared = set()
    for j in range(chunks):
        if j > 0 and nap: out.append(J + 'rtcg_epilogue_yield();')
        for n, (q, a, b) in enumerate(runs):
            f1, f2 = a // 8, (b - 1) // 8
            if not (f1 <= j <= f2): continue
            lo = a - 8 * f1  # the run's first column in its first chunk
            if n not in declared:
                declared.add(n)
                i0 = bn + 8 * f1 - q * NP  # statement column of chunk f1's column 0
                out.append(J + f'float* s{n}_0 = &{ARR[q]}[e_row * {NP} + in_group * 2] + ({i0});')
                out.append(J + f'const int s{n}_odd = (int)(((unsigned long long)s{n}_0 & 4) != 0);')
                out.append(J + f'const int s{n}_left = {b - 8 * f1} - (in_group * 2 + s{n}_odd);')
                out.append(J + f's{n}_0 += s{n}_odd;')
            cc = 8 * (j - f1)
            rotated(j)
            nxt = j + 1 <= f2
            if nxt: rotated(j + 1)
            for r in (0, 1):
                v0, v1 = f'acc{j}_{2 * r}', f'acc{j}_{2 * r + 1}'
                nb = f'(in_group == 3 ? e_n{j + 1}_{r} : e_n{j}_{r})' if nxt else f'e_n{j}_{r}'
                odd = f's{n}_odd != 0'
                low = f' && in_group * 2 + s{n}_odd >= {lo}' if (j == f1 and lo > 0) else ''
                out.append(J + f'if (e_in{r} && {cc + 1} < s{n}_left{low}) {{')
                out.append(J + f'  __stcs((float2*)((s{n}_0 + {8 * NP * r + cc})), make_float2({odd} ? {v1} : {v0}, {odd} ? {nb} : {v1}));')
                out.append(J + f'}} else if (e_in{r} && {cc} < s{n}_left{low}) {{')
                out.append(J + f'  __stcs((s{n}_0 + {8 * NP * r + cc}), {odd} ? {v1} : {v0});')
                out.append(J + '}')
                if j == f1:
                    # column lo alone where it starts 4 bytes past 8: lane lo / 2's value lo % 2
                    t, e = lo // 2, lo % 2
                    mis = f's{n}_odd == {1 - e}'  # (lo + odd) odd
                    val = v1 if e else v0
                    # its address: the pair pointer s{n} (shifted by odd) minus odd plus e
                    out.append(J + f'if (e_in{r} && in_group == {t} && {mis}) {{')
                    out.append(J + f'  __stcs((s{n}_0 + {8 * NP * r + e}) - s{n}_odd, {val});')
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
