// The architecture-variant ops (autograd/variant_ops.cpp) in two modes of the op-test harness:
//  - VariantOpsBackward: each reference kernel's backward (src/reference/) against central finite differences in
//    double, as tests/ops_test.cpp: loss L = sum(out * G), tolerance max |analytic - numeric| <= 1e-6 * max(1, max
//    |numeric|) (h = 1e-5: FD truncation ~h^2 = 1e-10, rounding ~1e-16/h = 1e-11).
//  - VariantOpsFast: each autograd op (its fast kernel, float) against the reference kernel run in double on the
//    same float inputs, value and every gradient, on shapes with ragged chunks and blocks. The error measured is
//    the fast kernel's float rounding alone; each case states its tolerance, relative to max(1, max |reference|).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "autograd/tape.h"
#include "reference/axpy.h"
#include "reference/gated_act.h"
#include "reference/key_shift.h"
#include "reference/leaky_relu2.h"
#include "reference/smear.h"
#include "grad_check.h"

using namespace frontier;
using namespace frontier::testing;
using FVec = std::vector<float>;
using Vars = std::vector<Var>;

namespace {


FVec randf(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, scale);
  FVec v(n);
  for (auto& x : v) x = d(g);
  return v;
}

Vec to_d(const FVec& v) { return Vec(v.begin(), v.end()); }

void expect_close(const FVec& got, const Vec& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double err = 0, mx = 0;
  for (size_t i = 0; i < want.size(); i++) {
    err = std::max(err, std::abs(got[i] - want[i]));
    mx = std::max(mx, std::abs(want[i]));
  }
  EXPECT_LE(err, tol * std::max(1.0, mx)) << what << ": max |fast - ref| " << err << " (max |ref| " << mx << ")";
  std::printf("[fast] %-16s max |diff| %.3g (tolerance %.3g)\n", what, err, tol * std::max(1.0, mx));
}

// One autograd op on parameter inputs (gradients start at zero): its value, and every input's gradient after
// seeding d out = G and replaying the recorded closures in reverse (as tests/fused_ops_test.cpp).
struct OpRun {
  FVec out;
  std::vector<FVec> grads;
};

OpRun run_op(const std::vector<FVec>& vals, const std::vector<std::vector<int64_t>>& shapes, const FVec& G,
           const std::function<Var(Tape&, const Vars&)>& op) {
  std::vector<FVec> v = vals, g;
  for (const auto& x : vals) g.emplace_back(x.size(), 0.f);
  Tape t;
  Vars in;
  for (size_t i = 0; i < v.size(); i++) in.push_back(t.param(v[i].data(), g[i].data(), shapes[i]));
  Var out = op(t, in);
  OpRun r;
  r.out.assign(t.value(out), t.value(out) + t.numel(out));
  EXPECT_EQ(G.size(), r.out.size());
  std::copy(G.begin(), G.end(), t.grad(out));
  for (int i = out.id; i >= 0; i--)
    if (t.node({i}).backward && t.node({i}).grad) t.node({i}).backward();
  r.grads = g;
  return r;
}

}  // namespace

// ---- reference kernels against finite differences (double) ----

TEST(VariantOpsBackward, LeakyRelu2) {
  std::mt19937 rng(11);
  for (double slope : {0.01, 0.5, 1.0}) {
    Vec x = randn(50, rng), G = randn(50, rng), out(50);
    for (auto& v : x)
      if (std::abs(v) < 1e-3) v = 0.5;  // keep away from the kink at 0 (the second derivative jumps there)
    auto loss = [&] {
      ref::leaky_relu2_forward(out.data(), x.data(), 50, slope);
      return dot(out, G);
    };
    auto grads = [&] {
      Vec dx(50, 0);
      ref::leaky_relu2_backward(dx.data(), G.data(), x.data(), 50, slope);
      return std::vector<Vec>{dx};
    };
    check_grads({&x}, loss, grads, "leaky_relu2");
  }
  // slope 1: x^2 everywhere.
  Vec x = {-2.0, 3.0}, out(2);
  ref::leaky_relu2_forward(out.data(), x.data(), 2, 1.0);
  EXPECT_EQ(out, (Vec{4.0, 9.0}));
}

TEST(VariantOpsBackward, GatedAct) {
  std::mt19937 rng(12);
  for (GatedAct kind : {GatedAct::kSwiglu, GatedAct::kGeglu})
    for (auto nh : {std::pair{3, 5}, {2, 1}, {1, 8}}) {
      const int N = nh.first, H = nh.second;  // not bindings: clang 14 cannot capture them (ops_test.cpp)
      Vec x = randn(N * 2 * H, rng, 2.0), G = randn(N * H, rng), out(N * H);
      auto loss = [&] {
        ref::gated_act_forward(out.data(), x.data(), N, H, kind);
        return dot(out, G);
      };
      auto grads = [&] {
        Vec dx(x.size(), 0);
        ref::gated_act_backward(dx.data(), G.data(), x.data(), N, H, kind);
        return std::vector<Vec>{dx};
      };
      check_grads({&x}, loss, grads, kind == GatedAct::kSwiglu ? "swiglu" : "geglu");
    }
  // Known values: silu(1) = 1 / (1 + e^-1); gelu_tanh(1) = 0.5 (1 + tanh(sqrt(2/pi) 1.044715)).
  Vec x = {1.0, 2.0}, out(1);
  ref::gated_act_forward(out.data(), x.data(), 1, 1, GatedAct::kSwiglu);
  EXPECT_NEAR(out[0], 2.0 / (1.0 + std::exp(-1.0)), 1e-15);
  ref::gated_act_forward(out.data(), x.data(), 1, 1, GatedAct::kGeglu);
  EXPECT_NEAR(out[0], 2.0 * 0.5 * (1.0 + std::tanh(0.7978845608028654 * 1.044715)), 1e-15);
}

TEST(VariantOpsBackward, Smear) {
  std::mt19937 rng(13);
  struct Shape {
    int B, T, C, G;
  };
  for (Shape s : {Shape{2, 5, 7, 4}, Shape{1, 4, 3, 3}, Shape{3, 1, 5, 2}}) {
    const int B = s.B, T = s.T, C = s.C, G = s.G;
    Vec x = randn(B * T * C, rng), w = randn(G, rng), lam = {0.8}, Gd = randn(x.size(), rng), out(x.size());
    auto loss = [&] {
      ref::smear_forward(out.data(), x.data(), w.data(), lam[0], B, T, C, G);
      return dot(out, Gd);
    };
    auto grads = [&] {
      Vec dx(x.size(), 0), dw(G, 0), dl(1, 0);
      ref::smear_backward(dx.data(), dw.data(), dl.data(), Gd.data(), x.data(), w.data(), lam[0], B, T, C, G);
      return std::vector<Vec>{dx, dw, dl};
    };
    check_grads({&x, &w, &lam}, loss, grads, "smear");
    loss();  // the first position of each sequence passes through
    for (int b = 0; b < B; b++)
      for (int c = 0; c < C; c++) EXPECT_EQ(out[b * T * C + c], x[b * T * C + c]);
  }
}

TEST(VariantOpsBackward, Axpy) {
  std::mt19937 rng(14);
  for (double alpha : {-1.0, 0.7}) {
    const int n = 13, i = 1;
    Vec a = randn(n, rng), b = randn(n, rng), s = randn(3, rng), G = randn(n, rng), out(n);
    auto loss = [&] {
      ref::axpy_forward(out.data(), a.data(), b.data(), alpha, s[i], n);
      return dot(out, G);
    };
    auto grads = [&] {
      Vec da(n, 0), db(n, 0), ds(3, 0);
      ref::axpy_backward(da.data(), db.data(), &ds[i], G.data(), b.data(), alpha, s[i], n);
      return std::vector<Vec>{da, db, ds};
    };
    check_grads({&a, &b, &s}, loss, grads, "axpy");
  }
}

TEST(VariantOpsBackward, KeyShift) {
  std::mt19937 rng(15);
  const int B = 2, T = 4, H = 3, D = 8;
  for (int p0 : {0, 2, 4}) {
    Vec k = randn(B * T * H * D, rng), G = randn(k.size(), rng), out(k.size());
    auto loss = [&] {
      ref::key_shift_forward(out.data(), k.data(), B, T, H, D, p0);
      return dot(out, G);
    };
    auto grads = [&] {
      Vec dk(k.size(), 0);
      ref::key_shift_backward(dk.data(), G.data(), B, T, H, D, p0);
      return std::vector<Vec>{dk};
    };
    check_grads({&k}, loss, grads, "key_shift");
    loss();  // position 1, head 2: dims 0..p0 and 4..4+p0 its own, the rest from position 0
    for (int d = 0; d < D; d++) {
      const int src = d % (D / 2) >= p0 ? 0 : 1;
      EXPECT_EQ(out[(1 * H + 2) * D + d], k[(src * H + 2) * D + d]) << "p0 " << p0 << " d " << d;
    }
  }
}

// ---- fast kernels (float, through the autograd ops) against the reference kernels (double) ----

// Tolerance 1e-6: the fast kernel does the reference's arithmetic in float, 2-3 roundings (~2e-7 relative).
TEST(VariantOpsFast, LeakyRelu2MatchesReference) {
  const int64_t n = 70001;  // several chunks and a ragged tail
  const float slope = 0.1f;
  FVec x = randf(n, 1), G = randf(n, 2);
  OpRun f = run_op({x}, {{n}}, G, [&](Tape& t, const Vars& in) { return leaky_relu2(t, in[0], slope); });
  Vec xd = to_d(x), Gd = to_d(G), out(n), dx(n, 0);
  ref::leaky_relu2_forward(out.data(), xd.data(), n, static_cast<double>(slope));
  ref::leaky_relu2_backward(dx.data(), Gd.data(), xd.data(), n, static_cast<double>(slope));
  expect_close(f.out, out, 1e-6, "leaky_relu2 out");
  expect_close(f.grads[0], dx, 1e-6, "leaky_relu2 dx");
}

// Tolerance 1e-5: libmvec's expf / tanhf are within 4 ulp (kernels/vmath.h, ~5e-7 relative), and ~10 more float
// roundings follow (~6e-7); inputs of scale 3 reach both tails of the activations. Measured: below 3e-8.
TEST(VariantOpsFast, GatedActMatchesReference) {
  struct Case {
    std::vector<int64_t> shape;  // of x; the last dim is 2H
  };
  for (GatedAct kind : {GatedAct::kSwiglu, GatedAct::kGeglu})
    for (const Case& c : {Case{{37, 600}}, Case{{5, 6}}, Case{{2, 3, 2 * 257}}}) {
      int64_t n = 1;
      for (auto d : c.shape) n *= d;
      const int64_t H = c.shape.back() / 2, N = n / (2 * H);
      FVec x = randf(n, 3, 3.f), G = randf(N * H, 4);
      OpRun f = run_op({x}, {c.shape}, G, [&](Tape& t, const Vars& in) { return gated_act(t, in[0], kind); });
      Vec xd = to_d(x), Gd = to_d(G), out(N * H), dx(n, 0);
      ref::gated_act_forward(out.data(), xd.data(), N, H, kind);
      ref::gated_act_backward(dx.data(), Gd.data(), xd.data(), N, H, kind);
      const char* name = kind == GatedAct::kSwiglu ? "swiglu" : "geglu";
      expect_close(f.out, out, 1e-5, name);
      expect_close(f.grads[0], dx, 1e-5, name);
    }
}

// Tolerance 1e-5: the gate logit (G terms) and dg = dout_t . x_{t-1} (C terms) are float dot products, whose
// rounding error is at most ~C eps = 1.1e-5 of the sum of |terms| (typically sqrt(C) eps, ~1e-6); dw and dlam
// add float per-row terms in double. Shapes: several 32-row chunks that straddle sequence boundaries, G < C and
// G = C.
TEST(VariantOpsFast, SmearMatchesReference) {
  struct Shape {
    int64_t B, T, C, G;
  };
  for (Shape s : {Shape{3, 67, 96, 24}, Shape{2, 5, 7, 7}, Shape{4, 1, 8, 3}}) {
    const int64_t B = s.B, T = s.T, C = s.C, G = s.G;
    FVec x = randf(B * T * C, 5), w = randf(G, 6, 0.3f), lam = {0.7f}, Gf = randf(B * T * C, 7);
    OpRun f = run_op({x, w, lam}, {{B, T, C}, {1, G}, {1}}, Gf, [&](Tape& t, const Vars& in) {
      return smear(t, in[0], in[1], in[2], B, T);
    });
    Vec xd = to_d(x), wd = to_d(w), Gd = to_d(Gf), out(x.size()), dx(x.size(), 0), dw(G, 0), dl(1, 0);
    ref::smear_forward(out.data(), xd.data(), wd.data(), double{lam[0]}, B, T, C, G);
    ref::smear_backward(dx.data(), dw.data(), dl.data(), Gd.data(), xd.data(), wd.data(), double{lam[0]}, B, T, C, G);
    expect_close(f.out, out, 1e-5, "smear out");
    expect_close(f.grads[0], dx, 1e-5, "smear dx");
    expect_close(f.grads[1], dw, 1e-5, "smear dw");
    expect_close(f.grads[2], dl, 1e-5, "smear dlam");
  }
}

// Tolerance 1e-6: out and the vector gradients are 1-2 float roundings; ds sums float products in double. Also
// the case where a and b are one tensor (x - lambda x): its gradient is the sum of both paths.
TEST(VariantOpsFast, AxpyMatchesReference) {
  const int64_t n = 70001;
  for (bool same : {false, true}) {
    FVec a = randf(n, 8), b = same ? a : randf(n, 9), s = {0.3f, 0.8f}, G = randf(n, 10);
    std::vector<FVec> vals = same ? std::vector<FVec>{a, s} : std::vector<FVec>{a, b, s};
    std::vector<std::vector<int64_t>> shapes = same ? std::vector<std::vector<int64_t>>{{n}, {2}}
                                                    : std::vector<std::vector<int64_t>>{{n}, {n}, {2}};
    OpRun f = run_op(vals, shapes, G, [&](Tape& t, const Vars& in) {
      return same ? axpy(t, in[0], in[0], in[1], 1, -1.f) : axpy(t, in[0], in[1], in[2], 1, -1.f);
    });
    Vec ad = to_d(a), bd = to_d(b), Gd = to_d(G), out(n), da(n, 0), db(n, 0), ds(2, 0);
    ref::axpy_forward(out.data(), ad.data(), bd.data(), -1.0, double{s[1]}, n);
    ref::axpy_backward(da.data(), db.data(), &ds[1], Gd.data(), bd.data(), -1.0, double{s[1]}, n);
    expect_close(f.out, out, 1e-6, "axpy out");
    if (same) {
      for (int64_t k = 0; k < n; k++) da[k] += db[k];
      expect_close(f.grads[0], da, 1e-6, "axpy d(a = b)");
    } else {
      expect_close(f.grads[0], da, 1e-6, "axpy da");
      expect_close(f.grads[1], db, 1e-6, "axpy db");
    }
    expect_close(f.grads.back(), ds, 1e-6, "axpy ds");
  }
}

// The forward is a copy (exact); dk adds at most two float gradients (one rounding): tolerance 1e-6.
TEST(VariantOpsFast, KeyShiftMatchesReference) {
  const int64_t H = 3, D = 16;
  for (int64_t T : {9, 1})
    for (int64_t p0 : {0, 3, 8}) {
      const int64_t B = 2, n = B * T * H * D;
      FVec k = randf(n, 11), G = randf(n, 12);
      OpRun f = run_op({k}, {{B, T, H, D}}, G, [&](Tape& t, const Vars& in) { return key_shift(t, in[0], p0); });
      Vec kd = to_d(k), Gd = to_d(G), out(n), dk(n, 0);
      ref::key_shift_forward(out.data(), kd.data(), B, T, H, D, p0);
      ref::key_shift_backward(dk.data(), Gd.data(), B, T, H, D, p0);
      expect_close(f.out, out, 0.0, "key_shift out");
      expect_close(f.grads[0], dk, 1e-6, "key_shift dk");
    }
}

// The parameter gradients are per-chunk partials summed in chunk order: bit-identical for 1, 2 and 3 threads.
TEST(VariantOpsFast, SmearAndAxpyAreThreadCountIndependent) {
  const int64_t B = 4, T = 100, C = 48, G = 24, n = B * T * C;
  FVec x = randf(n, 13), w = randf(G, 14, 0.3f), lam = {0.6f}, s = {0.9f}, Gf = randf(n, 15);
  const int saved = omp_get_max_threads();
  std::vector<OpRun> runs;
  for (int th : {1, 2, 3}) {
    omp_set_num_threads(th);
    OpRun r = run_op({x, w, lam}, {{B * T, C}, {1, G}, {1}}, Gf, [&](Tape& t, const Vars& in) {
      return smear(t, in[0], in[1], in[2], B, T);
    });
    OpRun a = run_op({x, Gf, s}, {{n}, {n}, {1}}, Gf, [&](Tape& t, const Vars& in) {
      return axpy(t, in[0], in[1], in[2], 0, -1.f);
    });
    r.grads.insert(r.grads.end(), a.grads.begin(), a.grads.end());
    runs.push_back(r);
  }
  omp_set_num_threads(saved);
  for (int i = 1; i < 3; i++) {
    EXPECT_EQ(runs[i].out, runs[0].out);
    EXPECT_EQ(runs[i].grads, runs[0].grads) << i + 1 << " threads";
  }
}
