#include "export/nanochat_names.h"

#include <limits>

namespace frontier {

std::string nanochat_name(const std::string& n) {
  if (n == "wte") return "transformer.wte.weight";
  if (n.rfind("h.", 0) == 0) return "transformer." + n + ".weight";  // h.{i}.attn.c_q ... h.{i}.mlp.c_proj
  if (n == "resid_lambdas" || n == "x0_lambdas") return n;           // bare nn.Parameter
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
          {"window_pattern", "L"}};
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
  if (C < Gpt::kGateChannels)  // the value-embedding gate reads the first 32 channels (nanochat: x[..., :32])
    return Status::error(path + ": n_embd " + std::to_string(C) + " is below the " +
                         std::to_string(Gpt::kGateChannels) + " channels the value-embedding gate reads");
  const int64_t D = C / H;
  if (D % 2 != 0 || D > 1024)
    return Status::error(path + ": head_dim n_embd / n_head = " + std::to_string(D) +
                         " must be even and at most 1024 "
                         "(rotary embeddings rotate pairs)");
  if (H % Hkv != 0)
    return Status::error(path + ": n_kv_head " + std::to_string(Hkv) + " does not divide n_head " +
                         std::to_string(H));
  // nanochat's sliding windows: the pattern tiled over the layers, the last layer always long. A short window
  // of ceil(T/4/128)*128 tokens that still covers the whole sequence is full context, as Frontier's attention
  // is.
  if (auto it = j.find("window_pattern"); it != j.end()) {
    if (!it->is_string() || it->get<std::string>().empty())
      return Status::error(path + ": window_pattern is not a string of L and S");
    const std::string p = it->get<std::string>();
    if (p.find_first_not_of("LSls") != std::string::npos)
      return Status::error(path + ": window_pattern '" + p.substr(0, 32) +
                           "' has a character other than L and S");
    const int64_t short_window = ((T + 3) / 4 + 127) / 128 * 128;  // -(-T // 4 // 128) * 128
    for (int64_t i = 0; i + 1 < L; i++) {                          // the last layer is always long
      const char c = p[i % p.size()];
      if ((c == 'S' || c == 's') && short_window < T)
        return Status::error(path + ": window_pattern '" + p.substr(0, 32) + "' gives layer " +
                             std::to_string(i) + " a sliding window of " + std::to_string(short_window) +
                             " < sequence_len " + std::to_string(T) +
                             " tokens; Frontier's attention is full-context (\"L\") only");
    }
  }
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
  return {{"head_dim", s.head_dim},
          {"mlp_dim", s.mlp_dim},
          {"padded_vocab_size", nanochat_padded_vocab(s.vocab_size)},
          {"rope_base", kRopeBase},
          {"softcap", Gpt::kSoftcap},
          {"ve_gate_channels", Gpt::kGateChannels},
          {"ve_gate_scale", 2},
          {"qk_scale", 1},
          {"norm_eps", std::numeric_limits<float>::epsilon()},
          {"smear", false},
          {"backout", false},
          {"nanochat_commit", kNanochatCommit}};
}

Status check_frontier_architecture(const nlohmann::json& arch, const ModelShape& s, const std::string& path) {
  if (!arch.is_object()) return Status::error(path + ": frontier.architecture is not an object");
  const nlohmann::json mine = frontier_architecture(s);
  for (const auto& [k, v] : arch.items()) {
    if (k == "nanochat_commit") continue;  // informative
    auto it = mine.find(k);
    if (it == mine.end())
      return Status::error(path + ": frontier.architecture has '" + k.substr(0, 40) +
                           "', which this build's model "
                           "does not know (exported by a newer Frontier?)");
    const bool same = v.is_number() && it->is_number() ? v.get<double>() == it->get<double>() : v == *it;
    if (!same)
      return Status::error(path + ": frontier.architecture " + k + " is " + v.dump().substr(0, 40) +
                           ", but this "
                           "build's model has " +
                           it->dump() + " (for this shape)");
  }
  return ok_status();
}

}  // namespace frontier
