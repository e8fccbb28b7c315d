// The model's shape from one dial, as nanochat: depth -> model_dim = depth * aspect_ratio rounded up to a multiple
// of head_dim, n_head = model_dim / head_dim. Every derived value is printed by describe().
//
//   ModelShape m;
//   FRONTIER_RETURN_IF_ERROR(derive_model_shape(cfg, &m));   // cfg from model_config_schema()
//   // depth 8, aspect 64, head_dim 128 -> dim 512, 4 heads
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"

namespace frontier {

// Adds the model.* keys to a schema.
void add_model_keys(ConfigSchema* schema);

// The MLP's activation: relu2 = relu(x)^2 (nanochat), leaky_relu2 = leaky_relu(x, slope)^2, and the gated forms
// swiglu = silu(a) * b, geglu = gelu_tanh(a) * b over c_fc's two halves [a | b] (c_fc has 2 x hidden rows).
enum class MlpKind { kRelu2, kLeakyRelu2, kSwiglu, kGeglu };
const char* mlp_kind_name(MlpKind k);

// The architecture levers (model.* keys beyond the shape), parsed once by derive_model_shape. Every default is
// today's model (nanochat of commit 535f664); configs/nanochat.toml sets nanochat 92d63d4's values.
constexpr double kDefaultSoftcap = 15.0;  // logits = cap * tanh(z / cap)
constexpr int kSmearChannels = 24;        // nanochat's smear gate reads x[t, :24]
struct ModelArch {
  // Attention. window_pattern: L (full context) / S (sliding window of short_window tokens) tiled over the
  // layers, the last layer always L (nanochat). short_window = 0: nanochat's ceil(T/4/128)*128.
  std::string window_pattern = "L";
  int short_window = 0;       // resolved by derive_model_shape (a window >= seq_len is full context)
  double qk_scale = 1.0;      // q and k each times this after QK-norm (nanochat 92d63d4: 1.2)
  double rope_base = 100000;  // rotary base theta
  double rope_fraction = 1.0; // share of each head's rotary pairs that rotate; the rest have frequency 0
  bool key_offset = false;    // L layers: the keys' stationary (un-rotated) dims come from the previous token
  double softcap = kDefaultSoftcap;  // 0 = no softcap
  // Residual stream.
  bool smear = false;         // x[t] += smear_lambda * sigmoid(x[t, :24] . smear_gate) * x[t-1] after the embedding
  bool backout = false;       // x -= backout_lambda * x_mid (the residual after layer depth/2) before the final norm
  std::string value_embeds = "alternate";  // alternate (nanochat has_ve) | all | none
  int ve_gate_channels = 32;  // the gate reads h[:, :channels] (nanochat 92d63d4: 12)
  double ve_gate_scale = 2;   // v += scale * sigmoid(gate) * ve (nanochat 92d63d4: 3)
  double ve_gate_init = 0;    // ve_gate ~ U(0, init) (0: zeros; nanochat 92d63d4: 0.02)
  // MLP.
  MlpKind mlp = MlpKind::kRelu2;
  double mlp_slope = 0.01;    // leaky_relu2's negative slope
  double mlp_ratio = 4;       // hidden = ratio x dim (see derive_model_shape for the rounding)
  // Embeddings and heads.
  bool tie_embeddings = false;      // lm_head is wte
  // With tie_embeddings: lm_head is a parameter of its own from the start, idle while the head reads wte until
  // this fraction of training (the trainer's schedule, train/train.cpp), then initialised from wte and trained
  // apart (modded-nanogpt unties at 2/3). 0 = tied throughout. Evaluations, the sampler and export read lm_head.
  double untie_at = 0;
  std::vector<int> ngram_orders;    // hashed n-gram embedding tables, e.g. {2, 3}
  int ngram_buckets = 0;            // rows per table (resolved: 0 -> 4 x vocab_size)
  int mtp_heads = 0;                // extra predicted tokens t+2 .. t+k+1 on the shared logits
  // Mixture of experts (replaces the MLP of the chosen layers).
  int moe_experts = 0;              // 0 = dense
  int moe_top_k = 2;
  std::string moe_layers = "all";   // all | alternate (odd layers) | a 0/1 string tiled over the layers
  int moe_hidden = 0;               // per expert (resolved: 0 -> mlp_dim / top_k, the dense MLP's active size)
  double moe_aux_weight = 0.01;     // Switch load-balance loss weight
};

struct ModelShape {
  int depth = 0;         // n_layer
  int dim = 0;           // model_dim, C
  int n_head = 0;        // H
  int n_kv_head = 0;     // GQA key/value heads (divides n_head)
  int head_dim = 0;      // D
  int vocab_size = 0;    // V
  int seq_len = 0;       // T
  int mlp_dim = 0;       // hidden units of the MLP (4 * C by default)
  int ce_vocab_chunk = 0;  // > 0: lm_head + softcap CE fused over vocabulary chunks of this many (no N x V logits)
  ModelArch arch;
  // Per layer, from arch: the attention window (0 = full context), whether it has a value embedding, whether its
  // MLP is a mixture of experts. The rotary pairs that rotate (of head_dim / 2).
  int window(int layer) const;
  bool has_ve(int layer) const;
  bool is_moe(int layer) const;
  int rope_pairs() const;
  // The parameter the head reads outside training's tied phase: wte when tied (and never untied), else lm_head.
  const char* head_param() const { return arch.tie_embeddings && arch.untie_at == 0 ? "wte" : "lm_head"; }
  std::string describe() const;       // the shape, one line
  std::string describe_arch() const;  // the levers that differ from the defaults, one line ("" when none)
};

// The shape's model.* keys as given, before derive_model_shape resolves them (dim 0 = depth x aspect_ratio rounded,
// n_kv_head 0 = n_head, vocab_size 0 = the data's): what a cache of step times keys a shape on (advise), and what
// `frontier train` fills in. Reading them cannot fail; derive_model_shape checks them.
struct ModelShapeKeys {
  int64_t depth = 0, aspect_ratio = 0, head_dim = 0, n_kv_head = 0, dim = 0;  // model.depth ... model.dim
  int64_t vocab_size = 0, seq_len = 0, ce_vocab_chunk = 0;  // model.vocab_size, model.seq_len, model.ce_vocab_chunk
};
ModelShapeKeys read_model_shape_keys(const Config& cfg);

// The shape and the architecture (derive_model_arch); errors name the key and the allowed values.
Status derive_model_shape(const Config& cfg, ModelShape* out);
Status derive_model_arch(const Config& cfg, ModelShape* m);

}  // namespace frontier
