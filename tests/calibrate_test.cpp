// `frontier calibrate` and train's use of its file.
#include <cstring>
#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "data/loader.h"
#include "eval/core_eval.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "torch_peer.h"
#include "train/checkpoint.h"
#include "train/train.h"
#include "train_fixture.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

// `frontier calibrate` measures and saves the ceilings; train takes its MFU denominator from that file.
TEST(Calibrate, SavesCeilingsAndTrainReadsThem) {
  std::string cache = make_temp_dir("calib");
  auto r = run_cmd("FRONTIER_CACHE=" + cache + " " + frontier_bin() + " calibrate --threads 2");
  ASSERT_EQ(r.rc, 0) << r.out;
  std::string text;
  ASSERT_TRUE(read_file(cache + "/calibration.json", &text).ok());
  auto j = nlohmann::json::parse(text);
  // Measurements, not assertions about speed (tests run in parallel; a busy core measures low): just present.
  EXPECT_GT(j["fma_gflops"].get<double>(), 0.0);
  EXPECT_GT(j["fma_gflops_1t"].get<double>(), 0.0);
  EXPECT_EQ(j["threads"].get<int>(), 2);
  EXPECT_GT(j["mem_gbs_1t"].get<double>(), 0.0);
  j["fma_gflops"] = 1234.5;  // a recognisable value
  write_text(cache + "/calibration.json", j.dump());
  r = run_cmd("FRONTIER_CACHE=" + cache + " " +
              train_cmd("--budget 1000 --set train.max_steps=1 --set train.threads=2 --set train.peak_gflops=0 "
                        "--set train.run_dir=" + dataset() + "/calib_run"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("FMA peak 1234.5 GFLOP/s (2 threads, calibration file)"), std::string::npos) << r.out;
  std::filesystem::remove_all(cache);
}
