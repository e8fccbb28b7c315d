#include "kernels/vmath.h"

#include <algorithm>
#include <cmath>

#include "kernels/isa.h"

namespace frontier::vmath {

namespace {

float exp_shift_sum_ref(float* y, const float* x, float shift, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; i++) sum += (y[i] = std::exp(x[i] + shift));
  return sum;
}

float max_value_ref(const float* x, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; i++) mx = std::max(mx, x[i]);
  return mx;
}

void softcap_ref(float* y, const float* x, float cap, int64_t n) {
  const float inv = 1.f / cap;
  for (int64_t i = 0; i < n; i++) y[i] = cap * std::tanh(x[i] * inv);
}

}  // namespace

const Impl& impl_ref() {
  static const Impl i{exp_shift_sum_ref, max_value_ref, softcap_ref};
  return i;
}

const Impl& impl() {
  switch (active_isa()) {
    case Isa::kRef: return impl_ref();
    case Isa::kAvx2: return impl_avx2();
    default: return impl_avx512();  // avx512, avx512bf16, amx
  }
}

}  // namespace frontier::vmath
