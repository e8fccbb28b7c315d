// Vectorised exp, tanh and max for the fused kernels (softmax, softcapped cross-entropy), dispatched on the active
// tier (kernels/isa.h): glibc's libmvec AVX2 variants (max error 1-4 ulp) on 8 floats at a time from avx2 up
// (avx2/vmath_avx2.cpp), plain libm at the ref tier (vmath.cpp). Linked with -lmvec.
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

inline float exp_shift_sum(float* y, const float* x, float shift, int64_t n) {
  return impl().exp_shift_sum(y, x, shift, n);
}
inline float max_value(const float* x, int64_t n) { return impl().max_value(x, n); }
inline void softcap(float* y, const float* x, float cap, int64_t n) { impl().softcap(y, x, cap, n); }

}  // namespace frontier::vmath
