// `frontier train`: train the GPT on prepared shards until a wall-clock budget is spent, then score val_bpb.
//
//   ConfigSchema schema = train_schema();
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
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/precision.h"

#include "config/config.h"

namespace frontier {

class Gpt;
class Optimizer;
class PreparedData;
struct RunIdentity;

ConfigSchema train_schema();
// train.precision -> the GEMM precision: "auto" is bf16 at the avx512bf16 tier, else fp32; an unknown name is an
// error. "bf16" below that tier warns (the reference bf16 kernel is slow).
Status resolve_precision(const std::string& name, Precision* out);  // model.*, optim.*, train.*, eval.* keys

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

// nanochat's evaluate_bpb formula: summed nats over summed UTF-8 bytes of the target tokens, specials (0 bytes)
// excluded, on the first eval_tokens target tokens of the validation split, each scored once, in windows of at most
// T (data/val_windows.h: the same text at every T, unlike nanochat's best-fit val loader, which crops documents to
// their first T tokens). Under mpirun the batches are dealt over the ranks (batch i to rank i mod R) and the sums
// reduced: the same batches are scored. *scored (optional): the target tokens scored, eval_tokens or, for a split
// shorter than that, the whole split (a warning says so).
// *se (optional): the standard error of that estimate from the validation sample alone (the windows of T targets
// as samples of a ratio estimator). windows (optional, one process only): each window's (nats, bytes), in order,
// for a paired comparison of two models on the same windows (bpb_difference).
struct BpbWindows {
  std::vector<double> nats, bytes;
};
Status evaluate_bpb(Gpt& gpt, const PreparedData& data, int64_t eval_tokens, int B, int T, double* bpb,
                    const std::string& split = "val", int64_t* scored = nullptr, double* se = nullptr,
                    BpbWindows* windows = nullptr);
// bpb(a) - bpb(b) on the same windows, and its standard error from the paired per-window differences: far smaller
// than either model's own, since both score the same text. False if the windows differ.
bool bpb_difference(const BpbWindows& a, const BpbWindows& b, double* diff, double* se);

// Loads a checkpoint written by train(): its config (into *cfg, through train_schema), weights (checked finite) and,
// if id is given, the tokenizer and data identities it was trained with.
Status load_trained_model(const std::string& ckpt_path, Config* cfg, std::unique_ptr<Gpt>* gpt,
                          RunIdentity* id = nullptr);

// The speed of a training step, on random tokens (speed does not depend on the data): `warmup` untimed steps, then
// `steps` timed ones, each zero_grad + accum forward/backward micro-batches (fb, seconds) and the optimizer (opt).
// The probe budget mode (step = fb + opt) and `frontier scale project` (train/step_parts.h) time steps with it.
// The weights and optimizer state are changed: reset them after.
struct StepTimes {
  std::vector<double> fb, opt;  // per timed step
};
void time_random_steps(Gpt& gpt, Optimizer& opt, Precision prec, int B, int T, int64_t accum, int warmup, int steps,
                       StepTimes* out);

// An error naming the first NaN or infinite value of a checkpoint's weights.
Status check_finite(const std::vector<float>& w, const std::string& path);

}  // namespace frontier
