// modded-nanogpt's partial key offset: with a partial RoPE, the head dimensions that are not rotated (in each half
// of D = 2 half, the dims d with d mod half >= p0) carry no position, so shifting them one step back in time lets
// a query at t match the key content of t-1 (one-layer induction heads). For k (B, T, H, D):
//   out[b, t, h, d] = k[b, t-1, h, d]  for t >= 1 and d mod half >= p0;  out[b, 0] = k[b, 0];  others copied.
// A permutation-with-duplication, so backward routes each gradient to its source:
//   dk[b, t, h, d] += dout[b, t+1, h, d] (t + 1 < T) + (t == 0 ? dout[b, 0, h, d] : 0)  for shifted dims,
//   dk += dout elsewhere.
#pragma once

#include <cstdint>

namespace frontier::ref {

template <typename T>
void key_shift_forward(T* out, const T* k, int64_t B, int64_t Tn, int64_t H, int64_t D, int64_t p0) {
  const int64_t half = D / 2, row = H * D;
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < Tn; t++)
      for (int64_t i = 0; i < row; i++) {
        const int64_t r = b * Tn + t;
        const bool shifted = (i % D) % half >= p0 && t > 0;
        out[r * row + i] = k[(shifted ? r - 1 : r) * row + i];
      }
}

template <typename T>
void key_shift_backward(T* dk, const T* dout, int64_t B, int64_t Tn, int64_t H, int64_t D, int64_t p0) {
  const int64_t half = D / 2, row = H * D;
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < Tn; t++)
      for (int64_t i = 0; i < row; i++) {
        const int64_t r = b * Tn + t;
        const bool shifted = (i % D) % half >= p0 && t > 0;
        dk[(shifted ? r - 1 : r) * row + i] += dout[r * row + i];
      }
}

}  // namespace frontier::ref
