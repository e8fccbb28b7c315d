// The vector math of the fused kernels (kernels/vmath.h) at every tier this CPU has, against double-precision libm.
// Tolerance: 1e-6 relative (about 8 ulp of float): libmvec's variants are documented within 4 ulp, and x + shift
// and cap * tanh(x / cap) round once more each in float. Sums: 1e-6 relative plus n float roundings of the sum.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/isa.h"
#include "kernels/vmath.h"

using namespace frontier;

namespace {

std::vector<std::pair<const char*, const vmath::Impl*>> impls_here() {
  std::vector<std::pair<const char*, const vmath::Impl*>> v{{"ref", &vmath::impl_ref()}};
  if (isa_supported(Isa::kAvx2)) v.push_back({"avx2", &vmath::impl_avx2()});
  if (isa_supported(Isa::kAvx512)) v.push_back({"avx512", &vmath::impl_avx512()});
  return v;
}

std::vector<float> inputs(int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> x(n);
  for (auto& v : x) v = u(g);
  return x;
}

}  // namespace

TEST(Vmath, ExpShiftSumMatchesLibmAtEveryTier) {
  for (auto [name, im] : impls_here())
    for (int64_t n : {1, 7, 8, 15, 16, 17, 31, 33, 1000, 8192}) {
      auto x = inputs(n, -30.f, 5.f, 1 + n);
      x[0] = -INFINITY;  // a masked logit: exp must give exactly 0
      std::vector<float> y(n, NAN);
      const float shift = -3.25f;
      const float sum = im->exp_shift_sum(y.data(), x.data(), shift, n);
      double want_sum = 0;
      for (int64_t i = 0; i < n; i++) {
        const double want = std::exp(double(x[i] + shift));
        want_sum += want;
        ASSERT_NEAR(y[i], want, 1e-6 * want + 1e-37) << name << " n=" << n << " i=" << i << " x=" << x[i];
      }
      EXPECT_EQ(y[0], 0.f) << name;
      EXPECT_NEAR(sum, want_sum, (1e-6 + n * 0x1p-24) * want_sum) << name << " n=" << n;
      std::vector<float> in_place = x;  // y may alias x
      im->exp_shift_sum(in_place.data(), in_place.data(), shift, n);
      for (int64_t i = 0; i < n; i++) ASSERT_EQ(in_place[i], y[i]) << name << " n=" << n << " i=" << i;
    }
}

TEST(Vmath, SoftcapMatchesLibmAtEveryTier) {
  const float cap = 15.f;
  for (auto [name, im] : impls_here())
    for (int64_t n : {1, 5, 16, 17, 100, 8192}) {
      auto x = inputs(n, -200.f, 200.f, 7 + n);
      if (n > 3) x[1] = 0.f, x[2] = 1e-4f, x[3] = 1e4f;  // zero, the linear region, saturation
      std::vector<float> y(n + 1, 42.f);  // the element past n must stay untouched
      im->softcap(y.data(), x.data(), cap, n);
      for (int64_t i = 0; i < n; i++) {
        const double want = cap * std::tanh(double(x[i]) / cap);
        ASSERT_NEAR(y[i], want, 1e-6 * std::fabs(want) + 1e-37) << name << " n=" << n << " x=" << x[i];
      }
      EXPECT_EQ(y[n], 42.f) << name;
    }
}

TEST(Vmath, MaxValueIsExactAtEveryTier) {
  for (auto [name, im] : impls_here())
    for (int64_t n : {1, 2, 15, 16, 17, 100, 8193}) {
      auto x = inputs(n, -50.f, 50.f, 3 + n);
      for (int64_t at : {int64_t(0), n / 2, n - 1}) {
        auto y = x;
        y[at] = 77.5f;
        EXPECT_EQ(im->max_value(y.data(), n), 77.5f) << name << " n=" << n << " at=" << at;
      }
      std::vector<float> all_inf(n, -INFINITY);
      EXPECT_EQ(im->max_value(all_inf.data(), n), -INFINITY) << name << " n=" << n;
    }
}
