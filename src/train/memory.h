// How much memory a training config needs, estimated before anything is allocated, so a config that cannot fit
// is refused with the knob that brings it down instead of dying in std::bad_alloc or the buffer pool.
//
//   MemoryEstimate m = estimate_train_memory(shape, B, eval_B);
//   if (m.total() > available_memory_bytes()) ... m.describe() ...
//
// Parameters: weights, gradients and optimizer state are 5 floats per parameter (Muon/AdamW keep 3; optim.h).
// Activations: the tape keeps every intermediate of the forward for the backward, about 48 floats per token per
// layer per channel plus 3 per token per vocabulary entry (logits, their softcap and gradient), fitted to peak RSS
// measured on the AMD EPYC (Zen 4) machine of 2026-12-03 at depth 2/4/8 and micro-batch 4-32, T = 512: the
// estimate was within -17%..+10% of the measured peak (fp32 and bf16 both store activations in fp32).
#pragma once

#include <cstdint>
#include <string>

#include "model/model_config.h"

namespace frontier {

struct MemoryEstimate {
  double params_bytes = 0;       // weights + gradients + optimizer state
  double activations_bytes = 0;  // one micro-batch's forward + backward (or the eval batch's, if larger)
  double base_bytes = 0;         // the process, pools, tables
  double total() const { return params_bytes + activations_bytes + base_bytes; }
  std::string describe() const;  // "4.6 GB = parameters+grads+optimizer 0.8 + activations 3.6 + base 0.2"
};

MemoryEstimate estimate_train_memory(const ModelShape& shape, int64_t micro_batch, int64_t eval_batch);

// Memory this process may still use: MemAvailable, capped by a cgroup (v2 or v1) limit when there is one.
double available_memory_bytes();

}  // namespace frontier
