// Optimizers over the GPT's parameter arena: Muon for the block matrices, AdamW for embeddings, value
// embeddings, lm_head and scalars, with nanochat's per-group settings. State lives in arenas parallel to the
// weights (one buffer each), so a checkpoint is a few contiguous writes.
//
//   Optimizer opt(gpt, OptimConfig{});       // groups derived from ParamInfo::group
//   opt.step(lr_multiplier, muon_momentum, progress);   // after gradients are accumulated
//
// Muon (Keller Jordan; nanochat's variant): Nesterov momentum buf = lerp(buf, g, 1-mu), u = lerp(g, buf, mu);
// X = u / (1.02 * ||u||_F + 1e-6), then 5 Polar Express iterations X = a X + (b A + c A^2) X (A = X X^T; the
// transposed form for tall matrices); update W -= lr_eff * X + lr_eff * wd_eff * W * [X * W >= 0] (cautious weight
// decay), lr_eff = lr * max(1, rows/cols)^0.5, wd_eff = wd * (1 - progress). Without NorMuon's second-moment
// normalisation (not in this spec). Polar Express runs its GEMMs at OptimConfig::ns_precision: with bf16
// (what `train.precision = bf16` selects, as nanochat runs Newton-Schulz in bf16) every product's operands are
// rounded to bf16 while packing and accumulated in fp32; X, A and B themselves stay fp32 between iterations
// (nanochat keeps X in bf16, which rounds once more per iteration).
// AdamW: torch.optim.AdamW semantics (decoupled decay, bias correction), betas and eps per group.
#pragma once

#include <vector>

#include "model/gpt.h"

namespace frontier {

struct OptimConfig {
  float matrix_lr = 0.02f;      // Muon
  float embedding_lr = 0.2f;    // wte and value embeddings (AdamW), times (dim/768)^-0.5
  float unembedding_lr = 0.004f;  // lm_head (AdamW), times (dim/768)^-0.5
  float scalar_lr = 0.5f;       // x0_lambdas; resid_lambdas get scalar_lr * 0.01 (nanochat)
  float weight_decay = 0.2f;    // Muon cautious weight decay, decaying linearly with progress
  float adam_beta1 = 0.8f, adam_beta2 = 0.95f, adam_eps = 1e-10f;
  int ns_steps = 5;
  Precision ns_precision = Precision::kFp32;  // Polar Express GEMMs
};

struct AdamGroupInfo {
  float lr, beta1, beta2, eps, wd;
};

class Optimizer {
 public:
  Optimizer(Gpt& gpt, const OptimConfig& cfg);
  // lr_mult from the schedule; muon_momentum from its warmup; progress in [0, 1] for the weight-decay decay.
  void step(float lr_mult, float muon_momentum, float progress);
  int64_t steps() const { return t_; }
  void set_steps(int64_t t) { t_ = t; }  // resume: Adam's bias correction continues from here
  // [adam m | adam v | muon momentum], each over the owned range of the arena (all of it unless sharded).
  std::vector<float>& state() { return state_; }
  // Sharded optimizer (dist/shard_plan.h): this process updates, and keeps state for, only the parameters in the
  // arena range [lo, hi) (whole parameters); call before the first step (the state is reset).
  void set_owned_range(int64_t lo, int64_t hi);
  int64_t owned_lo() const { return lo_; }
  int64_t owned_hi() const { return hi_; }
  const OptimConfig& config() const { return cfg_; }
  AdamGroupInfo adam_settings(const ParamInfo& p) const;
  float muon_lr(const ParamInfo& p) const;

 private:
  void muon_update(const ParamInfo& p, float lr, float momentum, float wd);
  void adam_update(const ParamInfo& p, const AdamGroupInfo& g, float lr_mult);
  Gpt& gpt_;
  OptimConfig cfg_;
  int64_t t_ = 0;
  int64_t lo_ = 0, hi_ = 0;  // owned arena range
  std::vector<float> state_;
};

// Polar Express orthogonalisation of X (rows, cols) in place, ns_steps iterations (<= 5). Exposed for tests.
void polar_express(float* X, int64_t rows, int64_t cols, int ns_steps, Precision prec = Precision::kFp32);

}  // namespace frontier
