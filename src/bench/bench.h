// `frontier bench`: kernel throughput by shape against the machine's measured ceilings (the peak of the unit each
// precision runs on) and the peers, Debian's OpenBLAS for fp32 and oneDNN for bf16 (loaded with dlopen, so never a
// build dependency), and end-to-end training tokens/s and MFU per model config and precision, optionally against
// PyTorch (fp32 variants and nanochat's bf16 autocast), all measured in one run. Every row names its precision; the
// machine line names the ISA tier and kernels.
//
//   BenchOptions o;                       // defaults: the model's shapes at depth 4/6/8, 2 repeats
//   BenchReport r;
//   FRONTIER_RETURN_IF_ERROR(run_bench(o, &r));
//   std::printf("%s", r.table().c_str());  // or r.json
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

struct BenchOptions {
  bool kernels = true, train = true;
  int train_steps = 3;           // timed steps per config (after 1 warm-up step)
  int accum = 1;                 // micro-batches (of 8 sequences) per optimizer step
  int gemm_repeats = 3;          // best of
  int bf16 = -1;                 // also time bf16: -1 where the CPU has native bf16 (tier avx512bf16), 0 no, 1 yes
  std::vector<int> depths = {4, 6, 8};
  double peak_gflops = 0;        // 0: calibration file, else measured now
  double mem_gbs = 0;
  bool scaling = true;           // also time 1 thread: every GEMM shape and the first training config
  std::string torch_script;      // python/torch_speed.py: also time PyTorch (stock, tcmalloc, BLIS + tcmalloc)
};

struct BenchReport {
  nlohmann::json json;           // {"machine": ..., "gemm": [...], "attention": [...], "train": [...]}
  std::string table() const;    // includes targets()
  std::string targets() const;  // issue 12's targets checked against the rows present: met or SHORT, with ranges
  std::string speed_targets() const;  // issue 30's, per precision (part of targets())
};

Status run_bench(const BenchOptions& o, BenchReport* out);

}  // namespace frontier
