// Muon's Polar Express on the fast GEMM (symmetric products, (B + aI) folded, tall form without transposes) against
// nanochat's formula evaluated in double, for wide, square and tall matrices. Tolerance: 1e-5 of the largest |X| (measured ~2e-6)
// (fp32 through 5 iterations whose first coefficients are ~8 and ~22 in magnitude).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "optim/optim.h"

namespace frontier {
namespace {

constexpr double kPolar[5][3] = {
    {8.156554524902461, -22.48329292557795, 15.878769915207462},
    {4.042929935166739, -2.808917465908714, 0.5000178451051316},
    {3.8916678022926607, -2.772484153217685, 0.5060648178503393},
    {3.285753657755655, -2.3681294933425376, 0.46449024233003106},
    {2.3465413258596377, -1.7097828382687081, 0.42323551169305323},
};

using Mat = std::vector<double>;  // row-major

Mat matmul(const Mat& a, const Mat& b, int64_t n, int64_t k, int64_t m) {  // (n, k) @ (k, m)
  Mat c(n * m, 0.0);
  for (int64_t i = 0; i < n; i++)
    for (int64_t p = 0; p < k; p++)
      for (int64_t j = 0; j < m; j++) c[i * m + j] += a[i * k + p] * b[p * m + j];
  return c;
}

Mat transpose(const Mat& a, int64_t r, int64_t c) {
  Mat t(r * c);
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) t[j * r + i] = a[i * c + j];
  return t;
}

// nanochat: X = G / (||G|| 1.02 + 1e-6); tall: A = X^T X, X = a X + X (b A + c A A); wide: A = X X^T,
// X = a X + (b A + c A A) X.
Mat reference(const std::vector<float>& g, int64_t rows, int64_t cols) {
  Mat X(g.begin(), g.end());
  double nrm = 0;
  for (double v : X) nrm += v * v;
  for (double& v : X) v /= std::sqrt(nrm) * 1.02 + 1e-6;
  const bool tall = rows > cols;
  const int64_t r = tall ? cols : rows;
  for (const auto& co : kPolar) {
    Mat A = tall ? matmul(transpose(X, rows, cols), X, cols, rows, cols) : matmul(X, transpose(X, rows, cols), rows, cols, rows);
    Mat AA = matmul(A, A, r, r, r), B(r * r);
    for (int64_t i = 0; i < r * r; i++) B[i] = co[1] * A[i] + co[2] * AA[i];
    Mat BX = tall ? matmul(X, B, rows, cols, cols) : matmul(B, X, rows, rows, cols);
    for (size_t i = 0; i < X.size(); i++) X[i] = co[0] * X[i] + BX[i];
  }
  return X;
}

TEST(PolarExpress, MatchesDoubleReferenceWideSquareTall) {
  std::mt19937 gen(5);
  std::normal_distribution<float> d(0.f, 1.f);
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{24, 70}, {64, 64}, {130, 40}}) {
    std::vector<float> g(rows * cols);
    for (auto& v : g) v = d(gen);
    Mat ref = reference(g, rows, cols);
    std::vector<float> x = g;
    polar_express(x.data(), rows, cols, 5);
    double mx = 0, err = 0;
    for (size_t i = 0; i < ref.size(); i++) {
      mx = std::max(mx, std::abs(ref[i]));
      err = std::max(err, std::abs(ref[i] - x[i]));
    }
    std::printf("polar express %lldx%lld: max |err| %.3g of max |X| %.3g\n", static_cast<long long>(rows),
                static_cast<long long>(cols), err, mx);
    EXPECT_LT(err, 1e-5 * mx) << rows << "x" << cols;
  }
}

}  // namespace
}  // namespace frontier
