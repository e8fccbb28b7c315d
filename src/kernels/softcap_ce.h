// Logit softcap + cross-entropy, fast and fused: one pass per row computes c = cap * tanh(z / cap) (kept for
// backward, so tanh is never recomputed) and the log-sum-exp; backward needs one exp per logit. Since |c| <= cap,
// exp(c - cap) cannot overflow, so no max pass is needed. Rows split over threads; each row in a fixed order.
// Same contract as ref::softcap_ce_* (ops/cross_entropy.h): targets < 0 are ignored, the loss is the mean over
// counted rows (summed in double, in row order), per-row losses (nats) go to `losses` if given.
//
//   std::vector<float> capped(N * V), lse(N);
//   float loss = softcap_ce_forward(losses, capped.data(), lse.data(), z, targets, N, V, 15.f);
//   softcap_ce_backward(dz, 1.f, capped.data(), lse.data(), targets, N, V, 15.f);   // dz += dloss * dL/dz
#pragma once

#include <cstdint>

namespace frontier {

float softcap_ce_forward(float* losses, float* capped, float* lse, const float* z, const int32_t* targets,
                         int64_t N, int64_t V, float cap);

void softcap_ce_backward(float* dz, float dloss, const float* capped, const float* lse, const int32_t* targets,
                         int64_t N, int64_t V, float cap);

}  // namespace frontier
