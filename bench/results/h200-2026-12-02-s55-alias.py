#!/usr/bin/env python3
"""Session 55 proxy (timing only, results wrong on purpose): D's small kept tile aliased onto its big
one (the same instructions and shared-memory reads, 96 KB less), the mbarriers moved down after it:
what a module of more stages would run at if its kept tiles fit."""
import sys, re
src, dst = sys.argv[1], sys.argv[2]
s = open(src).read()
big = int(re.search(r'desc_b = rtcg_wgmma_desc_sw128\(&rtcg_smem_f32\[(\d+)\]', s).group(1))
small = int(re.search(r'desc_b_small = rtcg_wgmma_desc_sw128\(&rtcg_smem_f32\[(\d+)\]', s).group(1))
bar = int(re.search(r'rtcg_mbar_init\(rtcg_tma_barrier\(rtcg_smem_f32, (\d+)\)', s).group(1))
# the kept tiles end where the mbarriers start (aligned to 1024): D's small tile is the last before them
end = min(int(x) for x in re.findall(r'rtcg_tma_barrier\(rtcg_smem_f32, \(?\w* ?\+? ?\d*\)? ?\*? ?\d* ?\+? ?(\d{6})\)', s))
shift = end - small * 4
s, n = re.subn(r'\b%d\b' % small, str(big), s)
s, m = re.subn(r'\b(\d{6})\b', lambda k: str(int(k.group(1)) - shift) if bar - 64 <= int(k.group(1)) < bar + 256 else k.group(1), s)
open(dst, 'w').write(s); print(dst, 'small refs', n, 'barrier literals', m, 'shift', shift, 'bytes now about', bar - shift + 128)
