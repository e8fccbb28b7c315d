// Fast kernels for the architecture-variant ops (autograd/variant_ops.cpp), float, one fused pass over memory
// each way, multi-threaded over fixed chunks. Same contracts as the reference kernels in src/reference/
// (leaky_relu2.h, gated_act.h, smear.h, axpy.h, key_shift.h), which the tests hold them to: backward ACCUMULATES (+=).
// Every result is computed by one thread in a fixed order, and the parameter gradients (smear's w and lam,
// axpy's scalar) are per-chunk partials summed in chunk order in double, so nothing depends on the thread count.
//
//   std::vector<float> y(N * H);
//   gated_act_forward(y.data(), x, N, H, GatedAct::kSwiglu);           // x (N, 2H) -> y = silu(x[:, :H]) x[:, H:]
//   gated_act_backward(dx, dy, x, N, H, GatedAct::kSwiglu);           // dx (N, 2H) += ...
#pragma once

#include <cstdint>

#include "reference/gated_act.h"

namespace frontier {

// y = (x >= 0 ? x : slope x)^2; out, x, dx, dout (n).
void leaky_relu2_forward(float* out, const float* x, int64_t n, float slope);
void leaky_relu2_backward(float* dx, const float* dout, const float* x, int64_t n, float slope);

// y = act(a) * b for x = [a | b] (N, 2H) -> out (N, H). exp (silu) and tanh (gelu) come from kernels/vmath.h on
// blocks of a row; backward recomputes them from x (nothing saved: H floats per row would cost as much as x).
void gated_act_forward(float* out, const float* x, int64_t N, int64_t H, GatedAct kind);
void gated_act_backward(float* dx, const float* dout, const float* x, int64_t N, int64_t H, GatedAct kind);

// Smear over x (B, T, C) with gate weights w (G) and scalar lam; s (B*T) receives sigmoid(x_t[:G] . w) per row
// (0 at t = 0) for backward. Backward: any of dx (B, T, C), dw (G), dlam (1) may be null (not wanted).
void smear_forward(float* out, float* s, const float* x, const float* w, float lam, int64_t B, int64_t T, int64_t C,
                   int64_t G);
void smear_backward(float* dx, float* dw, float* dlam, const float* dout, const float* s, const float* x,
                    const float* w, float lam, int64_t B, int64_t T, int64_t C, int64_t G);

// out = a + coef b (coef = alpha s[i]); backward da += dout, db += coef dout (either may be null; they may be the
// same buffer when a and b are one tensor) and returns sum(dout * b) in double (the scalar's gradient / alpha).
void axpy_forward(float* out, const float* a, const float* b, float coef, int64_t n);
double axpy_backward(float* da, float* db, const float* dout, const float* b, float coef, int64_t n);

// Partial key offset over k (B, T, H, D): dims with d mod (D/2) >= p0 take the previous position's value.
void key_shift_forward(float* out, const float* k, int64_t B, int64_t T, int64_t H, int64_t D, int64_t p0);
void key_shift_backward(float* dk, const float* dout, int64_t B, int64_t T, int64_t H, int64_t D, int64_t p0);

}  // namespace frontier
