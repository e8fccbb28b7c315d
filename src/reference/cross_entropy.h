// Logit softcap + cross-entropy, fused: c = cap * tanh(z / cap), loss_i = logsumexp(c_i) - c_i[target_i].
// Rows with target < 0 are ignored (PyTorch ignore_index = -1). Returns the mean over counted rows, as
// F.cross_entropy(..., ignore_index=-1, reduction="mean"); per-row losses (nats) go to `losses` if given (val_bpb
// sums them). Logits z (N, V).
#pragma once

#include <cmath>
#include <cstdint>

namespace frontier::ref {

template <typename T>
T softcap_ce_forward(T* losses, const T* z, const int32_t* targets, int64_t N, int64_t V, T cap) {
  T total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < N; i++) {
    const T* zi = z + i * V;
    if (targets[i] < 0) {
      if (losses) losses[i] = 0;
      continue;
    }
    T mx = -INFINITY;
    for (int64_t v = 0; v < V; v++) mx = std::max(mx, cap * std::tanh(zi[v] / cap));
    T sum = 0;
    for (int64_t v = 0; v < V; v++) sum += std::exp(cap * std::tanh(zi[v] / cap) - mx);
    T l = std::log(sum) + mx - cap * std::tanh(zi[targets[i]] / cap);
    if (losses) losses[i] = l;
    total += l;
    count++;
  }
  return count ? total / count : T(0);
}

// dz += dloss * (softmax(c) - onehot) * (1 - tanh^2(z/cap)) / count.
template <typename T>
void softcap_ce_backward(T* dz, T dloss, const T* z, const int32_t* targets, int64_t N, int64_t V, T cap) {
  int64_t count = 0;
  for (int64_t i = 0; i < N; i++) count += targets[i] >= 0;
  if (!count) return;
  for (int64_t i = 0; i < N; i++) {
    if (targets[i] < 0) continue;
    const T* zi = z + i * V;
    T mx = -INFINITY;
    for (int64_t v = 0; v < V; v++) mx = std::max(mx, cap * std::tanh(zi[v] / cap));
    T sum = 0;
    for (int64_t v = 0; v < V; v++) sum += std::exp(cap * std::tanh(zi[v] / cap) - mx);
    for (int64_t v = 0; v < V; v++) {
      T th = std::tanh(zi[v] / cap);
      T p = std::exp(cap * th - mx) / sum - (v == targets[i] ? T(1) : T(0));
      dz[i * V + v] += dloss * p * (T(1) - th * th) / static_cast<T>(count);
    }
  }
}

}  // namespace frontier::ref
