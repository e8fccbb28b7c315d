#include "kernels/variant_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/vmath.h"

namespace frontier {

namespace {

// Runs fn(c, begin, end) for the chunks c of [0, n) of `grain` items on all threads. The chunks do not depend on
// the thread count, so neither do per-chunk partial sums added in chunk order.
template <typename F>
void parallel_chunks(int64_t n, int64_t grain, F fn) {
  const int64_t chunks = (n + grain - 1) / grain;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; c++) fn(c, c * grain, std::min(n, (c + 1) * grain));
}

constexpr int64_t kElems = 1 << 14;  // elementwise ops: 64 KiB of each stream per chunk
constexpr int64_t kBlock = 256;      // gated_act: columns per vmath call (a stack buffer of 1 KiB)

}  // namespace

void leaky_relu2_forward(float* out, const float* x, int64_t n, float slope) {
  // Scalars are copied into each chunk's locals: read through the [&] closure, a float store to out could alias
  // them, and GCC then leaves the loop scalar.
  parallel_chunks(n, kElems, [&](int64_t, int64_t i0, int64_t i1) {
    const float sl = slope;
    for (int64_t i = i0; i < i1; i++) {
      const float l = x[i] >= 0.f ? x[i] : sl * x[i];
      out[i] = l * l;
    }
  });
}

void leaky_relu2_backward(float* dx, const float* dout, const float* x, int64_t n, float slope) {
  parallel_chunks(n, kElems, [&](int64_t, int64_t i0, int64_t i1) {
    const float s2 = slope * slope;
    for (int64_t i = i0; i < i1; i++) dx[i] += 2.f * (x[i] >= 0.f ? x[i] : s2 * x[i]) * dout[i];
  });
}

namespace {

// The work unit of gated_act: a block of up to kBlock columns of one row. e receives exp(-a) (silu) or
// tanh(k0 (a + k1 a^3)) (gelu) for the block's gate values, in vector calls.
void gated_block(float* e, const float* a, int64_t n, GatedAct kind) {
  if (kind == GatedAct::kSwiglu) {
    for (int64_t j = 0; j < n; j++) e[j] = -a[j];
    vmath::exp_shift_sum(e, e, 0.f, n);
  } else {
    const float k0 = static_cast<float>(ref::kGeluK0), k1 = static_cast<float>(ref::kGeluK1);
    for (int64_t j = 0; j < n; j++) e[j] = k0 * (a[j] + k1 * a[j] * a[j] * a[j]);
    vmath::softcap(e, e, 1.f, n);  // 1 * tanh(u / 1)
  }
}

template <typename F>
void for_gated_blocks(int64_t N, int64_t H, F fn) {
  const int64_t nblk = (H + kBlock - 1) / kBlock;
  parallel_chunks(N * nblk, std::max<int64_t>(1, 64 / nblk), [&](int64_t, int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; u++) {
      const int64_t r = u / nblk, j0 = (u % nblk) * kBlock;
      fn(r, j0, std::min(kBlock, H - j0));
    }
  });
}

}  // namespace

void gated_act_forward(float* out, const float* x, int64_t N, int64_t H, GatedAct kind) {
  for_gated_blocks(N, H, [&](int64_t r, int64_t j0, int64_t n) {
    float e[kBlock];
    const float *a = x + r * 2 * H + j0, *b = a + H;
    float* y = out + r * H + j0;
    gated_block(e, a, n, kind);
    if (kind == GatedAct::kSwiglu)
      for (int64_t j = 0; j < n; j++) y[j] = a[j] / (1.f + e[j]) * b[j];
    else
      for (int64_t j = 0; j < n; j++) y[j] = 0.5f * a[j] * (1.f + e[j]) * b[j];
  });
}

void gated_act_backward(float* dx, const float* dout, const float* x, int64_t N, int64_t H, GatedAct kind) {
  for_gated_blocks(N, H, [&](int64_t r, int64_t j0, int64_t n) {
    const float k0 = static_cast<float>(ref::kGeluK0), k3 = static_cast<float>(3 * ref::kGeluK1);
    float e[kBlock];
    const float *a = x + r * 2 * H + j0, *b = a + H, *g = dout + r * H + j0;
    float *da = dx + r * 2 * H + j0, *db = da + H;
    gated_block(e, a, n, kind);
    if (kind == GatedAct::kSwiglu) {
      for (int64_t j = 0; j < n; j++) {
        const float s = 1.f / (1.f + e[j]);
        da[j] += s * (1.f + a[j] * (1.f - s)) * b[j] * g[j];
        db[j] += a[j] * s * g[j];
      }
    } else {
      for (int64_t j = 0; j < n; j++) {
        const float th = e[j], act = 0.5f * a[j] * (1.f + th);
        const float dact = 0.5f * (1.f + th) + 0.5f * a[j] * (1.f - th * th) * k0 * (1.f + k3 * a[j] * a[j]);
        da[j] += dact * b[j] * g[j];
        db[j] += act * g[j];
      }
    }
  });
}

// Rows split over threads; row r reads x_{r-1}, still in cache from the previous row.
void smear_forward(float* out, float* s, const float* x, const float* w, float lam, int64_t B, int64_t T, int64_t C,
                   int64_t G) {
  parallel_chunks(B * T, 32, [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* xt = x + r * C;
      float* ot = out + r * C;
      if (r % T == 0) {
        std::copy(xt, xt + C, ot);
        s[r] = 0.f;
        continue;
      }
      float z = 0;
#pragma omp simd reduction(+ : z)
      for (int64_t j = 0; j < G; j++) z += xt[j] * w[j];
      s[r] = 1.f / (1.f + std::exp(-z));
      const float gate = lam * s[r];
      const float* xp = xt - C;
      for (int64_t c = 0; c < C; c++) ot[c] = xt[c] + gate * xp[c];
    }
  });
}

// One pass over rows: row r's dx takes its own dout, the next row's dout through g_{r+1}, and (channels :G) its
// gate's dz; the w and lam gradients are per-chunk partials in double, summed in chunk order.
void smear_backward(float* dx, float* dw, float* dlam, const float* dout, const float* s, const float* x,
                    const float* w, float lam, int64_t B, int64_t T, int64_t C, int64_t G) {
  const int64_t rows = B * T, grain = 32, chunks = (rows + grain - 1) / grain;
  std::vector<double> part_w(dw ? chunks * G : 0), part_l(chunks, 0.0);
  parallel_chunks(rows, grain, [&](int64_t ch, int64_t r0, int64_t r1) {
    double* pw = dw ? part_w.data() + ch * G : nullptr;
    if (pw) std::fill(pw, pw + G, 0.0);
    double pl = 0;
    for (int64_t r = r0; r < r1; r++) {
      const int64_t t = r % T;
      const float *xt = x + r * C, *gt = dout + r * C;
      float dz = 0;
      if (t > 0) {
        const float* xp = xt - C;
        float dg = 0;
#pragma omp simd reduction(+ : dg)
        for (int64_t c = 0; c < C; c++) dg += gt[c] * xp[c];
        dz = dg * lam * s[r] * (1.f - s[r]);
        if (pw)
          for (int64_t j = 0; j < G; j++) pw[j] += static_cast<double>(dz) * xt[j];
        pl += static_cast<double>(dg) * s[r];
      }
      if (!dx) continue;
      float* d = dx + r * C;
      if (t + 1 < T) {
        const float gn = lam * s[r + 1], *gnt = gt + C;
        for (int64_t c = 0; c < C; c++) d[c] += gt[c] + gn * gnt[c];
      } else {
        for (int64_t c = 0; c < C; c++) d[c] += gt[c];
      }
      if (t > 0)
        for (int64_t j = 0; j < G; j++) d[j] += dz * w[j];
    }
    part_l[ch] = pl;
  });
  if (dw)
    for (int64_t j = 0; j < G; j++) {
      double acc = 0;
      for (int64_t ch = 0; ch < chunks; ch++) acc += part_w[ch * G + j];
      dw[j] += static_cast<float>(acc);
    }
  if (dlam) {
    double acc = 0;
    for (double p : part_l) acc += p;
    *dlam += static_cast<float>(acc);
  }
}

void axpy_forward(float* out, const float* a, const float* b, float coef, int64_t n) {
  parallel_chunks(n, kElems, [&](int64_t, int64_t i0, int64_t i1) {
    const float c = coef;
    for (int64_t i = i0; i < i1; i++) out[i] = a[i] + c * b[i];
  });
}

namespace {

// One chunk of axpy's backward: one loop over all its streams, specialised on which outputs are wanted so that
// the loop has no branches. The sum runs in eight lanes of doubles, so that its additions do not wait on each
// other (a single chain is latency-bound). da and db may be one buffer (a and b one tensor): each element is
// then updated twice, in order.
template <bool kA, bool kB, bool kSum>
double axpy_backward_chunk(float* da, float* db, const float* dout, const float* b, float c, int64_t i0,
                           int64_t i1) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8)
    for (int l = 0; l < 8; l++) {
      const float g = dout[i + l];
      if constexpr (kA) da[i + l] += g;
      if constexpr (kB) db[i + l] += c * g;
      if constexpr (kSum) acc[l] += static_cast<double>(g) * b[i + l];
    }
  for (; i < i1; i++) {
    if constexpr (kA) da[i] += dout[i];
    if constexpr (kB) db[i] += c * dout[i];
    if constexpr (kSum) acc[0] += static_cast<double>(dout[i]) * b[i];
  }
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace

double axpy_backward(float* da, float* db, const float* dout, const float* b, float coef, int64_t n) {
  using Chunk = double (*)(float*, float*, const float*, const float*, float, int64_t, int64_t);
  static constexpr Chunk kChunk[8] = {
      axpy_backward_chunk<false, false, false>, axpy_backward_chunk<false, false, true>,
      axpy_backward_chunk<false, true, false>,  axpy_backward_chunk<false, true, true>,
      axpy_backward_chunk<true, false, false>,  axpy_backward_chunk<true, false, true>,
      axpy_backward_chunk<true, true, false>,   axpy_backward_chunk<true, true, true>};
  const Chunk chunk = kChunk[(da ? 4 : 0) + (db ? 2 : 0) + (b ? 1 : 0)];
  const int64_t grain = 4096, chunks = (n + grain - 1) / grain;
  std::vector<double> part(chunks, 0.0);
  parallel_chunks(n, grain, [&](int64_t ch, int64_t i0, int64_t i1) {
    part[ch] = chunk(da, db, dout, b, coef, i0, i1);
  });
  double acc = 0;
  for (double p : part) acc += p;
  return acc;
}

// Rows (b, t) split over threads; per head, each half of D is a run of p0 current values then half - p0 shifted.
void key_shift_forward(float* out, const float* k, int64_t B, int64_t T, int64_t H, int64_t D, int64_t p0) {
  const int64_t half = D / 2, row = H * D;
  parallel_chunks(B * T, 16, [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* cur = k + r * row;
      const float* src = r % T ? cur - row : cur;
      float* o = out + r * row;
      for (int64_t off = 0; off < row; off += half) {
        std::copy(cur + off, cur + off + p0, o + off);
        std::copy(src + off + p0, src + off + half, o + off + p0);
      }
    }
  });
}

// Row r of dk gathers dout_r on the current dims and, on the shifted dims, dout_{r+1} (t + 1 < T) plus dout_r at
// t = 0 (the first position keeps its own value).
void key_shift_backward(float* dk, const float* dout, int64_t B, int64_t T, int64_t H, int64_t D, int64_t p0) {
  const int64_t half = D / 2, row = H * D;
  parallel_chunks(B * T, 16, [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const int64_t t = r % T;
      const float* g = dout + r * row;
      const float* gn = t + 1 < T ? g + row : nullptr;
      float* d = dk + r * row;
      for (int64_t off = 0; off < row; off += half) {
        for (int64_t i = off; i < off + p0; i++) d[i] += g[i];
        if (t == 0)
          for (int64_t i = off + p0; i < off + half; i++) d[i] += g[i];
        if (gn)
          for (int64_t i = off + p0; i < off + half; i++) d[i] += gn[i];
      }
    }
  });
}

}  // namespace frontier
