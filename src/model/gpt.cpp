#include "model/gpt.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "autograd/buffer_pool.h"
#include "model/blocks.h"
#include "util/rng.h"
#include "util/status.h"

namespace frontier {

namespace {

constexpr float kNormEps = std::numeric_limits<float>::epsilon();

}  // namespace

std::vector<ParamInfo> Gpt::param_table(const ModelShape& s) {
  std::vector<ParamInfo> table;
  const AddParam add = [&](std::string name, std::vector<int64_t> shape, ParamGroup g) {
    table.push_back(ParamInfo{std::move(name), std::move(shape), g});
  };
  add_embedding_params(s, add);
  for (int i = 0; i < s.depth; i++) {
    add_attention_params(s, i, add);
    add_mlp_params(s, i, add);
  }
  add_value_embed_params(s, add);
  add_head_params(s, add);
  add("resid_lambdas", {s.depth}, ParamGroup::kScalar);
  add("x0_lambdas", {s.depth}, ParamGroup::kScalar);
  if (s.arch.smear) {
    add("smear_gate", {1, kSmearChannels}, ParamGroup::kScalar);  // nanochat's Linear(24, 1), in its AdamW group
    add("smear_lambda", {1}, ParamGroup::kScalar);
  }
  if (s.arch.backout) add("backout_lambda", {1}, ParamGroup::kScalar);
  int64_t off = 0;
  for (auto& p : table) {
    p.offset = off;
    off += p.numel();
  }
  return table;
}

// On all threads: one thread's fill took 26 ms of a depth-8 bf16 step, two 13.
void Gpt::zero_grad() { zero_floats(g_.data(), g_.size()); }

Gpt::Gpt(const ModelShape& s) : s_(s), table_(param_table(s)) {
  const int64_t n = table_.back().offset + table_.back().numel();
  w_.assign(n, 0.f);
  g_.assign(n, 0.f);
  rope_tables_for(s, &cos_, &sin_);
}

const ParamInfo& Gpt::param(const std::string& name) const {
  for (const auto& p : table_)
    if (p.name == name) return p;
  FRONTIER_CHECK(false && "unknown parameter");
  return table_[0];
}

// nanochat: wte ~ N(0, 0.8) (tied to the head: N(0, 1/sqrt(C)), so the first logits are O(1), not O(sqrt(C)));
// lm_head ~ N(0, 0.001); q, k, v, value embeddings ~ U(-s, s) with s = sqrt(3/C)
// (std 1/sqrt(C)); c_fc ~ U(-0.4 s, 0.4 s); output projections and ve_gate zero; lambdas on a schedule over depth
// (nanochat): resid_lambdas[i] = 1.15 - 0.10 i/(L-1) (stronger residual early), x0_lambdas[i] = 0.20 - 0.15 i/(L-1)
// (more input-embedding blending early). Variants: smear_gate ~ U(0, 0.02), smear_lambda 0, backout_lambda 0.2
// (nanochat 92d63d4); ve_gate ~ U(0, model.ve_gate_init); n-gram tables zero (the model starts as without them);
// a router ~ U(-s, s) (a zero router ties every expert); experts as the dense MLP (c_fc 0.4 s, c_proj zero).
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
    if (nm == "wte") fill_normal(s_.arch.tie_embeddings ? 1.0 / std::sqrt(double(s_.dim)) : 0.8);
    else if (nm == "lm_head" && s_.arch.tie_embeddings)  // model.untie_at: wte's copy, and no draws, so every other
      std::copy_n(w_.data() + param("wte").offset, n, w);  // parameter starts as in the tied model
    else if (nm == "lm_head") fill_normal(0.001);
    else if (nm == "resid_lambdas" || nm == "x0_lambdas") {
      const double denom = std::max(s_.depth - 1, 1);
      for (int64_t i = 0; i < n; i++)
        w[i] = static_cast<float>(nm == "resid_lambdas" ? 1.15 - 0.10 * i / denom : 0.20 - 0.15 * i / denom);
    }
    else if (ends("c_q") || ends("c_k") || ends("c_v") || nm.rfind("value_embeds.", 0) == 0 || ends("router"))
      fill_uniform(s);
    else if (ends("c_fc")) fill_uniform(0.4 * s);  // mlp.c_fc, mlp.experts.{e}.c_fc
    else if (nm == "smear_gate") for (int64_t i = 0; i < n; i++) w[i] = static_cast<float>(0.02 * rng.uniform());
    else if (nm == "backout_lambda") w[0] = 0.2f;
    else if (ends("ve_gate") && s_.arch.ve_gate_init > 0)
      for (int64_t i = 0; i < n; i++) w[i] = static_cast<float>(s_.arch.ve_gate_init * rng.uniform());
    else std::fill(w, w + n, 0.f);  // attn.c_proj, mlp.c_proj, ve_gate, smear_lambda, n-gram tables
  }
}

double Gpt::flops_per_token() const {
  double n = 0;
  const double active = s_.arch.moe_experts ? double(s_.arch.moe_top_k) / s_.arch.moe_experts : 1.0;
  for (const auto& p : table_)
    if ((p.group == ParamGroup::kMatrix || p.group == ParamGroup::kLmHead) &&
        (p.name != "wte" || s_.arch.untie_at == 0))
      n += p.name.find(".experts.") != std::string::npos ? active * p.numel() : p.numel();
  // (a tied wte is in the lm_head group: its GEMM is counted once, as the head's; with model.untie_at, as lm_head's)
  double attn = 0;  // nanochat: 12 H D x the keys a query sees, min(window, T) per layer
  for (int i = 0; i < s_.depth; i++) {
    const int w = s_.window(i);
    attn += 12.0 * s_.n_head * s_.head_dim * (w > 0 ? std::min(w, s_.seq_len) : s_.seq_len);
  }
  return 6.0 * n + attn;
}

double Gpt::hardware_flops_per_token() const {
  double counted = 0, executed = 0;
  const double T = s_.seq_len;
  for (int i = 0; i < s_.depth; i++) {
    const int w = s_.window(i);
    counted += 12.0 * s_.n_head * s_.head_dim * (w > 0 ? std::min(w, s_.seq_len) : s_.seq_len);
    // visible pairs as causal_attention counts them (autograd/ops.cpp)
    const double W = w > 0 && w < T ? w : T, pairs = W * (W + 1) / 2 + (T - W) * (W + 1);
    executed += 7 * 2.0 * s_.n_head * s_.head_dim * pairs / T;
  }
  return flops_per_token() - counted + executed;
}

int64_t Gpt::n_active_params() const {
  int64_t n = 0;
  for (const auto& p : table_)
    n += p.name.find(".experts.") != std::string::npos
             ? p.numel() * s_.arch.moe_top_k / std::max(1, s_.arch.moe_experts)
             : p.numel();
  return n;
}

Var Gpt::forward(Tape& t, const int32_t* idx, const int32_t* targets, int B, int T, Var* logits_out,
                 float* row_losses) {
  FRONTIER_CHECK(T <= s_.seq_len);
  const ParamFn P = [&](const std::string& name) {
    const ParamInfo& p = param(name);
    return t.param(w_.data() + p.offset, g_.data() + p.offset, p.shape);
  };
  const ParamViewFn PV = [&](const std::string& first, std::vector<int64_t> shape) {
    const ParamInfo& p = param(first);
    return t.param(w_.data() + p.offset, g_.data() + p.offset, std::move(shape));
  };
  // The training schedules' step (set_schedule) runs on a copy of the shape that says it: S layers' window, and
  // the tied head (untie_at 0) before the untie.
  ModelShape scheduled;
  if (sched_.short_window > 0 || sched_.head_from_wte) {
    scheduled = s_;
    if (sched_.short_window > 0) scheduled.arch.short_window = sched_.short_window;
    if (sched_.head_from_wte) scheduled.arch.untie_at = 0;
  }
  const ModelShape& s = sched_.short_window > 0 || sched_.head_from_wte ? scheduled : s_;
  const BlockCtx c{t, s, P, PV, idx, B, T, loss_seed_};
  Var resid = P("resid_lambdas"), x0l = P("x0_lambdas");
  Var x = embed_tokens(c);  // (N, C)
  Var x0 = x, x_mid = x;
  for (int i = 0; i < s_.depth; i++) {
    x = scale_add(t, x, resid, i, x0, x0l, i);  // resid_lambdas[i] * x + x0_lambdas[i] * x0
    x = add(t, x, attention(c, i, rmsnorm(t, x, kNormEps), cos_.data(), sin_.data()));
    MoeStats st;
    x = add(t, x, mlp(c, i, rmsnorm(t, x, kNormEps), s_.is_moe(i) ? &st : nullptr));
    if (s_.is_moe(i) && !logits_out && !row_losses) {  // training forwards only (not the evaluations)
      auto& m = moe_totals_;
      m.tokens_per_expert.resize(st.tokens_per_expert.size());
      for (size_t e = 0; e < st.tokens_per_expert.size(); e++) m.tokens_per_expert[e] += st.tokens_per_expert[e];
      m.dropped += st.dropped;
      m.aux_loss += st.aux_loss;
      m.calls++;
    }
    if (i == s_.depth / 2) x_mid = x;  // nanochat's backout layer
  }
  if (s_.arch.backout) x = axpy(t, x, x_mid, P("backout_lambda"), 0, -1.f);  // x - backout_lambda * x_mid
  // Multi-token prediction in training only: evaluations (row losses or logits asked for) score the next token.
  static const std::vector<float> kNone;
  const bool training = !logits_out && !row_losses && s_.arch.mtp_heads > 0;
  return head_loss(c, rmsnorm(t, x, kNormEps), targets, training ? mtp_weights_ : kNone, logits_out, row_losses,
                   &mtp_targets_);
}

}  // namespace frontier
