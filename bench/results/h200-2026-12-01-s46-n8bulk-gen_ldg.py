# Hand prototype (n128, D kept): the producer warpgroup's four warps load u's K slice row by row
# (32 lanes, 128 contiguous bytes a row, by plain loads into registers instead of 4-byte cp.async),
# and write the big and small parts into the swizzled stage themselves (no separate split).
import sys
src, dst, S, K, NP, NTILES, GRID, BN = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
ROWS = int(sys.argv[9]) if len(sys.argv) > 9 else 16   # rows a warp loads before it stores
L = open(src).read().split('\n')
BK = 6 * BN * 32
A_SMALL = S * 2048 + BK
BB = (2 * S * 2048 + 2 * BK) * 4
start = next(i for i, l in enumerate(L) if l == '    for (int round = 0; round < rounds; ++round) {') - 1
assert L[start] == '    #pragma unroll 1'
end = next(i for i in range(start, len(L)) if L[i] == '    return;')
bar = lambda e: f'rtcg_tma_barrier(rtcg_smem_f32, {e})'
new = f'''
    #pragma unroll 1
    for (int round = 0; round < rounds; ++round) {{
      const int block_m = ((int)blockIdx.x + round * {GRID}) / {NTILES} * 64;
      #pragma unroll 1
      for (int step = 0; step < 6; ++step) {{
        const int ring_step = round * 6 + step;
        const int buffer = ring_step % {S};
        const int col = step * 32 + lane;
        if (ring_step >= {S}) rtcg_mbar_wait({bar(f'({S} + buffer) * 8 + {BB}')}, (ring_step / {S} + 1) % 2);
        #pragma unroll 1
        for (int half = 0; half < 16 / {ROWS}; ++half) {{
          const int row0 = producer_tid / 32 * 16 + half * {ROWS};
          float x[{ROWS}];
          #pragma unroll
          for (int r = 0; r < {ROWS}; ++r) {{
            const bool ok = block_m + row0 + r < {K} && col < {NP};
            x[r] = ok ? __ldg(&u[(block_m + row0 + r) * {NP} + col]) : 0.0f;
          }}
          #pragma unroll
          for (int r = 0; r < {ROWS}; ++r) {{
            const int row = row0 + r;
            const int at = buffer * 2048 + row * 32 + ((lane / 4) ^ (row % 8)) * 4 + lane % 4;
            rtcg_smem_f32[at] = x[r];
            rtcg_smem_f32[at + {A_SMALL}] = rtcg_tf32_rna(x[r] - __uint_as_float(__float_as_uint(x[r]) & 0xffffe000u));
          }}
        }}
        rtcg_fence_proxy_async();
        rtcg_mbar_arrive({bar(f'({2 * S} + buffer) * 8 + {BB}')});
      }}
    }}'''.split('\n')[1:]
L = L[:start] + new + L[end:]
# `ready` now counts the producer's 128 threads.
for s in range(S):
    t = f'    rtcg_mbar_init({bar(BB + 8 * (2 * S + s))}, 96);'
    i = L.index(t); L[i] = t.replace(', 96);', ', 128);')
open(dst, 'w').write('\n'.join(L))
