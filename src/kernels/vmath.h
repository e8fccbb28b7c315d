// Vectorised exp and tanh for the fused kernels: glibc's libmvec (AVX2 variants, max error 1-4 ulp) on 8 floats at
// a time, plain libm for the tail and on machines without AVX2. Linked with -lmvec.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
extern "C" __m256 _ZGVdN8v_expf(__m256);
extern "C" __m256 _ZGVdN8v_tanhf(__m256);
#define FRONTIER_VMATH_AVX2 1
#endif

namespace frontier::vmath {

// y[i] = exp(x[i] + shift), returns sum of y in a fixed order (lanes, then tail).
inline float exp_shift_sum(float* y, const float* x, float shift, int64_t n) {
  int64_t i = 0;
  float sum = 0;
#ifdef FRONTIER_VMATH_AVX2
  __m256 acc = _mm256_setzero_ps(), s = _mm256_set1_ps(shift);
  for (; i + 8 <= n; i += 8) {
    __m256 e = _ZGVdN8v_expf(_mm256_add_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(y + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  for (float l : lanes) sum += l;
#endif
  for (; i < n; i++) sum += (y[i] = std::exp(x[i] + shift));
  return sum;
}

// max of x[0..n) (n >= 1), -inf-safe; the order of comparisons does not change a max.
inline float max_value(const float* x, int64_t n) {
  int64_t i = 0;
  float mx = -INFINITY;
#ifdef FRONTIER_VMATH_AVX2
  __m256 m = _mm256_set1_ps(-INFINITY);
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  for (float l : lanes) mx = std::max(mx, l);
#endif
  for (; i < n; i++) mx = std::max(mx, x[i]);
  return mx;
}

// y[i] = cap * tanh(x[i] / cap)
inline void softcap(float* y, const float* x, float cap, int64_t n) {
  int64_t i = 0;
  const float inv = 1.f / cap;
#ifdef FRONTIER_VMATH_AVX2
  __m256 vc = _mm256_set1_ps(cap), vi = _mm256_set1_ps(inv);
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(vc, _ZGVdN8v_tanhf(_mm256_mul_ps(_mm256_loadu_ps(x + i), vi))));
#endif
  for (; i < n; i++) y[i] = cap * std::tanh(x[i] * inv);
}

}  // namespace frontier::vmath
