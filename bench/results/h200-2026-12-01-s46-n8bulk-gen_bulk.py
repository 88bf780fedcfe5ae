# Hand prototype: turns an emitted `m64n64 ... persistent pingpong resident a` module whose A (u) the
# producer's threads copy by cp.async into one where thread 0 copies each block tile's contiguous span
# of u by one 1-D bulk copy into a double-buffered staging buffer and warps 1-3 split the stage's K
# slice from it into the swizzled big and small tiles.
import re, sys
src, dst, S, K, NP, NTILES, GRID = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
L = open(src).read().split('\n')
A_STEP = 2048                      # floats of one stage's A tile (64 x 32)
A_SMALL = S * 2048 + 12288         # floats: A ring, B kept (6 steps x 2048)
BB = (S * 4096 + 24576) * 4        # bytes: the mbarriers
STG = (BB + 8 * (3 * S + 4) + 127) // 128 * 128   # bytes: the staging buffers
SPAN = 64 * NP                     # floats of a full tile's span
SBAR = STG + 2 * SPAN * 4          # bytes: staging full[2], empty[2]
TOTAL = SBAR + 32
start = next(i for i, l in enumerate(L) if l == '    for (int round = 0; round < rounds; ++round) {') - 1
assert L[start] == '    #pragma unroll 1'
end = next(i for i in range(start, len(L)) if L[i] == '    return;')
bar = lambda e: f'rtcg_tma_barrier(rtcg_smem_f32, {e})'
new = f'''
    // staging[2] at byte {STG}: thread 0 copies each tile's span of u by one bulk copy
    if (producer_tid == 0) {{
      #pragma unroll 1
      for (int round = 0; round < rounds; ++round) {{
        const int block_m = ((int)blockIdx.x + round * {GRID}) / {NTILES} * 64;
        const int sb = round % 2;
        if (round >= 2) rtcg_mbar_wait({bar(f'{SBAR + 16} + sb * 8')}, (round / 2 + 1) % 2);
        const int rows = min(64, {K} - block_m);
        const unsigned int bytes = (unsigned int)(rows * {NP} * 4) & ~15u;
        rtcg_mbar_expect_tx({bar(f'{SBAR} + sb * 8')}, bytes);
        rtcg_bulk_copy(&rtcg_smem_f32[{STG // 4} + sb * {SPAN}], &u[block_m * {NP}], bytes, {bar(f'{SBAR} + sb * 8')});
      }}
    }} else if (producer_tid >= 32) {{
      const int stid = producer_tid - 32;
      #pragma unroll 1
      for (int round = 0; round < rounds; ++round) {{
        const int block_m = ((int)blockIdx.x + round * {GRID}) / {NTILES} * 64;
        const int sb = round % 2;
        const int rows = min(64, {K} - block_m);
        const int bulk = ((rows * {NP} * 4) & ~15) / 4;
        const float* stg = &rtcg_smem_f32[{STG // 4} + sb * {SPAN}];
        const float* tail = &u[block_m * {NP}];
        rtcg_mbar_wait({bar(f'{SBAR} + sb * 8')}, round / 2 % 2);
        #pragma unroll 1
        for (int step = 0; step < 6; ++step) {{
          const int ring_step = round * 6 + step;
          const int buffer = ring_step % {S};
          if (ring_step >= {S}) rtcg_mbar_wait({bar(f'({S} + buffer) * 8 + {BB}')}, (ring_step / {S} + 1) % 2);
          float v[6][4];
          #pragma unroll
          for (int j = 0; j < 6; ++j) {{
            const int q = stid + 96 * j;
            const int row = q / 8, col = step * 32 + q % 8 * 4;
            #pragma unroll
            for (int i = 0; i < 4; ++i) {{
              const int f = row * {NP} + col + i;
              v[j][i] = q < 512 && row < rows && col + i < {NP} ? (f < bulk ? stg[f] : tail[f]) : 0.0f;
            }}
          }}
          #pragma unroll
          for (int j = 0; j < 6; ++j) {{
            const int q = stid + 96 * j;
            if (q < 512) {{
              const int row = q / 8;
              const int at = buffer * {A_STEP} + row * 32 + ((q % 8) ^ (row % 8)) * 4;
              const float4 x = make_float4(v[j][0], v[j][1], v[j][2], v[j][3]);
              *reinterpret_cast<float4*>(&rtcg_smem_f32[at]) = x;
              rtcg_tf32_small4_put(x, &rtcg_smem_f32[at + {A_SMALL}]);
            }}
          }}
          rtcg_fence_proxy_async();
          rtcg_mbar_arrive({bar(f'({2 * S} + buffer) * 8 + {BB}')});
        }}
        rtcg_mbar_arrive({bar(f'{SBAR + 16} + sb * 8')});
      }}
    }}'''.split('\n')[1:]
L = L[:start] + new + L[end:]
i = next(i for i, l in enumerate(L) if l == '    rtcg_mbar_init_fence();')
L[i:i] = [f'    rtcg_mbar_init({bar(SBAR)}, 1);', f'    rtcg_mbar_init({bar(SBAR + 8)}, 1);',
          f'    rtcg_mbar_init({bar(SBAR + 16)}, 96);', f'    rtcg_mbar_init({bar(SBAR + 24)}, 96);']
helper = '''__device__ __forceinline__ void rtcg_bulk_copy(void* dst, const void* src, unsigned int bytes, void* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\\n"
               ::"r"((unsigned int)__cvta_generic_to_shared(dst)), "l"(src), "r"(bytes),
               "r"((unsigned int)__cvta_generic_to_shared(bar)) : "memory");
}'''
i = next(i for i, l in enumerate(L) if l.startswith('extern "C" __global__'))
L[i:i] = helper.split('\n')
open(dst, 'w').write('\n'.join(L))
print(TOTAL)
