// Op-test harness, backward mode: every reference kernel's backward against central finite differences in double
// precision, on random shapes including odd sizes. Loss L = sum(out * G) for a random G, so dout = G.
// Tolerance: max |analytic - numeric| <= 1e-6 * max(1, max |numeric|) (step h = 1e-5; the FD truncation error is
// ~h^2 = 1e-10 and rounding ~1e-16/h = 1e-11).
#include <functional>
#include <random>

#include "reference/attention.h"
#include "reference/cross_entropy.h"
#include "reference/matmul.h"
#include "reference/relu2.h"
#include "reference/rmsnorm.h"
#include "reference/rope.h"
#include "grad_check.h"
#include "test_util.h"

using namespace frontier;
using namespace frontier::testing;


TEST(OpsBackward, Matmul) {
  std::mt19937 rng(1);
  // Plain ints, not structured bindings: clang 14 (the sanitizer build) cannot capture bindings in lambdas.
  for (auto mkn : {std::tuple{3, 5, 4}, {1, 7, 3}, {6, 2, 9}}) {
    const int M = std::get<0>(mkn), K = std::get<1>(mkn), N = std::get<2>(mkn);
    Vec x = randn(M * K, rng), W = randn(N * K, rng), G = randn(M * N, rng), out(M * N);
    auto loss = [&] {
      ref::matmul_forward(out.data(), x.data(), W.data(), M, K, N);
      return dot(out, G);
    };
    auto grads = [&] {
      Vec dx(M * K, 0), dW(N * K, 0);
      ref::matmul_backward(dx.data(), dW.data(), G.data(), x.data(), W.data(), M, K, N);
      return std::vector<Vec>{dx, dW};
    };
    check_grads({&x, &W}, loss, grads, "matmul");
  }
}

TEST(OpsBackward, RmsNorm) {
  std::mt19937 rng(2);
  for (auto nc : {std::pair{3, 8}, {5, 2}, {2, 33}}) {
    const int N = nc.first, C = nc.second;  // not bindings: see Matmul
    Vec x = randn(N * C, rng), G = randn(N * C, rng), out(N * C), r(N);
    auto loss = [&] {
      ref::rmsnorm_forward(out.data(), r.data(), x.data(), N, C, 1e-6);
      return dot(out, G);
    };
    auto grads = [&] {
      loss();
      Vec dx(N * C, 0);
      ref::rmsnorm_backward(dx.data(), G.data(), x.data(), r.data(), N, C);
      return std::vector<Vec>{dx};
    };
    check_grads({&x}, loss, grads, "rmsnorm");
  }
}

TEST(OpsBackward, Rope) {
  std::mt19937 rng(3);
  int B = 2, T = 5, H = 3, D = 8;
  Vec cs(T * D / 2), sn(T * D / 2);
  ref::rope_tables(cs.data(), sn.data(), T, D, 100000.0);
  EXPECT_DOUBLE_EQ(cs[0], 1.0);  // position 0 is the identity
  Vec x = randn(B * T * H * D, rng), G = randn(x.size(), rng), out(x.size());
  auto loss = [&] {
    ref::rope_forward(out.data(), x.data(), cs.data(), sn.data(), B, T, H, D);
    return dot(out, G);
  };
  auto grads = [&] {
    Vec dx(x.size(), 0);
    ref::rope_backward(dx.data(), G.data(), cs.data(), sn.data(), B, T, H, D);
    return std::vector<Vec>{dx};
  };
  check_grads({&x}, loss, grads, "rope");
  loss();
  EXPECT_NEAR(dot(out, out), dot(x, x), 1e-9);  // a rotation keeps norms
}

TEST(OpsBackward, Relu2) {
  std::mt19937 rng(4);
  Vec x = randn(50, rng), G = randn(50, rng), out(50);
  for (auto& v : x)
    if (std::abs(v) < 1e-3) v = 0.5;  // keep away from the kink at 0
  auto loss = [&] {
    ref::relu2_forward(out.data(), x.data(), 50);
    return dot(out, G);
  };
  auto grads = [&] {
    Vec dx(50, 0);
    ref::relu2_backward(dx.data(), G.data(), x.data(), 50);
    return std::vector<Vec>{dx};
  };
  check_grads({&x}, loss, grads, "relu2");
}

TEST(OpsBackward, SoftcapCrossEntropy) {
  std::mt19937 rng(5);
  int N = 6, V = 11;
  Vec z = randn(N * V, rng, 10.0);  // large logits, so the softcap matters
  std::vector<int32_t> tgt = {3, -1, 0, 10, 7, -1};
  auto loss = [&] { return ref::softcap_ce_forward<double>(nullptr, z.data(), tgt.data(), N, V, 15.0); };
  auto grads = [&] {
    Vec dz(N * V, 0);
    ref::softcap_ce_backward<double>(dz.data(), 1.0, z.data(), tgt.data(), N, V, 15.0);
    return std::vector<Vec>{dz};
  };
  check_grads({&z}, loss, grads, "softcap_ce");
  // Uniform logits: loss = log V exactly.
  Vec zero(N * V, 0.0);
  EXPECT_NEAR(ref::softcap_ce_forward<double>(nullptr, zero.data(), tgt.data(), N, V, 15.0), std::log(11.0), 1e-12);
}

TEST(OpsBackward, CausalAttentionWithGqa) {
  std::mt19937 rng(6);
  for (auto heads : {std::pair{2, 2}, {4, 2}}) {
    const int H = heads.first, Hkv = heads.second;  // not bindings: see Matmul
    int B = 2, T = 5, D = 4;
    Vec q = randn(B * T * H * D, rng), k = randn(B * T * Hkv * D, rng), v = randn(B * T * Hkv * D, rng);
    Vec G = randn(q.size(), rng), out(q.size()), att(B * H * T * T);
    auto loss = [&] {
      ref::attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D);
      return dot(out, G);
    };
    auto grads = [&] {
      loss();
      Vec dq(q.size(), 0), dk(k.size(), 0), dv(v.size(), 0);
      ref::attention_backward(dq.data(), dk.data(), dv.data(), G.data(), att.data(), q.data(), k.data(), v.data(),
                              B, T, H, Hkv, D);
      return std::vector<Vec>{dq, dk, dv};
    };
    check_grads({&q, &k, &v}, loss, grads, "attention");
    // Causality: the first position attends only to itself, so out[t=0] = v[t=0].
    loss();
    for (int d = 0; d < D; d++) EXPECT_NEAR(out[d], v[d], 1e-12);
  }
}

TEST(OpsBackward, SlidingWindowAttentionWithScale) {
  std::mt19937 rng(7);
  // Windows 1 and 3 mask keys on long rows (T = 7); 6 = T - 1 and 9 >= T are full causal. Scale 0.7, not 1/sqrt(D).
  for (int window : {1, 3, 6, 9}) {
    const int B = 2, T = 7, H = 4, Hkv = 2, D = 3;
    const double scale = 0.7;
    Vec q = randn(B * T * H * D, rng), k = randn(B * T * Hkv * D, rng), v = randn(B * T * Hkv * D, rng);
    Vec G = randn(q.size(), rng), out(q.size()), att(B * H * T * T);
    auto loss = [&] {
      ref::attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D, scale, window);
      return dot(out, G);
    };
    auto grads = [&] {
      loss();
      Vec dq(q.size(), 0), dk(k.size(), 0), dv(v.size(), 0);
      ref::attention_backward(dq.data(), dk.data(), dv.data(), G.data(), att.data(), q.data(), k.data(), v.data(),
                              B, T, H, Hkv, D, scale, window);
      return std::vector<Vec>{dq, dk, dv};
    };
    check_grads({&q, &k, &v}, loss, grads, "windowed attention");
    // Window 1: the last query (b 0, head 0) averages keys T-2 and T-1 only, with weights softmax(scale * q.k).
    if (window == 1) {
      loss();
      const double* qt = &q[((T - 1) * H) * D];
      const double* k1 = &k[((T - 2) * Hkv) * D];
      const double* k2 = &k[((T - 1) * Hkv) * D];
      double s1 = 0, s2 = 0;
      for (int d = 0; d < D; d++) {
        s1 += qt[d] * k1[d] * scale;
        s2 += qt[d] * k2[d] * scale;
      }
      const double w1 = 1 / (1 + std::exp(s2 - s1));
      for (int d = 0; d < D; d++) {
        const double want = w1 * v[((T - 2) * Hkv) * D + d] + (1 - w1) * v[((T - 1) * Hkv) * D + d];
        EXPECT_NEAR(out[((T - 1) * H) * D + d], want, 1e-12);
      }
    }
  }
}
