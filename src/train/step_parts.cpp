#include "train/step_parts.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "autograd/tape.h"
#include "dist/grad_exchange.h"
#include "dist/shard_plan.h"
#include "model/gpt.h"
#include "model/model_config.h"
#include "optim/optim.h"
#include "train/recipe.h"
#include "train/schema.h"
#include "train/settings.h"

namespace frontier {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}
}  // namespace

Status measure_step_parts(const Config& cfg, int threads, int steps, StepParts* out) {
  FRONTIER_RETURN_IF_ERROR(train_schema().validate(cfg));
  const TrainSettings set = train_settings(cfg);
  ModelShape shape;
  FRONTIER_RETURN_IF_ERROR(derive_model_shape(cfg, &shape));
  Precision prec;
  FRONTIER_RETURN_IF_ERROR(resolve_precision(set.precision, &prec));
  CommDtype dtype;
  FRONTIER_RETURN_IF_ERROR(parse_comm_dtype(set.comm_dtype, &dtype));
  out->grad_bytes = dtype == CommDtype::kBf16 ? 2 : 4;
  const int B = static_cast<int>(set.micro_batch), T = shape.seq_len;
  int64_t total = set.total_batch_tokens;
  if (total == 0) total = int64_t(B) * T;
  if (total % (int64_t(B) * T) != 0)
    return Status::error("train.total_batch_tokens is not a multiple of micro_batch * seq_len");
  omp_set_num_threads(threads);
  Gpt gpt(shape);
  gpt.init_nanochat(1);
  Recipe recipe;  // the optimizer's switches change its cost (NorMuon's moments, fewer Polar Express iterations)
  FRONTIER_RETURN_IF_ERROR(read_recipe(cfg, prec, &recipe));
  const OptimConfig& oc = recipe.optim;
  Optimizer opt(gpt, oc);
  StepTimes times;  // one micro-batch per timed step; the first two warm caches and the buffer pool
  time_random_steps(gpt, opt, prec, B, T, 1, 2, steps, &times);
  const std::vector<double>& fb = times.fb;
  const std::vector<double>& op = times.opt;
  out->t_fb = median(fb);
  out->t_opt = median(op);
  out->n_params = gpt.n_params();
  out->tokens_per_micro = int64_t(B) * T;
  out->accum = total / (int64_t(B) * T);
  out->threads = threads;
  out->describe = shape.describe() + ", " + precision_name(prec) + ", micro-batch " + std::to_string(B) + " x " +
                  std::to_string(T) + ", " + std::to_string(out->accum) + " micro-batch(es) per rank and step, " +
                  std::to_string(threads) + " thread(s) per rank, " + comm_dtype_name(dtype) + " gradients";
  out->shard_share.clear();
  double all = 0;
  for (const auto& p : gpt.params()) all += optimizer_cost_seconds(p, oc.ns_steps);
  for (int R = 1; R <= 64; R++) {
    ShardPlan plan = plan_optimizer_shards(gpt.params(), R, oc.ns_steps);
    out->shard_share.push_back(*std::max_element(plan.est_seconds.begin(), plan.est_seconds.end()) / all);
  }
  return ok_status();
}

void time_random_steps(Gpt& gpt, Optimizer& opt, Precision prec, int B, int T, int64_t accum, int warmup, int steps,
                       StepTimes* out) {
  std::vector<int32_t> x(int64_t(B) * T), y(int64_t(B) * T);
  uint64_t st = 0x9E3779B97F4A7C15ull;
  const int64_t V = gpt.shape().vocab_size;
  for (size_t i = 0; i < x.size(); i++) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = static_cast<int32_t>((st >> 33) % V);
    y[i] = static_cast<int32_t>((st >> 13) % V);
  }
  out->fb.clear();
  out->opt.clear();
  gpt.set_timing_mtp_weights();
  for (int s = 0; s < warmup + steps; s++) {
    auto t0 = Clock::now();
    gpt.zero_grad();
    for (int64_t a = 0; a < accum; a++) {
      Tape tape;
      tape.set_precision(prec);
      Var loss = gpt.forward(tape, x.data(), y.data(), B, T);
      tape.backward(loss, 1.0f / static_cast<float>(accum));
    }
    const double fb = since(t0);
    // optim.muon_every = k > 1: one step that orthogonalises and one that reuses its update, weighted 1 : k - 1,
    // so the figure is the optimizer's time per step over its period (a median over 5 plain steps would read
    // whichever kind happened to be in the majority).
    const int k = opt.config().muon_every;
    if (k > 1) opt.set_steps(0);  // the next step orthogonalises
    auto t1 = Clock::now();
    opt.step(1.0f, 0.85f, 0.0f);
    double t_opt = since(t1);
    if (k > 1) {
      auto t2 = Clock::now();
      opt.step(1.0f, 0.85f, 0.0f);
      t_opt = (t_opt + (k - 1) * since(t2)) / k;
    }
    if (s >= warmup) out->fb.push_back(fb), out->opt.push_back(t_opt);
  }
}

}  // namespace frontier
