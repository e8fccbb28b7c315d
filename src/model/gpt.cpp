#include "model/gpt.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/rope.h"
#include "util/status.h"

namespace frontier {

namespace {

constexpr float kNormEps = std::numeric_limits<float>::epsilon();

struct Rng {  // splitmix64; uniform in [0, 1) and Box-Muller normals
  uint64_t s;
  double uniform() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (z >> 11) * (1.0 / 9007199254740992.0);
  }
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

}  // namespace

std::vector<ParamInfo> Gpt::param_table(const ModelShape& s) {
  const int64_t C = s.dim, V = s.vocab_size, D = s.head_dim, H = s.n_head, Hkv = s.n_kv_head;
  std::vector<ParamInfo> table_;
  auto add = [&](std::string name, std::vector<int64_t> shape, ParamGroup g) {
    ParamInfo p{std::move(name), std::move(shape), g};
    table_.push_back(p);
  };
  add("wte", {V, C}, ParamGroup::kEmbedding);
  for (int i = 0; i < s.depth; i++) {
    std::string p = "h." + std::to_string(i) + ".";
    add(p + "attn.c_q", {H * D, C}, ParamGroup::kMatrix);
    add(p + "attn.c_k", {Hkv * D, C}, ParamGroup::kMatrix);
    add(p + "attn.c_v", {Hkv * D, C}, ParamGroup::kMatrix);
    add(p + "attn.c_proj", {C, H * D}, ParamGroup::kMatrix);
    if (has_value_embed(i, s.depth)) add(p + "attn.ve_gate", {Hkv, kGateChannels}, ParamGroup::kMatrix);
    add(p + "mlp.c_fc", {4 * C, C}, ParamGroup::kMatrix);
    add(p + "mlp.c_proj", {C, 4 * C}, ParamGroup::kMatrix);
  }
  for (int i = 0; i < s.depth; i++)
    if (has_value_embed(i, s.depth)) add("value_embeds." + std::to_string(i), {V, Hkv * D}, ParamGroup::kValueEmbed);
  add("lm_head", {V, C}, ParamGroup::kLmHead);
  add("resid_lambdas", {s.depth}, ParamGroup::kScalar);
  add("x0_lambdas", {s.depth}, ParamGroup::kScalar);
  int64_t off = 0;
  for (auto& p : table_) {
    p.offset = off;
    off += p.numel();
  }
  return table_;
}

Gpt::Gpt(const ModelShape& s) : s_(s), table_(param_table(s)) {
  const int64_t n = table_.back().offset + table_.back().numel();
  w_.assign(n, 0.f);
  g_.assign(n, 0.f);
  cos_.resize(static_cast<size_t>(s.seq_len) * s.head_dim / 2);
  sin_.resize(cos_.size());
  ref::rope_tables(cos_.data(), sin_.data(), s.seq_len, s.head_dim, 100000.0);
}

const ParamInfo& Gpt::param(const std::string& name) const {
  for (const auto& p : table_)
    if (p.name == name) return p;
  FRONTIER_CHECK(false && "unknown parameter");
  return table_[0];
}

// nanochat: wte ~ N(0, 0.8); lm_head ~ N(0, 0.001); q, k, v, value embeddings ~ U(-s, s) with s = sqrt(3/C)
// (std 1/sqrt(C)); c_fc ~ U(-0.4 s, 0.4 s); output projections and ve_gate zero; lambdas on a schedule over depth
// (nanochat): resid_lambdas[i] = 1.15 - 0.10 i/(L-1) (stronger residual early), x0_lambdas[i] = 0.20 - 0.15 i/(L-1)
// (more input-embedding blending early).
void Gpt::init_nanochat(uint64_t seed) {
  Rng rng{seed};
  const double s = std::sqrt(3.0 / s_.dim);
  for (const auto& p : table_) {
    float* w = w_.data() + p.offset;
    int64_t n = p.numel();
    auto fill_uniform = [&](double a) {
      for (int64_t i = 0; i < n; i++) w[i] = static_cast<float>((2 * rng.uniform() - 1) * a);
    };
    auto fill_normal = [&](double sd) {
      for (int64_t i = 0; i < n; i++) w[i] = static_cast<float>(rng.normal() * sd);
    };
    const std::string& nm = p.name;
    auto ends = [&](const char* suf) {
      size_t l = std::strlen(suf);
      return nm.size() >= l && nm.compare(nm.size() - l, l, suf) == 0;
    };
    if (nm == "wte") fill_normal(0.8);
    else if (nm == "lm_head") fill_normal(0.001);
    else if (nm == "resid_lambdas" || nm == "x0_lambdas") {
      const double denom = std::max(s_.depth - 1, 1);
      for (int64_t i = 0; i < n; i++)
        w[i] = static_cast<float>(nm == "resid_lambdas" ? 1.15 - 0.10 * i / denom : 0.20 - 0.15 * i / denom);
    }
    else if (ends("c_q") || ends("c_k") || ends("c_v") || nm.rfind("value_embeds.", 0) == 0) fill_uniform(s);
    else if (ends("mlp.c_fc")) fill_uniform(0.4 * s);
    else std::fill(w, w + n, 0.f);  // attn.c_proj, mlp.c_proj, ve_gate
  }
}

double Gpt::flops_per_token() const {
  int64_t n = 0;
  for (const auto& p : table_)
    if (p.group == ParamGroup::kMatrix || p.group == ParamGroup::kLmHead) n += p.numel();
  return 6.0 * n + 12.0 * s_.depth * s_.n_head * s_.head_dim * static_cast<double>(s_.seq_len);
}

Var Gpt::forward(Tape& t, const int32_t* idx, const int32_t* targets, int B, int T, Var* logits_out,
                  float* row_losses) {
  FRONTIER_CHECK(T <= s_.seq_len);
  const int64_t D = s_.head_dim, H = s_.n_head, Hkv = s_.n_kv_head, N = int64_t(B) * T;
  auto P = [&](const std::string& name) {
    const ParamInfo& p = param(name);
    return t.param(w_.data() + p.offset, g_.data() + p.offset, p.shape);
  };
  Var resid = P("resid_lambdas"), x0l = P("x0_lambdas");
  Var x = rmsnorm(t, embedding(t, idx, N, P("wte")), kNormEps);  // (N, C)
  Var x0 = x;
  for (int i = 0; i < s_.depth; i++) {
    std::string p = "h." + std::to_string(i) + ".";
    x = scale_add(t, x, resid, i, x0, x0l, i);  // resid_lambdas[i] * x + x0_lambdas[i] * x0
    Var h = rmsnorm(t, x, kNormEps);
    Var q = reshape(t, linear(t, h, P(p + "attn.c_q")), {B, T, H, D});
    Var k = reshape(t, linear(t, h, P(p + "attn.c_k")), {B, T, Hkv, D});
    Var v = reshape(t, linear(t, h, P(p + "attn.c_v")), {B, T, Hkv, D});
    if (has_value_embed(i, s_.depth)) {
      Var ve = reshape(t, embedding(t, idx, N, P("value_embeds." + std::to_string(i))), {B, T, Hkv, D});
      Var gate = linear(t, slice_last(t, h, 0, kGateChannels), P(p + "attn.ve_gate"));  // (N, Hkv)
      v = gated_add(t, v, gate, ve);
    }
    q = rope_rmsnorm(t, q, cos_.data(), sin_.data(), kNormEps);  // QK-norm after rotary, fused
    k = rope_rmsnorm(t, k, cos_.data(), sin_.data(), kNormEps);
    Var y = reshape(t, causal_attention(t, q, k, v), {N, H * D});
    x = add(t, x, linear(t, y, P(p + "attn.c_proj")));
    Var m = linear(t, relu2(t, linear(t, rmsnorm(t, x, kNormEps), P(p + "mlp.c_fc"))), P(p + "mlp.c_proj"));
    x = add(t, x, m);
  }
  if (s_.ce_vocab_chunk > 0 && !logits_out)  // (N, V) logits never stored
    return lm_head_softcap_ce(t, rmsnorm(t, x, kNormEps), P("lm_head"), targets, kSoftcap, s_.ce_vocab_chunk,
                              row_losses);
  Var logits = linear(t, rmsnorm(t, x, kNormEps), P("lm_head"));  // (N, V)
  if (logits_out) *logits_out = logits;
  return softcap_cross_entropy(t, logits, targets, kSoftcap, row_losses);
}

}  // namespace frontier
