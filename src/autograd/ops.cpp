// Primitive autograd ops over the reference kernels. Each op: compute the forward into a new node, and record a
// backward closure that accumulates into its inputs' gradients (only those that require grad).
#include <algorithm>
#include <cmath>

#include "autograd/tape.h"
#include "kernels/attention.h"
#include "kernels/gemm.h"
#include "kernels/softcap_ce.h"
#include "reference/relu2.h"
#include "reference/rmsnorm.h"
#include "reference/rope.h"
#include "util/status.h"
#include "util/trace.h"

namespace frontier {

namespace {
std::vector<int64_t> with_last(std::vector<int64_t> s, int64_t last) {
  s.back() = last;
  return s;
}

// Scopes for `frontier profile` (util/trace.h): FLOPs as the op computes them, bytes as the compulsory
// traffic (each input read once, each output written once; "+=" outputs read and written), 4 bytes per float.
constexpr double kF = 4.0;

// Runs fn(begin, end) over [0, n) in fixed chunks on all threads. Memory-bound ops use it: each element is
// computed by one chunk in a fixed order, so results do not depend on the thread count.
template <typename F>
void parallel_range(int64_t n, int64_t grain, F fn) {
  const int64_t chunks = (n + grain - 1) / grain;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; c++) fn(c * grain, std::min(n, (c + 1) * grain));
}

// Sum of x[k] * y[k] in double over fixed chunks of 4096 summed in order (thread-count independent).
double dot_fixed(const float* x, const float* y, int64_t n) {
  const int64_t grain = 4096, chunks = (n + grain - 1) / grain;
  std::vector<double> part(chunks);
  parallel_range(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; c++) {
      double acc = 0;
      for (int64_t k = c * grain; k < std::min(n, (c + 1) * grain); k++) acc += static_cast<double>(x[k]) * y[k];
      part[c] = acc;
    }
  });
  double acc = 0;
  for (double p : part) acc += p;
  return acc;
}
}  // namespace

Var embedding(Tape& t, const int32_t* idx, int64_t n, Var table) {
  int64_t V = t.shape(table)[0], C = t.shape(table)[1];
  ProfScope ps("embedding", "fwd", 0, kF * 2 * n * C);
  Var out = t.make({n, C}, t.requires_grad(table));
  const float* W = t.value(table);
  float* o = t.value(out);
  std::vector<int32_t> ids(idx, idx + n);
  for (int64_t i = 0; i < n; i++) FRONTIER_CHECK(ids[i] >= 0 && ids[i] < V);
  parallel_range(n, 256, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) std::copy(W + ids[i] * C, W + (ids[i] + 1) * C, o + i * C);
  });
  if (t.requires_grad(table))
    t.node(out).backward = [&t, out, table, ids, C]() {
      ProfScope ps("embedding", "bwd", static_cast<double>(ids.size()) * C, kF * 3 * ids.size() * C);
      float* g = t.grad(out);
      float* dW = t.grad(table);
      // Threads split the columns, so rows that share a token id never race.
      parallel_range(C, 32, [&](int64_t c0, int64_t c1) {
        for (size_t i = 0; i < ids.size(); i++)
          for (int64_t c = c0; c < c1; c++) dW[ids[i] * C + c] += g[i * C + c];
      });
    };
  return out;
}

// The three GEMM forms of a training step (kernels/gemm.h): out = x @ W^T, dx += g @ W, dW += g^T @ x. The GEMM
// accumulates every element over K in a fixed order, so results do not depend on the thread count.
Var linear(Tape& t, Var x, Var W) {
  int64_t K = t.shape(x).back(), N = t.shape(W)[0];
  FRONTIER_CHECK(t.shape(W)[1] == K);
  int64_t M = t.numel(x) / K;
  bool rg = t.requires_grad(x) || t.requires_grad(W);
  ProfScope ps("linear", "fwd", 2.0 * M * N * K, kF * (M * K + N * K + M * N), {M, N, K});
  Var out = t.make(with_last(t.shape(x), N), rg);
  const Precision prec = t.precision();
  gemm(prec, false, true, M, N, K, 1.f, t.value(x), K, t.value(W), K, 0.f, t.value(out), N);
  if (rg)
    t.node(out).backward = [&t, out, x, W, M, K, N, prec]() {
      const float *g = t.grad(out), *px = t.value(x), *pw = t.value(W);
      if (t.requires_grad(x)) {
        ProfScope ps("linear.dx", "bwd", 2.0 * M * N * K, kF * (M * N + N * K + 2 * M * K), {M, K, N});
        bool fresh;
        float* dx = t.grad_or_fresh(x, &fresh);
        gemm(prec, false, false, M, K, N, 1.f, g, N, pw, K, fresh ? 0.f : 1.f, dx, K);
      }
      if (t.requires_grad(W)) {
        ProfScope ps("linear.dW", "bwd", 2.0 * M * N * K, kF * (M * N + M * K + 2 * N * K), {N, K, M});
        gemm(prec, true, false, N, K, M, 1.f, g, N, px, K, 1.f, t.grad(W), K);
      }
    };
  return out;
}

Var rmsnorm(Tape& t, Var x, float eps) {
  int64_t C = t.shape(x).back(), N = t.numel(x) / C;
  ProfScope ps("rmsnorm", "fwd", 3.0 * N * C, kF * 2 * N * C);
  Var out = t.make(t.shape(x), t.requires_grad(x));
  auto rstd = std::make_shared<std::vector<float>>(N);
  parallel_range(N, 64, [&](int64_t i0, int64_t i1) {
    ref::rmsnorm_forward(t.value(out) + i0 * C, rstd->data() + i0, t.value(x) + i0 * C, i1 - i0, C, eps);
  });
  if (t.requires_grad(x))
    t.node(out).backward = [&t, out, x, rstd, N, C]() {
      ProfScope ps("rmsnorm", "bwd", 6.0 * N * C, kF * 4 * N * C);
      bool fresh;
      float *dx = t.grad_or_fresh(x, &fresh), *g = t.grad(out), *px = t.value(x);
      parallel_range(N, 64, [&](int64_t i0, int64_t i1) {
        if (fresh) std::fill(dx + i0 * C, dx + i1 * C, 0.f);
        ref::rmsnorm_backward(dx + i0 * C, g + i0 * C, px + i0 * C, rstd->data() + i0, i1 - i0, C);
      });
    };
  return out;
}

Var rope(Tape& t, Var x, const float* cos_t, const float* sin_t) {
  const auto& s = t.shape(x);
  FRONTIER_CHECK(s.size() == 4);
  int64_t B = s[0], T = s[1], H = s[2], D = s[3];
  ProfScope ps("rope", "fwd", 3.0 * B * T * H * D, kF * (2 * B * T * H * D + T * D));
  Var out = t.make(s, t.requires_grad(x));
  const int64_t per = T * H * D;  // one sequence; threads split the batch
  parallel_range(B, 1, [&](int64_t b0, int64_t b1) {
    ref::rope_forward(t.value(out) + b0 * per, t.value(x) + b0 * per, cos_t, sin_t, b1 - b0, T, H, D);
  });
  if (t.requires_grad(x))
    t.node(out).backward = [&t, out, x, cos_t, sin_t, B, T, H, D, per]() {
      ProfScope ps("rope", "bwd", 4.0 * B * T * H * D, kF * (3 * B * T * H * D + T * D));
      float *dx = t.grad(x), *g = t.grad(out);
      parallel_range(B, 1, [&](int64_t b0, int64_t b1) {
        ref::rope_backward(dx + b0 * per, g + b0 * per, cos_t, sin_t, b1 - b0, T, H, D);
      });
    };
  return out;
}

Var relu2(Tape& t, Var x) {
  int64_t n = t.numel(x);
  ProfScope ps("relu2", "fwd", 2.0 * n, kF * 2 * n);
  Var out = t.make(t.shape(x), t.requires_grad(x));
  parallel_range(n, 1 << 14, [&](int64_t a, int64_t b) { ref::relu2_forward(t.value(out) + a, t.value(x) + a, b - a); });
  if (t.requires_grad(x))
    t.node(out).backward = [&t, out, x, n]() {
      ProfScope ps("relu2", "bwd", 3.0 * n, kF * 4 * n);
      bool fresh;  // first gradient: each thread zeroes its chunk in cache, not the whole buffer in memory first
      float *dx = t.grad_or_fresh(x, &fresh), *g = t.grad(out), *px = t.value(x);
      parallel_range(n, 1 << 14, [&](int64_t a, int64_t b) {
        if (fresh) std::fill(dx + a, dx + b, 0.f);
        ref::relu2_backward(dx + a, g + a, px + a, b - a);
      });
    };
  return out;
}

Var add(Tape& t, Var a, Var b) {
  FRONTIER_CHECK(t.shape(a) == t.shape(b));
  bool rg = t.requires_grad(a) || t.requires_grad(b);
  int64_t n = t.numel(a);
  ProfScope ps("add", "fwd", static_cast<double>(n), kF * 3 * n);
  Var out = t.make(t.shape(a), rg);
  const float *pa = t.value(a), *pb = t.value(b);
  float* o = t.value(out);
  parallel_range(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) o[i] = pa[i] + pb[i];
  });
  if (rg)
    t.node(out).backward = [&t, out, a, b, n]() {
      const int ins = t.requires_grad(a) + t.requires_grad(b);
      ProfScope ps("add", "bwd", static_cast<double>(ins) * n, kF * (1 + 2 * ins) * n);
      const float* g = t.grad(out);
      for (Var in : {a, b})
        if (t.requires_grad(in)) {
          bool fresh;  // a first gradient is a copy: no zero fill, no read of zeros
          float* d = t.grad_or_fresh(in, &fresh);
          parallel_range(n, 1 << 14, [&](int64_t i0, int64_t i1) {
            if (fresh) std::copy(g + i0, g + i1, d + i0);
            else
              for (int64_t i = i0; i < i1; i++) d[i] += g[i];
          });
        }
    };
  return out;
}

Var scale(Tape& t, Var x, Var s, int64_t i) {
  bool rg = t.requires_grad(x) || t.requires_grad(s);
  int64_t n = t.numel(x);
  ProfScope ps("scale", "fwd", static_cast<double>(n), kF * 2 * n);
  Var out = t.make(t.shape(x), rg);
  float lam = t.value(s)[i];
  const float* px = t.value(x);
  float* o = t.value(out);
  parallel_range(n, 1 << 14, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; k++) o[k] = lam * px[k];
  });
  if (rg)
    t.node(out).backward = [&t, out, x, s, i, n]() {
      ProfScope ps("scale", "bwd", 2.0 * n * (t.requires_grad(x) + t.requires_grad(s)),
                   kF * n * (1 + 2 * t.requires_grad(x) + t.requires_grad(s)));
      const float* g = t.grad(out);
      const float* px = t.value(x);
      float lam = t.value(s)[i];
      if (t.requires_grad(x)) {
        float* d = t.grad(x);
        parallel_range(n, 1 << 14, [&](int64_t k0, int64_t k1) {
          for (int64_t k = k0; k < k1; k++) d[k] += lam * g[k];
        });
      }
      if (t.requires_grad(s)) t.grad(s)[i] += static_cast<float>(dot_fixed(g, px, n));
    };
  return out;
}

// A view: the value and the gradient are x's own buffers (no copy either way), so the view has no backward.
Var reshape(Tape& t, Var x, std::vector<int64_t> shape) {
  return t.view(x, std::move(shape));
}

Var slice_last(Tape& t, Var x, int64_t begin, int64_t end) {
  int64_t C = t.shape(x).back(), W = end - begin, rows = t.numel(x) / C;
  FRONTIER_CHECK(0 <= begin && begin < end && end <= C);
  ProfScope ps("slice_last", "fwd", 0, kF * 2 * rows * W);
  Var out = t.make(with_last(t.shape(x), W), t.requires_grad(x));
  for (int64_t r = 0; r < rows; r++)
    std::copy(t.value(x) + r * C + begin, t.value(x) + r * C + end, t.value(out) + r * W);
  if (t.requires_grad(x))
    t.node(out).backward = [&t, out, x, rows, C, W, begin]() {
      ProfScope ps("slice_last", "bwd", static_cast<double>(rows) * W, kF * 3 * rows * W);
      const float* g = t.grad(out);
      float* d = t.grad(x);
      for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < W; c++) d[r * C + begin + c] += g[r * W + c];
    };
  return out;
}

Var scale_add(Tape& t, Var a, Var sa, int64_t i, Var b, Var sb, int64_t j) {
  FRONTIER_CHECK(t.shape(a) == t.shape(b));
  const bool rg = t.requires_grad(a) || t.requires_grad(b) || t.requires_grad(sa) || t.requires_grad(sb);
  const int64_t n = t.numel(a);
  ProfScope ps("scale_add", "fwd", 3.0 * n, kF * 3 * n);
  Var out = t.make(t.shape(a), rg);
  const float la = t.value(sa)[i], lb = t.value(sb)[j];
  const float *pa = t.value(a), *pb = t.value(b);
  float* o = t.value(out);
  parallel_range(n, 1 << 14, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; k++) o[k] = la * pa[k] + lb * pb[k];
  });
  if (rg)
    t.node(out).backward = [&t, out, a, sa, i, b, sb, j, n]() {
      ProfScope ps("scale_add", "bwd", 6.0 * n, kF * 7 * n);
      const float* g = t.grad(out);
      const float *pa = t.value(a), *pb = t.value(b);
      const float la = t.value(sa)[i], lb = t.value(sb)[j];
      // a and b may be the same node (layer 0: x == x0); each element is updated by one thread, in order.
      // A first gradient is zeroed a chunk at a time in cache (a == b: b's is then not fresh).
      bool fresh_a = false, fresh_b = false;
      float* da = t.requires_grad(a) ? t.grad_or_fresh(a, &fresh_a) : nullptr;
      float* db = t.requires_grad(b) ? t.grad_or_fresh(b, &fresh_b) : nullptr;
      // Scalar gradients: sums over fixed chunks in double, added in order (thread-count independent).
      const int64_t grain = 4096, chunks = (n + grain - 1) / grain;
      std::vector<double> pa_sum(chunks), pb_sum(chunks);
      parallel_range(chunks, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; c++) {
          double acc_a = 0, acc_b = 0;
          const int64_t k0 = c * grain, k1 = std::min(n, (c + 1) * grain);
          if (fresh_a) std::fill(da + k0, da + k1, 0.f);
          if (fresh_b) std::fill(db + k0, db + k1, 0.f);
          for (int64_t k = k0; k < k1; k++) {
            acc_a += static_cast<double>(g[k]) * pa[k];
            acc_b += static_cast<double>(g[k]) * pb[k];
            if (da) da[k] += la * g[k];
            if (db) db[k] += lb * g[k];
          }
          pa_sum[c] = acc_a, pb_sum[c] = acc_b;
        }
      });
      double sum_a = 0, sum_b = 0;
      for (int64_t c = 0; c < chunks; c++) sum_a += pa_sum[c], sum_b += pb_sum[c];
      if (t.requires_grad(sa)) t.grad(sa)[i] += static_cast<float>(sum_a);
      if (t.requires_grad(sb)) t.grad(sb)[j] += static_cast<float>(sum_b);
    };
  return out;
}

Var rope_rmsnorm(Tape& t, Var x, const float* cos_t, const float* sin_t, float eps) {
  const auto& s = t.shape(x);
  FRONTIER_CHECK(s.size() == 4 && s[3] % 2 == 0 && s[3] <= 1024);
  const int64_t B = s[0], T = s[1], H = s[2], D = s[3], d = D / 2, rows = B * T * H;
  ProfScope ps("rope_rmsnorm", "fwd", 6.0 * rows * D, kF * (2 * rows * D + T * D));
  Var out = t.make(s, t.requires_grad(x));
  auto rstd = std::make_shared<std::vector<float>>(rows);
  const float* px = t.value(x);
  float* o = t.value(out);
  // Row r = (b, t, h): y = rope(x_r) as ref::rope_forward, then ref::rmsnorm_forward's arithmetic on y.
  parallel_range(rows, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const int64_t tt = (r / H) % T;
      const float *xv = px + r * D, *c = cos_t + tt * d, *sn = sin_t + tt * d;
      float* ov = o + r * D;
      for (int64_t k = 0; k < d; k++) {
        ov[k] = xv[k] * c[k] + xv[k + d] * sn[k];
        ov[k + d] = -xv[k] * sn[k] + xv[k + d] * c[k];
      }
      float ss = 0;
      for (int64_t k = 0; k < D; k++) ss += ov[k] * ov[k];
      const float rs = 1.f / std::sqrt(ss / D + eps);
      (*rstd)[r] = rs;
      for (int64_t k = 0; k < D; k++) ov[k] *= rs;
    }
  });
  if (t.requires_grad(x))
    t.node(out).backward = [&t, out, x, rstd, cos_t, sin_t, T, H, D, d, rows]() {
      ProfScope ps("rope_rmsnorm", "bwd", 12.0 * rows * D, kF * (4 * rows * D + T * D));
      const float *g = t.grad(out), *px = t.value(x);
      bool fresh;
      float* dx = t.grad_or_fresh(x, &fresh);
      parallel_range(rows, 64, [&](int64_t r0, int64_t r1) {
        if (fresh) std::fill(dx + r0 * D, dx + r1 * D, 0.f);
        float y[1024], dy[1024];
        for (int64_t r = r0; r < r1; r++) {
          const int64_t tt = (r / H) % T;
          const float *xv = px + r * D, *gv = g + r * D, *c = cos_t + tt * d, *sn = sin_t + tt * d;
          for (int64_t k = 0; k < d; k++) {  // recompute y = rope(x)
            y[k] = xv[k] * c[k] + xv[k + d] * sn[k];
            y[k + d] = -xv[k] * sn[k] + xv[k + d] * c[k];
          }
          const float rs = (*rstd)[r];
          float dot = 0;  // ref::rmsnorm_backward on y
          for (int64_t k = 0; k < D; k++) dot += gv[k] * y[k] * rs;
          dot /= D;
          for (int64_t k = 0; k < D; k++) dy[k] = rs * (gv[k] - y[k] * rs * dot);
          float* dv = dx + r * D;  // ref::rope_backward: dx += R^T dy
          for (int64_t k = 0; k < d; k++) {
            dv[k] += dy[k] * c[k] - dy[k + d] * sn[k];
            dv[k + d] += dy[k] * sn[k] + dy[k + d] * c[k];
          }
        }
      });
    };
  return out;
}

Var gated_add(Tape& t, Var v, Var g, Var ve, float scale) {
  const auto& s = t.shape(v);
  FRONTIER_CHECK(s.size() == 4 && t.shape(ve) == s && t.numel(g) == s[0] * s[1] * s[2]);
  int64_t rows = s[0] * s[1] * s[2], D = s[3];
  bool rg = t.requires_grad(v) || t.requires_grad(g) || t.requires_grad(ve);
  ProfScope ps("gated_add", "fwd", 2.0 * rows * D, kF * (3 * rows * D + rows));
  Var out = t.make(s, rg);
  const float *pv = t.value(v), *pg = t.value(g), *pe = t.value(ve);
  float* o = t.value(out);
  parallel_range(rows, 256, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      float gate = scale / (1.f + std::exp(-pg[r]));
      for (int64_t d = 0; d < D; d++) o[r * D + d] = pv[r * D + d] + gate * pe[r * D + d];
    }
  });
  if (rg)
    t.node(out).backward = [&t, out, v, g, ve, rows, D, scale]() {
      ProfScope ps("gated_add", "bwd", 5.0 * rows * D, kF * (6 * rows * D + 3 * rows));
      const float* go = t.grad(out);
      const float *pg = t.value(g), *pe = t.value(ve);
      // Gradient buffers are allocated here, before the threads start (Tape::grad allocates on first use).
      float* dv = t.requires_grad(v) ? t.grad(v) : nullptr;
      float* de = t.requires_grad(ve) ? t.grad(ve) : nullptr;
      float* dg = t.requires_grad(g) ? t.grad(g) : nullptr;
      parallel_range(rows, 256, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; r++) {
          float sg = 1.f / (1.f + std::exp(-pg[r])), gate = scale * sg;
          if (dv)
            for (int64_t d = 0; d < D; d++) dv[r * D + d] += go[r * D + d];
          if (de)
            for (int64_t d = 0; d < D; d++) de[r * D + d] += gate * go[r * D + d];
          if (dg) {
            double acc = 0;
            for (int64_t d = 0; d < D; d++) acc += static_cast<double>(go[r * D + d]) * pe[r * D + d];
            dg[r] += static_cast<float>(acc * scale * sg * (1.0 - sg));
          }
        }
      });
    };
  return out;
}

// Fast tiled kernel (kernels/attention.h); ref::attention_* stays the ground truth in the tests.
Var causal_attention(Tape& t, Var q, Var k, Var v, float scale, int64_t window) {
  const auto& sq = t.shape(q);
  const auto& sk = t.shape(k);
  int64_t B = sq[0], T = sq[1], H = sq[2], D = sq[3], Hkv = sk[2];
  FRONTIER_CHECK(sk[0] == B && sk[1] == T && sk[3] == D && t.shape(v) == sk && H % Hkv == 0 && window >= 0);
  bool rg = t.requires_grad(q) || t.requires_grad(k) || t.requires_grad(v);
  // Each of the 2 GEMMs (S = Q K^T, O = P V) is 2*D per visible (query, key) pair per head; backward recomputes S
  // and adds 4. Visible pairs: sum over t of min(t, W) + 1, T(T+1)/2 without a window.
  const double W = window > 0 && window < T ? window : T, pairs = W * (W + 1) / 2 + (T - W) * (W + 1);
  const double att_gemm = 2.0 * B * H * D * pairs, nq = 1.0 * B * T * H * D, nk = 1.0 * B * T * Hkv * D;
  ProfScope ps("attention", "fwd", 2 * att_gemm, kF * (2 * nq + 2 * nk + B * H * T));
  Var out = t.make(sq, rg);
  auto lse = std::make_shared<std::vector<float>>(B * H * T);  // (B, H, T)
  const Precision prec = t.precision();
  flash_attention_forward(t.value(out), lse->data(), t.value(q), t.value(k), t.value(v), B, T, H, Hkv, D, prec,
                          scale, window);
  if (rg)
    t.node(out).backward = [&t, out, q, k, v, lse, B, T, H, Hkv, D, att_gemm, nq, nk, prec, scale, window]() {
      ProfScope ps("attention", "bwd", 5 * att_gemm, kF * (5 * nq + 6 * nk + B * H * T));
      // The kernel writes all three; inputs without grad get scratch space.
      std::vector<float> sq_, sk_, sv_;
      auto dst = [&](Var x, std::vector<float>& scratch) {
        if (t.requires_grad(x)) return t.grad(x);
        scratch.assign(t.numel(x), 0.f);
        return scratch.data();
      };
      float *dq = dst(q, sq_), *dk = dst(k, sk_), *dv = dst(v, sv_);
      flash_attention_backward(dq, dk, dv, t.grad(out), t.value(out), lse->data(), t.value(q), t.value(k),
                               t.value(v), B, T, H, Hkv, D, prec, scale, window);
    };
  return out;
}

// The lm_head linear and the softcap cross-entropy in one op, chunked over the vocabulary (kernels/softcap_ce.h):
// the (N, V) logits are never stored; backward recomputes them a chunk at a time.
Var lm_head_softcap_ce(Tape& t, Var x, Var W, const int32_t* targets, float cap, int64_t vchunk, float* row_losses) {
  const int64_t C = t.shape(x).back(), N = t.numel(x) / C, V = t.shape(W)[0];
  FRONTIER_CHECK(t.shape(W)[1] == C && vchunk > 0);
  ProfScope ps("lm_head_ce", "fwd", 2.0 * N * V * C + 5.0 * N * V, kF * (N * C + V * C), {N, V, C});
  const bool rg = t.requires_grad(x) || t.requires_grad(W);
  Var out = t.make({1}, rg);
  auto tg = std::make_shared<std::vector<int32_t>>(targets, targets + N);
  auto lse = std::make_shared<std::vector<float>>(N);
  const Precision prec = t.precision();
  t.value(out)[0] =
      lm_head_ce_forward(row_losses, lse->data(), t.value(x), t.value(W), tg->data(), N, C, V, cap, vchunk, prec);
  if (rg)
    t.node(out).backward = [&t, out, x, W, tg, lse, N, C, V, cap, vchunk, prec]() {
      ProfScope ps("lm_head_ce", "bwd", 6.0 * N * V * C + 8.0 * N * V, kF * (3 * N * C + 3 * V * C), {N, V, C});
      lm_head_ce_backward(t.requires_grad(x) ? t.grad(x) : nullptr, t.requires_grad(W) ? t.grad(W) : nullptr,
                          t.grad(out)[0], lse->data(), t.value(x), t.value(W), tg->data(), N, C, V, cap, vchunk, prec);
    };
  return out;
}

// Fast fused kernel (kernels/softcap_ce.h): keeps the softcapped logits (N, V) and the row log-sum-exps for
// backward; ref::softcap_ce_* stays the ground truth in the tests.
Var softcap_cross_entropy(Tape& t, Var logits, const int32_t* targets, float cap, float* row_losses) {
  int64_t V = t.shape(logits).back(), N = t.numel(logits) / V;
  ProfScope ps("softcap_ce", "fwd", 5.0 * N * V, kF * 2 * N * V);
  Var out = t.make({1}, t.requires_grad(logits));
  auto tg = std::make_shared<std::vector<int32_t>>(targets, targets + N);
  auto capped = std::make_shared<PooledBuffer>(N * V);  // (N, V)
  auto lse = std::make_shared<std::vector<float>>(N);
  t.value(out)[0] = softcap_ce_forward(row_losses, capped->data(), lse->data(), t.value(logits), tg->data(), N, V, cap);
  if (t.requires_grad(logits))
    t.node(out).backward = [&t, out, logits, tg, capped, lse, N, V, cap]() {
      ProfScope ps("softcap_ce", "bwd", 4.0 * N * V, kF * 3 * N * V);
      bool fresh;
      float* dz = t.grad_or_fresh(logits, &fresh);
      softcap_ce_backward(dz, t.grad(out)[0], capped->data(), lse->data(), tg->data(), N, V, cap, !fresh);
    };
  return out;
}

}  // namespace frontier
