// nanochat's smear: each token mixes in the previous token's vector through a learned scalar gate read off its
// first G channels. For x (B, T, C), w (G) (the gate's Linear(G, 1) weight), lam a scalar, and t >= 1:
//   z_t = x_t[:G] . w,  s_t = sigmoid(z_t),  g_t = lam s_t,  out_t = x_t + g_t x_{t-1};   out_0 = x_0.
// Backward, with dg_t = dout_t . x_{t-1} and dz_t = dg_t lam s_t (1 - s_t) (t >= 1):
//   dx_t += dout_t + g_{t+1} dout_{t+1} (t + 1 < T) + dz_t w (channels :G, t >= 1)
//   dw += sum_t dz_t x_t[:G],  dlam += sum_t dg_t s_t.
#pragma once

#include <cmath>
#include <cstdint>

namespace frontier::ref {

template <typename T>
void smear_forward(T* out, const T* x, const T* w, T lam, int64_t B, int64_t Tn, int64_t C, int64_t G) {
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < Tn; t++) {
      const T* xt = x + (b * Tn + t) * C;
      T* ot = out + (b * Tn + t) * C;
      T gate = 0;
      if (t > 0) {
        T z = 0;
        for (int64_t j = 0; j < G; j++) z += xt[j] * w[j];
        gate = lam / (T(1) + std::exp(-z));
      }
      for (int64_t c = 0; c < C; c++) ot[c] = xt[c] + (t > 0 ? gate * xt[c - C] : T(0));
    }
}

// dx (B, T, C), dw (G), dlam (1): accumulated.
template <typename T>
void smear_backward(T* dx, T* dw, T* dlam, const T* dout, const T* x, const T* w, T lam, int64_t B, int64_t Tn,
                    int64_t C, int64_t G) {
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < Tn; t++) {
      const int64_t r = b * Tn + t;
      const T *xt = x + r * C, *gt = dout + r * C;
      for (int64_t c = 0; c < C; c++) dx[r * C + c] += gt[c];
      if (t == 0) continue;
      T z = 0, dg = 0;
      for (int64_t j = 0; j < G; j++) z += xt[j] * w[j];
      for (int64_t c = 0; c < C; c++) dg += gt[c] * xt[c - C];
      const T s = T(1) / (T(1) + std::exp(-z)), dz = dg * lam * s * (T(1) - s);
      for (int64_t c = 0; c < C; c++) dx[(r - 1) * C + c] += lam * s * gt[c];
      for (int64_t j = 0; j < G; j++) {
        dx[r * C + j] += dz * w[j];
        dw[j] += dz * xt[j];
      }
      *dlam += dg * s;
    }
}

}  // namespace frontier::ref
