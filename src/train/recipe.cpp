#include "train/recipe.h"

#include <cstdio>

namespace frontier {

void add_recipe_keys(ConfigSchema* s) {
  s->add_float("optim.matrix_lr", 0.02, "Muon learning rate for block matrices", {0, 100});
  s->add_float("optim.embedding_lr", 0.2, "AdamW LR for wte and value embeddings, x (dim/768)^-0.5", {0, 100});
  s->add_float("optim.unembedding_lr", 0.004, "AdamW LR for lm_head, x (dim/768)^-0.5", {0, 100});
  s->add_float("optim.scalar_lr", 0.5, "AdamW LR for x0_lambdas (resid_lambdas get 1% of it)", {0, 100});
  s->add_float("optim.weight_decay", 0.2, "Muon cautious weight decay, decaying to 0 with progress "
               "(optim.weight_decay_schedule)", {0, 100});
  s->add_int("optim.momentum_warmup_steps", 300, "Muon momentum warms from 0.85 over this many steps "
             "(to 0.95, or 0.97 with optim.momentum_schedule = nanochat)", {0, 1e12});
  s->add_string("optim.momentum_schedule", "linear",
                "Muon momentum: linear (0.85 -> 0.95 over optim.momentum_warmup_steps) | nanochat (92d63d4: 0.85 -> "
                "0.97 over those steps, then 0.97 -> 0.90 over the LR warmdown)");
  s->add_string("optim.weight_decay_schedule", "linear",
                "Muon weight decay multiplier: linear (1 - progress) | cosine (nanochat 92d63d4: (1 + cos(pi "
                "progress)) / 2)");
  s->add_int("optim.ns_steps", 5, "Polar Express iterations per Muon update (nanochat's coefficients, the first "
             "ns_steps of 5): fewer make the optimizer cheaper (its FLOPs scale with them) and the update less "
             "orthogonal", {1, 5});
  s->add_bool("optim.muon_equilibrate", false,
              "MuonEq (nanochat 92d63d4): rescale each row of the momentum to the mean row norm before Polar Express");
  s->add_bool("optim.muon_renormalize", false,
              "Muon+ (nanochat 92d63d4): scale Polar Express's output to Frobenius norm sqrt(min(rows, cols))");
  s->add_float("optim.normuon_beta2", 0.0,
               "NorMuon (nanochat 92d63d4 uses 0.9): per-row (per-column for wide matrices) second moment of the "
               "orthogonalised update with this beta2, which rescales it (keeping its norm); 0 = off", {0, 0.9999});
  s->add_float("train.warmup_ratio", 0.0, "LR warmup, as a fraction of the budget", {0, 1});
  s->add_float("train.warmdown_ratio", 0.5, "LR linear warmdown over this last fraction of the budget", {0, 1});
  s->add_float("train.final_lr_frac", 0.0, "LR multiplier at the end of the warmdown", {0, 10});
  s->add_float("train.batch_warmup_ratio", 0.0,
               "batch-size warm-up: the micro-batches per step grow linearly from train.batch_warmup_start of "
               "train.total_batch_tokens to all of it over this fraction of the budget; the learning rates are "
               "scaled by sqrt(tokens this step / total) (0 = off; needs accumulation: total_batch_tokens >= 2 x "
               "micro_batch x seq_len). In probe mode the cheaper early steps are not credited: the run trains the "
               "full batch's step count", {0, 1});
  s->add_float("train.batch_warmup_start", 0.25, "the batch-size warm-up's first share of the batch", {0.01, 1});
  s->add_float("train.ema_decay", 0.0,
               "weight EMA: keep an exponential moving average of the weights (decay min(this, (1+t)/(10+t)) at "
               "step t); the final checkpoint and val_bpb use the averaged weights (0 = off)", {0, 0.99999});
}

Status read_recipe(const Config& cfg, Precision prec, Recipe* out) {
  Recipe r;
  OptimConfig& o = r.optim;
  o.ns_precision = prec;
  o.matrix_lr = static_cast<float>(cfg.get_float("optim.matrix_lr"));
  o.embedding_lr = static_cast<float>(cfg.get_float("optim.embedding_lr"));
  o.unembedding_lr = static_cast<float>(cfg.get_float("optim.unembedding_lr"));
  o.scalar_lr = static_cast<float>(cfg.get_float("optim.scalar_lr"));
  o.weight_decay = static_cast<float>(cfg.get_float("optim.weight_decay"));
  o.ns_steps = static_cast<int>(cfg.get_int("optim.ns_steps"));
  o.equilibrate = cfg.get_bool("optim.muon_equilibrate");
  o.renormalize = cfg.get_bool("optim.muon_renormalize");
  o.normuon_beta2 = static_cast<float>(cfg.get_float("optim.normuon_beta2"));
  FRONTIER_RETURN_IF_ERROR(parse_momentum_schedule(cfg.get_string("optim.momentum_schedule"), &r.momentum));
  FRONTIER_RETURN_IF_ERROR(parse_decay_schedule(cfg.get_string("optim.weight_decay_schedule"), &r.decay));
  r.momentum_warmup_steps = cfg.get_int("optim.momentum_warmup_steps");
  r.warmup = cfg.get_float("train.warmup_ratio");
  r.warmdown = cfg.get_float("train.warmdown_ratio");
  r.final_lr_frac = cfg.get_float("train.final_lr_frac");
  r.batch_warmup = cfg.get_float("train.batch_warmup_ratio");
  r.batch_start = cfg.get_float("train.batch_warmup_start");
  r.ema_decay = cfg.get_float("train.ema_decay");
  *out = r;
  return ok_status();
}

std::string describe_recipe(const Recipe& r) {
  std::string d;
  auto add = [&d](const std::string& s) { d += (d.empty() ? "" : ", ") + s; };
  char buf[96];
  if (r.momentum == MomentumSchedule::kNanochat) add("momentum nanochat");
  if (r.decay == DecaySchedule::kCosine) add("weight decay cosine");
  if (r.optim.ns_steps != 5) add((std::snprintf(buf, sizeof(buf), "Polar Express %d iterations", r.optim.ns_steps), buf));
  if (r.optim.equilibrate) add("MuonEq rows");
  if (r.optim.renormalize) add("Muon+ renorm");
  if (r.optim.normuon_beta2 > 0) add((std::snprintf(buf, sizeof(buf), "NorMuon beta2 %g", r.optim.normuon_beta2), buf));
  if (r.batch_warmup > 0)
    add((std::snprintf(buf, sizeof(buf), "batch warm-up %g -> 1 over %g", r.batch_start, r.batch_warmup), buf));
  if (r.ema_decay > 0) add((std::snprintf(buf, sizeof(buf), "weight EMA %g", r.ema_decay), buf));
  return d;
}

}  // namespace frontier
