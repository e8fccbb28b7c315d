// The training recipe as typed settings: the optim.* keys and the train.* schedule keys, parsed and validated once
// (read_recipe) so that the training loop reads fields, not strings. The keys themselves are declared in
// train_schema (train/schema.h); each field names its key.
//
//   Recipe r;
//   FRONTIER_RETURN_IF_ERROR(read_recipe(cfg, prec, &r));   // one-line errors naming the key
//   Optimizer opt(gpt, r.optim);
#pragma once

#include "config/config.h"
#include "kernels/precision.h"
#include "model/model_config.h"
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
  double seq_warmup = 0;    // train.seq_warmup_ratio (0 = off)
  int seq_len_start = 0;    // train.seq_len_start (0 = model.seq_len / 4; fit_recipe_to_shape resolves it)
  double window_warmup = 0; // train.window_warmup_ratio (0 = off)
  int window_start = 64;    // train.window_start
};

// The four learning rates as given (doubles; OptimConfig holds them as float): what advise scales and writes
// back, and what profile's optimizer takes. Reading them cannot fail.
struct LearningRates {
  double matrix = 0.02, embedding = 0.2, unembedding = 0.004, scalar = 0.5;  // optim.matrix_lr ... optim.scalar_lr
};

// Adds the recipe's keys to a schema (train_schema calls it).
void add_recipe_keys(ConfigSchema* s);
Status read_recipe(const Config& cfg, Precision prec, Recipe* out);
LearningRates read_learning_rates(const Config& cfg);
// The levers in use that differ from the defaults, for the run's printout ("" when none): "normuon 0.9, ema 0.99".
std::string describe_recipe(const Recipe& r);
// The warm-ups against the model they train: resolves train.seq_len_start = 0, and names the key of a sequence
// length that does not divide model.seq_len, or a window warm-up without S layers or not below their window.
Status fit_recipe_to_shape(const ModelShape& m, Recipe* r);
// The warm-ups' schedules and the untie (model.untie_at) as the run's derived values, one line each ("" when none):
// what a micro-batch holds when, the windows, the step each ends at (max_steps > 0; else by the budget's time).
std::string describe_warmups(const Recipe& r, const ModelShape& m, int B, int64_t max_steps);

}  // namespace frontier
