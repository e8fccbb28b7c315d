// Vectorised exp, tanh and max for the fused kernels (softmax, softcapped cross-entropy), dispatched on the active
// tier (kernels/isa.h): glibc's libmvec variants (max error 1-4 ulp), AVX2 on 8 floats at a time at the avx2 tier
// (avx2/vmath_avx2.cpp), AVX-512 on 16 from avx512 up (avx512/vmath_avx512.cpp), plain libm at the ref tier
// (vmath.cpp). Linked with -lmvec. Results differ between tiers within those ulps (tests/vmath_test.cpp).
#pragma once

#include <cstdint>

namespace frontier::vmath {

struct Impl {
  // y[i] = exp(x[i] + shift), returns sum of y in a fixed order (lanes, then tail). y may alias x.
  float (*exp_shift_sum)(float* y, const float* x, float shift, int64_t n);
  // max of x[0..n) (n >= 1), -inf-safe.
  float (*max_value)(const float* x, int64_t n);
  // y[i] = cap * tanh(x[i] / cap)
  void (*softcap)(float* y, const float* x, float cap, int64_t n);
};

const Impl& impl();      // for active_isa()
const Impl& impl_ref();  // plain libm
const Impl& impl_avx2();
const Impl& impl_avx512();

inline float exp_shift_sum(float* y, const float* x, float shift, int64_t n) {
  return impl().exp_shift_sum(y, x, shift, n);
}
inline float max_value(const float* x, int64_t n) { return impl().max_value(x, n); }
inline void softcap(float* y, const float* x, float cap, int64_t n) { impl().softcap(y, x, cap, n); }

}  // namespace frontier::vmath
