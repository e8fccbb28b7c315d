// The GPT (nanochat / autoresearch), composed from autograd ops: no hand-written model backward. The defaults of
// ModelArch (model/model_config.h) are nanochat's model of commit 535f664; each lever is a model.* key.
//
//   x = norm(wte[idx] + sum_n ngram_n[hash_n(idx)]); x = smear(x); x0 = x          (embeddings.cpp)
//   per layer i: x = resid_lambdas[i] * x + x0_lambdas[i] * x0
//                x += attention(norm(x))                                          (attention.cpp)
//                  q, k, v = h @ Wq^T, h @ Wk^T, h @ Wv^T                          (B, T, H|Hkv, D)
//                  v += ve_scale * sigmoid(h[:, :gate_ch] @ Wgate^T) * value_embeds[i][idx]   (value-embed layers)
//                  q, k = norm(rope(q)), norm(rope(k)); k = key_shift(k) (key offset, L layers)
//                  y = softmax(qk_scale^2 q k^T / sqrt(D), causal, window(i)) v; x += y @ Wproj^T
//                x += mlp(norm(x))   relu2 | leaky_relu2 | swiglu | geglu | MoE     (mlp.cpp)
//                x_mid = x after layer depth/2 (backout)
//   x = norm(x - backout_lambda * x_mid)
//   logits = cap * tanh((x @ lm_head^T) / cap) (lm_head = wte when tied); loss = mean CE of the next token,
//   plus sum_j w_j CE(token t+j+1) on the same logits with multi-token prediction   (embeddings.cpp)
// norm = parameter-free RMSNorm with eps = float32 machine epsilon (F.rms_norm's default).
//
// Parameters live in one arena with named views (ParamTable), so a checkpoint or an all-reduce is one buffer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/tape.h"
#include "model/model_config.h"

namespace frontier {

enum class ParamGroup { kMatrix, kEmbedding, kValueEmbed, kLmHead, kScalar };  // optimizer groups

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
  ParamGroup group;
  int64_t offset = 0;  // into the arena
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

// nanochat's has_ve (ModelShape::has_ve with model.value_embeds = alternate).
inline bool has_value_embed(int layer, int n_layer) { return layer % 2 == (n_layer - 1) % 2; }

class Gpt {
 public:

  explicit Gpt(const ModelShape& shape);
  // The parameter table of a shape, offsets included, without allocating (memory estimates, exporters).
  static std::vector<ParamInfo> param_table(const ModelShape& shape);
  const ModelShape& shape() const { return s_; }
  const std::vector<ParamInfo>& params() const { return table_; }
  const ParamInfo& param(const std::string& name) const;
  std::vector<float>& weights() { return w_; }  // the arena
  std::vector<float>& grads() { return g_; }
  float* data(const std::string& name) { return w_.data() + param(name).offset; }

  void init_nanochat(uint64_t seed);  // nanochat's initialisation (see gpt.cpp)
  void zero_grad();  // every thread clears a part (the arena is 200 MB at depth 8)

  // idx, targets: (B, T). Returns the loss node; logits_out, if given, receives the node of the softcapped
  // logits' pre-activation (B*T, V) for inspection; row_losses (B*T), if given, the per-token losses in nats.
  // With multi-token prediction (model.mtp_heads > 0) the loss adds the extra targets' terms weighted by
  // mtp_weights() (set by the trainer each step; empty or all zero: next token only, as every evaluation runs).
  Var forward(Tape& tape, const int32_t* idx, const int32_t* targets, int B, int T, Var* logits_out = nullptr,
              float* row_losses = nullptr);
  std::vector<float>& mtp_weights() { return mtp_weights_; }
  // What the training schedules (train/schedule.h) change from one step to the next, for the trainer's forwards
  // only: {} (the default) is the model as configured, which every evaluation, the sampler and the step timers run.
  struct Schedule {
    int short_window = 0;        // > 0: S layers see this many tokens (train.window_warmup_ratio), not short_window
    bool head_from_wte = false;  // model.untie_at, before the untie: the head reads wte; lm_head is idle (no gradient)
  };
  void set_schedule(const Schedule& s) { sched_ = s; }
  // Step timers (probe, profile, bench) run a training step's work: the extra targets at 0.5^j when none are set.
  void set_timing_mtp_weights() {
    if (mtp_weights_.empty())
      for (int j = 1; j <= s_.arch.mtp_heads; j++) mtp_weights_.push_back(1.f / static_cast<float>(1 << j));
  }
  // The seed the trainer's backward starts from (1/accumulation): the MoE load-balance gradient, which the experts'
  // op adds in its own backward, is scaled by it as the loss's gradient is.
  void set_loss_seed(float seed) { loss_seed_ = seed; }
  // Mixture of experts: tokens routed per expert (all MoE layers), dropped tokens (always 0: no capacity limit)
  // and the load-balance loss, summed since the last reset.
  struct MoeTotals {
    std::vector<int64_t> tokens_per_expert;
    int64_t dropped = 0;
    double aux_loss = 0;
    int64_t calls = 0;
  };
  MoeTotals& moe_totals() { return moe_totals_; }
  const std::vector<float>& rope_cos() const { return cos_; }  // (T, D/2)
  const std::vector<float>& rope_sin() const { return sin_; }
  int64_t n_params() const { return static_cast<int64_t>(w_.size()); }
  // Training FLOPs per token (nanochat's estimate): 6 x (matrix + lm_head params, experts at top_k / E: active
  // parameters only) + 12 x H x D x min(window, T) attention summed over layers.
  double flops_per_token() const;
  // The FLOPs a training step executes per token, the optimizer aside (the hardware FLOPs of "HFU"): the same 6 x
  // matrix parameters, and attention as its kernel runs it: the visible (query, key) pairs only (about half of
  // flops_per_token's T keys when causal), 2 GEMMs forward and 5 backward (the scores recomputed).
  double hardware_flops_per_token() const;
  int64_t n_active_params() const;  // n_params() less the experts not routed to (top_k of E per token)

 private:
  ModelShape s_;
  std::vector<ParamInfo> table_;
  std::vector<float> w_, g_, cos_, sin_;
  std::vector<float> mtp_weights_;
  Schedule sched_;
  std::vector<std::vector<int32_t>> mtp_targets_;  // the shifted targets of the last forward
  MoeTotals moe_totals_;
  float loss_seed_ = 1.f;
};

}  // namespace frontier
