#include "model/model_config.h"

#include <cstdio>

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
}

Status derive_model_shape(const Config& cfg, ModelShape* m) {
  int64_t depth = cfg.get_int("model.depth"), aspect = cfg.get_int("model.aspect_ratio");
  int64_t hd = cfg.get_int("model.head_dim"), kv = cfg.get_int("model.n_kv_head"), dim = cfg.get_int("model.dim");
  int64_t V = cfg.get_int("model.vocab_size"), T = cfg.get_int("model.seq_len");
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
  // The value-embedding gate reads the first 32 channels of x (nanochat's ve_gate_channels).
  if (dim < 32)
    return Status::error("model.dim " + std::to_string(dim) + " is below 32, the channels the value-embedding gate "
                         "reads (raise model.dim or model.depth)");
  int64_t nh = dim / hd;
  if (kv == 0) kv = nh;
  if (kv < 1 || nh % kv != 0)
    return Status::error("model.n_kv_head " + std::to_string(kv) + " must divide n_head " + std::to_string(nh));
  if (V < 256 + 9) return Status::error("model.vocab_size must be at least 265 (256 bytes + 9 specials)");
  if (T < 1) return Status::error("model.seq_len must be positive");
  const int64_t chunk = cfg.get_int("model.ce_vocab_chunk");
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
  return ok_status();
}

std::string ModelShape::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "depth %d  dim %d  heads %d (kv %d) x head_dim %d  mlp %d  vocab %d  seq_len %d", depth, dim,
                n_head, n_kv_head, head_dim, mlp_dim, vocab_size, seq_len);
  return buf;
}

}  // namespace frontier
