// `frontier bench --only variants --quick` end to end: the machine line, the four headline ratios (each with
// its target and met / SHORT), the MTP line, and JSON that agrees. Speeds and targets are never asserted
// (noisy machines); only that every ratio is measured: finite and positive.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

TEST(BenchVariants, HeadlineRatiosAndMachineLine) {
  std::string dir = make_temp_dir("bench_variants");
  auto r = run_cmd(frontier_bin() + " bench --only variants --quick --repeats 1 --json " + dir + "/v.json");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.rfind("machine: ", 0), 0u) << r.out;  // the first line
  EXPECT_NE(r.out.find(" threads, tier "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("quick run"), std::string::npos) << r.out;  // the smaller shapes are stated
  for (int n = 1; n <= 4; n++) {
    const std::string tag = "headline " + std::to_string(n) + " ";
    const size_t at = r.out.find(tag);
    ASSERT_NE(at, std::string::npos) << tag << "missing:\n" << r.out;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    const size_t ratio = line.find(" ratio ");
    ASSERT_NE(ratio, std::string::npos) << line;
    const double v = std::strtod(line.c_str() + ratio + 7, nullptr);
    EXPECT_TRUE(std::isfinite(v) && v > 0) << line;
    EXPECT_NE(line.find("want "), std::string::npos) << line;
    EXPECT_TRUE(line.find("met") != std::string::npos || line.find("SHORT") != std::string::npos) << line;
  }
  EXPECT_NE(r.out.find("mtp fp32 cost per extra predicted token"), std::string::npos) << r.out;

  std::string text;
  ASSERT_TRUE(read_file(dir + "/v.json", &text).ok());
  auto j = nlohmann::json::parse(text);
  ASSERT_GE(j["headlines"].size(), 4u);
  for (const auto& h : j["headlines"]) {
    const double v = h["ratio"].get<double>();
    EXPECT_TRUE(std::isfinite(v) && v > 0) << h.dump();
  }
  ASSERT_FALSE(j["rows"].empty());
  for (const auto& row : j["rows"]) {
    EXPECT_GT(row["ms"].get<double>(), 0) << row.dump();
    if (row.contains("ref_over_fast")) {
      EXPECT_GT(row["ref_over_fast"].get<double>(), 0) << row.dump();
    }
  }
  for (const auto& m : j["mtp"]) EXPECT_TRUE(std::isfinite(m["ms_per_extra"].get<double>())) << m.dump();
}
