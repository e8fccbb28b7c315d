#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kernels/gemm.h"
#include "reference/relu2.h"
#include "reference/rmsnorm.h"
#include "reference/rope.h"
#include "util/status.h"

namespace frontier {

namespace {

constexpr float kEps = std::numeric_limits<float>::epsilon();

void rmsnorm_row(float* out, const float* x, int64_t C) {
  float rstd;
  ref::rmsnorm_forward(out, &rstd, x, 1, C, kEps);
}

// out (N) = x (K) @ W^T, W (N, K)
void gemv(float* out, const float* x, const float* W, int64_t N, int64_t K) {
  sgemm(false, true, 1, N, K, 1.f, x, K, W, K, 0.f, out, N);
}

}  // namespace

Sampler::Sampler(const Gpt& gpt) : gpt_(gpt) {
  const auto& s = gpt.shape();
  kcache_.assign(static_cast<size_t>(s.depth) * s.seq_len * s.n_kv_head * s.head_dim, 0.f);
  vcache_.assign(kcache_.size(), 0.f);
  const ModelArch& a = s.arch;
  cached_ = !a.smear && !a.backout && a.ngram_orders.empty() && !a.key_offset && a.mlp == MlpKind::kRelu2 &&
            a.moe_experts == 0;
}

const float* Sampler::w(const std::string& name) const {
  return const_cast<Gpt&>(gpt_).weights().data() + gpt_.param(name).offset;
}

void Sampler::push(uint32_t token, std::vector<float>* logits) {
  const auto& s = gpt_.shape();
  FRONTIER_CHECK(pos_ < s.seq_len && static_cast<int>(token) < s.vocab_size);
  const int64_t C = s.dim, D = s.head_dim, H = s.n_head, Hkv = s.n_kv_head, V = s.vocab_size, L = s.depth;
  const int64_t t = pos_, g = H / Hkv;
  if (!cached_) {  // the whole prefix through the training forward; the last row's logits
    history_.push_back(static_cast<int32_t>(token));
    const int n = static_cast<int>(history_.size());
    std::vector<int32_t> y(n, -1);
    std::vector<float> rows(n);
    Tape tape;
    Var z;
    const_cast<Gpt&>(gpt_).forward(tape, history_.data(), y.data(), 1, n, &z, rows.data());
    const float* last = tape.value(z) + int64_t(n - 1) * V;
    logits->assign(last, last + V);
    const float cap = static_cast<float>(s.arch.softcap);
    if (cap > 0)
      for (auto& v : *logits) v = cap * std::tanh(v / cap);
    pos_++;
    return;
  }
  const int64_t M = s.mlp_dim;
  std::vector<float> x(C), x0(C), h(C), q(H * D), k(Hkv * D), v(Hkv * D), y(H * D), tmp(std::max(C, H * D)),
      fc(M), att(t + 1), gate(Hkv);
  rmsnorm_row(x.data(), w("wte") + token * C, C);
  x0 = x;
  const float *rl = w("resid_lambdas"), *xl = w("x0_lambdas");
  for (int64_t i = 0; i < L; i++) {
    const std::string p = "h." + std::to_string(i) + ".";
    for (int64_t c = 0; c < C; c++) x[c] = rl[i] * x[c] + xl[i] * x0[c];
    rmsnorm_row(h.data(), x.data(), C);
    gemv(q.data(), h.data(), w(p + "attn.c_q"), H * D, C);
    gemv(k.data(), h.data(), w(p + "attn.c_k"), Hkv * D, C);
    gemv(v.data(), h.data(), w(p + "attn.c_v"), Hkv * D, C);
    if (s.has_ve(static_cast<int>(i))) {
      gemv(gate.data(), h.data(), w(p + "attn.ve_gate"), Hkv, s.arch.ve_gate_channels);
      const float* ve = w("value_embeds." + std::to_string(i)) + token * Hkv * D;
      for (int64_t hk = 0; hk < Hkv; hk++) {
        float gt = static_cast<float>(s.arch.ve_gate_scale) / (1.f + std::exp(-gate[hk]));
        for (int64_t d = 0; d < D; d++) v[hk * D + d] += gt * ve[hk * D + d];
      }
    }
    // rope at position t, then QK-norm per head
    const float *ct = gpt_.rope_cos().data() + t * D / 2, *st = gpt_.rope_sin().data() + t * D / 2;
    ref::rope_forward(tmp.data(), q.data(), ct, st, 1, 1, H, D);
    for (int64_t hh = 0; hh < H; hh++) rmsnorm_row(q.data() + hh * D, tmp.data() + hh * D, D);
    ref::rope_forward(tmp.data(), k.data(), ct, st, 1, 1, Hkv, D);
    float* kc = kcache_.data() + (i * s.seq_len) * Hkv * D;
    float* vc = vcache_.data() + (i * s.seq_len) * Hkv * D;
    for (int64_t hk = 0; hk < Hkv; hk++) rmsnorm_row(kc + (t * Hkv + hk) * D, tmp.data() + hk * D, D);
    std::copy(v.begin(), v.end(), vc + t * Hkv * D);
    // attention of the new query over cached positions max(0, t - window)..t
    const float scale = s.arch.qk_scale == 1.0 ? 1.f / std::sqrt(static_cast<float>(D))
                                               : static_cast<float>(s.arch.qk_scale * s.arch.qk_scale /
                                                                    std::sqrt(static_cast<double>(D)));
    const int64_t win = s.window(static_cast<int>(i)), u0 = win > 0 ? std::max<int64_t>(0, t - win) : 0;
    for (int64_t hh = 0; hh < H; hh++) {
      const int64_t hk = hh / g;
      float mx = -INFINITY;
      for (int64_t u = u0; u <= t; u++) {
        float dot = 0;
        for (int64_t d = 0; d < D; d++) dot += q[hh * D + d] * kc[(u * Hkv + hk) * D + d];
        att[u] = dot * scale;
        mx = std::max(mx, att[u]);
      }
      float sum = 0;
      for (int64_t u = u0; u <= t; u++) sum += (att[u] = std::exp(att[u] - mx));
      for (int64_t d = 0; d < D; d++) y[hh * D + d] = 0;
      for (int64_t u = u0; u <= t; u++) {
        const float a = att[u] / sum;
        for (int64_t d = 0; d < D; d++) y[hh * D + d] += a * vc[(u * Hkv + hk) * D + d];
      }
    }
    gemv(tmp.data(), y.data(), w(p + "attn.c_proj"), C, H * D);
    for (int64_t c = 0; c < C; c++) x[c] += tmp[c];
    rmsnorm_row(h.data(), x.data(), C);
    gemv(fc.data(), h.data(), w(p + "mlp.c_fc"), M, C);
    ref::relu2_forward(fc.data(), fc.data(), M);
    gemv(tmp.data(), fc.data(), w(p + "mlp.c_proj"), C, M);
    for (int64_t c = 0; c < C; c++) x[c] += tmp[c];
  }
  rmsnorm_row(h.data(), x.data(), C);
  logits->resize(V);
  gemv(logits->data(), h.data(), w(s.head_param()), V, C);
  const float cap = static_cast<float>(s.arch.softcap);
  if (cap > 0)
    for (auto& z : *logits) z = cap * std::tanh(z / cap);
  pos_++;
}

uint32_t Sampler::sample(const std::vector<float>& logits, float temperature, int top_k, Rng* rng) {
  FRONTIER_CHECK(std::isfinite(temperature) && temperature >= 0.f && top_k >= 0);  // the CLI validates user input
  const int64_t V = static_cast<int64_t>(logits.size());
  if (temperature <= 0.f) return static_cast<uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  std::vector<int32_t> ids(V);
  std::iota(ids.begin(), ids.end(), 0);
  int64_t k = (top_k > 0 && top_k < V) ? top_k : V;
  // Largest first, ties by lower id: a total order, so the kept set and its order are deterministic.
  auto by_logit = [&](int32_t a, int32_t b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; };
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), by_logit);
  std::vector<double> p(k);
  double sum = 0;
  for (int64_t i = 0; i < k; i++) sum += (p[i] = std::exp((logits[ids[i]] - logits[ids[0]]) / temperature));
  double r = rng->uniform() * sum;
  for (int64_t i = 0; i < k; i++) {
    r -= p[i];
    if (r < 0) return static_cast<uint32_t>(ids[i]);
  }
  return static_cast<uint32_t>(ids[k - 1]);
}

}  // namespace frontier
