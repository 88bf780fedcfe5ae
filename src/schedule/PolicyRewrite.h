// The precision policies that rewrite contractions before they are scheduled: `fp64x` (each f64
// contraction) and `fp32x` (each f32 contraction) compute C = A B by the Ozaki scheme II on INT8
// tensor cores (Uchino, Ozaki and Imamura, arXiv 2504.08009), as loop nests over kernel-local
// arrays that the planner schedules, fuses and tunes like any others:
//
//   1. scale    per row of A (column of B): its 2-norm -> a power of two 2^e with
//               ||x 2^e||_2 < 2^alpha, and whether the row holds a value that is not finite;
//   2. residues a' = round(x 2^e), an integer below 2^alpha, as its balanced residue
//               modulo each of N pairwise coprime moduli p_l <= 256: a8[l, row, k], an i8 array
//               contiguous along k (the s8 tensor cores' operand layout);
//   3. products c8[l, i, j] = (sum_k a8[l, i, k] b8[l, j, k]) mod p_l: one i32 contraction of i8
//               operands batched over l (`mma: s8 ...`), exact while K 2^14 < 2^31 (longer sums
//               in blocks of 130944 values, batched too, and the rest), its balanced residue
//               stored as i8;
//   4. reconstruction: the exact C' = A' B' from its residues (Garner's mixed-radix digits in
//               i32, Horner's rule in f64: all terms of one sign after the first exact steps, so
//               C' comes out to a few ulps), times 2^-(e_i + f_j); an output whose row of A or
//               column of B holds an infinity or a NaN is the plain sum over that row instead (a
//               data-dependent range of K or 0 values), so IEEE's non-finite results stay.
//
// The reconstruction runs in the contraction's own nest, as lets ahead of its statements, which
// use the reconstructed sum where they had the sum. |C'| <= ||a'||_2 ||b'||_2 < 2^(2 alpha)
// (Cauchy-Schwarz), so the moduli are the fewest whose product P exceeds 2^(2 alpha + 1) (with the
// slack of the norm's rounding) for alpha = p + 1 (p = 53 for fp64x: 14 moduli; 24 for fp32x: 7),
// whatever K: the accuracy the policies promise, within 2x of a plain sum's error, as
// ozakiTargetBits derives. The error is the rounding of each entry to a multiple of
// 2^(1 - alpha) of its row's 2-norm (docs/language.md 6.2 states the bound and its limits).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "schedule/Schedule.h"
#include "support/Diagnostics.h"

namespace rtcg {

// The pairwise coprime moduli, in the order the scheme uses them (256 first).
const std::vector<int>& ozakiModuli();

// How a contraction over K values is computed under a rewriting policy: the number of moduli and
// the bits alpha of each scaled row's (column's) 2-norm; nullopt with `why` when no number of
// moduli suffices or K passes 2^30 (the residues are indexed in i32).
struct OzakiSplit {
  int moduli = 0;
  int alpha = 0;
};
std::optional<OzakiSplit> ozakiSplit(Precision p, int64_t K, std::string* why = nullptr);
// The bits alpha the split keeps at least: p + 1 (54 for fp64x, 25 for fp32x), for any K: the
// policy's error then stays within 2x of a plain sum's of its type (the derivation is at the
// definition).
int ozakiTargetBits(Precision p);

struct Contraction;

// Why the scheme cannot be faster than contraction `c` computed as written, or empty where it can:
// a lower bound of the scheme's time, its memory traffic alone (each operand read by its scale and
// residue nests, its residues written and read by the products; each output's residues written by
// the products and read by the reconstruction, which writes the result), against the time of the
// contraction as written at its roofline (2 M N K operations at the FP64 tensor cores' rate for
// fp64x, the FP32 cores' for fp32x, or its own bytes, whichever takes longer). The rates are
// sm_90's (DeviceModel's defaults) on every target, so that the rewrite is the kernel's alone.
// A DG differentiation (K = Np <= 165) stays as written; a DGEMM of n = 4096 does not.
std::string ozakiCannotPay(Precision p, const Contraction& c, int moduli);

// Which contractions of its type a rewriting policy rewrites: those where the scheme can pay
// (ozakiCannotPay; the others stay as written, computed as under ieee, which is more accurate),
// or every one (the scheme's tests and the fuzzer, at sizes small enough to emulate).
enum class PolicyReach : uint8_t { WherePays, Everywhere };

// The proved kernel rewritten for `p` (a copy when p does not rewrite, or when the kernel is
// already the rewrite of p: Kernel::policy). A kernel the policy cannot apply to (no contraction
// of its type) is an error in diags with the reasons, and nullopt. A kernel whose contractions
// all stay as written (PolicyReach::WherePays) comes back with its nests as written and
// Kernel::policy set: its schedules are those of the kernel as written.
std::optional<Kernel> applyPolicy(const Kernel& proved, Precision p, Diagnostics& diags,
                                  PolicyReach reach = PolicyReach::WherePays);

// applyPolicy for callers without diagnostics (the tuner, the API): throws rtcg::Error with the
// reason when the policy cannot apply.
Kernel policyKernel(const Kernel& proved, Precision p, PolicyReach reach = PolicyReach::WherePays);

// For `explain`: the rewritten kernel's steps, a line saying which policy made them and which
// contractions it left as written and why, then the kernel's nests as printKernel prints them
// (their nest numbers are the plan's).
std::string printPolicyRewrite(const Kernel& rewritten);

}  // namespace rtcg
