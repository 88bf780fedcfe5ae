#!/usr/bin/env python3
"""Probe transform (session 52, call 1): the pingpong N8 module with its consumers' tiles run at once.

Ring step i (the producer's order) is consumer i % 2's step (i / 2) % 6 of its tile (i / 2) / 6:
round = 2 * ((i / 2) / 6) + i % 2. With 2 stages, stage i % 2 is consumer (i % 2)'s alone and its
phases go in that consumer's order, so no tile turn is needed: both consumers' wgmma share the
tensor pipe, each waiting only for its own stage. Usage: concurrent.py IN.cu OUT.cu"""
import re, sys
src = open(sys.argv[1]).read().split('\n')
out = []
i = 0
def sub_loads(line):
    # initial loads: seq 1 is round 1's step 0, seq 2 round 0's step 1.
    m = re.match(r'\s*float ahead_(\d+) = ', line)
    if not m: return line
    n = int(m.group(1))
    if 17 <= n <= 32:
        line = re.sub(r'\bblock_m\b', 'block_m_r1', line).replace('lane + 32', 'lane')
    elif 33 <= n <= 48:
        line = line.replace('lane + 64', 'lane + 32')
    return line
while i < len(src):
    l = src[i]
    s = l.strip()
    if s.startswith('float ahead = '):
        out.append(l[:len(l)-len(l.lstrip())] + 'const int block_m_r1 = rounds > 1 ? ((int)blockIdx.x + 132) / 4 * 64 : (1 << 30);')
        out.append(l); i += 1; continue
    if s.startswith('float ahead_'):
        out.append(sub_loads(l)); i += 1; continue
    if s == 'for (int round = 0; round < rounds; ++round) {':
        out.append(l.replace(s, 'for (int seq_t = 0; seq_t < (rounds + 1) / 2 * 4; ++seq_t) {'))
        i += 1
        while src[i].strip().startswith(('const int tile = ', 'const int block_m_2', 'const int block_n_2', 'const int block_m_3', 'const int block_n_3')):
            i += 1
        continue
    if s == 'for (int step_triple = 0; step_triple < 2; ++step_triple) {':
        out.append(l.replace(s, '{')); i += 1; continue
    m = re.match(r'(\s*)const int step(_\d+)? = step_triple \* 3( \+ (\d))?;', l)
    if m:
        ind, suf, k = m.group(1), m.group(2) or '', m.group(4) or '0'
        out.append(f'{ind}const int seq{suf} = seq_t * 3 + {k};')
        out.append(f'{ind}const int step{suf} = seq{suf} / 2 % 6;')
        out.append(f'{ind}const int round{suf}p = seq{suf} / 2 / 6 * 2 + seq{suf} % 2;')
        i += 1; continue
    m = re.match(r'(\s*)const int ring_step(_\d+)? = round \* 6 \+ step(_\d+)?;', l)
    if m:
        ind, suf = m.group(1), m.group(2) or ''
        out.append(f'{ind}const int ring_step{suf} = seq{suf};'); i += 1
        out.append(src[i]); i += 1  # buffer
        out.append(f'{ind}if (round{suf}p < rounds) {{')
        continue
    m = re.match(r'(\s*)rtcg_mbar_arrive\(rtcg_tma_barrier\(rtcg_smem_f32, \(buffer(_\d+)? \+ 4\) \* 8 \+ 229376\)\);', l)
    if m and 'lane' not in src[i-1]:
        out.append(l); out.append(m.group(1) + '}'); i += 1; continue
    if re.match(r'(\s*)const bool past_tile(_\d+)? = ', l):
        i += 1; continue
    m = re.match(r'(\s*)const int next_step(_\d+)? = past_tile', l)
    if m:
        ind, suf = m.group(1), m.group(2) or ''
        out.append(f'{ind}const int next_step{suf} = (seq{suf} + 3) / 2 % 6;')
        out.append(f'{ind}const int next_round{suf} = (seq{suf} + 3) / 2 / 6 * 2 + (seq{suf} + 3) % 2;')
        i += 1; continue
    m = re.match(r'(\s*)const int next_m(_\d+)? = past_tile', l)
    if m:
        ind, suf = m.group(1), m.group(2) or ''
        out.append(f'{ind}const int next_m{suf} = next_round{suf} < rounds ? ((int)blockIdx.x + next_round{suf} * 132) / 4 * 64 : (1 << 30);')
        i += 1; continue
    m = re.match(r'(\s*)const int (ring_step_\d+) = round_2 \* 6 \+ (\w+);', l)
    if m:
        out.append(f'{m.group(1)}const int {m.group(2)} = (turn * 6 + {m.group(3)}) * 2 + consumer;'); i += 1; continue
    if s.startswith('if (turn - (int)(consumer == 0) >= 0) {'):
        i += 3; continue
    if s.startswith('rtcg_mbar_arrive(rtcg_tma_barrier(rtcg_smem_f32, ((consumer + 1) % 2 + 6)'):
        out.pop(); i += 2; continue  # drop 'if (lane == 0) {', this line and '}'
    out.append(l); i += 1
open(sys.argv[2], 'w').write('\n'.join(out))
