# Hand variants of an emitted k-8 stages-4 hoisted dgemm kernel at n = 2048. flags: g guard-free copies
# (carried pointers, loop split), e 16-byte unguarded epilogue, u unroll by the stages (buffer constant), s streaming stores.
import re, sys
src = open(sys.argv[1]).read(); flags = sys.argv[2]; dst = sys.argv[3]
threads = int(re.search(r"block \((\d+), 1, 1\)", src).group(1))
bn = int(re.search(r"block_n = \(int\)blockIdx.x \* (\d+);", src).group(1))
pitch = int(re.search(r"c\[m \* 2048 \+ n_2\] = rtcg_smem_f64\[row \* (\d+) \+ col\]", src).group(1))
head, rest = src.split("  #pragma unroll 1\n  for (int step = 0; step < 256; ++step) {\n", 1)
body, tail = rest.split("    buffer = following;\n  }\n", 1)
body += "    buffer = following;\n"
copy_re = re.compile(r"    const int (copy_bytes_\d+) = step \+ 4 < 256 \? (\w+) : 0;\n    rtcg_cp_async16\(&rtcg_smem_f64\[([^\]]+)\], (\w+) \+ \(step \+ 4 < 256 \? step \+ 4 : 255\) \* (\d+), \1\);\n")
copies = copy_re.findall(body)
def guardfree(b, with_copies):
    def rep(m):
        if not with_copies: return ""
        _, _, d, s, k = m.groups()
        return f"    rtcg_cp_async16_full(&rtcg_smem_f64[{d}], p_{s});\n    p_{s} += {k};\n"
    return copy_re.sub(rep, b)
helper = '''__device__ __forceinline__ void rtcg_cp_async16_full(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\\n" :: "r"((unsigned int)__cvta_generic_to_shared(dst)), "l"(src) : "memory");
}
'''
head = head.replace("// Kernel dgemm, loop nest 0", helper + "// Kernel dgemm, loop nest 0")
out = src
if "g" in flags:
    pre = "".join(f"  const double* p_{s} = {s} + 4 * {k};\n" for _, _, _, s, k in copies)
    main = guardfree(body, True)
    unroll = "1"
    if "u" in flags:
        unroll = "4"
        main = main.replace("    const int following = buffer < 3 ? buffer + 1 : 0;\n",
                            "    const int buffer = step & 3;\n    const int following = (step + 1) & 3;\n").replace("    buffer = following;\n", "")
        pre += "  int buffer = 252 & 3;\n"
        head = head.replace("  int buffer = 0;\n", "")
    loops = pre + f"  #pragma unroll {unroll}\n  for (int step = 0; step < 252; ++step) {{\n" + main + "  }\n"
    loops += "  #pragma unroll 1\n  for (int step = 252; step < 256; ++step) {\n" + guardfree(body, False) + "  }\n"
    t = tail
    if "e" in flags:
        ep_re = re.compile(r"  #pragma unroll 1\n  for \(int out = 0; out < 64; \+\+out\) \{.*?\n  \}\n", re.S)
        store = ("__stcs((double2*)&c[(block_m + row) * 2048 + block_n + col], v);" if "s" in flags
                 else "*(double2*)&c[(block_m + row) * 2048 + block_n + col] = v;")
        new = (f"  #pragma unroll 4\n  for (int out = 0; out < 32; ++out) {{\n"
               f"    const int e = tid * 2 + out * {2 * threads};\n    const int row = e / {bn};\n    const int col = e % {bn};\n"
               f"    const double2 v = *(const double2*)&rtcg_smem_f64[row * {pitch} + col];\n"
               f"    {store}\n  }}\n")
        t, nsub = ep_re.subn(new, t); assert nsub == 1
    out = head + loops + t
open(dst, "w").write(out)
