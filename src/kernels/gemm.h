// Fast GEMM, BLIS-style: a portable 5-loop driver with packing (gemm.cpp), one microkernel per instruction-set
// tier with a fixed signature (src/kernels/<tier>/ukernel_*.cpp), block sizes as data per microkernel
// (GemmKernel), picked at run time for the CPU (kernels/isa.h).
//
//   // C (M, N) = alpha * op(A) @ op(B) + beta * C, all fp32 row-major with leading dimensions (row strides):
//   //   op(A) is (M, K): A itself (lda >= K) or, with trans_a, A^T of a (K, M) array (lda >= M);
//   //   op(B) is (K, N): B itself (ldb >= N) or, with trans_b, B^T of an (N, K) array (ldb >= K).
//   sgemm(false, true, M, N, K, 1.f, x, K, W, K, 0.f, out, N);    // out = x @ W^T      (linear forward)
//   sgemm(false, false, M, K, N, 1.f, g, N, W, K, 1.f, dx, K);    // dx += g @ W        (linear backward)
//   sgemm(true, false, N, K, M, 1.f, g, N, x, K, 1.f, dW, K);     // dW += g^T @ x      (weight gradient)
//   gemm(Precision::kBf16, false, true, M, N, K, 1.f, x, K, W, K, 0.f, out, N);   // the same in bf16
//
// Precision::kBf16 takes the same fp32 arrays: packing rounds op(A) and op(B) to bf16 (round to nearest even) and
// lays them out in pairs along K, the microkernel multiplies pairs (vdpbf16ps: exact bf16 products, fp32
// accumulation), and C stays fp32. So a bf16 GEMM differs from fp32 only by the rounding of its inputs (relative
// error ~ 2^-9 per input, ~ 2^-9 sqrt(K)-ish cancellation-free in sums), and mixed precision needs no bf16 copies
// of weights or activations.
//
// No transpose is ever materialised: packing reads either layout. Every element of C is accumulated over K in a
// fixed order (KC blocks in sequence, each in k order inside the microkernel), so results do not depend on the
// thread count. Threads (OpenMP, omp_get_max_threads(); one when called inside a parallel region) split the
// (MC rows x NR-panel group) tasks of each packed B block. beta == 0 never reads C (NaNs in C are overwritten).
#pragma once

#include <cstdint>

#include "kernels/isa.h"
#include "kernels/precision.h"
#include "util/bf16.h"  // to_bf16: the rounding packing applies to op(A) and op(B) in bf16

namespace frontier {

// Microkernel contract (BLIS's gemm ukernel): c (MR, NR) with row stride ldc, full tile only:
//   c = alpha * sum_k A[i][k] * B[k][j] + beta * c     (beta == 0: c is not read)
// a: packed A micro-panel, b: packed B micro-panel, kc the depth. Element (k, i) of the A panel is at
//   (k / kp) * kp * MR + i * kp + k % kp     and (k, j) of the B panel at (k / kp) * kp * NR + j * kp + k % kp,
// kp = 1 for fp32 (plain k-major) and 2 for bf16 (pairs along k, vdpbf16ps's operand layout); panels hold
// ceil(kc / kp) * kp rows of k, the padding rows zero.
using GemmUkernel = void (*)(int64_t kc, const void* a, const void* b, float* c, int64_t ldc, float alpha,
                             float beta);

// Packing (gemm_pack.h, compiled per tier): rows [i0, i0+mc) x depth [p0, p0+kc) of op(A) into MR-row panels at
// out; depth [p0, p0+kc) x columns [j0, j0+nr) of op(B) into one NR-column panel at out.
using GemmPackA = void (*)(int MR, bool trans, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                           int64_t kc, void* out);
using GemmPackB = void (*)(int NR, bool trans, const float* B, int64_t ldb, int64_t j0, int64_t nr, int64_t p0,
                           int64_t kc, void* out);
// Per-thread set-up before a run of microkernel calls (AMX: loads the tile configuration, which costs as much as a
// quarter of a 32 x 32 x 256 tile when done per call); nullptr where a kernel needs none.
using GemmBegin = void (*)();

// Block sizes as data, one row per microkernel (BLIS config/<uarch>): MR x NR register tile, KC the packed depth
// (a B micro-panel stays in L1 while A micro-panels stream through), MC the A block (in L2), NC the B block (L3).
struct GemmKernel {
  const char* name;  // "avx512 12x32"
  Precision prec;    // of the packed operands
  GemmUkernel ukernel;
  int MR, NR, KC, MC, NC;
  GemmPackA pack_a;
  GemmPackB pack_b;
  int k_align = 0;  // depth the panels are padded to (0: kp's pair or single); AMX: 32, its tile depth
  GemmBegin begin = nullptr;  // called by a thread before its microkernel calls of one task (macro-kernel)
  int KC_ta = 0;  // the depth block when op(A) is transposed (weight gradients, X^T X), if not KC (0: KC)
  int kp() const { return k_align ? k_align : prec == Precision::kBf16 ? 2 : 1; }
  int elem_bytes() const { return prec == Precision::kBf16 ? 2 : 4; }
};

// The microkernel the driver uses for a precision at the active tier (active_isa()), or at a given tier; the
// prepacked-B API below (gemm_pack_b, gemm_prepacked_b and their callers' panel offsets) uses gemm_kernel's.
const GemmKernel& gemm_kernel(Precision p);
const GemmKernel& gemm_kernel_for(Isa t, Precision p);
const GemmKernel& gemm_kernel_ref(Precision p);  // the portable ones, always available

void gemm(Precision p, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
inline void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm(Precision::kFp32, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// C (M, M) = alpha * op(A) @ op(B) + beta * C for a product known to be symmetric (X X^T, X^T X, or S S with S
// symmetric) and a symmetric C: computes the tiles on and below the diagonal (about half the FLOPs), then mirrors
// the lower triangle. Bit-identical to gemm for such products: C[i][j] and C[j][i] sum the same products in the
// same k order. (Muon's Polar Express: A = X X^T and A A.)
void gemm_symmetric(Precision p, bool trans_a, bool trans_b, int64_t M, int64_t K, float alpha, const float* A,
                    int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
inline void sgemm_symmetric(bool trans_a, bool trans_b, int64_t M, int64_t K, float alpha, const float* A,
                            int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_symmetric(Precision::kFp32, trans_a, trans_b, M, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// B packed once and reused against many A (attention multiplies every query block by the same K^T and V).
// Layout (BLIS's packed B): op(B) (K, N) as ceil(N/NR) micro-panels of (ceil(K/kp)*kp, NR), zero-padded, in the
// active kernel's element type; panel q at byte q * NR * Kpad * elem_bytes. gemm_prepacked_b multiplies by the
// leading (K' <= Kp, N') part of a buffer packed over (Kp, Np): a prefix of keys is a prefix of rows or of panels
// (with bf16 pairs, an odd K' reads one padding-or-next row against A's zero padding). Bp must be 64-byte aligned.
// One thread: for callers that parallelise outside. Pack and multiply at the same precision and tier.
// A kernel that pads depth to whole tiles (GemmKernel::k_align: AMX) reads a prefix's or an offset product's depth
// rounded up to a tile: the rows past it are the panel's next ones (or a zeroed slack after the last panel, which
// gemm_packed_b_bytes counts and gemm_pack_b writes), multiplied by A's zero padding, so they must be finite: they
// are packed data. gemm_packed_b_offset: the byte offset of column j (a multiple of NR) in such a buffer.
int64_t gemm_packed_b_bytes(Precision p, int64_t K, int64_t N);
int64_t gemm_packed_b_offset(Precision p, int64_t K, int64_t j);
void gemm_pack_b(Precision p, bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, void* Bp);
void gemm_prepacked_b(Precision p, bool trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                      int64_t lda, const void* Bp, int64_t Kp, float beta, float* C, int64_t ldc);

// Same as gemm, with an explicit microkernel (tests run the driver over every tier and odd block sizes).
void gemm_with(const GemmKernel& bs, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
               const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

}  // namespace frontier
