// Gated linear units (Shazeer 2020), the SwiGLU / GeGLU MLP variants: the up-projection makes 2H channels per row,
// the first H gate the second H. For x (N, 2H), a = x[:, :H], b = x[:, H:]:
//   y = act(a) * b                                   (N, H)
//   da = act'(a) * b * dy,  db = act(a) * dy
// kSwiglu: act = silu(a) = a s, s = sigmoid(a);        act' = s (1 + a (1 - s)).
// kGeglu:  act = gelu with the tanh approximation (PyTorch F.gelu(a, approximate='tanh')):
//          act = a/2 (1 + th), th = tanh(u), u = k0 (a + k1 a^3), k0 = sqrt(2/pi), k1 = 0.044715;
//          act' = (1 + th)/2 + a/2 (1 - th^2) k0 (1 + 3 k1 a^2).
#pragma once

#include <cmath>
#include <cstdint>

namespace frontier {

enum class GatedAct { kSwiglu, kGeglu };

namespace ref {

constexpr double kGeluK0 = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kGeluK1 = 0.044715;

template <typename T>
T gated_act_value(GatedAct kind, T a) {  // act(a)
  if (kind == GatedAct::kSwiglu) return a / (T(1) + std::exp(-a));
  const T th = std::tanh(T(kGeluK0) * (a + T(kGeluK1) * a * a * a));
  return T(0.5) * a * (T(1) + th);
}

template <typename T>
T gated_act_deriv(GatedAct kind, T a) {  // act'(a)
  if (kind == GatedAct::kSwiglu) {
    const T s = T(1) / (T(1) + std::exp(-a));
    return s * (T(1) + a * (T(1) - s));
  }
  const T th = std::tanh(T(kGeluK0) * (a + T(kGeluK1) * a * a * a));
  return T(0.5) * (T(1) + th) + T(0.5) * a * (T(1) - th * th) * T(kGeluK0) * (T(1) + T(3 * kGeluK1) * a * a);
}

template <typename T>
void gated_act_forward(T* out, const T* x, int64_t N, int64_t H, GatedAct kind) {  // out (N, H), x (N, 2H)
  for (int64_t r = 0; r < N; r++)
    for (int64_t j = 0; j < H; j++)
      out[r * H + j] = gated_act_value(kind, x[r * 2 * H + j]) * x[r * 2 * H + H + j];
}

template <typename T>
void gated_act_backward(T* dx, const T* dout, const T* x, int64_t N, int64_t H, GatedAct kind) {  // dx (N, 2H)
  for (int64_t r = 0; r < N; r++)
    for (int64_t j = 0; j < H; j++) {
      const T a = x[r * 2 * H + j], b = x[r * 2 * H + H + j], g = dout[r * H + j];
      dx[r * 2 * H + j] += gated_act_deriv(kind, a) * b * g;
      dx[r * 2 * H + H + j] += gated_act_value(kind, a) * g;
    }
}

}  // namespace ref
}  // namespace frontier
