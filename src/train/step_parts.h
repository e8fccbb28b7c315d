// The measured half of `frontier scale project`, and advise's step times: one training step of a config,
// timed in this process and cut into the parts dist/scale_model.h projects to R ranks (forward + backward per
// micro-batch, the whole optimizer, and each rank count's largest optimizer shard).
//
//   StepParts p;
//   FRONTIER_RETURN_IF_ERROR(measure_step_parts(cfg, /*threads=*/2, /*steps=*/5, &p));
//   Projection x = project(p, /*ranks=*/8, /*ranks_per_node=*/8, shm, shm);   // dist/scale_model.h
//
// It lives on the train floor, above dist/: it validates against train_schema() and times steps with
// time_random_steps (below), while the projection itself needs nothing of training.
#pragma once

#include <cstdint>
#include <vector>

#include "config/config.h"
#include "dist/scale_model.h"
#include "kernels/precision.h"
#include "util/status.h"

namespace frontier {

class Gpt;
class Optimizer;

// Times `steps` optimizer steps (after 2 warm-up steps) of cfg's model in this process with `threads`
// threads: forward + backward per micro-batch, and the optimizer, on random tokens (speed does not depend on
// the data).
Status measure_step_parts(const Config& cfg, int threads, int steps, StepParts* out);

// The speed of a training step, on random tokens (speed does not depend on the data): `warmup` untimed steps, then
// `steps` timed ones, each zero_grad + accum forward/backward micro-batches (fb, seconds) and the optimizer (opt).
// The probe budget mode (step = fb + opt) and measure_step_parts time steps with it.
// The weights and optimizer state are changed: reset them after.
struct StepTimes {
  std::vector<double> fb, opt;  // per timed step
};
void time_random_steps(Gpt& gpt, Optimizer& opt, Precision prec, int B, int T, int64_t accum, int warmup, int steps,
                       StepTimes* out);

}  // namespace frontier
