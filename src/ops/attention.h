// Causal scaled-dot-product attention, reference kernel (materialises T x T scores per head: for tests and small
// shapes only; the tiled online-softmax kernel is issue 4). q (B, T, H, D); k, v (B, T, Hkv, D) with H % Hkv == 0
// (GQA: query head h reads kv head h / (H / Hkv)); out (B, T, H, D); scale = 1/sqrt(D) as F.sdpa.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace frontier::ref {

// att (B, H, T, T) receives the softmax probabilities (zero above the diagonal) for backward.
template <typename T>
void attention_forward(T* out, T* att, const T* q, const T* k, const T* v, int64_t B, int64_t Tn, int64_t H,
                       int64_t Hkv, int64_t D) {
  const T scale = T(1) / std::sqrt(static_cast<T>(D));
  const int64_t g = H / Hkv;
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++) {
      int64_t hk = h / g;
      for (int64_t t = 0; t < Tn; t++) {
        const T* qt = q + ((b * Tn + t) * H + h) * D;
        T* a = att + ((b * H + h) * Tn + t) * Tn;
        T mx = -INFINITY;
        for (int64_t s = 0; s <= t; s++) {
          const T* ks = k + ((b * Tn + s) * Hkv + hk) * D;
          T dot = 0;
          for (int64_t d = 0; d < D; d++) dot += qt[d] * ks[d];
          a[s] = dot * scale;
          mx = std::max(mx, a[s]);
        }
        T sum = 0;
        for (int64_t s = 0; s <= t; s++) sum += (a[s] = std::exp(a[s] - mx));
        for (int64_t s = 0; s <= t; s++) a[s] /= sum;
        for (int64_t s = t + 1; s < Tn; s++) a[s] = 0;
        T* ot = out + ((b * Tn + t) * H + h) * D;
        for (int64_t d = 0; d < D; d++) ot[d] = 0;
        for (int64_t s = 0; s <= t; s++) {
          const T* vs = v + ((b * Tn + s) * Hkv + hk) * D;
          for (int64_t d = 0; d < D; d++) ot[d] += a[s] * vs[d];
        }
      }
    }
}

// dq, dk, dv += gradients (accumulate).
template <typename T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* att, const T* q, const T* k, const T* v,
                        int64_t B, int64_t Tn, int64_t H, int64_t Hkv, int64_t D) {
  const T scale = T(1) / std::sqrt(static_cast<T>(D));
  const int64_t g = H / Hkv;
  std::vector<T> da(Tn);
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++) {
      int64_t hk = h / g;
      for (int64_t t = 0; t < Tn; t++) {
        const T* a = att + ((b * H + h) * Tn + t) * Tn;
        const T* go = dout + ((b * Tn + t) * H + h) * D;
        // dv[s] += a[s] * go; da[s] = go . v[s]
        T dot_sum = 0;
        for (int64_t s = 0; s <= t; s++) {
          const T* vs = v + ((b * Tn + s) * Hkv + hk) * D;
          T* dvs = dv + ((b * Tn + s) * Hkv + hk) * D;
          T acc = 0;
          for (int64_t d = 0; d < D; d++) {
            dvs[d] += a[s] * go[d];
            acc += go[d] * vs[d];
          }
          da[s] = acc;
          dot_sum += a[s] * acc;
        }
        // softmax backward: dscore[s] = a[s] * (da[s] - sum_j a[j] da[j]); scores = scale * q.k
        const T* qt = q + ((b * Tn + t) * H + h) * D;
        T* dqt = dq + ((b * Tn + t) * H + h) * D;
        for (int64_t s = 0; s <= t; s++) {
          T ds = a[s] * (da[s] - dot_sum) * scale;
          const T* ks = k + ((b * Tn + s) * Hkv + hk) * D;
          T* dks = dk + ((b * Tn + s) * Hkv + hk) * D;
          for (int64_t d = 0; d < D; d++) {
            dqt[d] += ds * ks[d];
            dks[d] += ds * qt[d];
          }
        }
      }
    }
}

}  // namespace frontier::ref
