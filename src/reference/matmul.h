// Linear layer, reference kernel: out (M, N) = inp (M, K) @ W^T, W (N, K). No bias (the model has none).
// Cost: 2*M*N*K FLOPs forward, twice that backward. The dot product is an OpenMP simd reduction (a fixed,
// deterministic summation order): plain code, but vectorised.
#pragma once

#include <cstdint>

namespace frontier::ref {

template <typename T>
void matmul_forward(T* out, const T* inp, const T* W, int64_t M, int64_t K, int64_t N) {
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      T acc = 0;
#pragma omp simd reduction(+ : acc)
      for (int64_t k = 0; k < K; k++) acc += inp[m * K + k] * W[n * K + k];
      out[m * N + n] = acc;
    }
}

// dinp (M, K) += dout @ W; dW (N, K) += dout^T @ inp. Either may be null.
template <typename T>
void matmul_backward(T* dinp, T* dW, const T* dout, const T* inp, const T* W, int64_t M, int64_t K, int64_t N) {
  if (dinp)
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        T d = dout[m * N + n];
        for (int64_t k = 0; k < K; k++) dinp[m * K + k] += d * W[n * K + k];
      }
  if (dW)
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        T d = dout[m * N + n];
        for (int64_t k = 0; k < K; k++) dW[n * K + k] += d * inp[m * K + k];
      }
}

}  // namespace frontier::ref
