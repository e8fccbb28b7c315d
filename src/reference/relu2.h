// ReLU squared, the MLP activation: out = max(x, 0)^2; d/dx = 2 max(x, 0).
#pragma once

#include <cstdint>

namespace frontier::ref {

template <typename T>
void relu2_forward(T* out, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = x[i] > 0 ? x[i] * x[i] : T(0);
}

template <typename T>
void relu2_backward(T* dx, const T* dout, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; i++) dx[i] += x[i] > 0 ? T(2) * x[i] * dout[i] : T(0);
}

}  // namespace frontier::ref
