// Parameter-free RMSNorm over the last dimension: out = x / sqrt(mean(x^2) + eps), rows of C.
// (PyTorch F.rms_norm(x, (C,)) with eps = None uses torch.finfo(dtype).eps; we take eps explicitly.)
#pragma once

#include <cmath>
#include <cstdint>

namespace frontier::ref {

// rstd (N,) receives 1/sqrt(mean(x^2)+eps) for the backward pass.
template <typename T>
void rmsnorm_forward(T* out, T* rstd, const T* x, int64_t N, int64_t C, T eps) {
  for (int64_t i = 0; i < N; i++) {
    const T* xi = x + i * C;
    T ss = 0;
    for (int64_t c = 0; c < C; c++) ss += xi[c] * xi[c];
    T r = T(1) / std::sqrt(ss / C + eps);
    rstd[i] = r;
    for (int64_t c = 0; c < C; c++) out[i * C + c] = xi[c] * r;
  }
}

// dx += r * (dout - y * mean(dout * y)), y = x * r.
template <typename T>
void rmsnorm_backward(T* dx, const T* dout, const T* x, const T* rstd, int64_t N, int64_t C) {
  for (int64_t i = 0; i < N; i++) {
    const T* xi = x + i * C;
    const T* gi = dout + i * C;
    T r = rstd[i], dot = 0;
    for (int64_t c = 0; c < C; c++) dot += gi[c] * xi[c] * r;
    dot /= C;
    for (int64_t c = 0; c < C; c++) dx[i * C + c] += r * (gi[c] - xi[c] * r * dot);
  }
}

}  // namespace frontier::ref
