#include "train/settings.h"

namespace frontier {

TrainSettings train_settings(const Config& cfg) {
  TrainSettings t;
  t.data = cfg.get_string("train.data");
  t.run_dir = cfg.get_string("train.run_dir");
  t.precision = cfg.get_string("train.precision");
  t.mtp_weights = cfg.get_string("train.mtp_weights");
  t.comm_dtype = cfg.get_string("train.comm_dtype");
  t.budget_mode = cfg.get_string("train.budget_mode") == "probe" ? BudgetMode::kProbe : BudgetMode::kWall;
  t.budget_seconds = cfg.get_float("train.budget_seconds");
  t.probe_step_seconds = cfg.get_float("train.probe_step_seconds");
  t.peak_gflops = cfg.get_float("train.peak_gflops");
  t.checkpoint_every_seconds = cfg.get_float("train.checkpoint_every_seconds");
  t.comm_bucket_mb = cfg.get_float("train.comm_bucket_mb");
  t.comm_timeout_seconds = cfg.get_float("train.comm_timeout_seconds");
  t.micro_batch = cfg.get_int("train.micro_batch");
  t.total_batch_tokens = cfg.get_int("train.total_batch_tokens");
  t.warmup_steps_excluded = cfg.get_int("train.warmup_steps_excluded");
  t.max_steps = cfg.get_int("train.max_steps");
  t.checkpoint_every_steps = cfg.get_int("train.checkpoint_every_steps");
  t.seed = cfg.get_int("train.seed");
  t.data_streams = cfg.get_int("train.data_streams");
  t.threads = cfg.get_int("train.threads");
  t.shard_optimizer = cfg.get_bool("train.shard_optimizer");
  t.overlap_comm = cfg.get_bool("train.overlap_comm");
  t.eval_tokens = cfg.get_int("eval.tokens");
  t.eval_batch = cfg.get_int("eval.batch");
  return t;
}

Status read_train_settings(const Config& cfg, TrainSettings* out) {
  const std::string& mode = cfg.get_string("train.budget_mode");
  if (mode != "wall" && mode != "probe")
    return Status::error("train.budget_mode = '" + mode + "' is not wall or probe");
  *out = train_settings(cfg);
  return ok_status();
}

}  // namespace frontier
