#include "advise/loss_model.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace frontier {

double non_embedding_params(int depth, int dim) { return 12.0 * depth * static_cast<double>(dim) * dim; }

double LossModel::predict(double n, double d, int recipe) const {
  return e[static_cast<size_t>(recipe)] + a * std::pow(n, -alpha) + b * std::pow(d, -beta);
}

std::string LossModel::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "L = E_r + %.4g / N^%.2f + %.4g / D^%.2f", a, alpha, b, beta);
  std::string s = buf;
  for (size_t r = 0; r < e.size(); r++) {
    std::snprintf(buf, sizeof(buf), "%sE_%zu = %.4f", r == 0 ? " with " : ", ", r, e[r]);
    s += buf;
  }
  return s;
}

namespace {

// Solves the k x k system M x = v (row-major, destroyed) by Gaussian elimination with partial pivoting; false when
// it is singular (a recipe without points, or columns that do not vary).
bool solve(std::vector<double>& m, std::vector<double>& v, int k, std::vector<double>* x) {
  for (int c = 0; c < k; c++) {
    int p = c;
    for (int r = c + 1; r < k; r++)
      if (std::fabs(m[r * k + c]) > std::fabs(m[p * k + c])) p = r;
    if (std::fabs(m[p * k + c]) < 1e-300) return false;
    if (p != c) {
      for (int j = 0; j < k; j++) std::swap(m[c * k + j], m[p * k + j]);
      std::swap(v[c], v[p]);
    }
    for (int r = c + 1; r < k; r++) {
      double f = m[r * k + c] / m[c * k + c];
      for (int j = c; j < k; j++) m[r * k + j] -= f * m[c * k + j];
      v[r] -= f * v[c];
    }
  }
  x->assign(k, 0.0);
  for (int c = k - 1; c >= 0; c--) {
    double s = v[c];
    for (int j = c + 1; j < k; j++) s -= m[c * k + j] * (*x)[j];
    (*x)[c] = s / m[c * k + c];
  }
  return true;
}

// Least squares for fixed exponents over the points with skip != index, with A >= 0 and B >= 0 (a loss that grew
// with size or data is not a model of training): the unconstrained solution if it is allowed, else the best of the
// solutions with A, B or both held at 0 (the active sets of this two-variable NNLS). Returns the squared error.
double fit_fixed(const std::vector<LossPoint>& pts, int R, double alpha, double beta, size_t skip, LossModel* out) {
  double best = std::numeric_limits<double>::infinity();
  for (int fixed = 0; fixed < 4; fixed++) {  // bit 0: A = 0, bit 1: B = 0
    const bool use_a = !(fixed & 1), use_b = !(fixed & 2);
    const int k = R + use_a + use_b;
    std::vector<double> m(k * k, 0.0), v(k, 0.0), row(k);
    for (size_t i = 0; i < pts.size(); i++) {
      if (i == skip) continue;
      std::fill(row.begin(), row.end(), 0.0);
      row[pts[i].recipe] = 1;
      int c = R;
      if (use_a) row[c++] = std::pow(pts[i].n, -alpha);
      if (use_b) row[c++] = std::pow(pts[i].d, -beta);
      for (int a = 0; a < k; a++) {
        v[a] += row[a] * pts[i].bpb;
        for (int b = 0; b < k; b++) m[a * k + b] += row[a] * row[b];
      }
    }
    std::vector<double> x;
    if (!solve(m, v, k, &x)) continue;
    LossModel t;
    t.e.assign(x.begin(), x.begin() + R);
    int c = R;
    t.a = use_a ? x[c++] : 0.0;
    t.b = use_b ? x[c++] : 0.0;
    if (t.a < 0 || t.b < 0) continue;
    t.alpha = alpha;
    t.beta = beta;
    double sse = 0;
    for (size_t i = 0; i < pts.size(); i++) {
      if (i == skip) continue;
      double r = t.predict(pts[i].n, pts[i].d, pts[i].recipe) - pts[i].bpb;
      sse += r * r;
    }
    if (sse < best) {
      best = sse;
      *out = t;
    }
    if (fixed == 0) break;  // the unconstrained solution is allowed: it is the least squares
  }
  return best;
}

bool fit_grid(const std::vector<LossPoint>& pts, int R, size_t skip, LossModel* out) {
  double best = std::numeric_limits<double>::infinity();
  LossModel m;
  for (int ia = 1; ia <= 75; ia++) {
    for (int ib = 1; ib <= 75; ib++) {
      double sse = fit_fixed(pts, R, 0.02 * ia, 0.02 * ib, skip, &m);
      if (sse < best) {
        best = sse;
        *out = m;
      }
    }
  }
  return std::isfinite(best);
}

}  // namespace

Status fit_loss_model(const std::vector<LossPoint>& pts, int R, LossModel* out) {
  if (R < 1) return Status::error("loss model: no recipe");
  std::vector<int> per(R, 0);
  for (const auto& p : pts) {
    if (p.recipe < 0 || p.recipe >= R) return Status::error("loss model: a point names recipe " +
                                                            std::to_string(p.recipe) + " of " + std::to_string(R));
    if (!(p.n > 0 && p.d > 0 && p.bpb > 0 && std::isfinite(p.n) && std::isfinite(p.d) && std::isfinite(p.bpb)))
      return Status::error("loss model: a point with a non-positive or non-finite N, D or val_bpb");
    per[p.recipe]++;
  }
  for (int r = 0; r < R; r++)
    if (per[r] == 0) return Status::error("loss model: recipe " + std::to_string(r) + " has no measured point");
  const size_t need = static_cast<size_t>(R) + 4;
  if (pts.size() < need)
    return Status::error("loss model: " + std::to_string(pts.size()) + " measured points for " +
                         std::to_string(need) + " unknowns; the sweep needs " + std::to_string(need - pts.size()) +
                         " more");
  LossModel m;
  if (!fit_grid(pts, R, pts.size(), &m))
    return Status::error("loss model: no fit (the points leave the system singular: more distinct sizes and token "
                         "counts are needed)");
  m.rmse = 0;
  for (const auto& p : pts) m.rmse += std::pow(m.predict(p.n, p.d, p.recipe) - p.bpb, 2);
  m.rmse = std::sqrt(m.rmse / pts.size());
  double loo = 0;
  for (size_t i = 0; i < pts.size(); i++) {
    if (per[pts[i].recipe] < 2) continue;  // its E_r would be unknown without it
    LossModel mi;
    if (!fit_grid(pts, R, i, &mi)) continue;
    double err = std::fabs(mi.predict(pts[i].n, pts[i].d, pts[i].recipe) - pts[i].bpb);
    loo += err * err;
    m.loo_max = std::max(m.loo_max, err);
    m.loo_points++;
  }
  m.loo_rmse = m.loo_points > 0 ? std::sqrt(loo / m.loo_points) : 0;
  *out = m;
  return ok_status();
}

}  // namespace frontier
