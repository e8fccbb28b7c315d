#include "train/recipe.h"

#include <algorithm>
#include <cmath>
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
  s->add_int("optim.muon_every", 1, "Muon orthogonalises (Polar Express) every k-th step only and applies the last "
             "orthogonalised update again on the steps between (the momentum still takes every gradient): the "
             "optimizer's Polar Express FLOPs fall by k; one more state section (the last update) is kept", {1, 1000});
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
  s->add_float("train.seq_warmup_ratio", 0.0,
               "sequence-length warm-up: over this first fraction of the budget a micro-batch holds rows of "
               "train.seq_len_start tokens, micro_batch x seq_len / seq_len_start of them (as many tokens per step), "
               "then model.seq_len (0 = off). Attention costs less on the short rows; in probe mode the cheaper "
               "early steps are not credited", {0, 1});
  s->add_int("train.seq_len_start", 0, "the sequence-length warm-up's row length: a divisor of model.seq_len below "
             "it (0 = model.seq_len / 4)", {0, 1 << 20});
  s->add_float("train.window_warmup_ratio", 0.0,
               "attention-window warm-up: the S layers' window (model.window_pattern) grows linearly from "
               "train.window_start to model.short_window over this first fraction of the budget, rounded down to a "
               "multiple of 64 (never below the start); evaluation always uses the final window (0 = off). In probe "
               "mode the cheaper early steps are not credited", {0, 1});
  s->add_int("train.window_start", 64, "the window warm-up's first window, in tokens (below the short window)",
             {1, 1 << 20});
  s->add_float("train.ema_decay", 0.0,
               "weight EMA: keep an exponential moving average of the weights (decay min(this, (1+t)/(10+t)) at "
               "step t); the final checkpoint and val_bpb use the averaged weights (0 = off)", {0, 0.99999});
}

Status read_recipe(const Config& cfg, Precision prec, Recipe* out) {
  Recipe r;
  OptimConfig& o = r.optim;
  o.ns_precision = prec;
  const LearningRates lr = read_learning_rates(cfg);
  o.matrix_lr = static_cast<float>(lr.matrix);
  o.embedding_lr = static_cast<float>(lr.embedding);
  o.unembedding_lr = static_cast<float>(lr.unembedding);
  o.scalar_lr = static_cast<float>(lr.scalar);
  o.weight_decay = static_cast<float>(cfg.get_float("optim.weight_decay"));
  o.ns_steps = static_cast<int>(cfg.get_int("optim.ns_steps"));
  o.muon_every = static_cast<int>(cfg.get_int("optim.muon_every"));
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
  r.seq_warmup = cfg.get_float("train.seq_warmup_ratio");
  r.seq_len_start = static_cast<int>(cfg.get_int("train.seq_len_start"));
  r.window_warmup = cfg.get_float("train.window_warmup_ratio");
  r.window_start = static_cast<int>(cfg.get_int("train.window_start"));
  *out = r;
  return ok_status();
}

LearningRates read_learning_rates(const Config& cfg) {
  LearningRates lr;
  lr.matrix = cfg.get_float("optim.matrix_lr");
  lr.embedding = cfg.get_float("optim.embedding_lr");
  lr.unembedding = cfg.get_float("optim.unembedding_lr");
  lr.scalar = cfg.get_float("optim.scalar_lr");
  return lr;
}

std::string describe_recipe(const Recipe& r) {
  std::string d;
  auto add = [&d](const std::string& s) { d += (d.empty() ? "" : ", ") + s; };
  char buf[96];
  if (r.momentum == MomentumSchedule::kNanochat) add("momentum nanochat");
  if (r.decay == DecaySchedule::kCosine) add("weight decay cosine");
  if (r.optim.ns_steps != 5) add((std::snprintf(buf, sizeof(buf), "Polar Express %d iterations", r.optim.ns_steps), buf));
  if (r.optim.muon_every > 1)
    add((std::snprintf(buf, sizeof(buf), "Polar Express every %d steps", r.optim.muon_every), buf));
  if (r.optim.equilibrate) add("MuonEq rows");
  if (r.optim.renormalize) add("Muon+ renorm");
  if (r.optim.normuon_beta2 > 0) add((std::snprintf(buf, sizeof(buf), "NorMuon beta2 %g", r.optim.normuon_beta2), buf));
  if (r.batch_warmup > 0)
    add((std::snprintf(buf, sizeof(buf), "batch warm-up %g -> 1 over %g", r.batch_start, r.batch_warmup), buf));
  if (r.ema_decay > 0) add((std::snprintf(buf, sizeof(buf), "weight EMA %g", r.ema_decay), buf));
  if (r.seq_warmup > 0)
    add((std::snprintf(buf, sizeof(buf), "sequence warm-up %d tokens over %g", r.seq_len_start, r.seq_warmup), buf));
  if (r.window_warmup > 0)
    add((std::snprintf(buf, sizeof(buf), "window warm-up from %d over %g", r.window_start, r.window_warmup), buf));
  return d;
}

Status fit_recipe_to_shape(const ModelShape& m, Recipe* r) {
  const int T = m.seq_len;
  if (r->seq_warmup > 0) {
    const int given = r->seq_len_start, start = given > 0 ? given : T / 4;
    if (start <= 0 || start >= T || T % start != 0)
      return Status::error("train.seq_len_start = " + std::to_string(given) + (given == 0 ? " (model.seq_len / 4 = " +
                           std::to_string(start) + ")" : "") + " does not divide model.seq_len = " +
                           std::to_string(T) + " into shorter rows; use a divisor of it below " + std::to_string(T) +
                           (T % 4 == 0 && T >= 4 ? ", e.g. " + std::to_string(T / 4) : "") +
                           " (or train.seq_warmup_ratio = 0)");
    r->seq_len_start = start;
  }
  if (r->window_warmup > 0) {
    int window = 0;  // the S layers' (ModelShape::window: 0 for L layers and windows that cover seq_len)
    for (int i = 0; i < m.depth; i++) window = std::max(window, m.window(i));
    if (window == 0)
      return Status::error("train.window_warmup_ratio needs S layers, but model.window_pattern = '" +
                           m.arch.window_pattern + "' with model.short_window " + std::to_string(m.arch.short_window) +
                           " and model.seq_len " + std::to_string(T) + " has none: set model.window_pattern (e.g. "
                           "SSSL) and a short window below seq_len, or train.window_warmup_ratio = 0");
    if (r->window_start >= window)
      return Status::error("train.window_start = " + std::to_string(r->window_start) + " is not below the S layers' "
                           "window (" + std::to_string(window) + " tokens, model.short_window); use 1 .. " +
                           std::to_string(window - 1));
  }
  return ok_status();
}

std::string describe_warmups(const Recipe& r, const ModelShape& m, int B, int64_t max_steps) {
  // "until 30% of the run (steps 1-3 of 8)": the steps (1-based, as the log's) whose progress (step - 1) / max_steps
  // is below the fraction.
  auto until = [max_steps](double f) {
    char b[96];
    if (max_steps > 0) {
      const int64_t s = static_cast<int64_t>(std::ceil(f * static_cast<double>(max_steps) - 1e-9));
      std::snprintf(b, sizeof(b), "%g%% of the run (steps 1-%lld of %lld)", 100 * f, static_cast<long long>(s),
                    static_cast<long long>(max_steps));
    } else {
      std::snprintf(b, sizeof(b), "%g%% of the budget's time", 100 * f);
    }
    return std::string(b);
  };
  std::string out;
  char buf[320];
  const int T = m.seq_len;
  if (r.seq_warmup > 0) {
    const int t0 = r.seq_len_start;
    std::snprintf(buf, sizeof(buf), "sequence warm-up: micro-batches of %d x %d tokens until %s, then %d x %d "
                  "(%lld tokens each way: micro_batch x seq_len / train.seq_len_start rows)\n", B * (T / t0), t0,
                  until(r.seq_warmup).c_str(), B, T, static_cast<long long>(B) * T);
    out += buf;
  }
  if (r.window_warmup > 0) {
    int window = 0;
    for (int i = 0; i < m.depth; i++) window = std::max(window, m.window(i));
    std::snprintf(buf, sizeof(buf), "window warm-up: S layers see %d tokens, growing to %d (multiples of 64) until %s; "
                  "evaluation uses %d\n", r.window_start, window, until(r.window_warmup).c_str(), window);
    out += buf;
  }
  if (m.arch.untie_at > 0) {
    std::snprintf(buf, sizeof(buf), "untie: the head is wte until %s, then lm_head (initialised from wte, fresh AdamW "
                  "moments, the lm_head group; wte keeps its group)\n", until(m.arch.untie_at).c_str());
    out += buf;
  }
  return out;
}

}  // namespace frontier
