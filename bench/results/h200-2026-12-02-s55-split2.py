#!/usr/bin/env python3
"""Session 55 probe: tf32x3 with two accumulator sets over the whole tile: the big-by-big wgmma
into the tile's accumulators, the small products into the partial sums (zeroed at the tile's
start), each step's wgmma in flight while the next is issued (wait_group 1, the stage before freed
then), the turn handed over once the last step is issued, the partial sums added once a tile."""
import sys, re
src, dst = sys.argv[1], sys.argv[2]
s = open(sys.argv[1]).read()
L = s.split('\n')
_t = '\n'.join(L)
TURN = re.search(r'\(\(consumer \+ 1\) % 2 \+ \d+\) \* 8 \+ \d+', _t).group(0)
RS, RB, ROFF = re.search(r'\(ring_step_\d+ % (\d+) \+ (\d+)\) \* 8 \+ (\d+)', _t).groups()
start = next(i for i, l in enumerate(L) if 'for (int turn = 0; turn < turns; ++turn) {' in l)
end = next(i for i in range(start, len(L)) if '((consumer + 1) % 2 + ' in L[i] and 'arrive' in L[i])
region = L[start:end + 2]
adds = [l for l in region if re.match(r'^\s*acc\d+_\d+ \+= part\d+_\d+;$', l)][:64]
r = []
for l in region:
    if re.match(r'^\s*acc\d+_\d+ \+= part\d+_\d+;$', l):
        continue
    if re.search(r'rtcg_wgmma_tf32x3_m64n128k8_kk(_zero)?\(', l):
        l = l.replace('_kk_zero(', '_kk(')
        if '_small' not in l:
            l = re.sub(r'\bpart(\d+_\d+)', r'acc\1', l)
    r.append(l)
s = '\n'.join(r)
# zero the partial sums where the accumulators are zeroed
s = s.replace('      float acc0_0 = 0.0f;\n', '      float acc0_0 = 0.0f;\n' + ''.join(f'      part{i}_{j} = 0.0f;\n' for i in range(16) for j in range(4)), 1)
# fence both sets
s = re.sub(r'(\n(\s*))(rtcg_wgmma_tf32x3_m64n128k8_kk_fence\((part[^;]*)\);)', lambda m: m.group(1) + m.group(3) + m.group(1) + 'rtcg_wgmma_tf32x3_m64n128k8_kk_fence(' + re.sub(r'\bpart', 'acc', m.group(4)) + ');', s)
toacc = lambda t: re.sub(r'\bpart', 'acc', t)
s = re.sub(r'(\n(\s*))rtcg_wgmma_tf32x3_m64n128k8_kk_wait0\((.*?)\);\n\s*__syncwarp\(\);\n\s*if \(lane == 0\) \{\n\s*rtcg_mbar_arrive\(rtcg_tma_barrier\(rtcg_smem_f32, \((ring_step_\d+) % (\d+) \+ (\d+)\) \* 8 \+ (\d+)\)\);\n\s*\}',
           lambda m: (f"{m.group(1)}rtcg_wgmma_tf32x3_m64n128k8_kk_wait1({m.group(3)});"
                      f"{m.group(1)}rtcg_wgmma_tf32x3_m64n128k8_kk_wait1({toacc(m.group(3))});"
                      f"{m.group(1)}__syncwarp();"
                      f"{m.group(1)}if (lane == 0 && {m.group(4)} % 6 != 0) {{"
                      f"{m.group(1)}  rtcg_mbar_arrive(rtcg_tma_barrier(rtcg_smem_f32, (({m.group(4)} - 1) % {m.group(5)} + {m.group(6)}) * 8 + {m.group(7)}));"
                      f"{m.group(1)}}}"), s, flags=re.S)
r = s.split('\n')
j = max(k for k, l in enumerate(r) if '_kk_wait1(' in l)
last_ring = re.search(r'const int ring_step_\d+ = (\w+ \* 6 \+ 5);', '\n'.join(r[j - 40:j])).group(1)
pargs = re.search(r'_kk_wait1\((.*)\);', r[j - 1]).group(1)
aargs = re.search(r'_kk_wait1\((.*)\);', r[j]).group(1)
tail = '\n'.join(r[j + 1:])
turn = re.search(r'\n(\s*)__syncwarp\(\);\n\s*if \(lane == 0\) \{\n\s*rtcg_mbar_arrive\(rtcg_tma_barrier\(rtcg_smem_f32, \(\(consumer \+ 1\) % 2 \+ \d+\) \* 8 \+ \d+\)\);\n\s*\}', tail)
ind = turn.group(1)
tail = tail[:turn.start()] + tail[turn.end():]
tail += (f"\n{ind}__syncwarp();\n{ind}if (lane == 0) {{\n{ind}  rtcg_mbar_arrive(rtcg_tma_barrier(rtcg_smem_f32, {TURN}));\n{ind}}}"
         f"\n{ind}rtcg_wgmma_tf32x3_m64n128k8_kk_wait0({pargs});"
         f"\n{ind}rtcg_wgmma_tf32x3_m64n128k8_kk_wait0({aargs});"
         f"\n{ind}__syncwarp();\n{ind}if (lane == 0) {{\n{ind}  rtcg_mbar_arrive(rtcg_tma_barrier(rtcg_smem_f32, (({last_ring}) % {RS} + {RB}) * 8 + {ROFF}));\n{ind}}}\n"
         + '\n'.join(ind + a.strip() for a in adds))
r = r[:j + 1] + tail.split('\n')
out = L[:start] + r + L[end + 2:]
open(dst, 'w').write('\n'.join(out)); print(dst, len(adds), 'adds')
