import re
def sub(src, dst, fn):
    s = open(src).read(); t = fn(s); assert t != s, dst; open(dst, 'w').write(t)
# Timing-only diagnostics (wrong results on purpose):
def nosplit(s):   # the splitters skip reading the staging buffer and writing the tiles (sync kept)
    a = s.index('          float v[6][4];'); b = s.index('          rtcg_fence_proxy_async();\n          rtcg_mbar_arrive', a)
    return s[:a] + s[b:]
def nowgmma(s):   # the consumers issue no wgmma (waits, releases, epilogue kept)
    return '\n'.join(l for l in s.split('\n') if not re.match(r'\s+rtcg_wgmma_tf32x3_m64n\d+k8_kk(_zero)?\(desc', l))
def noepi(s):     # the epilogue's guards never true (no output stores)
    return re.sub(r'if \((m(_\d+)?) < 101556 &&', r'if (\1 < -1 &&', s)
def nocopy(s):    # threads-copied ring: no cp.async of A (arrivals kept)
    return '\n'.join(l for l in s.split('\n') if not l.strip().startswith('rtcg_cp_async4(&rtcg_smem_f32[buffer * 2048'))
def nosplit_win(s):  # threads-copied ring: no split of A's stages
    return '\n'.join(l for l in s.split('\n') if not (re.search(r'rtcg_ld4\(&rtcg_smem_f32\[split_buffer(_2)? \* 2048', l) or re.search(r'rtcg_tf32_small4_put\(quad_\d+, &rtcg_smem_f32\[split_buffer', l)))
sub('db2_st2.cu', 'x_db2_nosplit.cu', nosplit)
sub('db2_st2.cu', 'x_db2_nowgmma.cu', nowgmma)
sub('db2_st2.cu', 'x_db2_noepi.cu', noepi)
sub('d_win.cu', 'x_win_nocopy.cu', nocopy)
sub('x_win_nocopy.cu', 'x_win_nocopy_nosplit.cu', nosplit_win)
sub('d_win.cu', 'x_win_noepi.cu', noepi)
sub('x_db2_nosplit.cu', 'x_db2_sync.cu', nowgmma)
