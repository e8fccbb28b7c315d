// Helpers shared by the tests: temporary directories, running the CLI, locating shared data.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>
#include <sys/wait.h>

namespace frontier::testing {

inline std::string make_temp_dir(const std::string& tag) {
  std::string tmpl = (std::filesystem::temp_directory_path() / ("frontier_" + tag + "_XXXXXX")).string();
  char* p = mkdtemp(tmpl.data());
  EXPECT_NE(p, nullptr);
  return tmpl;
}

struct RunResult {
  int rc;
  std::string out;  // stdout + stderr
};

inline RunResult run_cmd(const std::string& cmd) {
  RunResult r{0, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return r;
}

inline std::string frontier_bin() { return FRONTIER_BINARY; }
inline std::string source_dir() { return FRONTIER_SOURCE_DIR; }

// The shared benchmark data (CI has it; see ../shared/data/README.md). Tests that need it fail loudly without it.
inline std::string shared_data() { return source_dir() + "/../shared/data"; }
inline std::string wiki_dir() { return shared_data() + "/corpus/wikipedia-en-2015"; }
#define REQUIRE_SHARED_DATA()                                                                              \
  ASSERT_TRUE(std::filesystem::exists(::frontier::testing::wiki_dir() + "/wiki_07.jsonl.zst"))             \
      << "shared data missing at " << ::frontier::testing::wiki_dir() << " (this test needs ../shared/data)"

inline void write_text(const std::string& path, const std::string& s) {
  FILE* f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  fwrite(s.data(), 1, s.size(), f);
  fclose(f);
}

// n floats uniform in [-1, 1), deterministic for a seed (the GEMM and peer tests' operands).
inline std::vector<float> rand_floats(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

}  // namespace frontier::testing
