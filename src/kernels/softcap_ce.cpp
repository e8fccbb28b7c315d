#include "kernels/softcap_ce.h"

#include <cmath>
#include <vector>

#include "kernels/vmath.h"

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
                         int64_t N, int64_t V, float cap) {
  int64_t count = 0;
  for (int64_t i = 0; i < N; i++) count += targets[i] >= 0;
  if (!count) return;
  const float scale = dloss / static_cast<float>(count), inv_cap2 = 1.f / (cap * cap);
#pragma omp parallel
  {
    std::vector<float> p(V);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < N; i++) {
      if (targets[i] < 0) continue;
      const float* c = capped + i * V;
      float* d = dz + i * V;
      vmath::exp_shift_sum(p.data(), c, -lse[i], V);  // softmax probabilities
      p[targets[i]] -= 1.f;
#pragma omp simd
      for (int64_t v = 0; v < V; v++) d[v] += scale * p[v] * (1.f - c[v] * c[v] * inv_cap2);
    }
  }
}

}  // namespace frontier
