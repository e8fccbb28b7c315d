#include <immintrin.h>

#include <cstdio>

#include "kernels/peak.h"

namespace frontier {

double peak_loop_avx2_fma(int64_t iters) {
  constexpr int kChains = 12;  // > latency (4) x FMA pipes (2), with slack
  __m256 a[kChains];
  for (int i = 0; i < kChains; i++) a[i] = _mm256_set1_ps(1.0f + 1e-3f * i);
  const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; i++)
#pragma GCC unroll 12
    for (int k = 0; k < kChains; k++) a[k] = _mm256_fmadd_ps(a[k], b, c);
  float sink = 0;
  for (int i = 0; i < kChains; i++) sink += _mm256_cvtss_f32(a[i]);
  if (sink == 12345.f) std::printf(" ");
  return static_cast<double>(iters) * kChains * 16.0;  // 8 lanes x 2 FLOPs
}

}  // namespace frontier
