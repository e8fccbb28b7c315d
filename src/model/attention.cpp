// The attention half of a block, with its levers: GQA, value embeddings and their gate, RoPE over a share of the
// pairs, QK-norm and its scale, the key offset of full-context layers, and sliding windows.
#include <cmath>
#include <limits>

#include "model/blocks.h"
#include "reference/rope.h"

namespace frontier {

namespace {
constexpr float kNormEps = std::numeric_limits<float>::epsilon();
}

void add_attention_params(const ModelShape& s, int i, const AddParam& add) {
  const int64_t C = s.dim, D = s.head_dim, H = s.n_head, Hkv = s.n_kv_head;
  const std::string p = "h." + std::to_string(i) + ".";
  add(p + "attn.c_q", {H * D, C}, ParamGroup::kMatrix);
  add(p + "attn.c_k", {Hkv * D, C}, ParamGroup::kMatrix);
  add(p + "attn.c_v", {Hkv * D, C}, ParamGroup::kMatrix);
  add(p + "attn.c_proj", {C, H * D}, ParamGroup::kMatrix);
  if (s.has_ve(i)) add(p + "attn.ve_gate", {Hkv, s.arch.ve_gate_channels}, ParamGroup::kMatrix);
}

void add_value_embed_params(const ModelShape& s, const AddParam& add) {
  for (int i = 0; i < s.depth; i++)
    if (s.has_ve(i))
      add("value_embeds." + std::to_string(i), {s.vocab_size, int64_t(s.n_kv_head) * s.head_dim},
          ParamGroup::kValueEmbed);
}

void rope_tables_for(const ModelShape& s, std::vector<float>* cos_t, std::vector<float>* sin_t) {
  const int64_t half = s.head_dim / 2;
  cos_t->resize(static_cast<size_t>(s.seq_len) * half);
  sin_t->resize(cos_t->size());
  ref::rope_tables(cos_t->data(), sin_t->data(), s.seq_len, s.head_dim, s.arch.rope_base);
  // Partial RoPE: pairs past rope_pairs() have frequency 0 (cos 1, sin 0), as modded-nanogpt's stationary dims.
  for (int64_t t = 0; t < s.seq_len; t++)
    for (int64_t j = s.rope_pairs(); j < half; j++) {
      (*cos_t)[t * half + j] = 1.f;
      (*sin_t)[t * half + j] = 0.f;
    }
}

Var attention(const BlockCtx& c, int i, Var h, const float* cos_t, const float* sin_t) {
  Tape& t = c.t;
  const ModelShape& s = c.s;
  const int64_t D = s.head_dim, H = s.n_head, Hkv = s.n_kv_head, N = int64_t(c.B) * c.T;
  const std::string p = "h." + std::to_string(i) + ".";
  Var q = reshape(t, linear(t, h, c.P(p + "attn.c_q")), {c.B, c.T, H, D});
  Var k = reshape(t, linear(t, h, c.P(p + "attn.c_k")), {c.B, c.T, Hkv, D});
  Var v = reshape(t, linear(t, h, c.P(p + "attn.c_v")), {c.B, c.T, Hkv, D});
  if (s.has_ve(i)) {  // value residual (ResFormer): v += scale * sigmoid(gate(h[:, :channels])) * ve
    Var ve = reshape(t, embedding(t, c.idx, N, c.P("value_embeds." + std::to_string(i))), {c.B, c.T, Hkv, D});
    Var gate = linear(t, slice_last(t, h, 0, s.arch.ve_gate_channels), c.P(p + "attn.ve_gate"));  // (N, Hkv)
    v = gated_add(t, v, gate, ve, static_cast<float>(s.arch.ve_gate_scale));
  }
  q = rope_rmsnorm(t, q, cos_t, sin_t, kNormEps);  // QK-norm after rotary, fused
  k = rope_rmsnorm(t, k, cos_t, sin_t, kNormEps);
  const int window = s.window(i);
  if (s.arch.key_offset && window == 0) k = key_shift(t, k, s.rope_pairs());
  // q * a and k * a after the norm (nanochat's 1.2) is the softmax scale a^2 / sqrt(D): folded into the kernel.
  // 0 keeps the kernel's own 1/sqrt(D), so the default model is bit-identical to before the key existed.
  const float scale = s.arch.qk_scale == 1.0
                          ? 0.f
                          : static_cast<float>(s.arch.qk_scale * s.arch.qk_scale / std::sqrt(static_cast<double>(D)));
  Var y = reshape(t, causal_attention(t, q, k, v, scale, window), {N, H * D});
  return linear(t, y, c.P(p + "attn.c_proj"));
}

}  // namespace frontier
