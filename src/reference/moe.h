// Mixture-of-experts MLP, reference: per-token loops, the ground truth for kernels/moe.h and for the PyTorch
// module python/frontier_moe.py (tests/moe_test.cpp runs it in double against finite differences and
// PyTorch).
//
// Shapes: x (N, C); router (E, C); fc (E, Hd, C), expert e's c_fc (rows = hidden units); proj (E, C, Hd),
// expert e's c_proj. Routing, the design:
//   logits = x @ router^T (N, E);  probs = softmax(logits) over E;
//   the top_k experts by prob (ties: lower expert index first), listed by descending prob;
//   gate[n, j] = probs[n, e_j] / sum_j' probs[n, e_j'] (the chosen probs renormalised over the top_k);
//   out[n] = sum_j gate[n, j] * proj[e_j] @ act(fc[e_j] @ x[n]),  act(u) = (u >= 0 ? u : slope * u)^2.
// No capacity limit: every (token, slot) pair is computed. With top_k = 1 the gate is 1, so the router learns
// only through the load-balance loss (Switch Transformer multiplies by the raw prob instead; this design
// renormalises). Load balance (Switch Transformer): aux = E * sum_e f_e * P_e, f_e = the fraction of the N *
// top_k pairs routed to e (a count: no gradient), P_e = mean over tokens of probs[:, e]. backward adds
// aux_weight * d(aux)/d(logits), so gradients are those of sum(out * dout) + aux_weight * aux.
//
//   T aux = ref::moe_forward(out, x, router, fc, proj, N, C, E, Hd, top_k, slope);
//   ref::moe_backward(dx, drouter, dfc, dproj, dout, x, router, fc, proj, N, C, E, Hd, top_k, slope,
//                     aux_weight);
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace frontier::ref {

// One token's routing from its logits (E): probs (E) = softmax, expert (k) the chosen experts by descending
// prob (ties: lower index first), gate (k) their renormalised probs. The fast kernel calls it too, so both
// choose alike.
template <typename T>
void moe_gate_row(T* probs, int32_t* expert, T* gate, const T* logits, int64_t E, int64_t k) {
  T mx = logits[0];
  for (int64_t e = 1; e < E; e++) mx = logits[e] > mx ? logits[e] : mx;
  T sum = 0;
  for (int64_t e = 0; e < E; e++) sum += probs[e] = std::exp(logits[e] - mx);
  for (int64_t e = 0; e < E; e++) probs[e] /= sum;
  T chosen_sum = 0;
  for (int64_t j = 0; j < k; j++) {
    int32_t best = -1;
    for (int64_t e = 0; e < E; e++) {
      bool taken = false;
      for (int64_t i = 0; i < j; i++) taken |= expert[i] == e;
      if (!taken && (best < 0 || probs[e] > probs[best]))
        best = static_cast<int32_t>(e);  // strict: lower wins
    }
    expert[j] = best;
    chosen_sum += probs[best];
  }
  for (int64_t j = 0; j < k; j++) gate[j] = probs[expert[j]] / chosen_sum;
}

// Routing for all tokens: probs (N, E), expert (N, k), gate (N, k).
template <typename T>
void moe_route(T* probs, int32_t* expert, T* gate, const T* x, const T* router, int64_t N, int64_t C,
               int64_t E, int64_t k) {
  std::vector<T> logits(E);
  for (int64_t n = 0; n < N; n++) {
    for (int64_t e = 0; e < E; e++) {
      T acc = 0;
      for (int64_t c = 0; c < C; c++) acc += x[n * C + c] * router[e * C + c];
      logits[e] = acc;
    }
    moe_gate_row(probs + n * E, expert + n * k, gate + n * k, logits.data(), E, k);
  }
}

// aux = E * sum_e f_e * P_e (above), from the routing; f (E) receives f_e when given.
template <typename T>
T moe_aux_loss(const T* probs, const int32_t* expert, int64_t N, int64_t E, int64_t k, T* f = nullptr) {
  std::vector<T> frac(E, T(0)), mean_p(E, T(0));
  for (int64_t i = 0; i < N * k; i++) frac[expert[i]] += T(1) / static_cast<T>(N * k);
  for (int64_t n = 0; n < N; n++)
    for (int64_t e = 0; e < E; e++) mean_p[e] += probs[n * E + e] / static_cast<T>(N);
  T aux = 0;
  for (int64_t e = 0; e < E; e++) aux += frac[e] * mean_p[e];
  if (f)
    for (int64_t e = 0; e < E; e++) f[e] = frac[e];
  return static_cast<T>(E) * aux;
}

// One expert on one token: u (Hd) = fc_e @ x, a (Hd) = act(u), y (C) = proj_e @ a.
template <typename T>
void moe_expert_row(T* u, T* a, T* y, const T* x, const T* fc_e, const T* proj_e, int64_t C, int64_t Hd,
                    T slope) {
  for (int64_t h = 0; h < Hd; h++) {
    T acc = 0;
    for (int64_t c = 0; c < C; c++) acc += fc_e[h * C + c] * x[c];
    u[h] = acc;
    T v = acc >= 0 ? acc : slope * acc;
    a[h] = v * v;
  }
  for (int64_t c = 0; c < C; c++) {
    T acc = 0;
    for (int64_t h = 0; h < Hd; h++) acc += proj_e[c * Hd + h] * a[h];
    y[c] = acc;
  }
}

// out (N, C); returns aux.
template <typename T>
T moe_forward(T* out, const T* x, const T* router, const T* fc, const T* proj, int64_t N, int64_t C,
              int64_t E, int64_t Hd, int64_t k, T slope) {
  std::vector<T> probs(N * E), gate(N * k), u(Hd), a(Hd), y(C);
  std::vector<int32_t> expert(N * k);
  moe_route(probs.data(), expert.data(), gate.data(), x, router, N, C, E, k);
  for (int64_t n = 0; n < N; n++) {
    for (int64_t c = 0; c < C; c++) out[n * C + c] = 0;
    for (int64_t j = 0; j < k; j++) {
      const int64_t e = expert[n * k + j];
      moe_expert_row(u.data(), a.data(), y.data(), x + n * C, fc + e * Hd * C, proj + e * C * Hd, C, Hd,
                     slope);
      for (int64_t c = 0; c < C; c++) out[n * C + c] += gate[n * k + j] * y[c];
    }
  }
  return moe_aux_loss(probs.data(), expert.data(), N, E, k);
}

// Gradients of sum(out * dout) + aux_weight * aux, accumulated (+=); recomputes the forward. A null output
// is skipped.
template <typename T>
void moe_backward(T* dx, T* drouter, T* dfc, T* dproj, const T* dout, const T* x, const T* router,
                  const T* fc, const T* proj, int64_t N, int64_t C, int64_t E, int64_t Hd, int64_t k, T slope,
                  T aux_weight) {
  std::vector<T> probs(N * E), gate(N * k), f(E), u(Hd), a(Hd), y(C), du(Hd), dp(E), dgate(k);
  std::vector<int32_t> expert(N * k);
  moe_route(probs.data(), expert.data(), gate.data(), x, router, N, C, E, k);
  moe_aux_loss(probs.data(), expert.data(), N, E, k, f.data());
  for (int64_t n = 0; n < N; n++) {
    const T* g = dout + n * C;
    for (int64_t j = 0; j < k; j++) {
      const int64_t e = expert[n * k + j];
      const T *fc_e = fc + e * Hd * C, *proj_e = proj + e * C * Hd;
      const T gj = gate[n * k + j];
      moe_expert_row(u.data(), a.data(), y.data(), x + n * C, fc_e, proj_e, C, Hd, slope);
      T acc = 0;
      for (int64_t c = 0; c < C; c++) acc += g[c] * y[c];
      dgate[j] = acc;
      for (int64_t h = 0; h < Hd; h++) {  // dy = gj * g; da = proj_e^T dy; du = da * act'(u)
        T da = 0;
        for (int64_t c = 0; c < C; c++) da += proj_e[c * Hd + h] * gj * g[c];
        const T v = u[h] >= 0 ? u[h] : slope * u[h];
        du[h] = da * T(2) * v * (u[h] >= 0 ? T(1) : slope);
      }
      if (dproj)
        for (int64_t c = 0; c < C; c++)
          for (int64_t h = 0; h < Hd; h++) dproj[e * C * Hd + c * Hd + h] += gj * g[c] * a[h];
      if (dfc)
        for (int64_t h = 0; h < Hd; h++)
          for (int64_t c = 0; c < C; c++) dfc[e * Hd * C + h * C + c] += du[h] * x[n * C + c];
      if (dx)
        for (int64_t c = 0; c < C; c++)
          for (int64_t h = 0; h < Hd; h++) dx[n * C + c] += fc_e[h * C + c] * du[h];
    }
    // gate_j = p_j / s (s the sum of the chosen p): d gate_j / d p_i = (delta_ij - gate_j) / s over chosen i.
    const T* p = probs.data() + n * E;
    T s = 0, dot = 0;
    for (int64_t j = 0; j < k; j++) s += p[expert[n * k + j]], dot += dgate[j] * gate[n * k + j];
    for (int64_t e = 0; e < E; e++) dp[e] = aux_weight * static_cast<T>(E) * f[e] / static_cast<T>(N);
    for (int64_t j = 0; j < k; j++) dp[expert[n * k + j]] += (dgate[j] - dot) / s;
    T pdp = 0;  // softmax: dlogit_e = p_e (dp_e - sum_e' p_e' dp_e')
    for (int64_t e = 0; e < E; e++) pdp += p[e] * dp[e];
    for (int64_t e = 0; e < E; e++) {
      const T dl = p[e] * (dp[e] - pdp);
      for (int64_t c = 0; c < C; c++) {
        if (drouter) drouter[e * C + c] += dl * x[n * C + c];
        if (dx) dx[n * C + c] += dl * router[e * C + c];
      }
    }
  }
}

}  // namespace frontier::ref
