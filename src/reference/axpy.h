// Scaled add with a learned scalar: out = a + alpha s b (nanochat's backout, x - lambda x_mid, is alpha = -1).
//   da += dout,  db += alpha s dout,  ds += alpha sum(dout * b).
#pragma once

#include <cstdint>

namespace frontier::ref {

template <typename T>
void axpy_forward(T* out, const T* a, const T* b, T alpha, T s, int64_t n) {  // out, a, b (n)
  for (int64_t i = 0; i < n; i++) out[i] = a[i] + alpha * s * b[i];
}

// da, db (n), ds (1): accumulated.
template <typename T>
void axpy_backward(T* da, T* db, T* ds, const T* dout, const T* b, T alpha, T s, int64_t n) {
  T acc = 0;
  for (int64_t i = 0; i < n; i++) {
    da[i] += dout[i];
    db[i] += alpha * s * dout[i];
    acc += dout[i] * b[i];
  }
  *ds += alpha * acc;
}

}  // namespace frontier::ref
