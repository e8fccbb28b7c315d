#include "export/nanochat_names.h"

#include <cctype>
#include <limits>
#include <vector>

#include "config/config.h"

namespace frontier {

std::string nanochat_name(const std::string& n) {
  if (n == "wte") return "transformer.wte.weight";
  if (n.rfind("h.", 0) == 0) return "transformer." + n + ".weight";  // h.{i}.attn.c_q ... h.{i}.mlp.c_proj
  if (n == "resid_lambdas" || n == "x0_lambdas" || n == "smear_lambda" || n == "backout_lambda")
    return n;                                                        // bare nn.Parameter
  return n + ".weight";                                              // lm_head, value_embeds.{i}
}

bool has_vocab_rows(const ParamInfo& p) {
  return p.name == "wte" || p.name == "lm_head" || p.name.rfind("value_embeds.", 0) == 0;
}

int64_t nanochat_padded_vocab(int64_t v) {
  return (v + kNanochatVocabPad - 1) / kNanochatVocabPad * kNanochatVocabPad;
}

nlohmann::json nanochat_gpt_config(const ModelShape& s) {
  return {{"sequence_len", s.seq_len}, {"vocab_size", s.vocab_size}, {"n_layer", s.depth},
          {"n_head", s.n_head},        {"n_kv_head", s.n_kv_head},   {"n_embd", s.dim},
          {"window_pattern", s.arch.window_pattern}};
}

Status shape_from_gpt_config(const nlohmann::json& j, const std::string& path, ModelShape* out) {
  if (!j.is_object()) return Status::error(path + ": not a JSON object of GPTConfig fields");
  auto field = [&](const char* k, int64_t lo, int64_t hi, int64_t* v) -> Status {
    auto it = j.find(k);
    if (it == j.end())
      return Status::error(path + ": field '" + k + "' is missing (nanochat's GPTConfig needs it)");
    if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi)
      return Status::error(path + ": field '" + k + "' is " + it->dump().substr(0, 40) +
                           ", not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    *v = it->get<int64_t>();
    return ok_status();
  };
  // The same ranges as the model.* config keys (model_config.cpp).
  int64_t T, V, L, H, Hkv, C;
  FRONTIER_RETURN_IF_ERROR(field("sequence_len", 1, 1 << 20, &T));
  FRONTIER_RETURN_IF_ERROR(field("vocab_size", 265, 1 << 24, &V));
  FRONTIER_RETURN_IF_ERROR(field("n_layer", 1, 256, &L));
  FRONTIER_RETURN_IF_ERROR(field("n_head", 1, 65536, &H));
  FRONTIER_RETURN_IF_ERROR(field("n_kv_head", 1, 65536, &Hkv));
  FRONTIER_RETURN_IF_ERROR(field("n_embd", 2, 65536, &C));
  if (C % H != 0)
    return Status::error(path + ": n_embd " + std::to_string(C) + " is not divisible by n_head " +
                         std::to_string(H));
  const int64_t D = C / H;
  if (D % 2 != 0 || D > 1024)
    return Status::error(path + ": head_dim n_embd / n_head = " + std::to_string(D) +
                         " must be even and at most 1024 "
                         "(rotary embeddings rotate pairs)");
  if (H % Hkv != 0)
    return Status::error(path + ": n_kv_head " + std::to_string(Hkv) + " does not divide n_head " +
                         std::to_string(H));
  // nanochat's sliding windows: the pattern tiled over the layers, the last layer always long, the short window
  // ceil(T/4/128)*128 tokens (ModelShape::window).
  std::string pattern = "L";
  if (auto it = j.find("window_pattern"); it != j.end()) {
    if (!it->is_string() || it->get<std::string>().empty())
      return Status::error(path + ": window_pattern is not a string of L and S");
    pattern = it->get<std::string>();
    if (pattern.find_first_not_of("LSls") != std::string::npos)
      return Status::error(path + ": window_pattern '" + pattern.substr(0, 32) +
                           "' has a character other than L and S");
    for (auto& ch : pattern) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  out->arch = ModelArch{};
  out->arch.window_pattern = pattern;
  out->arch.short_window = static_cast<int>(((T + 3) / 4 + 127) / 128 * 128);
  out->arch.ngram_buckets = static_cast<int>(4 * V);
  out->arch.moe_hidden = static_cast<int>(4 * C / out->arch.moe_top_k);
  out->depth = static_cast<int>(L);
  out->dim = static_cast<int>(C);
  out->n_head = static_cast<int>(H);
  out->n_kv_head = static_cast<int>(Hkv);
  out->head_dim = static_cast<int>(D);
  out->vocab_size = static_cast<int>(V);
  out->seq_len = static_cast<int>(T);
  out->mlp_dim = static_cast<int>(4 * C);
  return ok_status();
}

nlohmann::json frontier_architecture(const ModelShape& s) {
  const ModelArch& a = s.arch;
  std::string orders;
  for (int n : a.ngram_orders) orders += (orders.empty() ? "" : ",") + std::to_string(n);
  nlohmann::json j = {{"head_dim", s.head_dim},
                      {"mlp_dim", s.mlp_dim},
                      {"padded_vocab_size", nanochat_padded_vocab(s.vocab_size)},
                      {"rope_base", a.rope_base},
                      {"rope_fraction", a.rope_fraction},
                      {"short_window", a.short_window},
                      {"key_offset", a.key_offset},
                      {"softcap", a.softcap},
                      {"value_embeds", a.value_embeds},
                      {"ve_gate_channels", a.ve_gate_channels},
                      {"ve_gate_scale", a.ve_gate_scale},
                      {"ve_gate_init", a.ve_gate_init},
                      {"qk_scale", a.qk_scale},
                      {"norm_eps", std::numeric_limits<float>::epsilon()},
                      {"smear", a.smear},
                      {"backout", a.backout},
                      {"mlp", mlp_kind_name(a.mlp)},
                      {"mlp_slope", a.mlp_slope},
                      {"mlp_ratio", a.mlp_ratio},
                      {"tie_embeddings", a.tie_embeddings},
                      {"ngram_orders", orders},
                      {"ngram_buckets", a.ngram_buckets},
                      {"mtp_heads", a.mtp_heads},
                      {"moe_experts", a.moe_experts},
                      {"moe_top_k", a.moe_top_k},
                      {"moe_layers", a.moe_layers},
                      {"moe_hidden", a.moe_hidden},
                      {"moe_aux_weight", a.moe_aux_weight},
                      {"nanochat_commit", kNanochatCommit}};
  if (a.untie_at > 0) j["untie_at"] = a.untie_at;  // a training schedule's model (export writes it untied)
  return j;
}

std::vector<std::string> model_arch_sets(const ModelShape& s) {
  std::vector<std::string> sets;
  const nlohmann::json a = frontier_architecture(s);
  for (const auto& [k, v] : a.items()) {
    if (k == "head_dim" || k == "mlp_dim" || k == "padded_vocab_size" || k == "norm_eps" || k == "nanochat_commit")
      continue;  // derived or fixed, not keys
    if (k == "short_window" && v.get<int64_t>() >= s.seq_len) continue;  // covers T: the key's 0 (nanochat's)
    std::string val = v.is_string() ? v.get<std::string>() : v.dump();
    sets.push_back("model." + k + "=" + val);
  }
  sets.push_back("model.window_pattern=" + s.arch.window_pattern);
  if (s.arch.untie_at == 0) sets.push_back("model.untie_at=0");  // over a train_config's (its run untied the head)
  return sets;
}

Status apply_frontier_architecture(const nlohmann::json& arch, const std::string& path, ModelShape* s) {
  if (!arch.is_object()) return Status::error(path + ": frontier.architecture is not an object");
  const nlohmann::json mine = frontier_architecture(*s);
  // Every field through the model.* keys' own parser, so a value is checked exactly as in a config file.
  ConfigSchema schema;
  add_model_keys(&schema);
  Config cfg = schema.defaults();
  for (const std::string& kv :
       {"model.depth=" + std::to_string(s->depth), "model.dim=" + std::to_string(s->dim),
        "model.head_dim=" + std::to_string(s->head_dim), "model.n_kv_head=" + std::to_string(s->n_kv_head),
        "model.vocab_size=" + std::to_string(s->vocab_size), "model.seq_len=" + std::to_string(s->seq_len),
        "model.window_pattern=" + s->arch.window_pattern})
    FRONTIER_RETURN_IF_ERROR(schema.apply_set(kv, &cfg));
  int64_t mlp_dim = -1;
  for (const auto& [k, v] : arch.items()) {
    if (k == "nanochat_commit") continue;  // informative
    if (mine.find(k) == mine.end())
      return Status::error(path + ": frontier.architecture has '" + k.substr(0, 40) +
                           "', which this build's model does not know (exported by a newer Frontier?)");
    if (k == "padded_vocab_size" || k == "norm_eps" || k == "head_dim") {  // fixed by the shape
      const bool same = v.is_number() && v.get<double>() == mine[k].get<double>();
      if (!same)
        return Status::error(path + ": frontier.architecture " + k + " is " + v.dump().substr(0, 40) +
                             ", but this build's model has " + mine[k].dump() + " (for this shape)");
      continue;
    }
    if (k == "mlp_dim") {
      if (!v.is_number_integer()) return Status::error(path + ": frontier.architecture mlp_dim is not an integer");
      mlp_dim = v.get<int64_t>();
      continue;
    }
    if (k == "short_window" && v.is_number_integer() && v.get<int64_t>() >= s->seq_len) continue;  // as above
    const std::string val = v.is_string() ? v.get<std::string>() : v.dump();
    if (Status st = schema.apply_set("model." + k + "=" + val, &cfg); !st.ok())
      return Status::error(path + ": frontier.architecture: " + st.message());
  }
  ModelShape got;
  if (Status st = derive_model_shape(cfg, &got); !st.ok())
    return Status::error(path + ": frontier.architecture: " + st.message());
  if (mlp_dim >= 0 && mlp_dim != got.mlp_dim)
    return Status::error(path + ": frontier.architecture mlp_dim is " + std::to_string(mlp_dim) + ", but its mlp_ratio " +
                         "gives " + std::to_string(got.mlp_dim));
  got.ce_vocab_chunk = s->ce_vocab_chunk;
  *s = got;
  return ok_status();
}

void apply_nanochat_current(ModelShape* s) {
  ModelArch& a = s->arch;
  a.smear = a.backout = true;
  a.ve_gate_channels = 12;
  a.ve_gate_scale = 3;
  a.ve_gate_init = 0.02;
  a.qk_scale = 1.2;
}

}  // namespace frontier
