// The training schedules, as pure functions of progress (training seconds / budget, or step / max_steps): the
// learning-rate multiplier, Muon's momentum and weight decay, the batch-size, sequence-length and attention-window
// warm-ups and the weight EMA's decay.
//
//   double lr = lr_multiplier(p, warmup, warmdown, final_frac);
//   double mu = muon_momentum(MomentumSchedule::kNanochat, step, warm_steps, p, warmdown);
//   int64_t a = accum_at(p, accum, streams, batch_warmup, batch_start);  // micro-batches this step
//   int T = seq_len_at(p, 512, 0.3, 128), w = window_at(p, 512, 0.5, 64);  // rows' tokens, S layers' window
#pragma once

#include <cstdint>
#include <string>

#include "util/status.h"

namespace frontier {

// Linear warmup over `warmup`, constant, linear warmdown over the last `warmdown` to final_frac (nanochat's
// get_lr_multiplier, on progress).
double lr_multiplier(double progress, double warmup, double warmdown, double final_frac);

// optim.momentum_schedule. kLinear (today's): 0.85 -> 0.95 over warm_steps steps, then 0.95. kNanochat (92d63d4's
// get_muon_momentum): 0.85 -> 0.97 over warm_steps steps, 0.97, then 0.97 -> 0.90 linearly over the LR warmdown.
enum class MomentumSchedule { kLinear, kNanochat };
Status parse_momentum_schedule(const std::string& name, MomentumSchedule* out);
double muon_momentum(MomentumSchedule s, int64_t step, int64_t warm_steps, double progress, double warmdown);

// optim.weight_decay_schedule: Muon's decay multiplier. kLinear (today's): 1 - progress; kCosine (92d63d4's
// get_weight_decay): (1 + cos(pi progress)) / 2.
enum class DecaySchedule { kLinear, kCosine };
Status parse_decay_schedule(const std::string& name, DecaySchedule* out);
double weight_decay_multiplier(DecaySchedule s, double progress);

// train.batch_warmup_ratio / train.batch_warmup_start: the micro-batches of a step grow linearly from
// start * accum to accum over the first `warmup` of progress, rounded up to a multiple of `streams` (every data
// stream reads the same number; at least one each). warmup = 0: always accum.
int64_t accum_at(double progress, int64_t accum, int64_t streams, double warmup, double start);

// train.seq_warmup_ratio / train.seq_len_start: rows of `start` tokens while progress < warmup, then seq_len
// (warmup = 0: always seq_len). start divides seq_len: the trainer reads B x seq_len / start rows of them, so a
// micro-batch holds as many tokens (and a step as many) as at the full length.
int seq_len_at(double progress, int seq_len, double warmup, int start);

// train.window_warmup_ratio / train.window_start: the S layers' window grows linearly from start to `window` over
// the first `warmup` of progress, rounded down to a multiple of 64 and never below start (a few stages of cost,
// not one per step, as nanochat keeps windows on multiples of 128); warmup = 0 or progress >= warmup: window.
int window_at(double progress, int window, double warmup, int start);

// The weight EMA's decay at optimizer step t (1-based): min(decay, (1 + t) / (10 + t)), so the first steps do not
// drag the initialisation along (timm's warm-up form).
double ema_decay_at(double decay, int64_t t);

}  // namespace frontier
