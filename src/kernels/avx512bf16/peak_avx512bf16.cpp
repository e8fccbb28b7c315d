#include <immintrin.h>

#include <cstdio>

#include "kernels/peak.h"

namespace frontier {

double peak_loop_avx512bf16_dot(int64_t iters) {
  constexpr int kChains = 24;
  __m512 a[kChains];
  for (int i = 0; i < kChains; i++) a[i] = _mm512_set1_ps(1e-3f * i);
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3400);  // 1, 2^-23
  for (int64_t i = 0; i < iters; i++)
#pragma GCC unroll 24
    for (int k = 0; k < kChains; k++) a[k] = _mm512_dpbf16_ps(a[k], x, y);
  float sink = 0;
  for (int i = 0; i < kChains; i++) sink += _mm512_reduce_add_ps(a[i]);
  if (sink == 12345.f) std::printf(" ");
  return static_cast<double>(iters) * kChains * 64.0;  // 16 lanes x 2 products x 2 FLOPs
}

}  // namespace frontier
