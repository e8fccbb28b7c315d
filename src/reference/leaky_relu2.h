// Leaky ReLU squared, an MLP activation variant (PyTorch: F.leaky_relu(x, slope).square()):
//   y = (x >= 0 ? x : slope * x)^2,  i.e. x^2 for x >= 0 and slope^2 x^2 below;
//   dy/dx = 2x for x >= 0 and 2 slope^2 x below (continuous at 0, where both are 0).
#pragma once

#include <cstdint>

namespace frontier::ref {

template <typename T>
void leaky_relu2_forward(T* out, const T* x, int64_t n, T slope) {  // out, x (n)
  for (int64_t i = 0; i < n; i++) {
    const T l = x[i] >= 0 ? x[i] : slope * x[i];
    out[i] = l * l;
  }
}

template <typename T>
void leaky_relu2_backward(T* dx, const T* dout, const T* x, int64_t n, T slope) {  // dx += dout * dy/dx
  for (int64_t i = 0; i < n; i++) dx[i] += T(2) * (x[i] >= 0 ? x[i] : slope * slope * x[i]) * dout[i];
}

}  // namespace frontier::ref
