// The GPT's parts, one family of variants per file, composed top to bottom by Gpt::forward (gpt.cpp):
//   embeddings.cpp  token embedding, hashed n-gram tables, smear; the head: tied or untied lm_head, softcap,
//                   cross-entropy and multi-token prediction
//   attention.cpp   projections, value embeddings and their gate, RoPE (partial), QK-norm and scale, key offset,
//                   sliding windows
//   mlp.cpp         relu2 / leaky_relu2 / swiglu / geglu MLPs and the mixture of experts
// Each part declares its parameters (add_*_params, in the arena's order) and builds its forward from autograd ops;
// none has backward code of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/tape.h"
#include "model/gpt.h"

namespace frontier {

using AddParam = std::function<void(std::string name, std::vector<int64_t> shape, ParamGroup group)>;
using ParamFn = std::function<Var(const std::string& name)>;
// A parameter node over `shape` floats of the arena starting at the named parameter (adjacent parameters read as
// one tensor, e.g. the experts of a layer). One node per storage range: the gradient exchange's buckets need it.
using ParamViewFn = std::function<Var(const std::string& first, std::vector<int64_t> shape)>;

// What every part reads: the tape, the model, its parameters by name, the batch's token ids (B, T).
struct BlockCtx {
  Tape& t;
  const ModelShape& s;
  const ParamFn& P;
  const ParamViewFn& PV;
  const int32_t* idx;
  int B, T;
  float loss_seed;  // the backward's seed (scales the MoE load-balance gradient the experts' op adds itself)
};

// embeddings.cpp
void add_embedding_params(const ModelShape& s, const AddParam& add);  // wte, n-gram tables
void add_head_params(const ModelShape& s, const AddParam& add);       // lm_head (untied), smear, backout
Var embed_tokens(const BlockCtx& c);                                  // -> x (B*T, C), normed and smeared
// x (B*T, C) after the final norm -> the loss; mtp_w: the extra targets' weights (empty: next token only).
// mtp_targets: storage for the shifted targets, alive until the backward has run.
Var head_loss(const BlockCtx& c, Var x, const int32_t* targets, const std::vector<float>& mtp_w, Var* logits_out,
              float* row_losses, std::vector<std::vector<int32_t>>* mtp_targets);

// attention.cpp
void add_attention_params(const ModelShape& s, int layer, const AddParam& add);
void add_value_embed_params(const ModelShape& s, const AddParam& add);
// h = norm(x) (B*T, C) -> the attention's output projection (B*T, C). cos/sin: the rotary tables (T, D/2).
Var attention(const BlockCtx& c, int layer, Var h, const float* cos_t, const float* sin_t);
// The rotary tables of a shape: nanochat's frequencies base^(-2j/D) for the first rope_pairs() pairs, 0 after.
void rope_tables_for(const ModelShape& s, std::vector<float>* cos_t, std::vector<float>* sin_t);

// mlp.cpp
void add_mlp_params(const ModelShape& s, int layer, const AddParam& add);
Var mlp(const BlockCtx& c, int layer, Var h, MoeStats* stats);  // h (B*T, C) -> (B*T, C)

}  // namespace frontier
