// `frontier profile`: a few training steps of a config (random tokens: the cost of a step does not depend on the
// token values) with the op scopes of util/trace.h recording, then one row per op, phase and GEMM shape:
// time per step, FLOPs, compulsory bytes, achieved GFLOP/s and GB/s, arithmetic intensity, and whether the op is
// compute- or memory-bound against the calibrated roofline (ridge = FMA peak / memory bandwidth) with its % of the
// roofline's bound. Also writes the events as a Chrome/Perfetto trace (chrome://tracing, ui.perfetto.dev).
//
//   ProfileOptions o;                          // 3 timed steps after 1 warm-up step
//   ProfileReport r;
//   FRONTIER_RETURN_IF_ERROR(run_profile(cfg, o, &r));   // cfg through train_schema()
//   std::printf("%s", r.table().c_str());
//   FRONTIER_RETURN_IF_ERROR(write_chrome_trace(r.events, "trace.json"));
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/trace.h"
#include "util/status.h"

namespace frontier {

struct ProfileOptions {
  int steps = 3, warmup = 1;
  double peak_gflops = 0, mem_gbs = 0;  // 0: calibration file, else measured now
};

struct ProfileReport {
  nlohmann::json json;            // {"machine", "config", "summary", "ops": [...]}
  std::vector<ProfEvent> events;  // the timed steps
  std::string table() const;
};

Status run_profile(const Config& cfg, const ProfileOptions& o, ProfileReport* out);

// Per-op rows from events (leaf scopes: phases fwd, bwd, optim), per step, against the ceilings. Exposed for tests.
nlohmann::json aggregate_ops(const std::vector<ProfEvent>& events, int steps, double peak_gflops, double mem_gbs);

// Chrome trace-event JSON ("X" complete events, microseconds), written atomically.
nlohmann::json chrome_trace(const std::vector<ProfEvent>& events);
Status write_chrome_trace(const std::vector<ProfEvent>& events, const std::string& path);

}  // namespace frontier
