// The run's train.* and eval.* keys as typed settings, read once (read_train_settings) so that the training run
// reads fields, not strings; beside Recipe (train/recipe.h: optim.* and the schedules) and ModelShape
// (model/model_config.h: model.*). The keys, their defaults and ranges are declared in train_schema
// (train/schema.h).
//
//   TrainSettings t;
//   FRONTIER_RETURN_IF_ERROR(read_train_settings(cfg, &t));   // a run: one-line errors naming the key
//   int64_t B = train_settings(cfg).micro_batch;              // code that builds or times a config's model
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"

namespace frontier {

enum class BudgetMode { kWall, kProbe };

struct TrainSettings {
  std::string data;                     // train.data
  std::string run_dir;                  // train.run_dir ("" = runs/<date>-<time>)
  std::string precision = "auto";       // train.precision (resolved by resolve_precision)
  std::string mtp_weights;              // train.mtp_weights (parsed against model.mtp_heads by the run)
  std::string comm_dtype = "fp32";      // train.comm_dtype (parsed by parse_comm_dtype)
  BudgetMode budget_mode = BudgetMode::kWall;  // train.budget_mode
  double budget_seconds = 60;           // train.budget_seconds
  double probe_step_seconds = 0;        // train.probe_step_seconds (0 = measure)
  double peak_gflops = 0;               // train.peak_gflops (0 = calibrated or measured)
  double checkpoint_every_seconds = 60;  // train.checkpoint_every_seconds
  double comm_bucket_mb = 4, comm_timeout_seconds = 600;  // train.comm_bucket_mb, train.comm_timeout_seconds
  int64_t micro_batch = 8;              // train.micro_batch
  int64_t total_batch_tokens = 0;       // train.total_batch_tokens (0 = micro_batch x seq_len)
  int64_t warmup_steps_excluded = 2;    // train.warmup_steps_excluded
  int64_t max_steps = 0;                // train.max_steps (0 = the budget alone)
  int64_t checkpoint_every_steps = 0;   // train.checkpoint_every_steps
  int64_t seed = 42;                    // train.seed
  int64_t data_streams = 0;             // train.data_streams (0 = one per rank)
  int64_t threads = 0;                  // train.threads (0 = all cores)
  bool shard_optimizer = true, overlap_comm = true;  // train.shard_optimizer, train.overlap_comm
  int64_t eval_tokens = 32768, eval_batch = 8;       // eval.tokens, eval.batch
};

// Every key as its field. It cannot fail: a train.budget_mode other than wall or probe reads as wall here, for code
// that builds, times or scores a config's model without running its budget (step timing, profile, advise, export,
// eval), where the mode is not checked.
TrainSettings train_settings(const Config& cfg);
// For a run: train_settings, and an error naming a train.budget_mode that is neither wall nor probe.
Status read_train_settings(const Config& cfg, TrainSettings* out);

}  // namespace frontier
