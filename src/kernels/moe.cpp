// Mixture-of-experts MLP, fast (kernels/moe.h): expert-sorted rows, one GEMM per expert and operand;
// everything between the GEMMs is per row or per token, parallel over rows, each row written by one thread in
// a fixed order.
#include "kernels/moe.h"

#include <algorithm>
#include <cstdlib>

#include "kernels/gemm.h"
#include "reference/moe.h"
#include "util/status.h"

namespace frontier {

namespace {

// 64-byte aligned, uninitialised scratch that only grows (a fresh buffer per call would page-fault
// ~N*k*(C+Hd) floats every step). Per calling thread: ops are issued from one thread.
struct Scratch {
  float* p = nullptr;
  size_t n = 0;
  float* get(size_t elems) {
    if (elems > n) {
      std::free(p);
      n = (elems + 15) & ~size_t(15);
      p = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
      FRONTIER_CHECK(p != nullptr);
    }
    return p;
  }
  ~Scratch() { std::free(p); }
};
// Forward and backward share them (never live at once): (R, C) x gathered; (R, C) y, or dout gathered then
// dxs; (R, Hd) act(u), or gate * act(u); (R, Hd) backward's d1 / du. R = N * k rows.
thread_local Scratch xs_buf, rc_buf, a_buf, d1_buf;

// Rows of src (rows of C floats) gathered into dst in sorted order: dst[r] = src[pair[r] / k].
void gather_rows(float* dst, const float* src, const MoeRoute& r, int64_t C) {
  const int64_t R = r.N * r.k;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < R; i++) std::copy_n(src + (r.pair[i] / r.k) * C, C, dst + i * C);
}

inline float act(float u, float slope) {
  const float v = u >= 0 ? u : slope * u;
  return v * v;
}
inline float act_grad(float u, float slope) {
  return u >= 0 ? 2.f * u : 2.f * slope * slope * u;
}

}  // namespace

void moe_route(MoeRoute* r, const float* x, const float* router, int64_t N, int64_t C, int64_t E, int64_t k) {
  FRONTIER_CHECK(N > 0 && C > 0 && E > 0 && 1 <= k && k <= E);
  FRONTIER_CHECK(N * k < (int64_t(1) << 31));
  r->N = N, r->E = E, r->k = k;
  r->probs.resize(N * E);
  r->expert.resize(N * k);
  r->gate.resize(N * k);
  std::vector<float> logits(N * E);
  sgemm(false, true, N, E, C, 1.f, x, C, router, C, 0.f, logits.data(), E);  // fp32 always (header)
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; n++)
    ref::moe_gate_row(r->probs.data() + n * E, r->expert.data() + n * k, r->gate.data() + n * k,
                      logits.data() + n * E, E, k);
  // Stable counting sort of the pairs by expert.
  r->offset.assign(E + 1, 0);
  for (int64_t p = 0; p < N * k; p++) r->offset[r->expert[p] + 1]++;
  for (int64_t e = 0; e < E; e++) r->offset[e + 1] += r->offset[e];
  std::vector<int64_t> cursor(r->offset.begin(), r->offset.end() - 1);
  r->pair.resize(N * k);
  r->row.resize(N * k);
  for (int64_t p = 0; p < N * k; p++) {
    const int64_t i = cursor[r->expert[p]]++;
    r->pair[i] = static_cast<int32_t>(p);
    r->row[p] = static_cast<int32_t>(i);
  }
}

double moe_aux_loss(const MoeRoute& r, double* f) {
  double aux = 0;
  for (int64_t e = 0; e < r.E; e++) {
    double mean_p = 0;
    for (int64_t n = 0; n < r.N; n++) mean_p += r.probs[n * r.E + e];
    const double frac = static_cast<double>(r.offset[e + 1] - r.offset[e]) / static_cast<double>(r.N * r.k);
    if (f) f[e] = frac;
    aux += frac * mean_p / static_cast<double>(r.N);
  }
  return static_cast<double>(r.E) * aux;
}

void moe_forward(float* out, float* u, const MoeRoute& r, const float* x, const float* fc, const float* proj,
                 int64_t N, int64_t C, int64_t Hd, float slope, Precision prec) {
  FRONTIER_CHECK(r.N == N);
  const int64_t R = N * r.k, k = r.k;
  float *xs = xs_buf.get(R * C), *a = a_buf.get(R * Hd), *y = rc_buf.get(R * C);  // (R, C), (R, Hd), (R, C)
  gather_rows(xs, x, r, C);
  for (int64_t e = 0; e < r.E; e++) {  // u_e = xs_e @ fc[e]^T
    const int64_t o = r.offset[e], ne = r.offset[e + 1] - o;
    if (ne) gemm(prec, false, true, ne, Hd, C, 1.f, xs + o * C, C, fc + e * Hd * C, C, 0.f, u + o * Hd, Hd);
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < R; i++)
    for (int64_t h = 0; h < Hd; h++) a[i * Hd + h] = act(u[i * Hd + h], slope);
  for (int64_t e = 0; e < r.E; e++) {  // y_e = a_e @ proj[e]^T
    const int64_t o = r.offset[e], ne = r.offset[e + 1] - o;
    if (ne) gemm(prec, false, true, ne, C, Hd, 1.f, a + o * Hd, Hd, proj + e * C * Hd, Hd, 0.f, y + o * C, C);
  }
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; n++) {  // out[n] = sum_j gate * y[row(n, j)], slots in order
    float* o = out + n * C;
    const float* y0 = y + static_cast<int64_t>(r.row[n * k]) * C;
    const float g0 = r.gate[n * k];
    for (int64_t c = 0; c < C; c++) o[c] = g0 * y0[c];
    for (int64_t j = 1; j < k; j++) {
      const float* yj = y + static_cast<int64_t>(r.row[n * k + j]) * C;
      const float gj = r.gate[n * k + j];
      for (int64_t c = 0; c < C; c++) o[c] += gj * yj[c];
    }
  }
}

void moe_backward(float* dx, float* drouter, float* dfc, float* dproj, const float* dout, const MoeRoute& r,
                  const float* u, const float* x, const float* router, const float* fc, const float* proj,
                  int64_t N, int64_t C, int64_t Hd, float slope, float aux_weight, Precision prec) {
  FRONTIER_CHECK(r.N == N);
  if (!dx && !drouter && !dfc && !dproj) return;
  const int64_t R = N * r.k, k = r.k, E = r.E;
  FRONTIER_CHECK(E <= 256);  // the router's per-token dp lives on the stack
  // gs (R, C): dout gathered, later dxs = du @ fc[e]; d1 (R, Hd): gs @ proj[e], then du in place; a (R, Hd):
  // gate * act(u); xs (R, C): x gathered (dfc only).
  float *gs = rc_buf.get(R * C), *d1 = d1_buf.get(R * Hd), *a = a_buf.get(R * Hd);
  float* xs = dfc ? xs_buf.get(R * C) : nullptr;
  std::vector<float> dgate(R);  // (N, k) d loss / d gate, by pair
  gather_rows(gs, dout, r, C);
  if (xs) gather_rows(xs, x, r, C);
  for (int64_t e = 0; e < E; e++) {
    const int64_t o = r.offset[e], ne = r.offset[e + 1] - o;
    if (ne)
      gemm(prec, false, false, ne, Hd, C, 1.f, gs + o * C, C, proj + e * C * Hd, Hd, 0.f, d1 + o * Hd, Hd);
  }
  // Row i = pair p: with y = proj a, d gate = dout . y = d1 . a; da = gate * d1; du = da * act'(u). The dot
  // product runs in kLanes fixed partial sums (vectorises; the order does not depend on the thread count).
  constexpr int64_t kLanes = 16;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < R; i++) {
    const int32_t p = r.pair[i];
    const float g = r.gate[p];
    const float* ui = u + i * Hd;
    float *di = d1 + i * Hd, *ai = a + i * Hd;
    float part[kLanes] = {};
    int64_t h = 0;
    for (; h + kLanes <= Hd; h += kLanes)
      for (int64_t l = 0; l < kLanes; l++) {
        const float av = act(ui[h + l], slope);
        part[l] += di[h + l] * av;
        ai[h + l] = g * av;
        di[h + l] = g * di[h + l] * act_grad(ui[h + l], slope);
      }
    for (; h < Hd; h++) {
      const float av = act(ui[h], slope);
      part[0] += di[h] * av;
      ai[h] = g * av;
      di[h] = g * di[h] * act_grad(ui[h], slope);
    }
    float acc = 0;
    for (int64_t l = 0; l < kLanes; l++) acc += part[l];
    dgate[p] = acc;
  }
  for (int64_t e = 0; e < E; e++) {
    const int64_t o = r.offset[e], ne = r.offset[e + 1] - o;
    if (!ne) continue;
    float *gse = gs + o * C, *due = d1 + o * Hd;
    if (dproj)  // dproj[e] += (gate * dout)^T @ act(u)
      gemm(prec, true, false, C, Hd, ne, 1.f, gse, C, a + o * Hd, Hd, 1.f, dproj + e * C * Hd, Hd);
    if (dfc)  // dfc[e] += du^T @ xs
      gemm(prec, true, false, Hd, C, ne, 1.f, due, Hd, xs + o * C, C, 1.f, dfc + e * Hd * C, C);
    if (dx)  // dxs = du @ fc[e], over gs (read by dproj above)
      gemm(prec, false, false, ne, C, Hd, 1.f, due, Hd, fc + e * Hd * C, C, 0.f, gse, C);
  }
  // Router: dp = aux_weight * d aux / d probs + the gates' part; dlogits = softmax backward. fp32 GEMMs.
  std::vector<double> f(E);
  moe_aux_loss(r, f.data());
  std::vector<float> dlogits(N * E);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; n++) {
    const float* p = r.probs.data() + n * E;
    const int32_t* ex = r.expert.data() + n * k;
    const float* gt = r.gate.data() + n * k;
    double dp[256], s = 0, dot = 0, pdp = 0;
    for (int64_t e = 0; e < E; e++) dp[e] = aux_weight * E * f[e] / static_cast<double>(N);
    for (int64_t j = 0; j < k; j++) s += p[ex[j]], dot += static_cast<double>(dgate[n * k + j]) * gt[j];
    for (int64_t j = 0; j < k; j++) dp[ex[j]] += (dgate[n * k + j] - dot) / s;
    for (int64_t e = 0; e < E; e++) pdp += p[e] * dp[e];
    for (int64_t e = 0; e < E; e++) dlogits[n * E + e] = static_cast<float>(p[e] * (dp[e] - pdp));
    if (dx) {  // the experts' part of dx: slots in order
      float* d = dx + n * C;
      for (int64_t j = 0; j < k; j++) {
        const float* src = gs + static_cast<int64_t>(r.row[n * k + j]) * C;
        for (int64_t c = 0; c < C; c++) d[c] += src[c];
      }
    }
  }
  if (dx) sgemm(false, false, N, C, E, 1.f, dlogits.data(), E, router, C, 1.f, dx, C);
  if (drouter) sgemm(true, false, E, C, N, 1.f, dlogits.data(), E, x, C, 1.f, drouter, C);
}

}  // namespace frontier
