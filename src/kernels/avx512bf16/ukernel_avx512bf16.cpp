// AVX512_BF16 microkernel, 12 x 32: vdpbf16ps multiplies pairs along k (acc += a[2p+1] b[2p+1] + a[2p] b[2p],
// exact bf16 products, fp32 sums). A pair of A (one 32-bit word) is broadcast to 16 lanes; a row pair of B is 2
// zmm (32 columns x 2 k). Per pair: 2 loads + 12 broadcasts + 24 vdpbf16ps = 64 FLOPs per instruction, twice an
// fp32 FMA's, with the same 24 accumulators as the fp32 12 x 32 kernel.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 only; called only where the CPU has them.
#include <immintrin.h>

#include <cstring>

#include "kernels/gemm_kernels.h"

namespace frontier {

namespace {

constexpr int kMR = 12, kNR = 32;

void ukernel_avx512bf16_12x32(int64_t kc, const void* ap, const void* bp, float* c, int64_t ldc, float alpha,
                              float beta) {
  const int32_t* a = static_cast<const int32_t*>(ap);  // one int32 = a (k, k+1) pair of bf16
  const __m512i* b = static_cast<const __m512i*>(bp);
  __m512 acc[kMR][2];
  for (int i = 0; i < kMR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  const int64_t pairs = (kc + 1) / 2;
  for (int64_t p = 0; p < pairs; p++) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 1);
#pragma GCC unroll 12
    for (int i = 0; i < kMR; i++) {
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(a[i]);
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
    a += kMR;
    b += 2;
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
  for (int i = 0; i < kMR; i++)
    for (int h = 0; h < 2; h++) {
      float* q = c + i * ldc + 16 * h;
      if (beta == 0.f) _mm512_storeu_ps(q, _mm512_mul_ps(va, acc[i][h]));
      else _mm512_storeu_ps(q, _mm512_fmadd_ps(va, acc[i][h], _mm512_mul_ps(vb, _mm512_loadu_ps(q))));
    }
}

}  // namespace

const GemmKernel& gemm_kernel_avx512bf16_bf16() {
  // KC x NR B micro-panel: 512 x 32 x 2 B = 32 KiB (L1); MC x KC A block 96 x 512 x 2 B = 96 KiB (L2).
  static const GemmKernel k{"avx512bf16 12x32", Precision::kBf16, ukernel_avx512bf16_12x32, kMR, kNR, 512, 96, 2048};
  return k;
}

}  // namespace frontier
