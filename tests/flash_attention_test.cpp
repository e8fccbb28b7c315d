// The tiled attention kernel vs the reference kernel (reference/attention.h, run in double): forward outputs and all
// three gradients, on shapes with partial query blocks (T not a multiple of 64), GQA and T = 1. Tolerance 2e-5
// absolute on values and gradients of order 1 in fp32. In bf16 (every product's operands rounded to bf16: relative
// error 2^-9 per operand, so ~4e-3 on a product, and more through exp(S) when |S| ~ 10 here): 4e-2 absolute, and the
// result must differ from fp32 (bf16 really ran).
//
// Sliding windows (SlidingWindow*): windows around the 24-row strip, the 192-row query block, 96 and the packed
// layout's 16/32-key granule (1, 7, 23-25, 95-97, 191-193, 200, >= T), T from 1 to 700 (one partial block to four), GQA and not, scale 1/sqrt(D) and
// 1.44/sqrt(D), each in fp32 at 2e-5 and in bf16 at 4e-2: the window changes which products run, not their size,
// and a narrower softmax (down to 2 keys at W = 1) averages fewer rounded terms, so it cannot be looser than the full
// causal case's bound above; the larger scale makes |S| at most 1.44 times larger (|S| ~ 2 here, |S| ~ 10 above).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/attention.h"
#include "reference/attention.h"

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

// The fast kernel's out, dq, dk, dv (in that order, concatenated) for float inputs.
std::vector<float> run_fast(const Shape& s, const std::vector<float>& q, const std::vector<float>& k,
                            const std::vector<float>& v, const std::vector<float>& go, Precision prec,
                            float scale = 0.f, int64_t window = 0, bool pass_scale_window = true) {
  const int64_t nq = s.B * s.T * s.H * s.D, nk = s.B * s.T * s.Hkv * s.D;
  std::vector<float> o(nq), lse(s.B * s.H * s.T), dq(nq, 0.f), dk(nk, 0.f), dv(nk, 0.f);
  if (pass_scale_window) {
    flash_attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv, s.D, prec,
                            scale, window);
    flash_attention_backward(dq.data(), dk.data(), dv.data(), go.data(), o.data(), lse.data(), q.data(), k.data(),
                             v.data(), s.B, s.T, s.H, s.Hkv, s.D, prec, scale, window);
  } else {  // today's call, without the two parameters
    flash_attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv, s.D, prec);
    flash_attention_backward(dq.data(), dk.data(), dv.data(), go.data(), o.data(), lse.data(), q.data(), k.data(),
                             v.data(), s.B, s.T, s.H, s.Hkv, s.D, prec);
  }
  std::vector<float> r;
  for (auto* x : {&o, &lse, &dq, &dk, &dv}) r.insert(r.end(), x->begin(), x->end());
  return r;
}

// Fast vs reference (in double) at every precision in precs, for one shape, scale (0: 1/sqrt(D)) and window.
void check(const Shape& s, std::vector<Precision> precs, double scale = 0, int64_t window = 0) {
  const int64_t nq = s.B * s.T * s.H * s.D, nk = s.B * s.T * s.Hkv * s.D;
  auto q = rand_vec<double>(nq, 1, 2.0), k = rand_vec<double>(nk, 2, 2.0), v = rand_vec<double>(nk, 3);
  auto go = rand_vec<double>(nq, 4);
  std::vector<double> out(nq), att(s.B * s.H * s.T * s.T), dq(nq), dk(nk), dv(nk);
  ref::attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv, s.D, scale,
                         window);
  ref::attention_backward(dq.data(), dk.data(), dv.data(), go.data(), att.data(), q.data(), k.data(), v.data(), s.B,
                          s.T, s.H, s.Hkv, s.D, scale, window);
  auto f = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
  auto qf = f(q), kf = f(k), vf = f(v), gf = f(go);
  for (Precision prec : precs) {
    const std::vector<float> got = run_fast(s, qf, kf, vf, gf, prec, static_cast<float>(scale), window);
    const bool bf16 = prec == Precision::kBf16;
    size_t at = 0;
    auto cmp = [&](const char* what, const std::vector<double>& want, size_t skip) {
      at += skip;
      double mx = 0;
      for (size_t i = 0; i < want.size(); i++) mx = std::max(mx, std::fabs(got[at + i] - want[i]));
      at += want.size();
      EXPECT_LT(mx, bf16 ? 4e-2 : 2e-5) << what << " T=" << s.T << " H=" << s.H << " Hkv=" << s.Hkv << " D=" << s.D
                                        << " scale=" << scale << " window=" << window << " "
                                        << precision_name(prec);
      if (bf16 && s.T > 1) {
        EXPECT_GT(mx, 1e-6) << what << ": bf16 gave fp32's numbers";
      }
    };
    cmp("out", out, 0);
    cmp("dq", dq, s.B * s.H * s.T);  // after lse
    cmp("dk", dk, 0);
    cmp("dv", dv, 0);
  }
}

TEST(FlashAttention, MatchesReferenceForwardAndBackward) {
  for (Shape s : {Shape{2, 70, 4, 2, 16}, Shape{1, 130, 2, 2, 32}, Shape{1, 1, 2, 1, 8}, Shape{3, 64, 1, 1, 128},
                  Shape{1, 200, 6, 3, 24}})
    check(s, {Precision::kFp32});
}

TEST(FlashAttention, Bf16MatchesReferenceWithinBf16Rounding) {
  for (Shape s : {Shape{2, 70, 4, 2, 16}, Shape{1, 130, 2, 2, 32}, Shape{1, 1, 2, 1, 8}, Shape{1, 200, 6, 3, 24}})
    check(s, {Precision::kBf16});
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

TEST(FlashAttention, SlidingWindowMatchesReference) {
  const int64_t D = 24;
  for (int64_t T : {1, 5, 96, 193, 300, 700})
    for (auto heads : {std::pair<int64_t, int64_t>{4, 2}, {3, 3}})
      for (double scale : {0.0, 1.44 / std::sqrt(static_cast<double>(D))})
        for (int64_t window : {0, 1, 7, 23, 24, 25, 95, 96, 97, 191, 192, 193, 200, 700})  // 700 >= every T here
          check(Shape{1, T, heads.first, heads.second, D}, {Precision::kFp32, Precision::kBf16}, scale, window);
}

TEST(FlashAttention, SlidingWindowOddHeadDimAndBatch) {
  // D = 9: the packed K^T panels are 9 (fp32) or 10 (bf16 pairs) deep, so the key offsets' 64-byte alignment
  // rests on the 16-key granule, not on D.
  for (int64_t window : {1, 33, 130})
    check(Shape{2, 333, 4, 1, 9}, {Precision::kFp32, Precision::kBf16}, 0.3, window);
}

TEST(FlashAttention, FullWindowAndDefaultScaleAreBitIdenticalToTheDefaultCall) {
  const Shape s{2, 300, 4, 2, 32};
  const int64_t nq = s.B * s.T * s.H * s.D, nk = s.B * s.T * s.Hkv * s.D;
  auto q = rand_vec<float>(nq, 9), k = rand_vec<float>(nk, 10), v = rand_vec<float>(nk, 11);
  auto go = rand_vec<float>(nq, 12);
  const float default_scale = 1.f / std::sqrt(static_cast<float>(s.D));
  for (Precision prec : {Precision::kFp32, Precision::kBf16}) {
    const std::vector<float> today = run_fast(s, q, k, v, go, prec, 0.f, 0, false);
    for (int64_t window : {int64_t{0}, s.T - 1, s.T, s.T + 5, int64_t{1} << 40})
      EXPECT_EQ(run_fast(s, q, k, v, go, prec, 0.f, window), today) << "window " << window << precision_name(prec);
    EXPECT_EQ(run_fast(s, q, k, v, go, prec, default_scale, 0), today) << precision_name(prec);
  }
}

TEST(FlashAttention, SlidingWindowThreadCountDoesNotChangeBits) {
  const Shape s{2, 400, 4, 2, 32};
  const int64_t nq = s.B * s.T * s.H * s.D, nk = s.B * s.T * s.Hkv * s.D;
  auto q = rand_vec<float>(nq, 5), k = rand_vec<float>(nk, 6), v = rand_vec<float>(nk, 7);
  auto go = rand_vec<float>(nq, 8);
  const int saved = omp_get_max_threads();
  for (Precision prec : {Precision::kFp32, Precision::kBf16}) {
    omp_set_num_threads(1);
    const std::vector<float> one = run_fast(s, q, k, v, go, prec, 0.2f, 100);
    omp_set_num_threads(2);
    EXPECT_EQ(run_fast(s, q, k, v, go, prec, 0.2f, 100), one) << precision_name(prec);
  }
  omp_set_num_threads(saved);
}

// The kernel skips key blocks that no query row of a block sees (O(T W), not O(T^2)), which timing would show and
// a test must not assert; NaN shows it instead: masking alone would multiply the NaN keys by zero probabilities and
// spread NaN, skipping never reads them. Key 0 is NaN in k and v; with W = 97, query rows from T / 2 on (their
// blocks start far past key 0) and their keys' gradients must stay finite.
TEST(FlashAttention, SlidingWindowNeverReadsKeysOutsideTheBand) {
  const Shape s{1, 700, 4, 2, 24};
  const int64_t nq = s.B * s.T * s.H * s.D, nk = s.B * s.T * s.Hkv * s.D, W = 97;
  auto q = rand_vec<float>(nq, 13), k = rand_vec<float>(nk, 14), v = rand_vec<float>(nk, 15);
  auto go = rand_vec<float>(nq, 16);
  for (int64_t i = 0; i < s.Hkv * s.D; i++) k[i] = v[i] = NAN;  // key 0 of every kv head
  for (Precision prec : {Precision::kFp32, Precision::kBf16}) {
    const std::vector<float> r = run_fast(s, q, k, v, go, prec, 0.f, W);
    const float *o = r.data(), *dq = o + nq + s.H * s.T, *dk = dq + nq, *dv = dk + nk;
    auto finite_from_half = [&](const float* x, int64_t row, const char* what) {
      int64_t bad = 0;
      for (int64_t i = s.T / 2 * row; i < s.T * row; i++) bad += !std::isfinite(x[i]);
      EXPECT_EQ(bad, 0) << what << " " << precision_name(prec);
    };
    finite_from_half(o, s.H * s.D, "out");
    finite_from_half(dq, s.H * s.D, "dq");
    finite_from_half(dk, s.Hkv * s.D, "dk");
    finite_from_half(dv, s.Hkv * s.D, "dv");
    EXPECT_FALSE(std::isfinite(o[0])) << "query 0 sees key 0";
  }
}

}  // namespace
}  // namespace frontier
