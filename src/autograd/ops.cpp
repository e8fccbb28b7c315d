// Primitive autograd ops over the reference kernels. Each op: compute the forward into a new node, and record a
// backward closure that accumulates into its inputs' gradients (only those that require grad).
#include <cmath>

#include "autograd/tape.h"
#include "kernels/attention.h"
#include "kernels/gemm.h"
#include "kernels/softcap_ce.h"
#include "ops/relu2.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "util/status.h"

namespace frontier {

namespace {
std::vector<int64_t> with_last(std::vector<int64_t> s, int64_t last) {
  s.back() = last;
  return s;
}
}  // namespace

Var embedding(Tape& t, const int32_t* idx, int64_t n, Var table) {
  int64_t V = t.shape(table)[0], C = t.shape(table)[1];
  Var out = t.make({n, C}, t.requires_grad(table));
  const float* W = t.value(table);
  float* o = t.value(out);
  std::vector<int32_t> ids(idx, idx + n);
  for (int64_t i = 0; i < n; i++) {
    FRONTIER_CHECK(ids[i] >= 0 && ids[i] < V);
    std::copy(W + ids[i] * C, W + (ids[i] + 1) * C, o + i * C);
  }
  if (t.requires_grad(table))
    t.node(out).backward = [&t, out, table, ids, C]() {
      float* g = t.grad(out);
      float* dW = t.grad(table);
      for (size_t i = 0; i < ids.size(); i++)
        for (int64_t c = 0; c < C; c++) dW[ids[i] * C + c] += g[i * C + c];
    };
  return out;
}

// The three GEMM forms of a training step (kernels/gemm.h): out = x @ W^T, dx += g @ W, dW += g^T @ x. The GEMM
// accumulates every element over K in a fixed order, so results do not depend on the thread count.
Var linear(Tape& t, Var x, Var W) {
  int64_t K = t.shape(x).back(), N = t.shape(W)[0];
  FRONTIER_CHECK(t.shape(W)[1] == K);
  int64_t M = t.numel(x) / K;
  bool rg = t.requires_grad(x) || t.requires_grad(W);
  Var out = t.make(with_last(t.shape(x), N), rg);
  sgemm(false, true, M, N, K, 1.f, t.value(x), K, t.value(W), K, 0.f, t.value(out), N);
  if (rg)
    t.node(out).backward = [&t, out, x, W, M, K, N]() {
      const float *g = t.grad(out), *px = t.value(x), *pw = t.value(W);
      if (t.requires_grad(x)) sgemm(false, false, M, K, N, 1.f, g, N, pw, K, 1.f, t.grad(x), K);
      if (t.requires_grad(W)) sgemm(true, false, N, K, M, 1.f, g, N, px, K, 1.f, t.grad(W), K);
    };
  return out;
}

Var rmsnorm(Tape& t, Var x, float eps) {
  int64_t C = t.shape(x).back(), N = t.numel(x) / C;
  Var out = t.make(t.shape(x), t.requires_grad(x));
  auto rstd = std::make_shared<std::vector<float>>(N);
  ref::rmsnorm_forward(t.value(out), rstd->data(), t.value(x), N, C, eps);
  if (t.requires_grad(x))
    t.node(out).backward = [&t, out, x, rstd, N, C]() {
      ref::rmsnorm_backward(t.grad(x), t.grad(out), t.value(x), rstd->data(), N, C);
    };
  return out;
}

Var rope(Tape& t, Var x, const float* cos_t, const float* sin_t) {
  const auto& s = t.shape(x);
  FRONTIER_CHECK(s.size() == 4);
  int64_t B = s[0], T = s[1], H = s[2], D = s[3];
  Var out = t.make(s, t.requires_grad(x));
  ref::rope_forward(t.value(out), t.value(x), cos_t, sin_t, B, T, H, D);
  if (t.requires_grad(x))
    t.node(out).backward = [&t, out, x, cos_t, sin_t, B, T, H, D]() {
      ref::rope_backward(t.grad(x), t.grad(out), cos_t, sin_t, B, T, H, D);
    };
  return out;
}

Var relu2(Tape& t, Var x) {
  Var out = t.make(t.shape(x), t.requires_grad(x));
  int64_t n = t.numel(x);
  ref::relu2_forward(t.value(out), t.value(x), n);
  if (t.requires_grad(x))
    t.node(out).backward = [&t, out, x, n]() { ref::relu2_backward(t.grad(x), t.grad(out), t.value(x), n); };
  return out;
}

Var add(Tape& t, Var a, Var b) {
  FRONTIER_CHECK(t.shape(a) == t.shape(b));
  bool rg = t.requires_grad(a) || t.requires_grad(b);
  Var out = t.make(t.shape(a), rg);
  int64_t n = t.numel(a);
  const float *pa = t.value(a), *pb = t.value(b);
  float* o = t.value(out);
  for (int64_t i = 0; i < n; i++) o[i] = pa[i] + pb[i];
  if (rg)
    t.node(out).backward = [&t, out, a, b, n]() {
      const float* g = t.grad(out);
      for (Var in : {a, b})
        if (t.requires_grad(in)) {
          float* d = t.grad(in);
          for (int64_t i = 0; i < n; i++) d[i] += g[i];
        }
    };
  return out;
}

Var scale(Tape& t, Var x, Var s, int64_t i) {
  bool rg = t.requires_grad(x) || t.requires_grad(s);
  Var out = t.make(t.shape(x), rg);
  int64_t n = t.numel(x);
  float lam = t.value(s)[i];
  const float* px = t.value(x);
  float* o = t.value(out);
  for (int64_t k = 0; k < n; k++) o[k] = lam * px[k];
  if (rg)
    t.node(out).backward = [&t, out, x, s, i, n]() {
      const float* g = t.grad(out);
      const float* px = t.value(x);
      float lam = t.value(s)[i];
      if (t.requires_grad(x)) {
        float* d = t.grad(x);
        for (int64_t k = 0; k < n; k++) d[k] += lam * g[k];
      }
      if (t.requires_grad(s)) {
        double acc = 0;
        for (int64_t k = 0; k < n; k++) acc += static_cast<double>(g[k]) * px[k];
        t.grad(s)[i] += static_cast<float>(acc);
      }
    };
  return out;
}

Var reshape(Tape& t, Var x, std::vector<int64_t> shape) {
  Var out = t.make(std::move(shape), t.requires_grad(x));
  FRONTIER_CHECK(t.numel(out) == t.numel(x));
  int64_t n = t.numel(x);
  std::copy(t.value(x), t.value(x) + n, t.value(out));
  if (t.requires_grad(x))
    t.node(out).backward = [&t, out, x, n]() {
      const float* g = t.grad(out);
      float* d = t.grad(x);
      for (int64_t k = 0; k < n; k++) d[k] += g[k];
    };
  return out;
}

Var slice_last(Tape& t, Var x, int64_t begin, int64_t end) {
  int64_t C = t.shape(x).back(), W = end - begin, rows = t.numel(x) / C;
  FRONTIER_CHECK(0 <= begin && begin < end && end <= C);
  Var out = t.make(with_last(t.shape(x), W), t.requires_grad(x));
  for (int64_t r = 0; r < rows; r++)
    std::copy(t.value(x) + r * C + begin, t.value(x) + r * C + end, t.value(out) + r * W);
  if (t.requires_grad(x))
    t.node(out).backward = [&t, out, x, rows, C, W, begin]() {
      const float* g = t.grad(out);
      float* d = t.grad(x);
      for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < W; c++) d[r * C + begin + c] += g[r * W + c];
    };
  return out;
}

Var gated_add(Tape& t, Var v, Var g, Var ve) {
  const auto& s = t.shape(v);
  FRONTIER_CHECK(s.size() == 4 && t.shape(ve) == s && t.numel(g) == s[0] * s[1] * s[2]);
  int64_t rows = s[0] * s[1] * s[2], D = s[3];
  bool rg = t.requires_grad(v) || t.requires_grad(g) || t.requires_grad(ve);
  Var out = t.make(s, rg);
  const float *pv = t.value(v), *pg = t.value(g), *pe = t.value(ve);
  float* o = t.value(out);
  for (int64_t r = 0; r < rows; r++) {
    float gate = 2.f / (1.f + std::exp(-pg[r]));
    for (int64_t d = 0; d < D; d++) o[r * D + d] = pv[r * D + d] + gate * pe[r * D + d];
  }
  if (rg)
    t.node(out).backward = [&t, out, v, g, ve, rows, D]() {
      const float* go = t.grad(out);
      const float *pg = t.value(g), *pe = t.value(ve);
      for (int64_t r = 0; r < rows; r++) {
        float sg = 1.f / (1.f + std::exp(-pg[r])), gate = 2.f * sg;
        if (t.requires_grad(v)) {
          float* dv = t.grad(v);
          for (int64_t d = 0; d < D; d++) dv[r * D + d] += go[r * D + d];
        }
        if (t.requires_grad(ve)) {
          float* de = t.grad(ve);
          for (int64_t d = 0; d < D; d++) de[r * D + d] += gate * go[r * D + d];
        }
        if (t.requires_grad(g)) {
          double acc = 0;
          for (int64_t d = 0; d < D; d++) acc += static_cast<double>(go[r * D + d]) * pe[r * D + d];
          t.grad(g)[r] += static_cast<float>(acc * 2.0 * sg * (1.0 - sg));
        }
      }
    };
  return out;
}

// Fast tiled kernel (kernels/attention.h); ref::attention_* stays the ground truth in the tests.
Var causal_attention(Tape& t, Var q, Var k, Var v) {
  const auto& sq = t.shape(q);
  const auto& sk = t.shape(k);
  int64_t B = sq[0], T = sq[1], H = sq[2], D = sq[3], Hkv = sk[2];
  FRONTIER_CHECK(sk[0] == B && sk[1] == T && sk[3] == D && t.shape(v) == sk && H % Hkv == 0);
  bool rg = t.requires_grad(q) || t.requires_grad(k) || t.requires_grad(v);
  Var out = t.make(sq, rg);
  auto lse = std::make_shared<std::vector<float>>(B * H * T);  // (B, H, T)
  flash_attention_forward(t.value(out), lse->data(), t.value(q), t.value(k), t.value(v), B, T, H, Hkv, D);
  if (rg)
    t.node(out).backward = [&t, out, q, k, v, lse, B, T, H, Hkv, D]() {
      // The kernel writes all three; inputs without grad get scratch space.
      std::vector<float> sq_, sk_, sv_;
      auto dst = [&](Var x, std::vector<float>& scratch) {
        if (t.requires_grad(x)) return t.grad(x);
        scratch.assign(t.numel(x), 0.f);
        return scratch.data();
      };
      float *dq = dst(q, sq_), *dk = dst(k, sk_), *dv = dst(v, sv_);
      flash_attention_backward(dq, dk, dv, t.grad(out), t.value(out), lse->data(), t.value(q), t.value(k),
                               t.value(v), B, T, H, Hkv, D);
    };
  return out;
}

// Fast fused kernel (kernels/softcap_ce.h): keeps the softcapped logits (N, V) and the row log-sum-exps for
// backward; ref::softcap_ce_* stays the ground truth in the tests.
Var softcap_cross_entropy(Tape& t, Var logits, const int32_t* targets, float cap, float* row_losses) {
  int64_t V = t.shape(logits).back(), N = t.numel(logits) / V;
  Var out = t.make({1}, t.requires_grad(logits));
  auto tg = std::make_shared<std::vector<int32_t>>(targets, targets + N);
  auto capped = std::make_shared<std::vector<float>>(N * V);  // (N, V)
  auto lse = std::make_shared<std::vector<float>>(N);
  t.value(out)[0] = softcap_ce_forward(row_losses, capped->data(), lse->data(), t.value(logits), tg->data(), N, V, cap);
  if (t.requires_grad(logits))
    t.node(out).backward = [&t, out, logits, tg, capped, lse, N, V, cap]() {
      softcap_ce_backward(t.grad(logits), t.grad(out)[0], capped->data(), lse->data(), tg->data(), N, V, cap);
    };
  return out;
}

}  // namespace frontier
