// The training recipe as typed settings: the optim.* keys and the train.* schedule keys, parsed and validated once
// (read_recipe) so that the training loop reads fields, not strings. The keys themselves are declared in
// train_schema (train/train.h); each field names its key.
//
//   Recipe r;
//   FRONTIER_RETURN_IF_ERROR(read_recipe(cfg, prec, &r));   // one-line errors naming the key
//   Optimizer opt(gpt, r.optim);
#pragma once

#include "config/config.h"
#include "kernels/precision.h"
#include "optim/optim.h"
#include "train/schedule.h"

namespace frontier {

struct Recipe {
  OptimConfig optim;                      // optim.matrix_lr ... optim.normuon_beta2; ns_precision = the precision
  MomentumSchedule momentum = MomentumSchedule::kLinear;  // optim.momentum_schedule
  int64_t momentum_warmup_steps = 300;                   // optim.momentum_warmup_steps
  DecaySchedule decay = DecaySchedule::kLinear;          // optim.weight_decay_schedule
  double warmup = 0, warmdown = 0.5, final_lr_frac = 0;  // train.warmup_ratio, warmdown_ratio, final_lr_frac
  double batch_warmup = 0, batch_start = 0.25;           // train.batch_warmup_ratio, train.batch_warmup_start
  double ema_decay = 0;                                  // train.ema_decay (0 = off)
};

// Adds the recipe's keys to a schema (train_schema calls it).
void add_recipe_keys(ConfigSchema* s);
Status read_recipe(const Config& cfg, Precision prec, Recipe* out);
// The levers in use that differ from the defaults, for the run's printout ("" when none): "normuon 0.9, ema 0.99".
std::string describe_recipe(const Recipe& r);

}  // namespace frontier
