#include "optim/optim.h"

#include <algorithm>
#include <cmath>

#include "kernels/gemm.h"
#include "util/trace.h"

namespace frontier {

namespace {

// nanochat's Polar Express coefficients (a, b, c) per iteration.
constexpr double kPolar[5][3] = {
    {8.156554524902461, -22.48329292557795, 15.878769915207462},
    {4.042929935166739, -2.808917465908714, 0.5000178451051316},
    {3.8916678022926607, -2.772484153217685, 0.5060648178503393},
    {3.285753657755655, -2.3681294933425376, 0.46449024233003106},
    {2.3465413258596377, -1.7097828382687081, 0.42323551169305323},
};

// Sum of squares in double over fixed chunks summed in order (thread-count independent). Within a chunk, eight
// running sums (lane k takes elements k, k + 8, ...; added in a fixed order at the end) so that the compiler
// vectorises it: one sum in order is a chain of dependent double adds, 6% of a 512 x 2048 Polar Express.
double sum_squares(const float* x, int64_t n) {
  const int64_t grain = 1 << 14, chunks = (n + grain - 1) / grain;
  std::vector<double> part(chunks);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; c++) {
    const int64_t lo = c * grain, hi = std::min(n, (c + 1) * grain);
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t k = lo;
    for (; k + 8 <= hi; k += 8)
      for (int l = 0; l < 8; l++) lane[l] += static_cast<double>(x[k + l]) * x[k + l];
    double acc = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    for (; k < hi; k++) acc += static_cast<double>(x[k]) * x[k];
    part[c] = acc;
  }
  double acc = 0;
  for (double p : part) acc += p;
  return acc;
}

// polar_share: the share of steps that orthogonalise (1 / muon_every on average, 0 or 1 for one step).
double muon_matrix_flops(const ParamInfo& p, int ns_steps, double polar_share) {
  const double r = std::min(p.shape[0], p.shape[1]), c = std::max(p.shape[0], p.shape[1]), n = r * c;
  return 12.0 * n + polar_share * ns_steps * (3.0 * r * r * c + r * r * r);
}

}  // namespace

// Wide X (rows <= cols): A = X X^T (r, r); B = b A + c A A; X = a X + B X = (B + a I) X. Tall X: A = X^T X,
// X = X (B + a I) (nanochat's tall branch), with the transposes read by the GEMM's packing, never materialised.
// A and A A are symmetric, so they are computed as lower triangles and mirrored (kernels/gemm.h sgemm_symmetric):
// about r r c + r^3 + 2 r r c = 3 r r c + r^3 FLOPs per iteration instead of 4 r r c + 2 r^3.
void polar_express(float* X, int64_t rows, int64_t cols, int ns_steps, Precision prec) {
  const bool tall = rows > cols;
  const int64_t r = tall ? cols : rows, c = tall ? rows : cols, n = rows * cols;
  ProfScope ps("muon.polar_express", "optim", ns_steps * (3.0 * r * r * c + 1.0 * r * r * r),
               4.0 * ns_steps * (2.0 * r * c + 3.0 * r * r), {r, c, r});
  static thread_local std::vector<float> Y, Yn, A, Bm;
  Y.resize(n), Yn.resize(n), A.resize(r * r), Bm.resize(r * r);
  const float scale = static_cast<float>(1.0 / (std::sqrt(sum_squares(X, n)) * 1.02 + 1e-6));
  float* y = Y.data();  // (thread_local: the OpenMP workers must not name Y)
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; i++) y[i] = X[i] * scale;
  if (ns_steps == 0) std::copy(Y.begin(), Y.begin() + n, X);
  for (int it = 0; it < ns_steps; it++) {
    float* out = it + 1 == ns_steps ? X : Yn.data();  // the last product writes the result in place
    const float a = static_cast<float>(kPolar[it][0]), b = static_cast<float>(kPolar[it][1]),
                cc = static_cast<float>(kPolar[it][2]);
    if (tall) {
      gemm_symmetric(prec, true, false, r, c, 1.f, Y.data(), r, Y.data(), r, 0.f, A.data(), r);  // A = Y^T Y
    } else {
      gemm_symmetric(prec, false, true, r, c, 1.f, Y.data(), c, Y.data(), c, 0.f, A.data(), r);  // A = Y Y^T
    }
    Bm = A;
    gemm_symmetric(prec, false, false, r, r, cc, A.data(), r, A.data(), r, b, Bm.data(), r);  // B = b A + c A A
    for (int64_t i = 0; i < r; i++) Bm[i * r + i] += a;
    if (tall) {
      gemm(prec, false, false, rows, r, r, 1.f, Y.data(), r, Bm.data(), r, 0.f, out, r);  // Y (B + a I)
    } else {
      gemm(prec, false, false, r, cols, r, 1.f, Bm.data(), r, Y.data(), cols, 0.f, out, cols);  // (B + a I) Y
    }
    std::swap(Y, Yn);
  }
}

// Sums run in double, row by row in a fixed order (each matrix is on one thread: see Optimizer::step).
void muon_equilibrate_rows(float* X, int64_t rows, int64_t cols) {
  std::vector<double> norm(rows);
  double total = 0;
  for (int64_t i = 0; i < rows; i++) {
    double acc = 0;
    for (int64_t j = 0; j < cols; j++) acc += static_cast<double>(X[i * cols + j]) * X[i * cols + j];
    norm[i] = std::sqrt(acc);
    total += acc;
  }
  const double target = std::sqrt(total) / std::sqrt(static_cast<double>(rows));
  for (int64_t i = 0; i < rows; i++) {
    const float f = static_cast<float>(target / std::max(norm[i], 1e-6));
    for (int64_t j = 0; j < cols; j++) X[i * cols + j] *= f;
  }
}

void muon_renormalize(float* X, int64_t rows, int64_t cols) {
  const double target = std::sqrt(static_cast<double>(std::min(rows, cols)));
  const float f = static_cast<float>(target / std::max(std::sqrt(sum_squares(X, rows * cols)), 1e-6));
  for (int64_t i = 0; i < rows * cols; i++) X[i] *= f;
}

// v has one entry per row (rows >= cols: the mean is over each row) or per column (wide: over each column).
void normuon_scale(float* X, int64_t rows, int64_t cols, float* v, float beta2) {
  const bool per_row = rows >= cols;
  const int64_t m = per_row ? rows : cols, red = per_row ? cols : rows;
  std::vector<double> mean(m, 0.0);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) mean[per_row ? i : j] += static_cast<double>(X[i * cols + j]) * X[i * cols + j];
  double norm_sq = 0, scaled_sq = 0;
  std::vector<double> step(m);
  for (int64_t k = 0; k < m; k++) {
    mean[k] /= static_cast<double>(red);
    norm_sq += mean[k] * red;
    v[k] += (1.f - beta2) * (static_cast<float>(mean[k]) - v[k]);  // lerp(v, mean, 1 - beta2)
    step[k] = 1.0 / std::sqrt(std::max(static_cast<double>(v[k]), 1e-10));
    scaled_sq += mean[k] * red * step[k] * step[k];
  }
  const double back = std::sqrt(norm_sq) / std::max(std::sqrt(scaled_sq), 1e-10);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) X[i * cols + j] *= static_cast<float>(step[per_row ? i : j] * back);
}

Optimizer::Optimizer(Gpt& gpt, const OptimConfig& cfg) : gpt_(gpt), cfg_(cfg) {
  nv_offset_.assign(gpt.params().size(), -1);
  if (cfg_.normuon_beta2 > 0)
    for (size_t i = 0; i < gpt.params().size(); i++) {
      const ParamInfo& p = gpt.params()[i];
      if (p.group != ParamGroup::kMatrix) continue;
      nv_offset_[i] = nv_size_;
      nv_size_ += std::max(p.shape[0], p.shape[1]);  // rows >= cols: per row, else per column
    }
  set_owned_range(0, static_cast<int64_t>(gpt.weights().size()));
}

void Optimizer::set_owned_range(int64_t lo, int64_t hi) {
  lo_ = lo;
  hi_ = hi;
  state_.assign(sections() * (hi - lo) + nv_size_, 0.f);
}

void Optimizer::keep_owned_normuon() {
  for (size_t i = 0; i < gpt_.params().size(); i++) {
    const ParamInfo& p = gpt_.params()[i];
    if (nv_offset_[i] < 0 || (p.offset >= lo_ && p.offset < hi_)) continue;
    std::fill_n(normuon_state() + nv_offset_[i], std::max(p.shape[0], p.shape[1]), 0.f);
  }
}

AdamGroupInfo Optimizer::adam_settings(const ParamInfo& p) const {
  float scale = std::pow(gpt_.shape().dim / 768.f, -0.5f);
  switch (p.group) {
    case ParamGroup::kLmHead: return {cfg_.unembedding_lr * scale, cfg_.adam_beta1, cfg_.adam_beta2, cfg_.adam_eps, 0};
    case ParamGroup::kEmbedding:
    case ParamGroup::kValueEmbed:
      return {cfg_.embedding_lr * scale, cfg_.adam_beta1, cfg_.adam_beta2, cfg_.adam_eps, 0};
    case ParamGroup::kScalar:
      if (p.name == "x0_lambdas") return {cfg_.scalar_lr, 0.96f, 0.95f, cfg_.adam_eps, 0};
      // nanochat 92d63d4's smear / backout group: AdamW lr 0.2, betas (0.8, 0.95), no decay.
      if (p.name.rfind("smear_", 0) == 0 || p.name == "backout_lambda") return {0.2f, 0.8f, 0.95f, cfg_.adam_eps, 0};
      return {cfg_.scalar_lr * 0.01f, cfg_.adam_beta1, cfg_.adam_beta2, cfg_.adam_eps, 0};
    default: return {0, 0, 0, 0, 0};
  }
}

float Optimizer::muon_lr(const ParamInfo& p) const {
  float ratio = static_cast<float>(p.shape[0]) / static_cast<float>(p.shape[1]);
  return cfg_.matrix_lr * std::sqrt(std::max(1.f, ratio));
}

void Optimizer::adam_update(const ParamInfo& p, const AdamGroupInfo& g, float lr_mult) {
  const int64_t n = p.numel(), N = hi_ - lo_;
  float* w = gpt_.weights().data() + p.offset;
  const float* gr = gpt_.grads().data() + p.offset;
  float* m = state_.data() + (p.offset - lo_);
  float* v = state_.data() + N + (p.offset - lo_);
  const float lr = g.lr * lr_mult;
  const double bc1 = 1.0 - std::pow(static_cast<double>(g.beta1), static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(static_cast<double>(g.beta2), static_cast<double>(t_));
  const float step_size = static_cast<float>(lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  ProfScope ps("adamw", "optim", 12.0 * n, 4.0 * 7 * n);  // w, m, v read and written, g read
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; i++) {
    w[i] *= 1.f - lr * g.wd;
    m[i] = g.beta1 * m[i] + (1.f - g.beta1) * gr[i];
    v[i] = g.beta2 * v[i] + (1.f - g.beta2) * gr[i] * gr[i];
    w[i] -= step_size * m[i] / (std::sqrt(v[i]) / bc2_sqrt + g.eps);
  }
}

void Optimizer::muon_update(const ParamInfo& p, float* nv, float lr, float momentum, float wd) {
  const int64_t n = p.numel(), N = hi_ - lo_;
  float* w = gpt_.weights().data() + p.offset;
  const float* gr = gpt_.grads().data() + p.offset;
  float* buf = state_.data() + 2 * N + (p.offset - lo_);
  static thread_local std::vector<float> u;  // every element written below; reused, not zeroed, per matrix
  u.resize(std::max<size_t>(u.size(), static_cast<size_t>(n)));
  // With muon_every > 1 the update is computed into its state section and kept for the steps between.
  float* uu = cfg_.muon_every > 1 ? state_.data() + 3 * N + (p.offset - lo_) : u.data();
  const bool fresh = orthogonalise_now();
  {
    ProfScope ps("muon.momentum", "optim", 6.0 * n, 4.0 * 4 * n);  // g read, buf read and written, u written
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i++) {
      buf[i] += (1.f - momentum) * (gr[i] - buf[i]);  // lerp(buf, g, 1 - mu)
      if (fresh) uu[i] = gr[i] + momentum * (buf[i] - gr[i]);  // lerp(g, buf, mu): Nesterov
    }
  }
  if (fresh) {
    if (cfg_.equilibrate) muon_equilibrate_rows(uu, p.shape[0], p.shape[1]);
    polar_express(uu, p.shape[0], p.shape[1], cfg_.ns_steps, cfg_.ns_precision);
    if (cfg_.renormalize) muon_renormalize(uu, p.shape[0], p.shape[1]);
    if (nv) normuon_scale(uu, p.shape[0], p.shape[1], nv, cfg_.normuon_beta2);
  }
  ProfScope ps("muon.update", "optim", 6.0 * n, 4.0 * 3 * n);  // u read, w read and written
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; i++) {
    float mask = (uu[i] * w[i]) >= 0.f ? 1.f : 0.f;
    w[i] -= lr * uu[i] + lr * wd * w[i] * mask;
  }
}

double Optimizer::muon_flops() const {
  double flops = 0;
  for (const ParamInfo& p : gpt_.params())
    if (p.group == ParamGroup::kMatrix && p.offset >= lo_ && p.offset < hi_)
      flops += muon_matrix_flops(p, cfg_.ns_steps, 1.0 / cfg_.muon_every);
  return flops;
}

// Muon's matrices are independent: they are split over the threads, largest first, each one's Polar Express on one
// thread (its GEMMs then run single-threaded: no fork/join per product, and the 512 x 512 products that ran at
// 40-50% of the bf16 peak over two threads keep one core busy). Every matrix is still computed in one fixed order,
// so results do not depend on the thread count. AdamW's elementwise updates stay parallel inside.
void Optimizer::step(float lr_mult, float muon_momentum, float progress, float wd_mult) {
  t_++;
  float wd = cfg_.weight_decay * (wd_mult >= 0 ? wd_mult : 1.f - progress);
  std::vector<const ParamInfo*> matrices;
  std::vector<float*> nv;  // each matrix's NorMuon moments (nullptr: off)
  double flops = 0, bytes = 0;
  float* nv_base = normuon_state();
  for (size_t i = 0; i < gpt_.params().size(); i++) {
    const ParamInfo& p = gpt_.params()[i];
    if (p.offset < lo_ || p.offset >= hi_) continue;  // another rank's (sharded optimizer)
    if (p.group == ParamGroup::kMatrix) {
      matrices.push_back(&p);
      nv.push_back(nv_offset_[i] >= 0 ? nv_base + nv_offset_[i] : nullptr);
      const double r = std::min(p.shape[0], p.shape[1]), c = std::max(p.shape[0], p.shape[1]), n = r * c;
      const double share = orthogonalise_now() ? 1.0 : 0.0;
      flops += muon_matrix_flops(p, cfg_.ns_steps, share);
      bytes += 4.0 * (7.0 * n + share * cfg_.ns_steps * (2.0 * n + 3.0 * r * r));
    } else {
      adam_update(p, adam_settings(p), lr_mult);
    }
  }
  std::vector<size_t> order(matrices.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return matrices[a]->numel() > matrices[b]->numel(); });
  ProfScope ps("muon (matrices over threads)", "optim", flops, bytes);
  ProfPause pause;  // the per-matrix scopes run on several threads; this one times them all
#pragma omp parallel for schedule(dynamic, 1) if (matrices.size() > 1)
  for (size_t k = 0; k < order.size(); k++) {
    const size_t i = order[k];
    muon_update(*matrices[i], nv[i], muon_lr(*matrices[i]) * lr_mult, muon_momentum, wd);
  }
}

}  // namespace frontier
