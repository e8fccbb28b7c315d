// Rotary position embedding, half-split as nanochat's apply_rotary_emb: for each head vector of D = 2*d,
// x1 = x[:d], x2 = x[d:]; y1 = x1*cos + x2*sin; y2 = -x1*sin + x2*cos, with angle t * base^(-2i/D).
// Layout x (B, T, H, D). The rotation is orthogonal, so backward applies the inverse rotation.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace frontier::ref {

// cos, sin: (T, D/2) tables for positions 0..T-1 (nanochat: base 100000, computed in float64 then cast).
template <typename T>
void rope_tables(T* cos_t, T* sin_t, int64_t Tn, int64_t D, double base) {
  int64_t d = D / 2;
  for (int64_t t = 0; t < Tn; t++)
    for (int64_t i = 0; i < d; i++) {
      double inv_freq = 1.0 / std::pow(base, (2.0 * i) / static_cast<double>(D));
      double a = static_cast<double>(t) * inv_freq;
      cos_t[t * d + i] = static_cast<T>(std::cos(a));
      sin_t[t * d + i] = static_cast<T>(std::sin(a));
    }
}

template <typename T>
void rope_forward(T* out, const T* x, const T* cos_t, const T* sin_t, int64_t B, int64_t Tn, int64_t H, int64_t D) {
  int64_t d = D / 2;
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < Tn; t++)
      for (int64_t h = 0; h < H; h++) {
        const T* xv = x + ((b * Tn + t) * H + h) * D;
        T* ov = out + ((b * Tn + t) * H + h) * D;
        for (int64_t i = 0; i < d; i++) {
          T c = cos_t[t * d + i], s = sin_t[t * d + i], x1 = xv[i], x2 = xv[i + d];
          ov[i] = x1 * c + x2 * s;
          ov[i + d] = -x1 * s + x2 * c;
        }
      }
}

// dx += R^T dout.
template <typename T>
void rope_backward(T* dx, const T* dout, const T* cos_t, const T* sin_t, int64_t B, int64_t Tn, int64_t H, int64_t D) {
  int64_t d = D / 2;
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < Tn; t++)
      for (int64_t h = 0; h < H; h++) {
        const T* g = dout + ((b * Tn + t) * H + h) * D;
        T* dv = dx + ((b * Tn + t) * H + h) * D;
        for (int64_t i = 0; i < d; i++) {
          T c = cos_t[t * d + i], s = sin_t[t * d + i], g1 = g[i], g2 = g[i + d];
          dv[i] += g1 * c - g2 * s;
          dv[i + d] += g1 * s + g2 * c;
        }
      }
}

}  // namespace frontier::ref
