// The finite-difference harness of the op tests (ops_test, variant_ops_test, embed_ops_test, moe_test): every
// reference kernel's backward against central differences in double precision. Loss L = sum(out * G) for a random G,
// so dout = G. Tolerance: max |analytic - numeric| <= 1e-6 * max(1, max |numeric|) (step h = 1e-5; the FD truncation
// error is ~h^2 = 1e-10 and rounding ~1e-16/h = 1e-11).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace frontier::testing {

using Vec = std::vector<double>;

inline Vec randn(size_t n, std::mt19937& rng, double scale = 1.0) {
  std::normal_distribution<double> d(0.0, scale);
  Vec v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Checks d(loss)/d(x) for each input in `inputs` against finite differences. loss(inputs) evaluates the forward;
// grads(inputs) returns the analytic gradients, same layout.
inline void check_grads(std::vector<Vec*> inputs, const std::function<double()>& loss,
                        const std::function<std::vector<Vec>()>& grads, const char* what) {
  std::vector<Vec> g = grads();
  ASSERT_EQ(g.size(), inputs.size());
  const double h = 1e-5;
  for (size_t a = 0; a < inputs.size(); a++) {
    Vec& x = *inputs[a];
    double max_err = 0, max_num = 0;
    for (size_t i = 0; i < x.size(); i++) {
      double orig = x[i];
      x[i] = orig + h;
      double lp = loss();
      x[i] = orig - h;
      double lm = loss();
      x[i] = orig;
      double num = (lp - lm) / (2 * h);
      max_err = std::max(max_err, std::abs(num - g[a][i]));
      max_num = std::max(max_num, std::abs(num));
    }
    EXPECT_LE(max_err, 1e-6 * std::max(1.0, max_num)) << what << " input " << a << ": max abs error " << max_err;
  }
}

inline double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); i++) s += a[i] * b[i];
  return s;
}

// max |a - b| / max |b| over n values (b the peer's): the relative error of a whole tensor.
inline double rel_err(const float* a, const float* b, int64_t n) {
  double err = 0, mx = 0;
  for (int64_t i = 0; i < n; i++) {
    err = std::max(err, std::abs(static_cast<double>(a[i]) - b[i]));
    mx = std::max(mx, std::abs(static_cast<double>(b[i])));
  }
  return mx > 0 ? err / mx : err;
}

}  // namespace frontier::testing
