// Fast single-precision GEMM, BLIS-style: a portable 5-loop driver with packing (gemm.cpp), one microkernel per
// instruction set with a fixed signature (ukernel_*.cpp), block sizes as per-architecture data (GemmBlocking).
//
//   // C (M, N) = alpha * op(A) @ op(B) + beta * C, all row-major with leading dimensions (row strides):
//   //   op(A) is (M, K): A itself (lda >= K) or, with trans_a, A^T of a (K, M) array (lda >= M);
//   //   op(B) is (K, N): B itself (ldb >= N) or, with trans_b, B^T of an (N, K) array (ldb >= K).
//   sgemm(false, true, M, N, K, 1.f, x, K, W, K, 0.f, out, N);    // out = x @ W^T      (linear forward)
//   sgemm(false, false, M, K, N, 1.f, g, N, W, K, 1.f, dx, K);    // dx += g @ W        (linear backward)
//   sgemm(true, false, N, K, M, 1.f, g, N, x, K, 1.f, dW, K);     // dW += g^T @ x      (weight gradient)
//
// No transpose is ever materialised: packing reads either layout. Every element of C is accumulated over K in a
// fixed order (KC blocks in sequence, each in k order inside the microkernel), so results do not depend on the
// thread count. Threads (OpenMP, omp_get_max_threads(); one when called inside a parallel region) split the
// (MC rows x NR-panel group) tasks of each packed B block. beta == 0 never reads C (NaNs in C are overwritten).
#pragma once

#include <cstdint>

namespace frontier {

// Microkernel contract (BLIS's gemm ukernel): c (MR, NR) with row stride ldc, full tile only:
//   c = alpha * sum_k a[k*MR + i] * b[k*NR + j] + beta * c     (beta == 0: c is not read)
// a: packed A micro-panel (kc, MR) k-major; b: packed B micro-panel (kc, NR) k-major.
using GemmUkernel = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, float alpha,
                             float beta);

// Block sizes as data, one row per microkernel (BLIS config/<uarch>): MR x NR register tile, KC the packed depth
// (an A micro-panel and a B micro-panel stay in L1), MC the A block (in L2), NC the B block (in L3).
struct GemmBlocking {
  const char* name;
  GemmUkernel ukernel;
  int MR, NR, KC, MC, NC;
};

// The microkernel the driver uses on this machine (AVX2/FMA when compiled for it, else the portable one).
const GemmBlocking& gemm_blocking();
// The portable (reference) microkernel's row, always available; tests check the fast one against it.
const GemmBlocking& gemm_blocking_ref();

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// C (M, M) = alpha * op(A) @ op(B) + beta * C for a product known to be symmetric (X X^T, X^T X, or S S with S
// symmetric) and a symmetric C: computes the tiles on and below the diagonal (about half the FLOPs), then mirrors
// the lower triangle. Bit-identical to sgemm for such products: C[i][j] and C[j][i] sum the same products in the
// same k order. (Muon's Polar Express: A = X X^T and A A.)
void sgemm_symmetric(bool trans_a, bool trans_b, int64_t M, int64_t K, float alpha, const float* A, int64_t lda,
                     const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// B packed once and reused against many A (attention multiplies every query block by the same K^T and V).
// Layout (BLIS's packed B): op(B) (K, N) as ceil(N/NR) micro-panels of (K, NR), k-major, zero-padded; panel q at
// Bp + q * NR * K. sgemm_prepacked_b multiplies by the leading (K' <= Kp, N') part of a buffer packed over (Kp, Np):
// a prefix of keys is a prefix of rows or of panels. Bp must be 64-byte aligned (the microkernel loads panels
// aligned). One thread: for callers that parallelise outside.
int64_t sgemm_packed_b_floats(int64_t K, int64_t N);
void sgemm_pack_b(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, float* Bp);
void sgemm_prepacked_b(bool trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                       const float* Bp, int64_t Kp, float beta, float* C, int64_t ldc);

// Same, with an explicit blocking (tests run the driver over both microkernels and odd block sizes).
void sgemm_with(const GemmBlocking& bs, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

}  // namespace frontier
