// libmvec's AVX2 expf/tanhf on 8 floats at a time, libm for the tail. Compiled with -mavx2 -mfma only.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/vmath.h"

extern "C" __m256 _ZGVdN8v_expf(__m256);
extern "C" __m256 _ZGVdN8v_tanhf(__m256);

namespace frontier::vmath {

namespace {

float exp_shift_sum_avx2(float* y, const float* x, float shift, int64_t n) {
  int64_t i = 0;
  float sum = 0;
  __m256 acc = _mm256_setzero_ps(), s = _mm256_set1_ps(shift);
  for (; i + 8 <= n; i += 8) {
    __m256 e = _ZGVdN8v_expf(_mm256_add_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(y + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  for (float l : lanes) sum += l;
  for (; i < n; i++) sum += (y[i] = std::exp(x[i] + shift));
  return sum;
}

float max_value_avx2(const float* x, int64_t n) {
  int64_t i = 0;
  float mx = -INFINITY;
  __m256 m = _mm256_set1_ps(-INFINITY);
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  for (float l : lanes) mx = std::max(mx, l);
  for (; i < n; i++) mx = std::max(mx, x[i]);
  return mx;
}

void softcap_avx2(float* y, const float* x, float cap, int64_t n) {
  int64_t i = 0;
  const float inv = 1.f / cap;
  __m256 vc = _mm256_set1_ps(cap), vi = _mm256_set1_ps(inv);
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(vc, _ZGVdN8v_tanhf(_mm256_mul_ps(_mm256_loadu_ps(x + i), vi))));
  for (; i < n; i++) y[i] = cap * std::tanh(x[i] * inv);
}

}  // namespace

const Impl& impl_avx2() {
  static const Impl i{exp_shift_sum_avx2, max_value_avx2, softcap_avx2};
  return i;
}

}  // namespace frontier::vmath
