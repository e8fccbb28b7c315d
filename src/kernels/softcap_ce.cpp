#include "kernels/softcap_ce.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/vmath.h"
#include "util/status.h"

namespace frontier {

float softcap_ce_forward(float* losses, float* capped, float* lse, const float* z, const int32_t* targets,
                         int64_t N, int64_t V, float cap) {
  std::vector<float> row_loss(N);
#pragma omp parallel
  {
    std::vector<float> e(V);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < N; i++) {
      float* c = capped + i * V;
      vmath::softcap(c, z + i * V, cap, V);
      const float sum = vmath::exp_shift_sum(e.data(), c, -cap, V);
      lse[i] = cap + std::log(sum);
      row_loss[i] = targets[i] < 0 ? 0.f : lse[i] - c[targets[i]];
    }
  }
  double total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < N; i++) {
    if (losses) losses[i] = row_loss[i];
    if (targets[i] >= 0) {
      total += row_loss[i];
      count++;
    }
  }
  return count ? static_cast<float>(total / count) : 0.f;
}

void softcap_ce_backward(float* dz, float dloss, const float* capped, const float* lse, const int32_t* targets,
                         int64_t N, int64_t V, float cap, bool accumulate) {
  int64_t count = 0;
  for (int64_t i = 0; i < N; i++) count += targets[i] >= 0;
  if (!count) {
    if (!accumulate) std::fill(dz, dz + N * V, 0.f);
    return;
  }
  const float scale = dloss / static_cast<float>(count), inv_cap2 = 1.f / (cap * cap);
#pragma omp parallel
  {
    std::vector<float> p(V);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < N; i++) {
      float* d = dz + i * V;
      if (targets[i] < 0) {
        if (!accumulate) std::fill(d, d + V, 0.f);
        continue;
      }
      const float* c = capped + i * V;
      vmath::exp_shift_sum(p.data(), c, -lse[i], V);  // softmax probabilities
      p[targets[i]] -= 1.f;
      if (accumulate) {
#pragma omp simd
        for (int64_t v = 0; v < V; v++) d[v] += scale * p[v] * (1.f - c[v] * c[v] * inv_cap2);
      } else {
#pragma omp simd
        for (int64_t v = 0; v < V; v++) d[v] = scale * p[v] * (1.f - c[v] * c[v] * inv_cap2);
      }
    }
  }
}

float lm_head_ce_forward(float* losses, float* lse, const float* x, const float* W, const int32_t* targets, int64_t N,
                         int64_t C, int64_t V, float cap, int64_t vchunk, Precision prec) {
  FRONTIER_CHECK(vchunk > 0);
  const int64_t vc_max = std::min(vchunk, V);
  std::vector<float> z(N * vc_max), sum(N, 0.f), tcap(N, 0.f);
  for (int64_t v0 = 0; v0 < V; v0 += vc_max) {
    const int64_t vc = std::min(vc_max, V - v0);
    gemm(prec, false, true, N, vc, C, 1.f, x, C, W + v0 * C, C, 0.f, z.data(), vc);  // logits[:, v0:v0+vc]
#pragma omp parallel
    {
      std::vector<float> e(vc);
#pragma omp for schedule(static)
      for (int64_t i = 0; i < N; i++) {
        float* c = z.data() + i * vc;
        vmath::softcap(c, c, cap, vc);
        sum[i] += vmath::exp_shift_sum(e.data(), c, -cap, vc);
        if (targets[i] >= v0 && targets[i] < v0 + vc) tcap[i] = c[targets[i] - v0];
      }
    }
  }
  double total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < N; i++) {
    lse[i] = cap + std::log(sum[i]);
    const float l = targets[i] < 0 ? 0.f : lse[i] - tcap[i];
    if (losses) losses[i] = l;
    if (targets[i] >= 0) total += l, count++;
  }
  return count ? static_cast<float>(total / count) : 0.f;
}

void lm_head_ce_backward(float* dx, float* dW, float dloss, const float* lse, const float* x, const float* W,
                         const int32_t* targets, int64_t N, int64_t C, int64_t V, float cap, int64_t vchunk, Precision prec) {
  FRONTIER_CHECK(vchunk > 0);
  int64_t count = 0;
  for (int64_t i = 0; i < N; i++) count += targets[i] >= 0;
  if (!count) return;
  const float scale = dloss / static_cast<float>(count), inv_cap2 = 1.f / (cap * cap);
  const int64_t vc_max = std::min(vchunk, V);
  std::vector<float> z(N * vc_max);
  for (int64_t v0 = 0; v0 < V; v0 += vc_max) {
    const int64_t vc = std::min(vc_max, V - v0);
    gemm(prec, false, true, N, vc, C, 1.f, x, C, W + v0 * C, C, 0.f, z.data(), vc);  // recompute the chunk's logits
#pragma omp parallel
    {
      std::vector<float> p(vc);
#pragma omp for schedule(static)
      for (int64_t i = 0; i < N; i++) {  // z <- dL/dz for this chunk, as softcap_ce_backward
        float* c = z.data() + i * vc;
        if (targets[i] < 0) {
          std::fill(c, c + vc, 0.f);
          continue;
        }
        vmath::softcap(c, c, cap, vc);
        vmath::exp_shift_sum(p.data(), c, -lse[i], vc);  // softmax probabilities of this chunk
        if (targets[i] >= v0 && targets[i] < v0 + vc) p[targets[i] - v0] -= 1.f;
#pragma omp simd
        for (int64_t v = 0; v < vc; v++) c[v] = scale * p[v] * (1.f - c[v] * c[v] * inv_cap2);
      }
    }
    if (dx) gemm(prec, false, false, N, C, vc, 1.f, z.data(), vc, W + v0 * C, C, 1.f, dx, C);          // dx += dz W
    if (dW) gemm(prec, true, false, vc, C, N, 1.f, z.data(), vc, x, C, 1.f, dW + v0 * C, C);           // dW += dz^T x
  }
}

}  // namespace frontier
