// AVX2/FMA microkernel, 6 x 16 (BLIS haswell sgemm): 12 ymm accumulators, 2 ymm for a row of B, 1 broadcast of A.
// Per k: 2 loads + 6 broadcasts + 12 FMAs, so two FMA pipes stay busy (6 cycles of FMA per 8 loads).
// Compiled with -mavx2 -mfma only (CMakeLists.txt); called only where the CPU has them (kernels/isa.h).
#include <immintrin.h>

#include "kernels/gemm_kernels.h"
#include "kernels/avx2/pack_avx2.h"

namespace frontier::tier_avx2 {

namespace {

constexpr int kMR = 6, kNR = 16;

void ukernel_avx2_6x16(int64_t kc, const void* ap, const void* bp, float* c, int64_t ldc, float alpha,
                       float beta) {
  const float* a = static_cast<const float*>(ap);
  const float* b = static_cast<const float*>(bp);
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
         c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  // C's tile is fetched while the depth loop runs (BLIS's haswell kernels do the same): at the end of a long loop
  // its rows are cold (a weight gradient's C is 4 MiB, re-read once per KC block). Measured here (Zen 3, best of 8
  // alternating, operands cold): +2-10% on the model's shapes, 1 and 2 threads; none slower beyond 0.6%.
  for (int i = 0; i < kMR; i++) {
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + kNR - 1), _MM_HINT_T0);
  }
  for (int64_t k = 0; k < kc; k++) {
    __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
    __m256 ai = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(ai, b0, c00);
    c01 = _mm256_fmadd_ps(ai, b1, c01);
    ai = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(ai, b0, c10);
    c11 = _mm256_fmadd_ps(ai, b1, c11);
    ai = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(ai, b0, c20);
    c21 = _mm256_fmadd_ps(ai, b1, c21);
    ai = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(ai, b0, c30);
    c31 = _mm256_fmadd_ps(ai, b1, c31);
    ai = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(ai, b0, c40);
    c41 = _mm256_fmadd_ps(ai, b1, c41);
    ai = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(ai, b0, c50);
    c51 = _mm256_fmadd_ps(ai, b1, c51);
    a += kMR;
    b += kNR;
  }
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  auto store = [&](float* p, __m256 acc) {
    if (beta == 0.f) _mm256_storeu_ps(p, _mm256_mul_ps(va, acc));
    else _mm256_storeu_ps(p, _mm256_fmadd_ps(va, acc, _mm256_mul_ps(vb, _mm256_loadu_ps(p))));
  };
  store(c + 0 * ldc, c00), store(c + 0 * ldc + 8, c01);
  store(c + 1 * ldc, c10), store(c + 1 * ldc + 8, c11);
  store(c + 2 * ldc, c20), store(c + 2 * ldc + 8, c21);
  store(c + 3 * ldc, c30), store(c + 3 * ldc + 8, c31);
  store(c + 4 * ldc, c40), store(c + 4 * ldc + 8, c41);
  store(c + 5 * ldc, c50), store(c + 5 * ldc + 8, c51);
}

}  // namespace

}  // namespace frontier::tier_avx2

namespace frontier {

const GemmKernel& gemm_kernel_avx2_fp32() {
  // KC: a 6x512 A panel (12 KiB) + a 512x16 B panel (32 KiB) in a 48 KiB L1; MC x KC (192 KiB) in L2; KC x NC
  // (4 MiB) in L3. Chosen by `frontier bench` over KC 192-512, MC 72-192, NC 2048-4080 on the 2-core EPYC here.
  static const GemmKernel k{"avx2 6x16", Precision::kFp32, tier_avx2::ukernel_avx2_6x16, tier_avx2::kMR,
                            tier_avx2::kNR, 512, 96, 2048, tier_avx2::pack_a_avx2, tier_avx2::pack_b_avx2};
  return k;
}

}  // namespace frontier
