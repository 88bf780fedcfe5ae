#!/usr/bin/env python3
"""Session 55 probe (timing only): clock64 stamps per consumer warpgroup and turn of the pingpong
N8 modules: before the turn wait (0), after it (1), after the last step's issue and the turn's
hand-over (2), after the epilogue (3); thread 0 of each consumer warpgroup writes rtcg_tl."""
import sys
lines = open(sys.argv[1]).read().split('\n')
out = []
def stamp(ind, k):
    return (ind + 'if ((threadIdx.x & 127) == 0 && turn < 32) rtcg_tl[(((int)blockIdx.x * 2 + consumer) * 32 + turn) * 4 + %d] = clock64();' % k)
i = 0; turn_ind = None; state = 0
while i < len(lines):
    l = lines[i]
    if 'extern "C" __global__' in l:
        out.append('__device__ unsigned long long rtcg_tl[132 * 2 * 32 * 4];')
    if turn_ind is None and 'for (int turn = 0; turn < turns; ++turn) {' in l:
        turn_ind = l[:len(l) - len(l.lstrip())]
    if turn_ind is not None and state == 0 and l.strip().startswith('if (turn - (int)(consumer == 0) >= 0)'):
        out.append(stamp(l[:len(l) - len(l.lstrip())], 0)); out.append(l); out.append(lines[i+1]); out.append(lines[i+2])
        out.append(stamp(l[:len(l) - len(l.lstrip())], 1)); i += 3; state = 1; continue
    if state == 1 and '((consumer + 1) % 2 + ' in l and 'arrive' in l:
        out.append(l); out.append(lines[i+1]); out.append(stamp(lines[i+1][:len(lines[i+1]) - len(lines[i+1].lstrip())], 2)); i += 2; state = 2; continue
    if state == 2 and l == turn_ind + '}':
        out.append(stamp(turn_ind + '  ', 3)); state = 3
    out.append(l); i += 1
assert state == 3, state
open(sys.argv[2], 'w').write('\n'.join(out)); print('stamped', sys.argv[2])
