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
//
// nanochat 92d63d4's additions to the Muon update, each a switch (off by default: today's update unchanged):
//   equilibrate (MuonEq): before Polar Express, each row of u is rescaled to the mean row norm ||u||_F / sqrt(rows).
//   renormalize (Muon+): after it, X is scaled to Frobenius norm sqrt(min(rows, cols)), an exact semi-orthogonal's.
//   normuon_beta2 > 0 (NorMuon): a factored second moment of X, one value per row (rows >= cols) or per column
//     (wide), v = lerp(v, mean(X^2 over the other dimension), 1 - beta2); X is scaled by v^-1/2 along that
//     dimension and then back to its Frobenius norm before the scaling. nanochat uses beta2 = 0.9.
// The NorMuon moments are one more state section, over every matrix of the model (state() below).
//
// A cheaper schedule (issue 30): muon_every = k > 1 runs Polar Express (and the switches above) on steps 1, k + 1,
// 2k + 1, ... only; the steps between apply the last orthogonalised update again (the momentum buffer still takes
// every gradient, so the next orthogonalisation sees them all). The last update is one more state section over the
// owned range, so a resumed run continues bit for bit. Polar Express's FLOPs per step fall by k.
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
  bool equilibrate = false;   // optim.muon_equilibrate
  bool renormalize = false;   // optim.muon_renormalize
  float normuon_beta2 = 0.f;  // optim.normuon_beta2 (0 = off)
  int muon_every = 1;         // optim.muon_every: orthogonalise every k-th step, reuse the update between
};

struct AdamGroupInfo {
  float lr, beta1, beta2, eps, wd;
};

class Optimizer {
 public:
  Optimizer(Gpt& gpt, const OptimConfig& cfg);
  // lr_mult from the schedule; muon_momentum from its warmup; progress in [0, 1] for the weight-decay decay:
  // Muon's decay is weight_decay * (1 - progress), or weight_decay * wd_mult when wd_mult >= 0 (another schedule).
  void step(float lr_mult, float muon_momentum, float progress, float wd_mult = -1.f);
  // The FLOPs one step executes on the owned matrices, averaged over muon_every steps: Muon's elementwise work and
  // Polar Express (symmetric products counted as computed); AdamW's few elementwise FLOPs are left out.
  double muon_flops() const;
  int64_t steps() const { return t_; }
  void set_steps(int64_t t) { t_ = t; }  // resume: Adam's bias correction continues from here
  // [adam m | adam v | muon momentum], then, with muon_every > 1, [Muon's last orthogonalised update]: sections()
  // sections, each over the owned range of the arena (all of it unless sharded); then, with NorMuon, [its second
  // moments]: normuon_size() floats over every matrix of the model (kept by each matrix's owner; other ranks'
  // entries stay 0, so a sum over ranks gathers them).
  std::vector<float>& state() { return state_; }
  int sections() const { return cfg_.muon_every > 1 ? 4 : 3; }
  int64_t normuon_size() const { return nv_size_; }
  float* normuon_state() { return state_.data() + sections() * (hi_ - lo_); }
  // After the whole NorMuon section was copied in (resume): zero the entries of matrices another rank owns.
  void keep_owned_normuon();
  // Sharded optimizer (dist/shard_plan.h): this process updates, and keeps state for, only the parameters in the
  // arena range [lo, hi) (whole parameters); call before the first step (the state is reset).
  void set_owned_range(int64_t lo, int64_t hi);
  int64_t owned_lo() const { return lo_; }
  int64_t owned_hi() const { return hi_; }
  const OptimConfig& config() const { return cfg_; }
  AdamGroupInfo adam_settings(const ParamInfo& p) const;
  float muon_lr(const ParamInfo& p) const;

 private:
  void muon_update(const ParamInfo& p, float* nv, float lr, float momentum, float wd);
  bool orthogonalise_now() const { return (t_ - 1) % cfg_.muon_every == 0; }  // during step t_ (from 1)
  void adam_update(const ParamInfo& p, const AdamGroupInfo& g, float lr_mult);
  Gpt& gpt_;
  OptimConfig cfg_;
  int64_t t_ = 0;
  int64_t lo_ = 0, hi_ = 0;  // owned arena range
  std::vector<float> state_;
  std::vector<int64_t> nv_offset_;  // per parameter: its NorMuon moments' offset in the last section (-1: none)
  int64_t nv_size_ = 0;
};

// Polar Express orthogonalisation of X (rows, cols) in place, ns_steps iterations (<= 5). Exposed for tests.
void polar_express(float* X, int64_t rows, int64_t cols, int ns_steps, Precision prec = Precision::kFp32);
// The switches' steps on one matrix X (rows, cols), in place; v: its NorMuon moments (rows if rows >= cols, else
// cols). Exposed for tests.
void muon_equilibrate_rows(float* X, int64_t rows, int64_t cols);
void muon_renormalize(float* X, int64_t rows, int64_t cols);
void normuon_scale(float* X, int64_t rows, int64_t cols, float* v, float beta2);

}  // namespace frontier
