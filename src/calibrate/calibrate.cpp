#include "calibrate/calibrate.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "data/default_corpus.h"
#include "util/file.h"

namespace frontier {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

double measure_fma_gflops(int threads) {
  const int64_t iters = 20'000'000;
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    auto t0 = Clock::now();
#pragma omp parallel num_threads(threads)
    {
      __m256 a[10];  // 10 independent chains hide the FMA latency (4 cycles) on 2 ports
      for (int i = 0; i < 10; i++) a[i] = _mm256_set1_ps(1.0f + 1e-3f * i);
      const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
      for (int64_t i = 0; i < iters; i++)
        for (int k = 0; k < 10; k++) a[k] = _mm256_fmadd_ps(a[k], b, c);
      float sink = 0;
      for (int i = 0; i < 10; i++) sink += _mm256_cvtss_f32(a[i]);
      if (sink == 12345.f) std::printf(" ");
    }
    best = std::max(best, threads * iters * 10.0 * 16.0 / since(t0) / 1e9);  // 8 lanes x 2 FLOPs
  }
  return best;
}

double measure_triad_gbs(int threads) {
  const size_t n = size_t(1) << 25;  // 3 x 128 MiB
  std::vector<float> a(n), b(n, 1.f), c(n, 2.f);
  double best = 0;
  for (int rep = 0; rep < 4; rep++) {
    auto t0 = Clock::now();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < n; i++) a[i] = b[i] + 0.5f * c[i];
    double secs = since(t0);
    if (rep > 0) best = std::max(best, 3.0 * 4.0 * n / secs / 1e9);  // rep 0 faults the pages in
  }
  if (a[n / 2] == 12345.f) std::printf(" ");
  return best;
}

Calibration calibrate(int threads) {
  Calibration c;
  c.threads = threads;
  c.fma_gflops_1t = measure_fma_gflops(1);
  c.fma_gflops = threads > 1 ? measure_fma_gflops(threads) : c.fma_gflops_1t;
  c.mem_gbs_1t = measure_triad_gbs(1);
  c.mem_gbs = threads > 1 ? measure_triad_gbs(threads) : c.mem_gbs_1t;
  return c;
}

std::string calibration_path() { return frontier_cache_dir() + "/calibration.json"; }

Status save_calibration(const Calibration& c, const std::string& path) {
  std::string dir = path.substr(0, path.rfind('/'));
  FRONTIER_RETURN_IF_ERROR(make_dirs(dir));
  nlohmann::json j = {{"threads", c.threads},     {"fma_gflops_1t", c.fma_gflops_1t}, {"fma_gflops", c.fma_gflops},
                      {"mem_gbs_1t", c.mem_gbs_1t}, {"mem_gbs", c.mem_gbs}};
  return write_file_atomic(path, j.dump(2) + "\n");
}

bool load_calibration(const std::string& path, int threads, Calibration* c) {
  std::string text;
  if (!read_file(path, &text).ok()) return false;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || j.value("threads", 0) != threads || !(j.value("fma_gflops", 0.0) > 0)) return false;
  c->threads = threads;
  c->fma_gflops_1t = j.value("fma_gflops_1t", 0.0);
  c->fma_gflops = j.value("fma_gflops", 0.0);
  c->mem_gbs_1t = j.value("mem_gbs_1t", 0.0);
  c->mem_gbs = j.value("mem_gbs", 0.0);
  return true;
}

Ceilings machine_ceilings(int threads, double peak_gflops, double mem_gbs) {
  Ceilings c{peak_gflops, mem_gbs, "given"};
  Calibration cal;
  if (c.peak_gflops <= 0 && load_calibration(calibration_path(), threads, &cal)) {
    c.peak_gflops = cal.fma_gflops;
    if (c.mem_gbs <= 0) c.mem_gbs = cal.mem_gbs;
    c.source = "calibration file";
  } else if (c.peak_gflops <= 0) {
    c.peak_gflops = measure_fma_gflops(threads);
    c.source = "measured now";
  }
  if (c.mem_gbs <= 0) c.mem_gbs = measure_triad_gbs(threads);
  return c;
}

}  // namespace frontier
