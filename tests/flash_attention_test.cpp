// The tiled attention kernel vs the reference kernel (ops/attention.h, run in double): forward outputs and all
// three gradients, on shapes with partial query blocks (T not a multiple of 64), GQA and T = 1. Tolerance 2e-5
// absolute on values and gradients of order 1 in fp32. In bf16 (every product's operands rounded to bf16: relative
// error 2^-9 per operand, so ~4e-3 on a product, and more through exp(S) when |S| ~ 10 here): 4e-2 absolute, and the
// result must differ from fp32 (bf16 really ran).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/attention.h"
#include "ops/attention.h"

namespace frontier {
namespace {

template <typename T>
std::vector<T> rand_vec(size_t n, uint32_t seed, double scale = 1.0) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(-scale, scale);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(g));
  return v;
}

struct Shape {
  int64_t B, T, H, Hkv, D;
};

void check(const Shape& s, Precision prec = Precision::kFp32) {
  const int64_t nq = s.B * s.T * s.H * s.D, nk = s.B * s.T * s.Hkv * s.D;
  auto q = rand_vec<double>(nq, 1, 2.0), k = rand_vec<double>(nk, 2, 2.0), v = rand_vec<double>(nk, 3);
  auto go = rand_vec<double>(nq, 4);
  std::vector<double> out(nq), att(s.B * s.H * s.T * s.T), dq(nq), dk(nk), dv(nk);
  ref::attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv, s.D);
  ref::attention_backward(dq.data(), dk.data(), dv.data(), go.data(), att.data(), q.data(), k.data(), v.data(), s.B,
                          s.T, s.H, s.Hkv, s.D);
  auto f = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
  auto qf = f(q), kf = f(k), vf = f(v), gf = f(go);
  std::vector<float> o(nq), lse(s.B * s.H * s.T), dqf(nq, 0.f), dkf(nk, 0.f), dvf(nk, 0.f);
  flash_attention_forward(o.data(), lse.data(), qf.data(), kf.data(), vf.data(), s.B, s.T, s.H, s.Hkv, s.D, prec);
  flash_attention_backward(dqf.data(), dkf.data(), dvf.data(), gf.data(), o.data(), lse.data(), qf.data(), kf.data(),
                           vf.data(), s.B, s.T, s.H, s.Hkv, s.D, prec);
  const bool bf16 = prec == Precision::kBf16;
  auto cmp = [&](const char* what, const std::vector<float>& got, const std::vector<double>& want) {
    double mx = 0;
    for (size_t i = 0; i < got.size(); i++) mx = std::max(mx, std::fabs(got[i] - want[i]));
    EXPECT_LT(mx, bf16 ? 4e-2 : 2e-5) << what << " T=" << s.T << " H=" << s.H << " Hkv=" << s.Hkv << " "
                                      << precision_name(prec);
    if (bf16 && s.T > 1) EXPECT_GT(mx, 1e-6) << what << ": bf16 gave fp32's numbers";
  };
  cmp("out", o, out);
  cmp("dq", dqf, dq);
  cmp("dk", dkf, dk);
  cmp("dv", dvf, dv);
}

TEST(FlashAttention, MatchesReferenceForwardAndBackward) {
  for (Shape s : {Shape{2, 70, 4, 2, 16}, Shape{1, 130, 2, 2, 32}, Shape{1, 1, 2, 1, 8}, Shape{3, 64, 1, 1, 128},
                  Shape{1, 200, 6, 3, 24}})
    check(s);
}

TEST(FlashAttention, Bf16MatchesReferenceWithinBf16Rounding) {
  for (Shape s : {Shape{2, 70, 4, 2, 16}, Shape{1, 130, 2, 2, 32}, Shape{1, 1, 2, 1, 8}, Shape{1, 200, 6, 3, 24}})
    check(s, Precision::kBf16);
}

TEST(FlashAttention, ThreadCountDoesNotChangeBits) {
  const Shape s{2, 150, 4, 2, 32};
  const int64_t nq = s.B * s.T * s.H * s.D, nk = s.B * s.T * s.Hkv * s.D;
  auto q = rand_vec<float>(nq, 5), k = rand_vec<float>(nk, 6), v = rand_vec<float>(nk, 7), go = rand_vec<float>(nq, 8);
  for (Precision prec : {Precision::kFp32, Precision::kBf16}) {
  std::vector<float> res[2];
  int saved = omp_get_max_threads();
  for (int th : {1, 2}) {
    omp_set_num_threads(th);
    std::vector<float> o(nq), lse(s.B * s.H * s.T), dq(nq, 0.f), dk(nk, 0.f), dv(nk, 0.f);
    flash_attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv, s.D, prec);
    flash_attention_backward(dq.data(), dk.data(), dv.data(), go.data(), o.data(), lse.data(), q.data(), k.data(),
                             v.data(), s.B, s.T, s.H, s.Hkv, s.D, prec);
    auto& r = res[th - 1];
    for (auto* x : {&o, &dq, &dk, &dv}) r.insert(r.end(), x->begin(), x->end());
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(res[0], res[1]) << precision_name(prec);
  }
}

}  // namespace
}  // namespace frontier
