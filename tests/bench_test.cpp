// `frontier bench` end to end on a tiny config: the training rows (tokens/s, MFU, forward+backward MFU, optimizer
// share, 1-thread speedup), gradient accumulation, the PyTorch comparison (same GPT and optimizer in
// python/torch_speed.py, stock and with preloads), JSON and table agree, and bad flags are errors. Speeds are
// never asserted (noisy machines); only that each number is measured and consistent.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "util/file.h"
#include "kernels/isa.h"

using namespace frontier;
using namespace frontier::testing;

TEST(Bench, TrainRowsTorchComparisonAndJson) {
  std::string dir = make_temp_dir("bench");
  auto r = run_cmd(frontier_bin() + " bench --only train --depths 2 --steps 1 --peak-gflops 100 --torch --json " +
                   dir + "/b.json");
  ASSERT_EQ(r.rc, 0) << r.out;
  std::string text;
  ASSERT_TRUE(read_file(dir + "/b.json", &text).ok());
  auto j = nlohmann::json::parse(text);
  // One row per precision: fp32, and bf16 where the CPU has native bf16.
  ASSERT_EQ(j["train"].size(), isa_supported(Isa::kAvx512Bf16) ? 2u : 1u);
  EXPECT_EQ(j["train"][0]["precision"], "fp32");
  if (j["train"].size() == 2) {
    EXPECT_EQ(j["train"][1]["precision"], "bf16");
  }
  for (const auto& row : j["train"]) {
  EXPECT_EQ(row["depth"], 2);
  EXPECT_GT(row["tokens_per_sec"].get<double>(), 0);
  // MFU = tokens/s x FLOPs/token / peak; forward+backward alone is faster than the whole step.
  EXPECT_GE(row["fwd_bwd_mfu_pct"].get<double>(), row["mfu_pct"].get<double>());
  EXPECT_GT(row["optimizer_seconds"].get<double>(), 0);
  EXPECT_LT(row["optimizer_seconds"].get<double>(), row["step_seconds"].get<double>());
  // HFU counts the optimizer's FLOPs too: above the forward+backward-only rate scaled to the whole step.
  EXPECT_GT(row["hfu_pct"].get<double>(), 0.0);
  EXPECT_GT(row["optimizer_pct_peak"].get<double>(), 0.0);
  EXPECT_GT(row["thread_speedup"].get<double>(), 0);  // 1-thread run of the first config
  ASSERT_TRUE(row.contains("torch")) << r.out;
  EXPECT_GT(row["torch"]["stock"].get<double>(), 0);
  EXPECT_GT(row["torch"]["bf16"].get<double>(), 0);  // nanochat's configuration: bf16 autocast
  EXPECT_GT(row["ratio_vs_torch_best"].get<double>(), 0);
  }
  EXPECT_NE(r.out.find("ours/best"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tier "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("targets (issue 12"), std::string::npos) << r.out;  // met / SHORT per target
  EXPECT_NE(r.out.find("targets (issue 30"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fp32 forward+backward MFU"), std::string::npos) << r.out;
  if (isa_supported(Isa::kAvx512Bf16)) {
    EXPECT_NE(r.out.find("bf16 training, ours / best PyTorch"), std::string::npos) << r.out;
  }

  // A PyTorch variant whose first step runs past --stop-above seconds is stopped there and reports the bound (the
  // bench passes 4x the best variant's step: emulated bf16 autocast takes minutes a step on CPUs without bf16).
  auto stop = run_cmd("/usr/bin/python3 " + source_dir() + "/python/torch_speed.py --json --depth 1 --seq-len 16 "
                      "--batch 2 --steps 3 --stop-above 0.000001");
  ASSERT_EQ(stop.rc, 0) << stop.out;
  auto js = nlohmann::json::parse(stop.out.substr(stop.out.find('{')));
  EXPECT_EQ(js["stopped"], true);
  EXPECT_NEAR(js["step_seconds"].get<double>(), 1e-6, 1e-9);  // the bound: the step was cut at --stop-above

  auto acc = run_cmd(frontier_bin() + " bench --only train --depths 2 --steps 1 --accum 2 --no-scaling "
                     "--precision fp32 --peak-gflops 100 --json " + dir + "/a.json");
  ASSERT_EQ(acc.rc, 0) << acc.out;
  ASSERT_TRUE(read_file(dir + "/a.json", &text).ok());
  auto ja = nlohmann::json::parse(text);
  ASSERT_EQ(ja["train"].size(), 1u);
  EXPECT_EQ(ja["train"][0]["accum"], 2);
  EXPECT_FALSE(ja["train"][0].contains("thread_speedup"));
  EXPECT_NE(acc.out.find("8x2"), std::string::npos) << acc.out;

  auto bad = run_cmd(frontier_bin() + " bench --accum 0");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find("--accum"), std::string::npos) << bad.out;
  bad = run_cmd(frontier_bin() + " bench --precision fp16");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find("--precision"), std::string::npos) << bad.out;
}
