// The advisor's loss model: val_bpb as a function of model size and training tokens, in the Chinchilla form
// (Hoffmann et al. 2022) with one irreducible term per recipe (sequence length and batch):
//
//   L(N, D, r) = E_r + A / N^alpha + B / D^beta
//
// N = non-embedding parameters (12 L C^2: attention 4 C^2 and MLP 8 C^2 per layer; the embeddings, value
// embeddings and lm_head are left out, as Kaplan et al. do, because at these sizes they are most of the parameters
// but little of the compute or the capacity), D = tokens trained on. Fitted to a sweep of short fixed-step runs on
// the same data and recipe (advise/advise.h).
//
//   std::vector<LossPoint> pts = ...;   // (N, D, recipe, measured val_bpb)
//   LossModel m;
//   FRONTIER_RETURN_IF_ERROR(fit_loss_model(pts, n_recipes, &m));
//   double bpb = m.predict(n, d, recipe);
//
// The fit: for each (alpha, beta) on a grid (0.02 .. 1.5, step 0.02), the model is linear in E_r, A and B, solved by
// least squares with A >= 0 and B >= 0 (a loss that grew with size or data is not a model of training; A = 0 says
// the sweep saw no gain from size, and the advisor then prefers speed); the pair with the least squared error wins. No optimiser and no starting point to get wrong; 75 x 75 small solves. Leave-one-out
// prediction errors (each point predicted by the fit to the others) are what the advisor states as its error.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

struct LossPoint {
  double n = 0, d = 0;  // non-embedding parameters, training tokens
  int recipe = 0;       // index of the recipe (sequence length, batch)
  double bpb = 0;       // measured val_bpb
};

struct LossModel {
  std::vector<double> e;  // E_r per recipe
  double a = 0, alpha = 0, b = 0, beta = 0;
  double rmse = 0;                 // of the fit on its own points
  double loo_rmse = 0, loo_max = 0;  // leave-one-out: each point predicted by the fit to the others
  int loo_points = 0;              // points the leave-one-out could predict (not the only point of its recipe)
  double predict(double n, double d, int recipe) const;
  std::string describe() const;  // "L = E_r + 41.2 / N^0.31 + 9.8 / D^0.27 ..."
};

// Needs at least (recipes + 4) points with every recipe present and positive N, D, bpb; else an error saying how
// many more points are needed.
Status fit_loss_model(const std::vector<LossPoint>& pts, int n_recipes, LossModel* out);

// 12 L C^2.
double non_embedding_params(int depth, int dim);

}  // namespace frontier
