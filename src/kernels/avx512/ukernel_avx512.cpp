// AVX-512 fp32 microkernel, 12 x 32 (the shape of BLIS's skx sgemm, transposed for row-major C): 24 zmm
// accumulators, 2 zmm for a row of B, A broadcast from memory into each FMA (embedded {1to16} broadcast). Per k:
// 2 loads + 12 broadcast-FMA pairs, 24 FMAs: 24 cycles of one 512-bit FMA pipe (Zen 4 runs zmm FMAs as two
// 256-bit halves), 12 with two (Zen 5, Skylake-SP). 30 of 32 zmm registers live.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma only; called only on CPUs that have them.
#include <immintrin.h>

#include "kernels/gemm_kernels.h"
#include "kernels/avx2/pack_avx2.h"

namespace frontier::tier_avx512 {

namespace {

constexpr int kMR = 12, kNR = 32;

void ukernel_avx512_12x32(int64_t kc, const void* ap, const void* bp, float* c, int64_t ldc, float alpha,
                          float beta) {
  const float* a = static_cast<const float*>(ap);
  const float* b = static_cast<const float*>(bp);
  __m512 acc[kMR][2];
  for (int i = 0; i < kMR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; k++) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < kMR; i++) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kMR;
    b += kNR;
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
  for (int i = 0; i < kMR; i++)
    for (int h = 0; h < 2; h++) {
      float* p = c + i * ldc + 16 * h;
      if (beta == 0.f) _mm512_storeu_ps(p, _mm512_mul_ps(va, acc[i][h]));
      else _mm512_storeu_ps(p, _mm512_fmadd_ps(va, acc[i][h], _mm512_mul_ps(vb, _mm512_loadu_ps(p))));
    }
}

}  // namespace

}  // namespace frontier::tier_avx512

namespace frontier {

const GemmKernel& gemm_kernel_avx512_fp32() {
  // KC x NR B micro-panel: 256 x 32 x 4 B = 32 KiB (L1); MC x KC A block 96 x 256 x 4 B = 96 KiB (L2).
  // Packing: the AVX2 tier's packers (AVX2 instructions, which every AVX-512 CPU has; tested bitwise against the
  // portable loops at 12 and 32 wide on any AVX2 CPU). Their speed at this tier is not yet measured.
  static const GemmKernel k{"avx512 12x32", Precision::kFp32, tier_avx512::ukernel_avx512_12x32, tier_avx512::kMR,
                            tier_avx512::kNR, 256, 96, 2048, tier_avx2::pack_a_avx2, tier_avx2::pack_b_avx2};
  return k;
}

}  // namespace frontier
