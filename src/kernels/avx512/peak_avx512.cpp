#include <immintrin.h>

#include <cstdio>

#include "kernels/peak.h"

namespace frontier {

double peak_loop_avx512_fma(int64_t iters) {
  constexpr int kChains = 24;  // > latency (4) x 512-bit FMA pipes (up to 2), with slack
  __m512 a[kChains];
  for (int i = 0; i < kChains; i++) a[i] = _mm512_set1_ps(1.0f + 1e-3f * i);
  const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; i++)
#pragma GCC unroll 24
    for (int k = 0; k < kChains; k++) a[k] = _mm512_fmadd_ps(a[k], b, c);
  float sink = 0;
  for (int i = 0; i < kChains; i++) sink += _mm512_reduce_add_ps(a[i]);
  if (sink == 12345.f) std::printf(" ");
  return static_cast<double>(iters) * kChains * 32.0;  // 16 lanes x 2 FLOPs
}

}  // namespace frontier
