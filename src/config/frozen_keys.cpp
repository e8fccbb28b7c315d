#include "config/frozen_keys.h"

#include <cstdio>

namespace frontier {

const std::vector<FrozenKey>& frozen_keys() {
  static const std::vector<FrozenKey> table = {
      // key                          arena  research  why
      {"eval.", true, true, "the frozen evaluator's settings"},
      {"train.data", true, true, "the training data is the competition's"},
      {"train.budget_seconds", true, true, "the budget is the phase's"},
      {"train.max_steps", true, true, "the step count is the budget's"},
      {"train.warmup_steps_excluded", true, true, "it decides which steps the budget counts"},
      {"train.budget_mode", true, true, "it decides how the budget's time is counted"},
      {"train.probe_step_seconds", true, true, "it decides how many steps the budget buys"},
      {"train.run_dir", true, true, "the scorer or the loop places the run"},
      {"train.threads", true, false, "the phase decides the threads"},
      {"train.peak_gflops", false, true, "it changes only the reported MFU (not searched)"},
  };
  return table;
}

const FrozenKey* frozen_key(const std::string& key) {
  for (const auto& f : frozen_keys()) {
    const std::string k = f.key;
    if (k.back() == '.' ? key.rfind(k, 0) == 0 : key == k) return &f;
  }
  return nullptr;
}

Status check_probe_step_seconds(double supplied, double measured) {
  if (!(supplied > 0) || !(measured > 0) || supplied * kProbeSlack >= measured) return ok_status();
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "train.probe_step_seconds = %.6g s is far below this step's measured time %.6g s (it would buy "
                "%.0fx the budget's steps); set 0 to measure it, or a figure within %gx of the measurement",
                supplied, measured, measured / supplied, kProbeSlack);
  return Status::error(buf);
}

}  // namespace frontier
