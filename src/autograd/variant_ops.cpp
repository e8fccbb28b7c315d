// Autograd ops for architecture variants (MLP activations, nanochat's smear and backout, the partial key offset):
// each records its forward and a backward closure over the fast kernels of kernels/variant_kernels.h, which the
// tests hold to the reference kernels in src/reference/ (formulas and derivatives at the top of each).
#include "autograd/tape.h"
#include "kernels/variant_kernels.h"
#include "util/status.h"
#include "util/trace.h"

namespace frontier {

namespace {
constexpr double kF = 4.0;  // bytes per float, for the ProfScope traffic (as in ops.cpp)
}  // namespace

Var leaky_relu2(Tape& t, Var x, float slope) {
  const int64_t n = t.numel(x);
  ProfScope ps("leaky_relu2", "fwd", 3.0 * n, kF * 2 * n);
  Var out = t.make(t.shape(x), t.requires_grad(x));
  leaky_relu2_forward(t.value(out), t.value(x), n, slope);
  if (t.requires_grad(x))
    t.node(out).backward = [&t, out, x, n, slope]() {
      ProfScope ps("leaky_relu2", "bwd", 4.0 * n, kF * 4 * n);
      leaky_relu2_backward(t.grad(x), t.grad(out), t.value(x), n, slope);
    };
  return out;
}

Var gated_act(Tape& t, Var x, GatedAct kind) {
  std::vector<int64_t> shape = t.shape(x);
  FRONTIER_CHECK(shape.back() % 2 == 0);
  const int64_t H = shape.back() / 2, N = t.numel(x) / shape.back();
  shape.back() = H;
  // ~8 FLOPs and one exp or tanh per output; backward ~14 and the same transcendental, recomputed.
  ProfScope ps("gated_act", "fwd", 8.0 * N * H, kF * 3 * N * H);
  Var out = t.make(shape, t.requires_grad(x));
  gated_act_forward(t.value(out), t.value(x), N, H, kind);
  if (t.requires_grad(x))
    t.node(out).backward = [&t, out, x, N, H, kind]() {
      ProfScope ps("gated_act", "bwd", 14.0 * N * H, kF * 7 * N * H);
      gated_act_backward(t.grad(x), t.grad(out), t.value(x), N, H, kind);
    };
  return out;
}

Var smear(Tape& t, Var x, Var w, Var lam, int64_t B, int64_t T) {
  const int64_t C = t.shape(x).back(), G = t.numel(w);
  FRONTIER_CHECK(t.numel(x) == B * T * C && G <= C && t.numel(lam) == 1);
  const bool rg = t.requires_grad(x) || t.requires_grad(w) || t.requires_grad(lam);
  ProfScope ps("smear", "fwd", 2.0 * B * T * (C + G), kF * (2 * B * T * C + B * T));
  Var out = t.make(t.shape(x), rg);
  auto s = std::make_shared<std::vector<float>>(B * T);  // (B*T) sigmoid of each row's gate logit
  const float l = t.value(lam)[0];
  smear_forward(t.value(out), s->data(), t.value(x), t.value(w), l, B, T, C, G);
  if (rg)
    t.node(out).backward = [&t, out, x, w, lam, s, l, B, T, C, G]() {
      ProfScope ps("smear", "bwd", 5.0 * B * T * C + 4.0 * B * T * G, kF * (4 * B * T * C + B * T));
      // Gradient buffers are allocated here, before the threads start (Tape::grad allocates on first use).
      float* dx = t.requires_grad(x) ? t.grad(x) : nullptr;
      float* dw = t.requires_grad(w) ? t.grad(w) : nullptr;
      float* dl = t.requires_grad(lam) ? t.grad(lam) : nullptr;
      smear_backward(dx, dw, dl, t.grad(out), s->data(), t.value(x), t.value(w), l, B, T, C, G);
    };
  return out;
}

Var axpy(Tape& t, Var a, Var b, Var s, int64_t i, float alpha) {
  FRONTIER_CHECK(t.shape(a) == t.shape(b) && 0 <= i && i < t.numel(s));
  const bool rg = t.requires_grad(a) || t.requires_grad(b) || t.requires_grad(s);
  const int64_t n = t.numel(a);
  ProfScope ps("axpy", "fwd", 2.0 * n, kF * 3 * n);
  Var out = t.make(t.shape(a), rg);
  axpy_forward(t.value(out), t.value(a), t.value(b), alpha * t.value(s)[i], n);
  if (rg)
    t.node(out).backward = [&t, out, a, b, s, i, alpha, n]() {
      const int streams = t.requires_grad(a) * 2 + t.requires_grad(b) * 2 + t.requires_grad(s);
      ProfScope ps("axpy", "bwd", 2.0 * n, kF * (1 + streams) * n);
      // a and b may be the same node: the kernel then updates each element twice, in order.
      float* da = t.requires_grad(a) ? t.grad(a) : nullptr;
      float* db = t.requires_grad(b) ? t.grad(b) : nullptr;
      const float coef = alpha * t.value(s)[i];
      const double sum = axpy_backward(da, db, t.grad(out), t.requires_grad(s) ? t.value(b) : nullptr, coef, n);
      if (t.requires_grad(s)) t.grad(s)[i] += static_cast<float>(alpha * sum);
    };
  return out;
}

Var key_shift(Tape& t, Var k, int64_t p0) {
  const auto& sh = t.shape(k);
  FRONTIER_CHECK(sh.size() == 4 && sh[3] % 2 == 0 && 0 <= p0 && p0 <= sh[3] / 2);
  const int64_t B = sh[0], T = sh[1], H = sh[2], D = sh[3], n = B * T * H * D;
  ProfScope ps("key_shift", "fwd", 0, kF * 2 * n);
  Var out = t.make(sh, t.requires_grad(k));
  key_shift_forward(t.value(out), t.value(k), B, T, H, D, p0);
  if (t.requires_grad(k))
    t.node(out).backward = [&t, out, k, B, T, H, D, p0, n]() {
      ProfScope ps("key_shift", "bwd", static_cast<double>(n), kF * 3 * n);
      key_shift_backward(t.grad(k), t.grad(out), B, T, H, D, p0);
    };
  return out;
}

}  // namespace frontier
