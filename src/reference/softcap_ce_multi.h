// Multi-token prediction loss on one set of logits (as modded-nanogpt): K target arrays share the softcapped
// logits c = cap * tanh(z / cap) (cap == 0: c = z, no softcap) and hence each row's log-sum-exp, so each
// extra predicted token costs O(N), not O(N V):
//
//   loss = sum_k weights[k] * mean over rows r with targets[k][r] >= 0 of (lse(c_r) - c_r[targets[k][r]])
//
// A k with no counted rows adds 0. K = 1 with weight 1 is ref::softcap_ce_forward (reference/cross_entropy.h).
// Per-row losses of k = 0 (nats, 0 for ignored rows) go to `losses` if given. Logits z (N, V); targets[k]
// (N,).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace frontier::ref {

// lse of row zi's capped logits (max-shifted).
template <typename T>
T softcap_ce_multi_lse(const T* zi, int64_t V, T cap) {
  auto capf = [cap](T x) { return cap == T(0) ? x : cap * std::tanh(x / cap); };
  T mx = -INFINITY;
  for (int64_t v = 0; v < V; v++) mx = std::max(mx, capf(zi[v]));
  T sum = 0;
  for (int64_t v = 0; v < V; v++) sum += std::exp(capf(zi[v]) - mx);
  return mx + std::log(sum);
}

template <typename T>
T softcap_ce_multi_forward(T* losses, const T* z, const int32_t* const* targets, const T* weights, int K,
                           int64_t N, int64_t V, T cap) {
  auto capf = [cap](T x) { return cap == T(0) ? x : cap * std::tanh(x / cap); };
  std::vector<T> total(K, T(0));
  std::vector<int64_t> count(K, 0);
  for (int64_t i = 0; i < N; i++) {
    const T* zi = z + i * V;
    const T lse = softcap_ce_multi_lse(zi, V, cap);
    if (losses) losses[i] = targets[0][i] < 0 ? T(0) : lse - capf(zi[targets[0][i]]);
    for (int k = 0; k < K; k++)
      if (targets[k][i] >= 0) total[k] += lse - capf(zi[targets[k][i]]), count[k]++;
  }
  T loss = 0;
  for (int k = 0; k < K; k++)
    if (count[k]) loss += weights[k] * total[k] / static_cast<T>(count[k]);
  return loss;
}

// dz += dloss * dc/dz * sum_k [targets[k] >= 0] weights[k] / count_k * (softmax(c) - onehot(targets[k])).
template <typename T>
void softcap_ce_multi_backward(T* dz, T dloss, const T* z, const int32_t* const* targets, const T* weights,
                               int K, int64_t N, int64_t V, T cap) {
  std::vector<int64_t> count(K, 0);
  for (int k = 0; k < K; k++)
    for (int64_t i = 0; i < N; i++) count[k] += targets[k][i] >= 0;
  for (int64_t i = 0; i < N; i++) {
    const T* zi = z + i * V;
    const T lse = softcap_ce_multi_lse(zi, V, cap);
    for (int64_t v = 0; v < V; v++) {
      const T th = cap == T(0) ? T(0) : std::tanh(zi[v] / cap);
      const T c = cap == T(0) ? zi[v] : cap * th, p = std::exp(c - lse);
      T g = 0;
      for (int k = 0; k < K; k++)
        if (targets[k][i] >= 0)
          g += weights[k] / static_cast<T>(count[k]) * (p - (v == targets[k][i] ? T(1) : T(0)));
      dz[i * V + v] += dloss * g * (T(1) - th * th);
    }
  }
}

}  // namespace frontier::ref
