// frontier bench: kernel GFLOP/s vs the ceilings and OpenBLAS, training tokens/s and MFU (bench/bench.h); --only
// variants: the architecture-variant ops (bench/variants.h).
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "bench/bench.h"
#include "bench/variants.h"
#include "commands.h"
#include "util/file.h"

namespace frontier::cli {
namespace {

struct BenchArgs {
  BenchOptions bo;
  std::string json, only, precision = "auto";
  int repeats = 5;
  bool quick = false, torch = false, no_scaling = false;
};

int run_variants(const BenchArgs& a) {
  VariantBenchOptions vo;
  vo.repeats = a.repeats;
  vo.peak_gflops = a.bo.peak_gflops;
  vo.quick = a.quick;
  nlohmann::json j;
  std::string table;
  Status s = run_variants_bench(vo, &j, &table);
  if (!s.ok()) return fail(s);
  std::printf("%s", table.c_str());
  if (!a.json.empty() && !(s = write_file_atomic(a.json, j.dump(2) + "\n")).ok()) return fail(s);
  return 0;
}

int run_bench_command(BenchArgs& a) {
  if (a.only == "variants") return run_variants(a);
  BenchOptions& bo = a.bo;
  bo.kernels = a.only != "train";
  bo.train = a.only != "kernels";
  bo.scaling = !a.no_scaling;
  bo.bf16 = a.precision == "auto" ? -1 : a.precision == "all" ? 1 : 0;
  if (a.torch) bo.torch_script = std::string(FRONTIER_SOURCE_DIR) + "/python/torch_speed.py";
  BenchReport rep;
  Status s = run_bench(bo, &rep);
  if (!s.ok()) return fail(s);
  std::printf("%s", rep.table().c_str());
  if (!a.json.empty() && !(s = write_file_atomic(a.json, rep.json.dump(2) + "\n")).ok()) return fail(s);
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, Commands& cmds) {
  auto a = std::make_shared<BenchArgs>();
  BenchOptions& bo = a->bo;
  auto* bn = app.add_subcommand("bench", "GEMM GFLOP/s by shape and precision against the calibrated peak of the "
                                          "unit used and the peers (OpenBLAS fp32, oneDNN bf16), attention, "
                                          "memory-bound ops in GB/s, 1- vs N-thread speedups, and training tokens/s "
                                          "and MFU at depth 4, 6 and 8 per precision (--torch: vs PyTorch fp32 and "
                                          "bf16 autocast)");
  bn->add_option("--json", a->json, "Also write the results as JSON here");
  bn->add_option("--only", a->only,
                 "Run only this part (default: all parts; variants: the architecture-variant ops and their headline "
                 "ratios, bench/variants.h)")
      ->check(CLI::IsMember({"kernels", "train", "variants"}));
  bn->add_option("--repeats", a->repeats, "--only variants: best of this many runs per row")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  bn->add_flag("--quick", a->quick, "--only variants: a quarter of the tokens (a smoke run, not for comparison)");
  bn->add_option("--steps", bo.train_steps, "Timed training steps per config")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  bn->add_option("--accum", bo.accum, "Micro-batches of 8 sequences per optimizer step (gradient accumulation)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  bn->add_option("--depths", bo.depths, "Model depths for the training benchmark")->capture_default_str();
  bn->add_option("--peak-gflops", bo.peak_gflops,
                 "Peak for %peak/MFU, all precisions (0 = each precision's unit from the calibration file, else "
                 "measured)")
      ->capture_default_str();
  bn->add_flag("--torch", a->torch,
               "Also time the same GPT and optimizer in PyTorch (/usr/bin/python3 + python3-torch; fp32: stock, "
               "tcmalloc and BLIS + tcmalloc preloaded; bf16 autocast + bf16 Newton-Schulz as nanochat: stock and "
               "tcmalloc) and print ours / best of all; a variant still in its first step at 4x the best one's step time is "
               "stopped there and marked * (bf16 autocast without native bf16 takes minutes a step)");
  bn->add_flag("--no-scaling", a->no_scaling, "Skip the 1-thread runs (thread speedup)");
  bn->add_option("--precision", a->precision,
                 "auto: fp32, plus bf16 where the CPU has native bf16 (tiers avx512bf16 and amx); fp32: fp32 only; all: both")
      ->check(CLI::IsMember({"auto", "fp32", "all"}))
      ->capture_default_str();
  cmds.push_back({bn, [a] { return run_bench_command(*a); }});
}

}  // namespace frontier::cli
