// Embedding and loss variants (autograd/embed_ops.cpp): hashed n-gram embedding and the multi-token
// prediction loss. Reference kernels against central finite differences in double (the check_grads of
// ops_test.cpp, same tolerance: 1e-6 relative, h = 1e-5); fast kernels (through the autograd ops) against the
// reference in float, at 1, 2 and 3 threads with bitwise-equal results; one target at weight 1 against
// softcap_cross_entropy, bit for bit; the n-gram hash against its PyTorch twin python/frontier_ngram.py,
// exactly.
#include <omp.h>

#include <cstring>
#include <functional>
#include <random>

#include "autograd/tape.h"
#include "reference/cross_entropy.h"
#include "reference/ngram.h"
#include "reference/softcap_ce_multi.h"
#include "grad_check.h"
#include "test_util.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

namespace {


std::vector<float> to_float(const Vec& v) {
  return std::vector<float>(v.begin(), v.end());
}

std::vector<int32_t> rand_ids(size_t n, int32_t hi, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> d(0, hi - 1);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}



bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Runs every recorded backward closure from `from` down, with d out seeded by the caller (out need not be
// scalar).
void replay_backward(Tape& t, Var from) {
  for (int i = from.id; i >= 0; i--)
    if (t.node({i}).backward && t.node({i}).grad) t.node({i}).backward();
}

// Sets the thread count for a scope.
struct Threads {
  int saved = omp_get_max_threads();
  explicit Threads(int n) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(saved); }
};

// K targets for N rows over V classes, about a fifth ignored, plus one k with every row ignored when
// all_ignored.
std::vector<std::vector<int32_t>> rand_targets(int K, int64_t N, int32_t V, std::mt19937& rng,
                                               bool all_ignored) {
  std::vector<std::vector<int32_t>> tg(K);
  std::uniform_int_distribution<int32_t> d(-V / 4, V - 1);
  for (int k = 0; k < K; k++)
    for (int64_t i = 0; i < N; i++) tg[k].push_back(all_ignored && k == K - 1 ? -1 : std::max(d(rng), -1));
  return tg;
}

std::vector<const int32_t*> pointers(const std::vector<std::vector<int32_t>>& tg) {
  std::vector<const int32_t*> p;
  for (const auto& v : tg) p.push_back(v.data());
  return p;
}

}  // namespace

TEST(EmbedOpsBackward, NgramEmbedding) {
  std::mt19937 rng(11);
  const int B = 2, T = 7, C = 3;
  const int64_t buckets = 5;  // fewer buckets than n-grams: collisions accumulate
  for (int n : {1, 2, 3}) {
    std::vector<int32_t> idx = rand_ids(B * T, 9, rng);
    Vec table = randn(buckets * C, rng), G = randn(B * T * C, rng), out(B * T * C);
    auto loss = [&] {
      ref::ngram_embedding_forward(out.data(), table.data(), idx.data(), B, T, n, buckets, C);
      return dot(out, G);
    };
    auto grads = [&] {
      Vec dt(buckets * C, 0);
      ref::ngram_embedding_backward(dt.data(), G.data(), idx.data(), B, T, n, buckets, C);
      return std::vector<Vec>{dt};
    };
    check_grads({&table}, loss, grads, "ngram_embedding");
    loss();
    for (int b = 0; b < B; b++)  // no complete n-gram before position n-1: zero rows
      for (int t = 0; t < n - 1; t++)
        for (int c = 0; c < C; c++) EXPECT_EQ(out[(b * T + t) * C + c], 0.0);
  }
}

TEST(EmbedOpsBackward, NgramBucketByHand) {
  // n = 1, id 0: h = (0 ^ 1) * 0x100000001B3 = 2^40 + 435; h >> 17 = 2^23 = 8388608; % 1000 = 608.
  const int32_t id0 = 0;
  EXPECT_EQ(ngram_bucket(&id0, 1, 1000), 608);
  EXPECT_EQ(ngram_bucket(&id0, 1, int64_t{1} << 30), 8388608);
}

TEST(EmbedOpsBackward, SoftcapCeMulti) {
  std::mt19937 rng(12);
  const int N = 6, V = 11, K = 3;
  for (double cap : {15.0, 0.0}) {
    Vec z = randn(N * V, rng, 10.0);  // large logits, so the softcap matters
    auto tg = rand_targets(K, N, V, rng, false);
    tg[0][1] = -1, tg[2][4] = -1;  // some ignored rows for sure
    auto tp = pointers(tg);
    Vec w = {1.0, 0.5, -0.25};
    auto loss = [&] {
      return ref::softcap_ce_multi_forward<double>(nullptr, z.data(), tp.data(), w.data(), K, N, V, cap);
    };
    auto grads = [&] {
      Vec dz(N * V, 0);
      ref::softcap_ce_multi_backward<double>(dz.data(), 1.0, z.data(), tp.data(), w.data(), K, N, V, cap);
      return std::vector<Vec>{dz};
    };
    check_grads({&z}, loss, grads, cap > 0 ? "softcap_ce_multi cap 15" : "softcap_ce_multi cap 0");
    if (cap > 0) {  // one target at weight 1 is the plain softcapped cross-entropy
      Vec l1(N), l2(N), one = {1.0};
      double a =
          ref::softcap_ce_multi_forward<double>(l1.data(), z.data(), tp.data(), one.data(), 1, N, V, cap);
      double b = ref::softcap_ce_forward<double>(l2.data(), z.data(), tg[0].data(), N, V, cap);
      EXPECT_NEAR(a, b, 1e-12);
      for (int i = 0; i < N; i++) EXPECT_NEAR(l1[i], l2[i], 1e-12);
    }
  }
}

// The fast kernels' n-gram embedding is a copy and a scatter-add in the reference's order: equal bit for bit,
// at any thread count. C = 70 crosses the backward's 64-column blocks; 17 buckets for ~100 n-grams make long
// runs.
TEST(EmbedOpsFast, NgramEmbeddingMatchesReference) {
  std::mt19937 rng(13);
  const int64_t B = 3, T = 33, C = 70, buckets = 17;
  for (int n : {1, 2, 3}) {
    std::vector<int32_t> idx = rand_ids(B * T, 50, rng);
    std::vector<float> table = to_float(randn(buckets * C, rng)), G = to_float(randn(B * T * C, rng));
    std::vector<float> dt0 = to_float(randn(buckets * C, rng));  // backward accumulates onto this
    std::vector<float> want(B * T * C), dwant = dt0;
    ref::ngram_embedding_forward(want.data(), table.data(), idx.data(), B, T, n, buckets, C);
    ref::ngram_embedding_backward(dwant.data(), G.data(), idx.data(), B, T, n, buckets, C);
    for (int th : {1, 2, 3}) {
      Threads scope(th);
      std::vector<float> dt = dt0;
      Tape t;
      Var W = t.param(table.data(), dt.data(), {buckets, C});
      Var out = ngram_embedding(t, idx.data(), B, T, n, buckets, W);
      ASSERT_EQ(t.shape(out), (std::vector<int64_t>{B * T, C}));
      std::vector<float> got(t.value(out), t.value(out) + B * T * C);
      std::copy(G.begin(), G.end(), t.grad(out));
      replay_backward(t, out);
      EXPECT_TRUE(same_bits(got, want)) << "forward, n " << n << ", " << th << " threads";
      EXPECT_TRUE(same_bits(dt, dwant)) << "backward, n " << n << ", " << th << " threads";
    }
  }
}

// Fast (float, libmvec exp/tanh, lse without a max pass when capped) against the reference in double on the
// same float inputs. Tolerances, relative to the largest magnitude: 1e-6 for the losses, 5e-6 for dz. Each
// float operation rounds by 2^-24 = 6e-8 (exp/tanh by 1-4 ulp), and the lse sums 301 positive terms in 8
// lanes, so the losses are good to ~1e-7 (measured 2e-8 capped, 5e-8 at cap 0). dz is looser: p = exp(c -
// lse) turns lse's absolute rounding error (one ulp of lse ~ 25-35 nats for logits of scale 8 is 2-4e-6) into
// a relative one (measured 1.3e-7 capped, 8e-7 at cap 0). Both still catch a missing term (1/V = 3e-3) or a
// wrong weight. Results are bitwise equal at 1, 2 and 3 threads.
TEST(EmbedOpsFast, SoftcapCeMultiMatchesReference) {
  std::mt19937 rng(14);
  const int64_t N = 37, V = 301;
  const int K = 3;
  for (float cap : {15.f, 0.f}) {
    Vec zd = randn(N * V, rng, 8.0);
    std::vector<float> z = to_float(zd);
    zd.assign(z.begin(), z.end());  // the reference sees the same (float) values
    auto tg = rand_targets(K, N, static_cast<int32_t>(V), rng, true);  // k = 2 ignores every row: adds 0
    auto tp = pointers(tg);
    std::vector<float> w = {1.f, 0.5f, 0.25f};
    Vec wd(w.begin(), w.end()), lwant(N), dwant(N * V, 0.0);
    const double want =
        ref::softcap_ce_multi_forward<double>(lwant.data(), zd.data(), tp.data(), wd.data(), K, N, V, cap);
    ref::softcap_ce_multi_backward<double>(dwant.data(), 0.5, zd.data(), tp.data(), wd.data(), K, N, V, cap);
    std::vector<float> first_dz, first_l;
    for (int th : {1, 2, 3}) {
      Threads scope(th);
      std::vector<float> zv = z, dz(N * V, 0.f), rl(N);
      Tape t;
      Var Z = t.param(zv.data(), dz.data(), {N, V});
      Var loss = softcap_ce_multi(t, Z, tp, w, cap, rl.data());
      const float got = t.value(loss)[0];
      t.backward(loss, 0.5f);
      EXPECT_LE(std::abs(got - want), 1e-6 * std::max(1.0, std::abs(want))) << "loss, cap " << cap;
      double err = 0, mx = 0, lerr = 0, lmx = 0;
      for (int64_t i = 0; i < N * V; i++) {
        err = std::max(err, std::abs(dz[i] - dwant[i]));
        mx = std::max(mx, std::abs(dwant[i]));
      }
      for (int64_t i = 0; i < N; i++) {
        lerr = std::max(lerr, std::abs(rl[i] - lwant[i]));
        lmx = std::max(lmx, std::abs(lwant[i]));
      }
      EXPECT_LE(err, 5e-6 * mx) << "dz, cap " << cap;
      EXPECT_LE(lerr, 1e-6 * std::max(1.0, lmx)) << "row losses, cap " << cap;
      if (th == 1) {
        std::printf(
            "[softcap_ce_multi] cap %g: loss %.4g |diff| %.3g; dz max %.3g |diff| %.3g; rows |diff| %.3g\n",
            cap, want, std::abs(got - want), mx, err, lerr);
        first_dz = dz, first_l = rl;
      } else {
        EXPECT_TRUE(same_bits(dz, first_dz) && same_bits(rl, first_l)) << th << " threads, cap " << cap;
      }
    }
  }
}

// One target at weight 1: the same arithmetic as softcap_cross_entropy's kernel, so loss, row losses and
// gradient are equal bit for bit (the gradient accumulates onto the same nonzero start, with a seed other
// than 1).
TEST(EmbedOpsFast, SoftcapCeMultiOneTargetIsSoftcapCrossEntropy) {
  std::mt19937 rng(15);
  const int64_t N = 19, V = 257;
  std::vector<float> z = to_float(randn(N * V, rng, 8.0)), g0 = to_float(randn(N * V, rng, 1e-3));
  auto tg = rand_targets(1, N, static_cast<int32_t>(V), rng, false);
  tg[0][3] = -1;
  struct Run {
    float loss;
    std::vector<float> rows, dz;
  };
  auto run = [&](bool multi) {
    Run r{0.f, std::vector<float>(N), g0};
    std::vector<float> zv = z;
    Tape t;
    Var Z = t.param(zv.data(), r.dz.data(), {N, V});
    Var loss = multi ? softcap_ce_multi(t, Z, {tg[0].data()}, {1.f}, 15.f, r.rows.data())
                     : softcap_cross_entropy(t, Z, tg[0].data(), 15.f, r.rows.data());
    r.loss = t.value(loss)[0];
    t.backward(loss, 0.37f);
    return r;
  };
  Run a = run(true), b = run(false);
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_TRUE(same_bits(a.rows, b.rows));
  EXPECT_TRUE(same_bits(a.dz, b.dz));
}

// The bucket of every position, C++ (reference/ngram.h) against python/frontier_ngram.py (PyTorch int64 arithmetic
// in 32-bit halves): equal exactly, ids up to 2^31 - 1 so every bit of the hash is exercised.
TEST(EmbedOpsTorch, NgramBucketsMatchPython) {
  std::mt19937 rng(16);
  const int64_t B = 3, T = 50, buckets = 1000;
  std::vector<int32_t> idx = rand_ids(B * T, 2147483647, rng);
  std::string dir = make_temp_dir("ngram");
  ASSERT_TRUE(write_file_atomic(dir + "/idx.i32",
                                std::string_view(reinterpret_cast<const char*>(idx.data()), idx.size() * 4))
                  .ok());
  for (int n : {2, 3}) {
    auto r = run_cmd("/usr/bin/python3 " + source_dir() + "/python/frontier_ngram.py " + dir + "/idx.i32 " +
                     std::to_string(B) + " " + std::to_string(T) + " " + std::to_string(n) + " " +
                     std::to_string(buckets) + " " + dir + "/out.i64");
    ASSERT_EQ(r.rc, 0) << "python3 python/frontier_ngram.py failed (needs python3-torch): " << r.out;
    std::string bytes;
    ASSERT_TRUE(read_file(dir + "/out.i64", &bytes).ok());
    ASSERT_EQ(bytes.size(), static_cast<size_t>(B * T * 8));
    std::vector<int64_t> py(B * T), want(B * T);
    std::memcpy(py.data(), bytes.data(), bytes.size());
    ngram_buckets(want.data(), idx.data(), B, T, n, buckets);
    int64_t mismatches = 0;
    for (int64_t i = 0; i < B * T; i++) mismatches += py[i] != want[i];
    EXPECT_EQ(mismatches, 0) << "n " << n;
    EXPECT_EQ(py[0], -1);
    EXPECT_GE(py[n - 1], 0);
  }
  std::filesystem::remove_all(dir);
}
