// Fused autograd ops against the primitives they replace (each primitive is itself checked against its reference
// kernel and finite differences in ops_test / ops_torch_test): scale_add = add(scale, scale), including the
// layer-0 case where both inputs are the same node; rope_rmsnorm = rmsnorm(rope). Values and every gradient.
// Tolerance: 1e-6 relative to the largest magnitude (fp32, different summation order for the lambda gradients).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "autograd/tape.h"
#include "kernels/softcap_ce.h"
#include "model/gpt.h"
#include "model/model_config.h"
#include "train/schema.h"
#include "reference/rope.h"

namespace frontier {
namespace {

std::vector<float> randv(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  double mx = 0, err = 0;
  for (size_t i = 0; i < a.size(); i++) {
    mx = std::max(mx, static_cast<double>(std::abs(a[i])));
    err = std::max(err, static_cast<double>(std::abs(a[i] - b[i])));
  }
  EXPECT_LE(err, 1e-6 * std::max(1.0, mx)) << what << ": max |diff| " << err;
}

// Backward from out with d out = G seeded directly (the tape runs every recorded closure in reverse).
struct ScaleAddRun {
  std::vector<float> out, da, db, ds;
};

ScaleAddRun run_scale_add(bool fused, bool same_input, const std::vector<float>& a, const std::vector<float>& b,
                          std::vector<float> lam, const std::vector<float>& G, int64_t n) {
  std::vector<float> va = a, vb = b, ga(n, 0.f), gb(n, 0.f), gl(lam.size(), 0.f);
  Tape t;
  Var A = t.param(va.data(), ga.data(), {n});
  Var Bv = same_input ? A : t.param(vb.data(), gb.data(), {n});
  Var L = t.param(lam.data(), gl.data(), {static_cast<int64_t>(lam.size())});
  Var out = fused ? scale_add(t, A, L, 0, Bv, L, 1) : add(t, scale(t, A, L, 0), scale(t, Bv, L, 1));
  ScaleAddRun r;
  r.out.assign(t.value(out), t.value(out) + n);
  std::copy(G.begin(), G.end(), t.grad(out));
  for (int i = out.id; i >= 0; i--)
    if (t.node({i}).backward && t.node({i}).grad) t.node({i}).backward();
  r.da = ga, r.db = gb, r.ds = gl;
  return r;
}

TEST(FusedOps, ScaleAddMatchesScaleScaleAdd) {
  for (bool same : {false, true}) {
    const int64_t n = 70001;  // several chunks and a ragged tail
    auto a = randv(n, 1), b = randv(n, 2), G = randv(n, 3);
    std::vector<float> lam = {0.9f, 0.15f};
    ScaleAddRun f = run_scale_add(true, same, a, b, lam, G, n), c = run_scale_add(false, same, a, b, lam, G, n);
    expect_close(f.out, c.out, "value");
    expect_close(f.da, c.da, "d a");
    expect_close(f.db, c.db, "d b");
    expect_close(f.ds, c.ds, "d lambdas");
  }
}

TEST(FusedOps, RopeRmsnormMatchesRmsnormOfRope) {
  const int64_t B = 2, T = 7, H = 3, D = 128, n = B * T * H * D;
  std::vector<float> cs(T * D / 2), sn(T * D / 2);
  ref::rope_tables(cs.data(), sn.data(), T, D, 100000.0);
  auto x = randv(n, 4), G = randv(n, 5);
  std::vector<float> out[2], dx[2];
  for (int fused = 0; fused < 2; fused++) {
    std::vector<float> vx = x, gx(n, 0.f);
    Tape t;
    Var X = t.param(vx.data(), gx.data(), {B, T, H, D});
    Var o = fused ? rope_rmsnorm(t, X, cs.data(), sn.data(), 1e-6f)
                  : rmsnorm(t, rope(t, X, cs.data(), sn.data()), 1e-6f);
    out[fused].assign(t.value(o), t.value(o) + n);
    std::copy(G.begin(), G.end(), t.grad(o));
    for (int i = o.id; i >= 0; i--)
      if (t.node({i}).backward && t.node({i}).grad) t.node({i}).backward();
    dx[fused] = gx;
  }
  expect_close(out[1], out[0], "value");
  expect_close(dx[1], dx[0], "d x");
}

void run_backward(Tape& t, Var out) {
  t.grad(out)[0] = 1.f;
  for (int i = out.id; i >= 0; i--)
    if (t.node({i}).backward && t.node({i}).grad) t.node({i}).backward();
}

// lm_head + softcap CE over vocabulary chunks (last chunk partial, an ignored target) = softcap_cross_entropy of
// linear: loss, per-row losses, dx and dW.
TEST(FusedOps, LmHeadCeChunkedMatchesLinearThenSoftcapCe) {
  const int64_t N = 37, C = 24, V = 300;
  auto x = randv(N * C, 6), W = randv(V * C, 7);
  std::vector<int32_t> tg(N);
  for (int64_t i = 0; i < N; i++) tg[i] = static_cast<int32_t>((i * 131) % V);
  tg[5] = -1;
  std::vector<float> loss(2), rows[2], dx[2], dW[2];
  for (int fused = 0; fused < 2; fused++) {
    std::vector<float> vx = x, vW = W, gx(N * C, 0.f), gW(V * C, 0.f);
    rows[fused].assign(N, 0.f);
    Tape t;
    Var X = t.param(vx.data(), gx.data(), {N, C}), Wv = t.param(vW.data(), gW.data(), {V, C});
    Var l = fused ? lm_head_softcap_ce(t, X, Wv, tg.data(), 15.f, 64, rows[fused].data())
                  : softcap_cross_entropy(t, linear(t, X, Wv), tg.data(), 15.f, rows[fused].data());
    loss[fused] = t.value(l)[0];
    run_backward(t, l);
    dx[fused] = gx, dW[fused] = gW;
  }
  EXPECT_NEAR(loss[1], loss[0], 1e-6 * std::abs(loss[0]));
  EXPECT_EQ(rows[1][5], 0.f);
  expect_close(rows[1], rows[0], "row losses");
  expect_close(dx[1], dx[0], "d x");
  expect_close(dW[1], dW[0], "d W");
}

// The model with model.ce_vocab_chunk > 0 gives the same loss and every gradient as with the logits stored.
TEST(FusedOps, GptWithChunkedCeMatchesStoredLogits) {
  Config cfg = train_schema().defaults();
  cfg.set("model.depth", int64_t{2});
  cfg.set("model.seq_len", int64_t{32});
  ModelShape shape;
  ASSERT_TRUE(derive_model_shape(cfg, &shape).ok());
  const int B = 2, T = 32;
  std::vector<int32_t> x(B * T), y(B * T);
  for (int i = 0; i < B * T; i++) x[i] = (i * 37) % shape.vocab_size, y[i] = (i * 91 + 5) % shape.vocab_size;
  float loss[2];
  std::vector<float> grads[2];
  for (int fused = 0; fused < 2; fused++) {
    shape.ce_vocab_chunk = fused ? 1000 : 0;  // 8192 = 8 x 1000 + 192
    Gpt gpt(shape);
    gpt.init_nanochat(3);
    gpt.zero_grad();
    Tape t;
    Var l = gpt.forward(t, x.data(), y.data(), B, T);
    loss[fused] = t.value(l)[0];
    t.backward(l);
    grads[fused] = gpt.grads();
  }
  EXPECT_NEAR(loss[1], loss[0], 1e-6 * loss[0]);
  expect_close(grads[1], grads[0], "all gradients");
}

// A gradient the backward can write whole (Tape::grad_or_fresh): softcap_ce_backward with accumulate false stores
// into an uninitialised buffer (NaN here) exactly what accumulating into zeros gives, an ignored row's zeros
// included; and a linear whose input gradient is fresh gives the same dx as one whose dx already holds a gradient,
// minus it. Bit for bit: 0 + x = x.
TEST(FusedOps, FreshGradientsAreWrittenNotAccumulated) {
  const int64_t N = 5, V = 37;
  const float cap = 15.f;
  auto z = randv(N * V, 21);
  for (auto& v : z) v *= 4.f;
  std::vector<int32_t> tg{3, -1, 36, 0, 17};
  std::vector<float> capped(N * V), lse(N);
  softcap_ce_forward(nullptr, capped.data(), lse.data(), z.data(), tg.data(), N, V, cap);
  std::vector<float> acc(N * V, 0.f), wrote(N * V, NAN);
  softcap_ce_backward(acc.data(), 0.5f, capped.data(), lse.data(), tg.data(), N, V, cap, true);
  softcap_ce_backward(wrote.data(), 0.5f, capped.data(), lse.data(), tg.data(), N, V, cap, false);
  for (int64_t i = 0; i < N * V; i++) ASSERT_EQ(wrote[i], acc[i]) << i;
  std::vector<int32_t> none(N, -1);
  std::fill(wrote.begin(), wrote.end(), NAN);
  softcap_ce_backward(wrote.data(), 0.5f, capped.data(), lse.data(), none.data(), N, V, cap, false);
  for (float v : wrote) ASSERT_EQ(v, 0.f);

  const int64_t M = 6, K = 8, Nout = 5;
  auto xv = randv(M * K, 22), wv = randv(Nout * K, 23), gv = randv(M * Nout, 24), prior = randv(M * K, 25);
  std::vector<float> dx_fresh, dx_acc;
  for (bool with_prior : {false, true}) {
    Tape t;
    std::vector<float> wg(Nout * K, 0.f);
    Var x = t.make({M, K}, true);
    std::copy(xv.begin(), xv.end(), t.value(x));
    Var W = t.param(wv.data(), wg.data(), {Nout, K});
    if (with_prior) std::copy(prior.begin(), prior.end(), t.grad(x));
    Var y = linear(t, x, W);
    std::copy(gv.begin(), gv.end(), t.grad(y));
    t.node(y).backward();
    std::vector<float> dx(t.grad(x), t.grad(x) + M * K);
    if (with_prior)
      for (int64_t i = 0; i < M * K; i++) dx[i] -= prior[i];
    (with_prior ? dx_acc : dx_fresh) = dx;
  }
  expect_close(dx_fresh, dx_acc, "linear dx, fresh against accumulated");
}

}  // namespace
}  // namespace frontier
