#!/usr/bin/env python3
"""Session 55 probe (timing only, results wrong on purpose): the ring's waits dropped (consumers'
`ready`, producer's `empty`), optionally the consumers' tile turn too: what the main loop costs
without its producer."""
import sys, re
s = open(sys.argv[1]).read(); turn = 'noturn' in sys.argv[3:]
n0 = len(s)
s, a = re.subn(r'\n\s*rtcg_mbar_wait\(rtcg_tma_barrier\(rtcg_smem_f32, \(buffer\w* \+ [24]\) \* 8 \+ 229376\), [^;]*\);', '', s)
b = 0
if turn:
    s, b = re.subn(r'\n\s*rtcg_mbar_wait\(rtcg_tma_barrier\(rtcg_smem_f32, \(consumer \+ 6\) \* 8 \+ 229376\), [^;]*\);', '', s)
open(sys.argv[2], 'w').write(s); print(sys.argv[2], 'ring waits', a, 'turn waits', b)
