#include "train/schedule.h"

#include <algorithm>
#include <cmath>

namespace frontier {

double lr_multiplier(double progress, double warmup, double warmdown, double final_frac) {
  if (warmup > 0 && progress < warmup) return (progress + 1e-9) / warmup;
  if (progress <= 1.0 - warmdown) return 1.0;
  double cooldown = (1.0 - progress) / warmdown;
  return cooldown * 1.0 + (1.0 - cooldown) * final_frac;
}

Status parse_momentum_schedule(const std::string& name, MomentumSchedule* out) {
  if (name == "linear") *out = MomentumSchedule::kLinear;
  else if (name == "nanochat") *out = MomentumSchedule::kNanochat;
  else return Status::error("optim.momentum_schedule = '" + name + "' is not one of linear, nanochat");
  return ok_status();
}

double muon_momentum(MomentumSchedule s, int64_t step, int64_t warm_steps, double progress, double warmdown) {
  const double frac = std::min(1.0, static_cast<double>(step) / std::max<int64_t>(1, warm_steps));
  if (s == MomentumSchedule::kLinear) return (1 - frac) * 0.85 + frac * 0.95;
  if (frac < 1.0) return (1 - frac) * 0.85 + frac * 0.97;
  if (warmdown > 0 && progress >= 1.0 - warmdown) {
    const double p = std::min(1.0, (progress - (1.0 - warmdown)) / warmdown);
    return 0.97 * (1 - p) + 0.90 * p;
  }
  return 0.97;
}

Status parse_decay_schedule(const std::string& name, DecaySchedule* out) {
  if (name == "linear") *out = DecaySchedule::kLinear;
  else if (name == "cosine") *out = DecaySchedule::kCosine;
  else return Status::error("optim.weight_decay_schedule = '" + name + "' is not one of linear, cosine");
  return ok_status();
}

double weight_decay_multiplier(DecaySchedule s, double progress) {
  if (s == DecaySchedule::kLinear) return 1.0 - progress;
  return 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, progress)));
}

int64_t accum_at(double progress, int64_t accum, int64_t streams, double warmup, double start) {
  if (warmup <= 0 || progress >= warmup) return accum;
  const double f = start + (1.0 - start) * std::max(0.0, progress) / warmup;
  int64_t a = static_cast<int64_t>(std::ceil(f * static_cast<double>(accum) - 1e-9));
  a = (a + streams - 1) / streams * streams;
  return std::clamp<int64_t>(a, streams, accum);
}

int seq_len_at(double progress, int seq_len, double warmup, int start) {
  return warmup > 0 && progress < warmup ? start : seq_len;
}

int window_at(double progress, int window, double warmup, int start) {
  if (warmup <= 0 || progress >= warmup) return window;
  const double f = start + (window - start) * std::max(0.0, progress) / warmup;
  const int w = static_cast<int>(std::floor(f / 64.0 + 1e-9)) * 64;
  return std::clamp(w, start, window);
}

double ema_decay_at(double decay, int64_t t) {
  return std::min(decay, (1.0 + static_cast<double>(t)) / (10.0 + static_cast<double>(t)));
}

}  // namespace frontier
