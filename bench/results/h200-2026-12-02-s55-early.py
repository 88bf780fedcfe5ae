#!/usr/bin/env python3
"""Session 55 probe: in the consumers' steps, 'release': each stage freed (empty) right after its
wgmma are waited for, before the partial sums are added; 'turn': the tile's turn handed to the next
consumer once its last step's wgmma are issued, before they are waited for."""
import sys, re
src, dst, modes = sys.argv[1], sys.argv[2], sys.argv[3].split(',')
s = open(src).read()
n1 = n2 = 0
if 'release' in modes:
    pat = re.compile(r'(\n(\s*)rtcg_wgmma_tf32x3_m64n128k8_kk_wait0\([^;]*\);)((?:\n\s*acc\d+_\d+ \+= part\d+_\d+;)+)(\n\s*__syncwarp\(\);\n\s*if \(lane == 0\) \{\n\s*rtcg_mbar_arrive\(rtcg_tma_barrier\(rtcg_smem_f32, \(ring_step_\d+ % 2 \+ 2\) \* 8 \+ 229376\)\);\n\s*\})')
    s, n1 = pat.subn(lambda m: m.group(1) + m.group(4) + m.group(3), s)
if 'turn' in modes:
    # the last step's block: ... commit(); wait0 ...; then the turn's arrive after the block: move it before the last wait0
    turn = re.compile(r'\n(\s*)__syncwarp\(\);\n\s*if \(lane == 0\) \{\n\s*rtcg_mbar_arrive\(rtcg_tma_barrier\(rtcg_smem_f32, \(\(consumer \+ 1\) % 2 \+ 6\) \* 8 \+ 229376\)\);\n\s*\}')
    m = turn.search(s); ind = m.group(1)
    block = s[m.start():m.end()]
    s = s[:m.start()] + s[m.end():]
    k = s.rfind('rtcg_wgmma_commit();', 0, m.start())
    k = s.index('\n', k)
    s = s[:k] + block.replace('\n' + ind, '\n' + ind + '  ') + s[k:]
    n2 = 1
open(dst, 'w').write(s); print(dst, 'release', n1, 'turn', n2)
