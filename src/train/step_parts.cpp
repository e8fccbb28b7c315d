#include "train/step_parts.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "dist/grad_exchange.h"
#include "dist/shard_plan.h"
#include "model/gpt.h"
#include "model/model_config.h"
#include "optim/optim.h"
#include "train/recipe.h"
#include "train/train.h"

namespace frontier {

namespace {
double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}
}  // namespace

Status measure_step_parts(const Config& cfg, int threads, int steps, StepParts* out) {
  FRONTIER_RETURN_IF_ERROR(train_schema().validate(cfg));
  ModelShape shape;
  FRONTIER_RETURN_IF_ERROR(derive_model_shape(cfg, &shape));
  Precision prec;
  FRONTIER_RETURN_IF_ERROR(resolve_precision(cfg.get_string("train.precision"), &prec));
  CommDtype dtype;
  FRONTIER_RETURN_IF_ERROR(parse_comm_dtype(cfg.get_string("train.comm_dtype"), &dtype));
  out->grad_bytes = dtype == CommDtype::kBf16 ? 2 : 4;
  const int B = static_cast<int>(cfg.get_int("train.micro_batch")), T = shape.seq_len;
  int64_t total = cfg.get_int("train.total_batch_tokens");
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

}  // namespace frontier
