#!/usr/bin/env python3
"""Session 54 diagnostic (timing only, results wrong on purpose): every epilogue store becomes a
compare and a branch that is never taken (rtcg_sink), so the code and its addresses stay and the
stores' memory traffic goes."""
import sys
s = open(sys.argv[1]).read()
helper = ('__device__ __forceinline__ void rtcg_sink(float* p, float v) { if (__float_as_uint(v) == 0x7f800001u) *p = v; }\n'
          '__device__ __forceinline__ void rtcg_sink(float2* p, float2 v) { if (__float_as_uint(v.x) == 0x7f800001u) *p = v; }\n')
i = s.index('extern "C" __global__')
n = s.count('__stcs(')
s = s[:i] + helper + s[i:].replace('__stcs(', 'rtcg_sink(')
open(sys.argv[2], 'w').write(s); print('sinks', n)
