// The model's shape from one dial, as nanochat: depth -> model_dim = depth * aspect_ratio rounded up to a multiple
// of head_dim, n_head = model_dim / head_dim. Every derived value is printed by describe().
//
//   ModelShape m;
//   FRONTIER_RETURN_IF_ERROR(derive_model_shape(cfg, &m));   // cfg from model_config_schema()
//   // depth 8, aspect 64, head_dim 128 -> dim 512, 4 heads
#pragma once

#include <string>

#include "config/config.h"

namespace frontier {

// Adds the model.* keys to a schema.
void add_model_keys(ConfigSchema* schema);

struct ModelShape {
  int depth = 0;         // n_layer
  int dim = 0;           // model_dim, C
  int n_head = 0;        // H
  int n_kv_head = 0;     // GQA key/value heads (divides n_head)
  int head_dim = 0;      // D
  int vocab_size = 0;    // V
  int seq_len = 0;       // T
  int mlp_dim = 0;       // 4 * C
  int ce_vocab_chunk = 0;  // > 0: lm_head + softcap CE fused over vocabulary chunks of this many (no N x V logits)
  std::string describe() const;
};

Status derive_model_shape(const Config& cfg, ModelShape* out);

}  // namespace frontier
