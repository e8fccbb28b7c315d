// The measured half of `frontier scale project`, and advise's step times: one training step of a config,
// timed in this process and cut into the parts dist/scale_model.h projects to R ranks (forward + backward per
// micro-batch, the whole optimizer, and each rank count's largest optimizer shard).
//
//   StepParts p;
//   FRONTIER_RETURN_IF_ERROR(measure_step_parts(cfg, /*threads=*/2, /*steps=*/5, &p));
//   Projection x = project(p, /*ranks=*/8, /*ranks_per_node=*/8, shm, shm);   // dist/scale_model.h
//
// It lives on the train floor, above dist/: it validates against train_schema() and times steps with
// time_random_steps (train/train.h), while the projection itself needs nothing of training.
#pragma once

#include "config/config.h"
#include "dist/scale_model.h"
#include "util/status.h"

namespace frontier {

// Times `steps` optimizer steps (after 2 warm-up steps) of cfg's model in this process with `threads`
// threads: forward + backward per micro-batch, and the optimizer, on random tokens (speed does not depend on
// the data).
Status measure_step_parts(const Config& cfg, int threads, int steps, StepParts* out);

}  // namespace frontier
