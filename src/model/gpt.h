// The baseline GPT (nanochat / autoresearch), composed from autograd ops: no hand-written model backward.
//
//   x = norm(wte[idx]); x0 = x
//   per layer i: x = resid_lambdas[i] * x + x0_lambdas[i] * x0
//                h = norm(x); q, k, v = h @ Wq^T, h @ Wk^T, h @ Wv^T       (B, T, H|Hkv, D)
//                v += 2 * sigmoid(h[:, :32] @ Wgate^T) * value_embeds[i][idx]  (layers with a value embedding)
//                q, k = norm(rope(q)), norm(rope(k)); x += attn(q, k, v) @ Wproj^T
//                x += relu(norm(x) @ Wfc^T)^2 @ Wmlp^T
//   logits = 15 * tanh((norm(x) @ lm_head^T) / 15); loss = mean cross-entropy
// Value embeddings on alternating layers, the last always included (nanochat has_ve). norm = parameter-free
// RMSNorm with eps = float32 machine epsilon (F.rms_norm's default).
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

inline bool has_value_embed(int layer, int n_layer) { return layer % 2 == (n_layer - 1) % 2; }

class Gpt {
 public:
  static constexpr int kGateChannels = 32;  // nanochat ve_gate_channels
  static constexpr float kSoftcap = 15.f;

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
  void zero_grad() { std::fill(g_.begin(), g_.end(), 0.f); }

  // idx, targets: (B, T). Returns the loss node; logits_out, if given, receives the node of the softcapped
  // logits' pre-activation (B*T, V) for inspection; row_losses (B*T), if given, the per-token losses in nats.
  Var forward(Tape& tape, const int32_t* idx, const int32_t* targets, int B, int T, Var* logits_out = nullptr,
              float* row_losses = nullptr);
  const std::vector<float>& rope_cos() const { return cos_; }  // (T, D/2)
  const std::vector<float>& rope_sin() const { return sin_; }
  int64_t n_params() const { return static_cast<int64_t>(w_.size()); }
  // Training FLOPs per token (nanochat's estimate): 6 x (matrix + lm_head params) + 12 x L x H x D x T attention.
  double flops_per_token() const;

 private:
  ModelShape s_;
  std::vector<ParamInfo> table_;
  std::vector<float> w_, g_, cos_, sin_;
};

}  // namespace frontier
