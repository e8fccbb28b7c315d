// Frontier's GPT in nanochat's terms (karpathy/nanochat, nanochat/gpt.py): parameter names, vocabulary
// padding and the GPTConfig fields of an exported config.json. The full list of differences is in
// docs/formats.md.
//
//   nanochat_name("h.3.attn.c_q")  == "transformer.h.3.attn.c_q.weight"
//   nanochat_name("value_embeds.1") == "value_embeds.1.weight";  nanochat_name("x0_lambdas") == "x0_lambdas"
//
// Shapes need no transposes: nn.Linear stores (out_features, in_features) and computes x @ W^T, as Frontier's
// matrices (out, in) do; embeddings are (vocab, width) in both. nanochat allocates the vocabulary rows of
// wte, value_embeds.* and lm_head padded to a multiple of 64 (GPT(pad_vocab_size_to=64)) and crops the logits
// to vocab_size; an export pads with zero rows, an import drops them.
//
// The architecture: nanochat's GPTConfig carries the shape and window_pattern; everything else Frontier's model
// makes a key (ModelArch) is Frontier's, written to config.json "frontier"."architecture" and read back on import.
// A directory without that object is nanochat's own: of commit 535f664 (gate on 32 channels x 2, no smear) or, when
// its weights hold smear_gate.weight, of commit 92d63d4 (smear, backout, a 12-channel 3*sigmoid gate, Q/K x 1.2).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/gpt.h"
#include "util/status.h"

namespace frontier {

inline constexpr double kRopeBase = 100000.0;  // as Gpt's constructor (gpt.cpp) builds its tables
inline constexpr int kNanochatVocabPad = 64;   // GPT(pad_vocab_size_to=64)
inline constexpr const char* kNanochatCommit = "535f664";

std::string nanochat_name(const std::string& frontier_name);
// wte, value_embeds.*, lm_head: one row per token id, padded to a multiple of 64 in nanochat.
bool has_vocab_rows(const ParamInfo& p);
int64_t nanochat_padded_vocab(int64_t vocab_size);

// {"sequence_len", "vocab_size", "n_layer", "n_head", "n_kv_head", "n_embd", "window_pattern": "L"}
nlohmann::json nanochat_gpt_config(const ModelShape& s);
// The shape a GPTConfig describes (head_dim = n_embd / n_head, mlp 4 x n_embd). Every field is checked:
// present, an integer in Frontier's range, consistent (n_embd divisible by n_head, an even head_dim,
// n_kv_head dividing n_head), and a window_pattern that leaves every layer full-context. Errors name path and
// the field.
Status shape_from_gpt_config(const nlohmann::json& cfg, const std::string& path, ModelShape* out);

// Every architecture value of a model (config.json "frontier"."architecture"), Frontier's names.
nlohmann::json frontier_architecture(const ModelShape& s);
// Sets s's architecture from such an object, each value checked by the model.* key's own parser; errors name path
// and the field (an unknown field: exported by a newer Frontier).
Status apply_frontier_architecture(const nlohmann::json& arch, const std::string& path, ModelShape* s);
// The model.* key=value assignments that rebuild s's architecture in a config (import).
std::vector<std::string> model_arch_sets(const ModelShape& s);
// nanochat 92d63d4's levers on top of a GPTConfig's shape (a nanochat directory whose weights have smear_gate).
void apply_nanochat_current(ModelShape* s);

}  // namespace frontier
