#include "model/model_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace frontier {

void add_model_keys(ConfigSchema* s) {
  s->add_int("model.depth", 8, "transformer layers: the one dial; width, heads and the rest derive from it",
             {1, 256});
  s->add_int("model.aspect_ratio", 64, "model_dim = depth * aspect_ratio, rounded up to a multiple of head_dim",
             {1, 65536});
  s->add_int("model.head_dim", 128, "attention head dimension", {2, 1024});
  s->add_int("model.n_kv_head", 0, "key/value heads for GQA (0 = n_head)", {0, 65536});
  s->add_int("model.dim", 0, "explicit model_dim (0 = derive from depth); must be a multiple of head_dim",
             {0, 65536});
  s->add_int("model.vocab_size", 0,
             "vocabulary size (0 = the prepared data's, so `prepare --vocab-size N` needs nothing more; 8192 where "
             "no data is at hand); set explicitly, it must match the data's tokenizer",
             {0, 1 << 24});
  s->add_int("model.seq_len", 512, "sequence length T (the autoresearch value is 2048)", {1, 1 << 20});
  s->add_int("model.ce_vocab_chunk", 0,
             "0: the lm_head writes the (N, V) logits; > 0: lm_head + softcap CE fused over vocabulary chunks of "
             "this many columns (saves 3 x N x V floats, recomputes the lm_head in backward; same loss)",
             {0, 1 << 24});
  // Architecture levers (ModelArch); every default is today's model.
  s->add_string("model.window_pattern", "L",
                "attention windows: L (full context) and S (sliding window of model.short_window tokens) tiled over "
                "the layers, the last layer always L (nanochat; its current GPT uses SSSL)");
  s->add_int("model.short_window", 0,
             "tokens an S layer sees before each query (0 = nanochat's ceil(seq_len/4/128)*128)", {0, 1 << 20});
  s->add_float("model.qk_scale", 1.0, "q and k each multiplied by this after QK-norm (nanochat's current: 1.2)",
               {1e-3, 100});
  s->add_float("model.rope_base", 100000, "rotary embedding base theta", {1, 1e12});
  s->add_float("model.rope_fraction", 1.0,
               "share of each head's rotary pairs that rotate (partial RoPE); the rest have frequency 0", {0, 1});
  s->add_bool("model.key_offset", false,
              "full-context layers take the keys' un-rotated dims from the previous token (modded-nanogpt record "
              "49; needs model.rope_fraction < 1)");
  s->add_float("model.softcap", kDefaultSoftcap, "logit softcap: cap * tanh(z / cap) (0 = none)", {0, 1e6});
  s->add_bool("model.smear", false,
              "nanochat's smear: x[t] += smear_lambda * sigmoid(x[t, :24] . smear_gate) * x[t-1] after the embedding");
  s->add_bool("model.backout", false,
              "nanochat's backout: subtract backout_lambda x the residual after layer depth/2 before the final norm");
  s->add_string("model.value_embeds", "alternate",
                "layers with a value embedding: alternate (nanochat, the last always), all, none");
  s->add_int("model.ve_gate_channels", 32, "channels of the block input the value-embedding gate reads "
             "(nanochat's current: 12)", {1, 65536});
  s->add_float("model.ve_gate_scale", 2, "v += scale * sigmoid(gate) * ve (nanochat's current: 3)", {0, 100});
  s->add_float("model.ve_gate_init", 0, "ve_gate ~ U(0, init); 0 = zeros (nanochat's current: 0.02)", {0, 10});
  s->add_string("model.mlp", "relu2", "MLP activation: relu2, leaky_relu2, swiglu, geglu");
  s->add_float("model.mlp_slope", 0.01, "negative slope of leaky_relu2", {0, 1});
  s->add_float("model.mlp_ratio", 4,
               "MLP hidden units = ratio x model_dim, rounded up to a multiple of 32 (4 keeps 4 x dim exactly; "
               "8/3 gives a gated MLP the parameters of relu2's 4)", {0.25, 64});
  s->add_bool("model.tie_embeddings", false, "lm_head shares wte (one table, in the lm_head's optimizer group)");
  s->add_float("model.untie_at", 0.0,
               "with model.tie_embeddings: the head is wte until this fraction of the run, then a parameter of its "
               "own (lm_head, a copy of wte then, with fresh AdamW moments, in the lm_head's optimizer group; wte "
               "keeps its group); lm_head exists from the start, idle until then; modded-nanogpt unties at 2/3 "
               "(0 = tied throughout)", {0, 1});
  s->add_string("model.ngram_orders", "",
                "hashed n-gram embedding tables added to the token embedding, e.g. \"2,3\" (\"\" = none)");
  s->add_int("model.ngram_buckets", 0, "rows of each n-gram table (0 = 4 x vocab_size)", {0, 1 << 26});
  s->add_int("model.mtp_heads", 0,
             "multi-token prediction: extra targets t+2 .. t+k+1 on the shared logits, weighted by "
             "train.mtp_weights and annealed to 0 (val_bpb scores the next token only)", {0, 8});
  s->add_int("model.moe_experts", 0, "mixture-of-experts MLP: experts per MoE layer (0 = dense)", {0, 1024});
  s->add_int("model.moe_top_k", 2, "experts each token is routed to", {1, 1024});
  s->add_string("model.moe_layers", "all", "MoE layers: all, alternate (odd layers), or a 0/1 string tiled");
  s->add_int("model.moe_hidden", 0, "hidden units per expert (0 = MLP hidden / top_k: the dense active size)",
             {0, 1 << 20});
  s->add_float("model.moe_aux_weight", 0.01, "Switch load-balance loss weight (added in the router's backward)",
               {0, 10});
}

ModelShapeKeys read_model_shape_keys(const Config& cfg) {
  ModelShapeKeys k;
  k.depth = cfg.get_int("model.depth");
  k.aspect_ratio = cfg.get_int("model.aspect_ratio");
  k.head_dim = cfg.get_int("model.head_dim");
  k.n_kv_head = cfg.get_int("model.n_kv_head");
  k.dim = cfg.get_int("model.dim");
  k.vocab_size = cfg.get_int("model.vocab_size");
  k.seq_len = cfg.get_int("model.seq_len");
  k.ce_vocab_chunk = cfg.get_int("model.ce_vocab_chunk");
  return k;
}

Status derive_model_shape(const Config& cfg, ModelShape* m) {
  const ModelShapeKeys k = read_model_shape_keys(cfg);
  int64_t depth = k.depth, aspect = k.aspect_ratio;
  int64_t hd = k.head_dim, kv = k.n_kv_head, dim = k.dim;
  int64_t V = k.vocab_size, T = k.seq_len;
  if (V == 0) V = 8192;  // nanochat's; `frontier train` puts the data's in its place before this (train.cpp)
  if (depth < 1 || depth > 256) return Status::error("model.depth must be in 1..256, got " + std::to_string(depth));
  if (hd < 1) return Status::error("model.head_dim must be positive");
  if (hd % 2) return Status::error("model.head_dim must be even (rotary embeddings rotate pairs), got " +
                                   std::to_string(hd));
  if (aspect < 1 && dim == 0) return Status::error("model.aspect_ratio must be positive");
  if (dim == 0) {
    dim = (depth * aspect + hd - 1) / hd * hd;
  } else if (dim % hd != 0) {
    return Status::error("model.dim " + std::to_string(dim) + " is not divisible by model.head_dim " +
                         std::to_string(hd) + " (use a multiple of " + std::to_string(hd) + ")");
  }
  int64_t nh = dim / hd;
  if (kv == 0) kv = nh;
  if (kv < 1 || nh % kv != 0)
    return Status::error("model.n_kv_head " + std::to_string(kv) + " must divide n_head " + std::to_string(nh));
  if (V < 256 + 9) return Status::error("model.vocab_size must be at least 265 (256 bytes + 9 specials)");
  if (T < 1) return Status::error("model.seq_len must be positive");
  const int64_t chunk = k.ce_vocab_chunk;
  if (chunk < 0) return Status::error("model.ce_vocab_chunk must be >= 0 (0 = off)");
  m->depth = static_cast<int>(depth);
  m->dim = static_cast<int>(dim);
  m->n_head = static_cast<int>(nh);
  m->n_kv_head = static_cast<int>(kv);
  m->head_dim = static_cast<int>(hd);
  m->vocab_size = static_cast<int>(V);
  m->seq_len = static_cast<int>(T);
  m->mlp_dim = static_cast<int>(4 * dim);
  m->ce_vocab_chunk = static_cast<int>(chunk);
  return derive_model_arch(cfg, m);
}

const char* mlp_kind_name(MlpKind k) {
  switch (k) {
    case MlpKind::kRelu2: return "relu2";
    case MlpKind::kLeakyRelu2: return "leaky_relu2";
    case MlpKind::kSwiglu: return "swiglu";
    case MlpKind::kGeglu: return "geglu";
  }
  return "?";
}

namespace {

bool tiled_flag(const std::string& pattern, int layer) { return pattern[layer % pattern.size()] == '1'; }

}  // namespace

int ModelShape::window(int layer) const {
  if (layer == depth - 1) return 0;  // the last layer is always full context (nanochat)
  const std::string& p = arch.window_pattern;
  const char c = p.empty() ? 'L' : p[layer % p.size()];
  if (c != 'S' && c != 's') return 0;
  return arch.short_window >= seq_len ? 0 : arch.short_window;
}

bool ModelShape::has_ve(int layer) const {
  if (arch.value_embeds == "none") return false;
  if (arch.value_embeds == "all") return true;
  return layer % 2 == (depth - 1) % 2;  // alternate: nanochat's has_ve, the last layer always included
}

bool ModelShape::is_moe(int layer) const {
  if (arch.moe_experts == 0) return false;
  if (arch.moe_layers == "all") return true;
  if (arch.moe_layers == "alternate") return layer % 2 == 1;
  return tiled_flag(arch.moe_layers, layer);
}

int ModelShape::rope_pairs() const {
  return static_cast<int>(std::lround(arch.rope_fraction * (head_dim / 2)));
}

// Parses and checks the architecture keys into m->arch (the shape fields are already derived). Each error names
// the key, what it got and what is allowed.
Status derive_model_arch(const Config& cfg, ModelShape* m) {
  ModelArch& a = m->arch;
  auto bad = [](const std::string& key, const std::string& got, const std::string& allowed) {
    return Status::error(key + " is '" + got.substr(0, 40) + "'; " + allowed);
  };
  a.window_pattern = cfg.get_string("model.window_pattern");
  if (a.window_pattern.empty() || a.window_pattern.find_first_not_of("LSls") != std::string::npos)
    return bad("model.window_pattern", a.window_pattern, "use the letters L (full context) and S (sliding window), "
               "e.g. SSSL");
  for (auto& c : a.window_pattern) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const int64_t sw = cfg.get_int("model.short_window");
  if (sw > 0 && sw >= m->seq_len)
    return Status::error("model.short_window " + std::to_string(sw) + " is not below model.seq_len " +
                         std::to_string(m->seq_len) + " (a window that covers the sequence is an L layer)");
  a.short_window = static_cast<int>(sw > 0 ? sw : ((m->seq_len + 3) / 4 + 127) / 128 * 128);  // -(-T // 4 // 128) * 128
  a.qk_scale = cfg.get_float("model.qk_scale");
  a.rope_base = cfg.get_float("model.rope_base");
  a.rope_fraction = cfg.get_float("model.rope_fraction");
  a.key_offset = cfg.get_bool("model.key_offset");
  if (a.key_offset && m->rope_pairs() >= m->head_dim / 2)
    return Status::error("model.key_offset shifts the un-rotated key dims, but model.rope_fraction " +
                         std::to_string(a.rope_fraction) + " rotates all of them; set model.rope_fraction below 1 "
                         "(e.g. 0.5)");
  a.softcap = cfg.get_float("model.softcap");
  a.smear = cfg.get_bool("model.smear");
  a.backout = cfg.get_bool("model.backout");
  if (a.smear && m->dim < kSmearChannels)
    return Status::error("model.smear reads " + std::to_string(kSmearChannels) + " channels, but model.dim is " +
                         std::to_string(m->dim));
  a.value_embeds = cfg.get_string("model.value_embeds");
  if (a.value_embeds != "alternate" && a.value_embeds != "all" && a.value_embeds != "none")
    return bad("model.value_embeds", a.value_embeds, "use alternate, all or none");
  a.ve_gate_channels = static_cast<int>(cfg.get_int("model.ve_gate_channels"));
  if (a.value_embeds != "none" && a.ve_gate_channels > m->dim)
    return Status::error("model.dim " + std::to_string(m->dim) + " is below the " +
                         std::to_string(a.ve_gate_channels) + " channels the value-embedding gate reads "
                         "(model.ve_gate_channels; raise model.dim or model.depth, or lower the channels)");
  a.ve_gate_scale = cfg.get_float("model.ve_gate_scale");
  a.ve_gate_init = cfg.get_float("model.ve_gate_init");
  const std::string mlp = cfg.get_string("model.mlp");
  if (mlp == "relu2") a.mlp = MlpKind::kRelu2;
  else if (mlp == "leaky_relu2") a.mlp = MlpKind::kLeakyRelu2;
  else if (mlp == "swiglu") a.mlp = MlpKind::kSwiglu;
  else if (mlp == "geglu") a.mlp = MlpKind::kGeglu;
  else return bad("model.mlp", mlp, "use relu2, leaky_relu2, swiglu or geglu");
  a.mlp_slope = cfg.get_float("model.mlp_slope");
  a.mlp_ratio = cfg.get_float("model.mlp_ratio");
  // 4 x dim exactly (nanochat's, so every existing model is unchanged); any other ratio rounds up to a multiple
  // of 32, the width the GEMM microkernels' panels tile without an edge.
  m->mlp_dim = a.mlp_ratio == 4 ? 4 * m->dim
                                : static_cast<int>((std::ceil(a.mlp_ratio * m->dim) + 31) / 32) * 32;
  a.tie_embeddings = cfg.get_bool("model.tie_embeddings");
  a.untie_at = cfg.get_float("model.untie_at");
  char untie[32];
  std::snprintf(untie, sizeof(untie), "%g", a.untie_at);
  if (a.untie_at > 0 && !a.tie_embeddings)
    return Status::error("model.untie_at = " + std::string(untie) + " needs model.tie_embeddings = true (an untied "
                         "head has nothing to untie); set it, or model.untie_at = 0");
  if (a.untie_at >= 1)
    return bad("model.untie_at", untie, "use a fraction of the run in (0, 1), e.g. 0.667 (0 = tied throughout)");
  a.ngram_orders.clear();
  const std::string orders = cfg.get_string("model.ngram_orders");
  for (size_t i = 0; i < orders.size();) {
    size_t j = orders.find(',', i);
    if (j == std::string::npos) j = orders.size();
    std::string tok = orders.substr(i, j - i);
    tok.erase(0, tok.find_first_not_of(' '));
    tok.erase(tok.find_last_not_of(' ') + 1);
    char* end = nullptr;
    const long n = tok.empty() ? 0 : std::strtol(tok.c_str(), &end, 10);
    if (tok.empty() || *end != '\0' || n < 2 || n > 8)
      return bad("model.ngram_orders", orders, "use a comma-separated list of orders in 2..8, e.g. \"2,3\"");
    for (int o : a.ngram_orders)
      if (o == n) return bad("model.ngram_orders", orders, "each order once");
    a.ngram_orders.push_back(static_cast<int>(n));
    i = j + 1;
  }
  const int64_t nb = cfg.get_int("model.ngram_buckets");
  a.ngram_buckets = static_cast<int>(nb > 0 ? nb : 4 * static_cast<int64_t>(m->vocab_size));
  a.mtp_heads = static_cast<int>(cfg.get_int("model.mtp_heads"));
  a.moe_experts = static_cast<int>(cfg.get_int("model.moe_experts"));
  a.moe_top_k = static_cast<int>(cfg.get_int("model.moe_top_k"));
  a.moe_layers = cfg.get_string("model.moe_layers");
  a.moe_aux_weight = cfg.get_float("model.moe_aux_weight");
  if (a.moe_experts > 0) {
    if (a.moe_top_k > a.moe_experts)
      return Status::error("model.moe_top_k " + std::to_string(a.moe_top_k) + " is above model.moe_experts " +
                           std::to_string(a.moe_experts) + " (a token is routed to top_k of the experts)");
    if (a.moe_layers != "all" && a.moe_layers != "alternate" &&
        (a.moe_layers.empty() || a.moe_layers.find_first_not_of("01") != std::string::npos))
      return bad("model.moe_layers", a.moe_layers, "use all, alternate, or a string of 0 and 1 tiled over layers");
    if (a.mlp == MlpKind::kSwiglu || a.mlp == MlpKind::kGeglu)
      return bad("model.mlp", mlp, "experts use relu2 or leaky_relu2 (model.moe_experts > 0)");
  }
  const int64_t mh = cfg.get_int("model.moe_hidden");
  a.moe_hidden = static_cast<int>(mh > 0 ? mh : std::max<int64_t>(1, m->mlp_dim / a.moe_top_k));
  return ok_status();
}

std::string ModelShape::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "depth %d  dim %d  heads %d (kv %d) x head_dim %d  mlp %d  vocab %d  seq_len %d", depth, dim,
                n_head, n_kv_head, head_dim, mlp_dim, vocab_size, seq_len);
  return buf;
}

std::string ModelShape::describe_arch() const {
  const ModelArch d;  // the defaults
  std::string s;
  auto add = [&](const std::string& t) { s += (s.empty() ? "" : "  ") + t; };
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof(b), "%g", v);
    return std::string(b);
  };
  if (arch.window_pattern != d.window_pattern) {
    std::string w;
    for (int i = 0; i < depth; i++) w += window(i) ? 'S' : 'L';
    add("windows " + w + " (S = " + std::to_string(arch.short_window) + " tokens)");
  }
  if (arch.qk_scale != d.qk_scale) add("qk_scale " + num(arch.qk_scale));
  if (arch.rope_base != d.rope_base) add("rope_base " + num(arch.rope_base));
  if (arch.rope_fraction != d.rope_fraction)
    add("rope " + std::to_string(rope_pairs()) + "/" + std::to_string(head_dim / 2) + " pairs");
  if (arch.key_offset) add("key_offset");
  if (arch.softcap != d.softcap) add("softcap " + num(arch.softcap));
  if (arch.smear) add("smear");
  if (arch.backout) add("backout");
  if (arch.value_embeds != d.value_embeds) add("value_embeds " + arch.value_embeds);
  if (arch.ve_gate_channels != d.ve_gate_channels || arch.ve_gate_scale != d.ve_gate_scale ||
      arch.ve_gate_init != d.ve_gate_init)
    add("ve_gate " + std::to_string(arch.ve_gate_channels) + " ch x " + num(arch.ve_gate_scale) + " (init U(0, " +
        num(arch.ve_gate_init) + "))");
  if (arch.mlp != d.mlp || arch.mlp_ratio != d.mlp_ratio)
    add(std::string("mlp ") + mlp_kind_name(arch.mlp) +
        (arch.mlp == MlpKind::kLeakyRelu2 ? "(" + num(arch.mlp_slope) + ")" : "") + " hidden " +
        std::to_string(mlp_dim));
  if (arch.tie_embeddings) add(arch.untie_at > 0 ? "tied embeddings until " + num(arch.untie_at) + " of the run"
                                                 : "tied embeddings");
  if (!arch.ngram_orders.empty()) {
    std::string o;
    for (int n : arch.ngram_orders) o += (o.empty() ? "" : ",") + std::to_string(n);
    add("ngram " + o + " x " + std::to_string(arch.ngram_buckets) + " buckets");
  }
  if (arch.mtp_heads) add("mtp +" + std::to_string(arch.mtp_heads) + " tokens");
  if (arch.moe_experts) {
    int n = 0;
    for (int i = 0; i < depth; i++) n += is_moe(i);
    add("moe top-" + std::to_string(arch.moe_top_k) + " of " + std::to_string(arch.moe_experts) + " x hidden " +
        std::to_string(arch.moe_hidden) + " on " + std::to_string(n) + " layers");
  }
  return s;
}

}  // namespace frontier
