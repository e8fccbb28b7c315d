// `frontier calibrate` and train's use of its file.
#include <cstring>
#include <tuple>
#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "data/loader.h"
#include "eval/core_eval.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "torch_peer.h"
#include "train/checkpoint.h"
#include "train_fixture.h"
#include "util/file.h"
#include "calibrate/calibrate.h"
#include "kernels/isa.h"

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
  // Every unit the CPU has is measured; the others are 0.
  EXPECT_EQ(j["avx512_gflops"].get<double>() > 0, isa_supported(Isa::kAvx512));
  EXPECT_EQ(j["bf16_gflops"].get<double>() > 0, isa_supported(Isa::kAvx512Bf16));
  EXPECT_EQ(j["amx_gflops"].get<double>() > 0, isa_supported(Isa::kAmx));
  // Recognisable values: train must take the peak of the unit its precision runs on.
  j["fma_gflops"] = 1234.5;
  if (isa_supported(Isa::kAvx512)) j["avx512_gflops"] = 2345.5;
  if (isa_supported(Isa::kAvx512Bf16)) j["bf16_gflops"] = 3456.5;
  if (isa_supported(Isa::kAmx)) j["amx_gflops"] = 4567.5;
  write_text(cache + "/calibration.json", j.dump());
  for (const char* prec : {"fp32", "auto"}) {
    r = run_cmd("FRONTIER_CACHE=" + cache + " " +
                train_cmd("--budget 1000 --set train.max_steps=1 --set train.threads=2 --set train.peak_gflops=0 "
                          "--set train.precision=" + std::string(prec) + " --set train.run_dir=" + dataset() +
                          "/calib_run_" + prec));
    ASSERT_EQ(r.rc, 0) << r.out;
    // auto: bf16 where the tier has it and the (doctored) file says its unit is the faster, as it does here.
    const Precision p = std::string(prec) == "auto" && active_isa() >= Isa::kAvx512Bf16 ? Precision::kBf16
                                                                                       : Precision::kFp32;
    const PeakUnit unit = peak_unit_for(p, active_isa());
    const double want = unit == PeakUnit::kAvx2Fma     ? 1234.5
                        : unit == PeakUnit::kAvx512Fma ? 2345.5
                        : unit == PeakUnit::kBf16Dot   ? 3456.5
                                                       : 4567.5;
    char line[160];
    std::snprintf(line, sizeof(line), "%s peak %.1f GFLOP/s (2 threads, calibration file)", peak_unit_name(unit), want);
    EXPECT_NE(r.out.find(line), std::string::npos) << "want '" << line << "' in\n" << r.out;
  }
  // The file of 2 threads serves a 1-thread run with its 1-thread measurements (the _1t fields).
  j["fma_gflops_1t"] = 123.5;
  if (isa_supported(Isa::kAvx512)) j["avx512_gflops_1t"] = 234.5;
  write_text(cache + "/calibration.json", j.dump());
  r = run_cmd("FRONTIER_CACHE=" + cache + " " +
              train_cmd("--budget 1000 --set train.max_steps=1 --set train.threads=1 --set train.peak_gflops=0 "
                        "--set train.precision=fp32 --set train.run_dir=" + dataset() + "/calib_run_1t"));
  ASSERT_EQ(r.rc, 0) << r.out;
  {
    const PeakUnit unit = peak_unit_for(Precision::kFp32, active_isa());
    char line[160];
    std::snprintf(line, sizeof(line), "%s peak %.1f GFLOP/s (1 threads, calibration file)", peak_unit_name(unit),
                  unit == PeakUnit::kAvx2Fma ? 123.5 : 234.5);
    EXPECT_NE(r.out.find(line), std::string::npos) << "want '" << line << "' in\n" << r.out;
  }
  // A file from an older Frontier (no key for a unit this CPU has) is not trusted: the peak is measured now.
  if (isa_supported(Isa::kAvx512)) {
    j.erase("avx512_gflops");
    j.erase("bf16_gflops");
    j.erase("amx_gflops");
    write_text(cache + "/calibration.json", j.dump());
    r = run_cmd("FRONTIER_CACHE=" + cache + " " +
                train_cmd("--budget 1000 --set train.max_steps=1 --set train.threads=2 --set train.peak_gflops=0 "
                          "--set train.precision=fp32 --set train.run_dir=" + dataset() + "/calib_run_stale"));
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("(2 threads, measured now"), std::string::npos) << r.out;
  }
  std::filesystem::remove_all(cache);
}

// An all-threads peak measured while a core was busy (a sibling vCPU descheduled: seen on a shared EPYC, the
// 2-thread FMA loop at 1.03x the 1-thread one) would inflate every MFU against it: calibrate measures until it
// scales, and a run reading such a file says so. SMT siblings share a core's units, so where the threads outnumber
// the physical cores, 1x is right and no warning is due.
TEST(Calibrate, WarnsWhenTheAllThreadsPeakDoesNotScale) {
  const bool two_cores = cpu_features().cores >= 2;
  EXPECT_EQ(peak_scaling_warning(PeakUnit::kAvx2Fma, 2, 100.0, 190.0), "");  // 1.9x over 2 cores: plausible
  EXPECT_EQ(peak_scaling_warning(PeakUnit::kAvx2Fma, 1, 100.0, 100.0), "");
  const std::string w = peak_scaling_warning(PeakUnit::kAvx2Fma, 2, 100.0, 103.0);
  EXPECT_EQ(w.empty(), !two_cores) << w;
  if (two_cores) {
    EXPECT_NE(w.find("only 1.03x its 1-thread peak (100.0)"), std::string::npos) << w;
    EXPECT_NE(w.find("re-run `frontier calibrate`"), std::string::npos) << w;
  }
  if (!two_cores || isa_supported(Isa::kAvx512)) return;  // the doctored file below is for the avx2 fp32 unit
  std::string cache = make_temp_dir("calib_scale");
  nlohmann::json j = {{"threads", 2}, {"fma_gflops", 103.0}, {"fma_gflops_1t", 100.0}, {"mem_gbs", 20.0},
                      {"mem_gbs_1t", 15.0}, {"avx512_gflops", 0}, {"avx512_gflops_1t", 0}, {"bf16_gflops", 0},
                      {"bf16_gflops_1t", 0}, {"amx_gflops", 0}, {"amx_gflops_1t", 0}};
  write_text(cache + "/calibration.json", j.dump());
  auto r = run_cmd("FRONTIER_CACHE=" + cache + " " +
                   train_cmd("--budget 1000 --set train.max_steps=1 --set train.threads=2 --set train.peak_gflops=0 "
                             "--set train.precision=fp32 --set train.run_dir=" + dataset() + "/calib_run_noscale"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("warning: the avx2 fp32 fma peak on 2 threads (103.0 GFLOP/s) is only 1.03x"),
            std::string::npos) << r.out;
  std::filesystem::remove_all(cache);
}

// train.precision = auto without a calibration file: the two units are measured once per machine and recorded
// (auto_precision.json); the next run reads the record instead of timing again, so every run of a session resolves
// alike. A doctored record (bf16 100x the fp32 unit) decides the next run, which shows it is read, not re-measured.
TEST(Calibrate, AutoPrecisionIsMeasuredOncePerMachine) {
  std::string cache = make_temp_dir("auto_prec");
  auto run = [&](const std::string& name) {
    return run_cmd("FRONTIER_CACHE=" + cache + " " +
                   train_cmd("--budget 1000 --set train.max_steps=1 --set train.threads=1 --set train.precision=auto "
                             "--set train.run_dir=" + cache + "/" + name));
  };
  auto r = run("first");
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string path = cache + "/auto_precision.json";
  if (active_isa() < Isa::kAvx512Bf16) {  // nothing to decide: fp32, nothing measured or recorded
    EXPECT_NE(r.out.find("no AVX512_BF16 tier"), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(path));
    std::filesystem::remove_all(cache);
    return;
  }
  EXPECT_NE(r.out.find("measured now on 1 thread, best of 3 each, recorded in " + path), std::string::npos) << r.out;
  std::string text;
  ASSERT_TRUE(read_file(path, &text).ok());
  auto j = nlohmann::json::parse(text);
  EXPECT_GT(j["bf16_gflops_1t"].get<double>(), 0.0);
  EXPECT_GT(j["fp32_gflops_1t"].get<double>(), 0.0);
  for (const auto& [bf, fp, want] : {std::tuple{1000.0, 10.0, "precision: bf16"}, {10.0, 1000.0, "precision: fp32"}}) {
    j["bf16_gflops_1t"] = bf;
    j["fp32_gflops_1t"] = fp;
    write_text(path, j.dump());
    r = run(std::string("doctored_") + (want + 11));
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("measured on 1 thread before, recorded in " + path), std::string::npos) << r.out;
  }
  // A record from another machine (or a sanitized build) is not this one's: measured again and replaced.
  j["machine"] = "another cpu";
  write_text(path, j.dump());
  r = run("other_machine");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("measured now on 1 thread"), std::string::npos) << r.out;
  ASSERT_TRUE(read_file(path, &text).ok());
  EXPECT_NE(nlohmann::json::parse(text)["machine"], "another cpu");
  std::filesystem::remove_all(cache);
}
