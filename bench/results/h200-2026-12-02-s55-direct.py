#!/usr/bin/env python3
"""Session 55 probe: tf32x3's wgmma accumulate straight into the tile's accumulators (no partial
sums per step, no adds). mode 'wait0': each step still waits for its wgmma; 'inflight': each step
waits for the one before (wait_group 1) and frees its stage then, the tile's turn handed over once
its last step is issued, the last step waited for before the epilogue."""
import sys, re
src, dst, mode = sys.argv[1], sys.argv[2], sys.argv[3]
L = open(src).read().split('\n')
_t = '\n'.join(L)
TURN = re.search(r'\(\(consumer \+ 1\) % 2 \+ \d+\) \* 8 \+ \d+', _t).group(0)
RS, RB, ROFF = re.search(r'\(ring_step_\d+ % (\d+) \+ (\d+)\) \* 8 \+ (\d+)', _t).groups()
start = next(i for i, l in enumerate(L) if 'for (int turn = 0; turn < turns; ++turn) {' in l)
end = next(i for i in range(start, len(L)) if '((consumer + 1) % 2 + ' in L[i] and 'arrive' in L[i])
out = L[:start]
i = start
region = L[start:end + 2]
r = []
for l in region:
    if re.match(r'^\s*acc\d+_\d+ \+= part\d+_\d+;$', l):
        continue
    if 'rtcg_wgmma_' in l:
        l = re.sub(r'\bpart(\d+_\d+)', r'acc\1', l)
        l = l.replace('_kk_zero(', '_kk(')
    r.append(l)
if mode == 'inflight':
    s = '\n'.join(r)
    # the loop's steps: wait for the step before, free its stage
    s = re.sub(r'(\n(\s*))rtcg_wgmma_tf32x3_m64n128k8_kk_wait0\((.*?)\);\n\s*__syncwarp\(\);\n\s*if \(lane == 0\) \{\n\s*rtcg_mbar_arrive\(rtcg_tma_barrier\(rtcg_smem_f32, \((ring_step_\d+) % (\d+) \+ (\d+)\) \* 8 \+ (\d+)\)\);\n\s*\}',
               lambda m: (f"{m.group(1)}rtcg_wgmma_tf32x3_m64n128k8_kk_wait1({m.group(3)});"
                          f"{m.group(1)}__syncwarp();"
                          f"{m.group(1)}if (lane == 0 && {m.group(4)} % 6 != 0) {{"
                          f"{m.group(1)}  rtcg_mbar_arrive(rtcg_tma_barrier(rtcg_smem_f32, (({m.group(4)} - 1) % {m.group(5)} + {m.group(6)}) * 8 + {m.group(7)}));"
                          f"{m.group(1)}}}"), s, flags=re.S)
    r = s.split('\n')
    # the last step: after its wait1 (which freed step 4), hand the turn over, then wait0 and free step 5
    j = max(k for k, l in enumerate(r) if '_kk_wait1(' in l)
    last_ring = re.search(r'const int ring_step_\d+ = (\w+ \* 6 \+ 5);', '\n'.join(r[j - 40:j])).group(1)
    waitargs = re.search(r'_kk_wait1\((.*)\);', r[j]).group(1)
    tail = '\n'.join(r[j:])
    # move the turn hand-over before the final wait
    turn = re.search(r'\n(\s*)__syncwarp\(\);\n\s*if \(lane == 0\) \{\n\s*rtcg_mbar_arrive\(rtcg_tma_barrier\(rtcg_smem_f32, \(\(consumer \+ 1\) % 2 \+ \d+\) \* 8 \+ \d+\)\);\n\s*\}', tail)
    ind = turn.group(1)
    tail = tail[:turn.start()] + tail[turn.end():]
    tail += (f"\n{ind}__syncwarp();\n{ind}if (lane == 0) {{\n{ind}  rtcg_mbar_arrive(rtcg_tma_barrier(rtcg_smem_f32, {TURN}));\n{ind}}}"
             f"\n{ind}rtcg_wgmma_tf32x3_m64n128k8_kk_wait0({waitargs});"
             f"\n{ind}__syncwarp();\n{ind}if (lane == 0) {{\n{ind}  rtcg_mbar_arrive(rtcg_tma_barrier(rtcg_smem_f32, (({last_ring}) % {RS} + {RB}) * 8 + {ROFF}));\n{ind}}}")
    r = r[:j] + tail.split('\n')
out += r + L[end + 2:]
open(dst, 'w').write('\n'.join(out)); print(dst, mode)
