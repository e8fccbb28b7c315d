// Causal scaled-dot-product attention, reference kernel (materialises T x T scores per head: for tests and small
// shapes only; the tiled kernel is kernels/attention.h). q (B, T, H, D); k, v (B, T, Hkv, D) with H % Hkv == 0
// (GQA: query head h reads kv head h / (H / Hkv)); out (B, T, H, D). Scores are scale * q.k, scale = 0 meaning
// 1/sqrt(D) as F.sdpa. window W > 0 is a sliding window (FlashAttention's window_size=(W, 0) with causal=True):
// query t sees keys max(0, t - W) <= s <= t, at most W + 1 of them; W = 0 (or W >= T) is full causal attention.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace frontier::ref {

// The first key query t sees.
inline int64_t attention_first_key(int64_t t, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, t - window) : 0;
}

// att (B, H, T, T) receives the softmax probabilities (zero outside the visible keys) for backward.
template <typename T>
void attention_forward(T* out, T* att, const T* q, const T* k, const T* v, int64_t B, int64_t Tn, int64_t H,
                       int64_t Hkv, int64_t D, T scale = 0, int64_t window = 0) {
  if (scale == T(0)) scale = T(1) / std::sqrt(static_cast<T>(D));
  const int64_t g = H / Hkv;
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++) {
      int64_t hk = h / g;
      for (int64_t t = 0; t < Tn; t++) {
        const T* qt = q + ((b * Tn + t) * H + h) * D;
        T* a = att + ((b * H + h) * Tn + t) * Tn;
        const int64_t s0 = attention_first_key(t, window);
        for (int64_t s = 0; s < s0; s++) a[s] = 0;
        T mx = -INFINITY;
        for (int64_t s = s0; s <= t; s++) {
          const T* ks = k + ((b * Tn + s) * Hkv + hk) * D;
          T dot = 0;
          for (int64_t d = 0; d < D; d++) dot += qt[d] * ks[d];
          a[s] = dot * scale;
          mx = std::max(mx, a[s]);
        }
        T sum = 0;
        for (int64_t s = s0; s <= t; s++) sum += (a[s] = std::exp(a[s] - mx));
        for (int64_t s = s0; s <= t; s++) a[s] /= sum;
        for (int64_t s = t + 1; s < Tn; s++) a[s] = 0;
        T* ot = out + ((b * Tn + t) * H + h) * D;
        for (int64_t d = 0; d < D; d++) ot[d] = 0;
        for (int64_t s = s0; s <= t; s++) {
          const T* vs = v + ((b * Tn + s) * Hkv + hk) * D;
          for (int64_t d = 0; d < D; d++) ot[d] += a[s] * vs[d];
        }
      }
    }
}

// dq, dk, dv += gradients (accumulate). scale and window as given to attention_forward.
template <typename T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* att, const T* q, const T* k, const T* v,
                        int64_t B, int64_t Tn, int64_t H, int64_t Hkv, int64_t D, T scale = 0, int64_t window = 0) {
  if (scale == T(0)) scale = T(1) / std::sqrt(static_cast<T>(D));
  const int64_t g = H / Hkv;
  std::vector<T> da(Tn);
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++) {
      int64_t hk = h / g;
      for (int64_t t = 0; t < Tn; t++) {
        const T* a = att + ((b * H + h) * Tn + t) * Tn;
        const T* go = dout + ((b * Tn + t) * H + h) * D;
        const int64_t s0 = attention_first_key(t, window);
        // dv[s] += a[s] * go; da[s] = go . v[s]
        T dot_sum = 0;
        for (int64_t s = s0; s <= t; s++) {
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
        for (int64_t s = s0; s <= t; s++) {
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
