// `frontier bench --only variants`: the architecture-variant ops (model.* levers: sliding-window attention,
// gated MLPs, mixture of experts, hashed n-gram tables, multi-token prediction, smear, key offset) timed
// forward+backward through their autograd ops, each against the calibrated peak of its precision's unit and,
// for the primitives, against its reference kernel (src/reference/*.h, run in float on one thread). Four headline
// ratios, each measured in the same run against the baseline it replaces and printed with its target ("met" /
// "SHORT"):
//   1. S/L attention: fwd+bwd time of a sliding-window (W = T/4) layer over a full-context one (<= 0.5);
//   2. swiglu / relu2 MLP GFLOP/s at equal parameters (>= 0.9);
//   3. top-2-of-8 MoE / dense relu2 MLP time at equal active parameters (<= 1.4);
//   4. hashed n-gram tables' fwd+bwd share of a depth-4 training step (<= 3%), with MTP's cost per extra
//   target.
// GEMM-based rows are timed in fp32 and, where the CPU has native bf16 (tier avx512bf16), in bf16 too.
//
//   VariantBenchOptions o;                 // repeats = 5 (best of), peak from the calibration file
//   nlohmann::json j;
//   std::string table;
//   FRONTIER_RETURN_IF_ERROR(run_variants_bench(o, &j, &table));
//   std::printf("%s", table.c_str());     // j: {"machine": ..., "rows": [...], "headlines": [...]}
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "util/status.h"

namespace frontier {

struct VariantBenchOptions {
  int repeats = 5;         // best of, after one warm-up (references: best of min(repeats, 2), no warm-up)
  double peak_gflops = 0;  // 0: each precision's unit from the calibration file, else measured now
  bool quick = false;      // a quarter of the tokens (attention at T = 1024): a smoke run, not for comparison
};

Status run_variants_bench(const VariantBenchOptions& o, nlohmann::json* out, std::string* table);

}  // namespace frontier
