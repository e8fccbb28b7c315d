// `frontier train`: train the GPT on prepared shards until a wall-clock budget is spent, then score val_bpb.
//
//   ConfigSchema schema = train_schema();         // train/schema.h
//   Config cfg = schema.defaults();              // + configs/*.toml + --set overrides
//   TrainSummary s;
//   FRONTIER_RETURN_IF_ERROR(train(cfg, &s));    // prints progress, writes the run directory
//
// Budget accounting (as autoresearch): only the wall time of optimizer steps counts, and the first
// train.warmup_steps_excluded steps (start-up effects) do not; evaluation and start-up are reported apart.
// Schedules run on time progress = training seconds / budget: LR warmup, constant, then a linear warmdown over the
// last warmdown_ratio to final_lr_frac; Muon momentum warms from 0.85 to 0.95 over the first 300 steps.
//
// What a run guarantees (README "Reliability"): the run directory is locked while it runs (a second process gets an
// error naming the holder's pid) and never overwritten without --force; the memory a config needs is estimated and
// refused before allocating; the disk must hold two checkpoints; the final checkpoint is written before the final
// evaluation (a kill during it loses nothing: --resume runs just the evaluation); SIGINT/SIGTERM stop after the
// current step, save a checkpoint and print a summary marked interrupted (a second signal quits at once); a failed
// write is reported in the summary (not_saved:) and the exit status; the checkpoint records the tokenizer and data
// identities (train/identity.h), checked on resume and by every command that loads it.
//
// The pieces it is built from live beside it: the schema and precision (train/schema.h), the typed settings
// (train/settings.h, train/recipe.h), checkpoints and load_trained_model (train/checkpoint.h), step timing
// (train/step_parts.h) and val_bpb (eval/bpb.h).
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"

namespace frontier {

struct TrainSummary {
  double val_bpb_se = 0;  // the standard error of val_bpb from the validation sample (evaluate_bpb's se)
  double val_bpb = 0, training_seconds = 0, total_seconds = 0, eval_seconds = 0, peak_mem_mb = 0;
  double mfu_percent = 0, total_tokens_M = 0, num_params_M = 0, tokens_per_sec = 0, final_loss = 0;
  int64_t num_steps = 0;
  int depth = 0;
  std::string weights;    // "" (the last step's) or "EMA (train.ema_decay = 0.99)": what the checkpoint and val_bpb hold
  std::string precision;  // "fp32" | "bf16": the GEMMs'
  std::string mfu_peak;   // the unit MFU is measured against, e.g. "461.3 GFLOP/s avx512bf16 bf16 dot"
  std::string run_dir;
  std::string tokenizer_id, data_id;  // short content hashes (train/identity.h)
  std::string not_saved;              // files a failed write did not save, with the reason ("" = all saved)
  std::string interrupted;            // "interrupted (SIGINT at step 12)" when a signal stopped the run
  int signal = 0;                     // that signal
  int ranks = 0, threads = 0;         // processes (mpirun -np) and threads per process
  std::string budget_mode;            // wall | probe (train.budget_mode)
  double probe_step_seconds = 0;      // probe: the step time the budget was divided by
  double comm_ms_per_step = 0;        // ranks > 1: time inside collectives per step (waiting included)
  double optimizer_pct = 0;           // the optimizer's update (Muon and AdamW) as a share of the steps' time
  double data_epochs = 0;             // passes over the training data (rank 0's loaders); printed when >= 1
  // Mixture of experts (printed when the model has experts): the share of routed (token, slot) pairs each expert
  // took over the run ("12.5 12.4 ..." percent, all MoE layers), tokens dropped (always 0: no capacity limit),
  // the mean load-balance loss (1 = perfectly balanced) and the active parameters (what FLOPs and MFU count).
  std::string moe_expert_share;
  int64_t moe_dropped = 0;
  double moe_aux_loss = 0, active_params_M = 0;
  bool has_summary = false;           // train() got far enough to fill this in (print it even on an error)
  std::string format() const;  // autoresearch's summary block: "---" then one "key: value" per line
};

struct TrainOptions {
  std::string resume_dir;  // continue the run in that directory from its last checkpoint (cfg = its config.toml)
  bool force = false;      // overwrite a train.run_dir that already holds a run
};

// On an error after training started (interrupted, a file not saved, a failed evaluation) *out still holds what
// was computed, with has_summary set: print it, then the error.
Status train(const Config& cfg, TrainSummary* out, const TrainOptions& opts);
Status train(const Config& cfg, TrainSummary* out, const std::string& resume_dir = "");

}  // namespace frontier
