#include "calibrate/calibrate.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "kernels/peak.h"
#include "util/cache_dir.h"
#include "util/file.h"

namespace frontier {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
const char* kJsonKey[kPeakUnits][2] = {{"fma_gflops", "fma_gflops_1t"},
                              {"avx512_gflops", "avx512_gflops_1t"},
                              {"bf16_gflops", "bf16_gflops_1t"},
                              {"amx_gflops", "amx_gflops_1t"}};
}  // namespace

const char* peak_unit_name(PeakUnit u) {
  switch (u) {
    case PeakUnit::kAvx2Fma: return "avx2 fp32 fma";
    case PeakUnit::kAvx512Fma: return "avx512 fp32 fma";
    case PeakUnit::kBf16Dot: return "avx512bf16 bf16 dot";
    case PeakUnit::kAmxBf16: return "amx bf16 tile";
  }
  return "?";
}

bool peak_unit_supported(PeakUnit u) {
  switch (u) {
    case PeakUnit::kAvx2Fma: return isa_supported(Isa::kAvx2);
    case PeakUnit::kAvx512Fma: return isa_supported(Isa::kAvx512);
    case PeakUnit::kBf16Dot: return isa_supported(Isa::kAvx512Bf16);
    case PeakUnit::kAmxBf16: return isa_supported(Isa::kAmx);
  }
  return false;
}

PeakUnit peak_unit_for(Precision p, Isa t) {
  if (p == Precision::kBf16 && t == Isa::kAmx) return PeakUnit::kAmxBf16;
  if (p == Precision::kBf16 && t == Isa::kAvx512Bf16) return PeakUnit::kBf16Dot;
  if (t == Isa::kAvx512 || t == Isa::kAvx512Bf16 || t == Isa::kAmx) return PeakUnit::kAvx512Fma;
  return PeakUnit::kAvx2Fma;
}

double Calibration::peak(PeakUnit u) const {
  return u == PeakUnit::kAvx2Fma ? fma_gflops : u == PeakUnit::kAvx512Fma ? avx512_gflops
         : u == PeakUnit::kBf16Dot ? bf16_gflops : amx_gflops;
}
double Calibration::peak_1t(PeakUnit u) const {
  return u == PeakUnit::kAvx2Fma ? fma_gflops_1t : u == PeakUnit::kAvx512Fma ? avx512_gflops_1t
         : u == PeakUnit::kBf16Dot ? bf16_gflops_1t : amx_gflops_1t;
}

double measure_peak_gflops(PeakUnit u, int threads) {
  if (!peak_unit_supported(u)) return 0;
  const int64_t iters = 8'000'000;
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    double flops = 0;
    auto t0 = Clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : flops)
    {
      switch (u) {
        case PeakUnit::kAvx2Fma: flops += peak_loop_avx2_fma(iters); break;
        case PeakUnit::kAvx512Fma: flops += peak_loop_avx512_fma(iters / 2); break;
        case PeakUnit::kBf16Dot: flops += peak_loop_avx512bf16_dot(iters / 4); break;
        case PeakUnit::kAmxBf16: flops += peak_loop_amx_bf16(iters / 16); break;
      }
    }
    best = std::max(best, flops / since(t0) / 1e9);
  }
  return best;
}

namespace {

// The machine a recorded auto pick belongs to: the CPU's name and features, and whether this build is sanitized
// (a sanitizer build's loops measure within 25% of each other, so its pick must not stand for a normal build's).
std::string auto_pick_machine() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  const char* build = "sanitized";
#else
  const char* build = "optimized";
#endif
  return cpu_features().cpu_name + " | " + cpu_feature_list() + " | tier " + isa_name(active_isa()) + " | " + build;
}

// The two 1-thread peaks auto measured before on this machine ($FRONTIER_CACHE/auto_precision.json), or false.
bool load_auto_pick(const std::string& path, double* bf, double* fp) {
  std::string text;
  if (!read_file(path, &text).ok()) return false;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("machine", std::string()) != auto_pick_machine()) return false;
  auto b = j.find("bf16_gflops_1t"), f = j.find("fp32_gflops_1t");
  if (b == j.end() || f == j.end() || !b->is_number() || !f->is_number()) return false;
  *bf = b->get<double>(), *fp = f->get<double>();
  return *bf > 0 && *fp > 0;
}

}  // namespace

std::string auto_precision_path() { return frontier_cache_dir() + "/auto_precision.json"; }

Precision fastest_precision(std::string* why) {
  static const std::pair<Precision, std::string> pick = [] {
    if (!peak_unit_supported(PeakUnit::kBf16Dot) || active_isa() < Isa::kAvx512Bf16)
      return std::make_pair(Precision::kFp32, std::string("fp32: no AVX512_BF16 tier"));
    const PeakUnit bf_unit = peak_unit_for(Precision::kBf16, active_isa());
    Calibration c;
    double bf = 0, fp = 0;
    std::string src;
    const std::string recorded = auto_precision_path();
    if (load_calibration(calibration_path(), omp_get_max_threads(), &c)) {
      bf = c.peak(bf_unit), fp = c.peak(PeakUnit::kAvx512Fma);
      src = "calibration file";
    } else if (load_auto_pick(recorded, &bf, &fp)) {
      // Measured once per machine and kept: every run of a session resolves auto alike (measured at each start, two
      // runs of one `frontier advise` on a loaded machine resolved differently and keyed their step times apart).
      src = "measured on 1 thread before, recorded in " + recorded;
    } else {
      // Interleaved, the best of three each: other work only slows a loop, so the best is the unit's speed, and
      // alternating the units means a burst of load cannot fall on one alone (measured once each, back to back,
      // a loaded machine gave bf16 118 vs fp32 104 and picked bf16 on a CPU whose fp32 unit is twice as fast).
      for (int round = 0; round < 3; round++) {
        bf = std::max(bf, measure_peak_gflops(bf_unit, 1));
        fp = std::max(fp, measure_peak_gflops(PeakUnit::kAvx512Fma, 1));
      }
      nlohmann::json j = {{"machine", auto_pick_machine()}, {"bf16_gflops_1t", bf}, {"fp32_gflops_1t", fp}};
      std::error_code ec;
      std::filesystem::create_directories(frontier_cache_dir(), ec);
      const bool saved = write_file_atomic(recorded, j.dump(1) + "\n").ok();  // unwritable cache: measured again
      src = "measured now on 1 thread, best of 3 each" + std::string(saved ? ", recorded in " + recorded : "");
    }
    char buf[400];
    std::snprintf(buf, sizeof(buf), "%s %.0f vs fp32 fma %.0f GFLOP/s, %s", peak_unit_name(bf_unit), bf, fp, src.c_str());
    // fp32 only when clearly faster: the units differ by about 2x either way on the CPUs seen (Zen 4: bf16 twice
    // the FMA; this Xeon: half). A sanitizer build's loops measure within 25% of each other: bf16, as before this
    // check existed. The run records what auto resolved to (train.precision in its config.toml), so a resume does
    // not measure again; `frontier calibrate` (whose file comes first) measures both units anew.
    return std::make_pair(bf >= 0.75 * fp ? Precision::kBf16 : Precision::kFp32, std::string(buf));
  }();
  if (why) *why = pick.second;
  return pick.first;
}

// The all-threads peak can only be as high as threads x the 1-thread one over the physical cores they run on
// (SMT siblings share a core's units: there 1x is right). On a shared host a sibling vCPU is sometimes descheduled
// for seconds: on the Zen 3 here the 2-thread FMA loop read 102.6 and 203.5 GFLOP/s a second apart, and the low
// one, saved by `frontier calibrate`, made `frontier profile` print an MFU of 96%.
namespace {
double expected_scaling(int threads) {
  const int cores = cpu_features().cores;
  return static_cast<double>(cores > 0 ? std::min(threads, cores) : threads);
}
bool scales(int threads, double one, double all) { return all >= 0.8 * expected_scaling(threads) * one; }
}  // namespace

std::string peak_scaling_warning(PeakUnit u, int threads, double one, double all) {
  if (threads <= 1 || one <= 0 || all <= 0 || scales(threads, one, all)) return "";
  char buf[400];
  std::snprintf(buf, sizeof(buf),
                "warning: the %s peak on %d threads (%.1f GFLOP/s) is only %.2fx its 1-thread peak (%.1f): a core was "
                "busy with other work while it was measured, so utilisation against it reads high; re-run `frontier "
                "calibrate` when the machine is quiet",
                peak_unit_name(u), threads, all, all / one, one);
  return buf;
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
  double* fields[kPeakUnits][2] = {{&c.fma_gflops_1t, &c.fma_gflops},
                                   {&c.avx512_gflops_1t, &c.avx512_gflops},
                                   {&c.bf16_gflops_1t, &c.bf16_gflops},
                                   {&c.amx_gflops_1t, &c.amx_gflops}};
  // Rounds of every unit at 1 and all threads, interleaved, the best of each kept, for at least 1.5 s and until
  // every all-threads peak scales plausibly (at most 5 s): other work only slows a loop, and on these shared hosts
  // a burst of it lasts seconds (the 1-thread loop read 63.6 and 101.9 GFLOP/s in two runs a second apart).
  auto all_scale = [&] {
    for (int u = 0; u < kPeakUnits; u++)
      if (threads > 1 && !scales(threads, *fields[u][0], *fields[u][1])) return false;
    return true;
  };
  for (auto t0 = Clock::now(); since(t0) < 1.5 || (!all_scale() && since(t0) < 5.0);) {
    for (int u = 0; u < kPeakUnits; u++) {
      *fields[u][0] = std::max(*fields[u][0], measure_peak_gflops(static_cast<PeakUnit>(u), 1));
      *fields[u][1] = threads > 1 ? std::max(*fields[u][1], measure_peak_gflops(static_cast<PeakUnit>(u), threads))
                                  : *fields[u][0];
    }
  }
  c.mem_gbs_1t = measure_triad_gbs(1);
  c.mem_gbs = threads > 1 ? measure_triad_gbs(threads) : c.mem_gbs_1t;
  return c;
}

std::string calibration_path() { return frontier_cache_dir() + "/calibration.json"; }

Status save_calibration(const Calibration& c, const std::string& path) {
  std::string dir = path.substr(0, path.rfind('/'));
  FRONTIER_RETURN_IF_ERROR(make_dirs(dir, "cache directory: set FRONTIER_CACHE"));
  nlohmann::json j = {{"threads", c.threads}, {"mem_gbs_1t", c.mem_gbs_1t}, {"mem_gbs", c.mem_gbs},
                      {"cpu", cpu_features().cpu_name}, {"cpu_features", cpu_feature_list()}};
  for (int u = 0; u < kPeakUnits; u++) {
    j[kJsonKey[u][0]] = c.peak(static_cast<PeakUnit>(u));
    j[kJsonKey[u][1]] = c.peak_1t(static_cast<PeakUnit>(u));
  }
  return write_file_atomic(path, j.dump(2) + "\n");
}

bool load_calibration(const std::string& path, int threads, Calibration* c) {
  std::string text;
  if (!read_file(path, &text).ok()) return false;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  // save_calibration wrote it; anything else (a hand edit, a damaged disk) is ignored, with a warning, and the
  // caller measures instead. Every field is read as a double: json::value throws on a field of another type, and
  // a number too large for an int does not convert to one.
  std::string bad = j.is_discarded() ? "not valid JSON" : !j.is_object() ? "not a JSON object" : "";
  for (const char* k : {"threads", "fma_gflops", "fma_gflops_1t", "avx512_gflops", "avx512_gflops_1t", "bf16_gflops",
                        "bf16_gflops_1t", "amx_gflops", "amx_gflops_1t", "mem_gbs", "mem_gbs_1t"})
    if (bad.empty() && j.contains(k) && !j[k].is_number()) bad = std::string("\"") + k + "\" is not a number";
  if (!bad.empty()) {
    std::fprintf(stderr, "warning: %s: %s; ignoring it and measuring instead (re-run `frontier calibrate`)\n",
                 path.c_str(), bad.c_str());
    return false;
  }
  // A file of N threads also serves 1 thread: every calibration measures each unit on one thread too (the _1t
  // fields), so `advise --threads 1` or train.threads = 1 need no second calibration.
  const bool one_of_many = threads == 1 && j.value("threads", 0.0) > 1;
  const int all = one_of_many ? 1 : 0;  // kJsonKey column of the all-threads value: the _1t one for one thread
  if ((j.value("threads", 0.0) != threads && !one_of_many) || !(j.value(kJsonKey[0][all], 0.0) > 0)) return false;
  for (int u = 1; u < kPeakUnits; u++)  // a file written before this unit was measured, or on another CPU
    if (peak_unit_supported(static_cast<PeakUnit>(u)) && !(j.value(kJsonKey[u][all], 0.0) > 0)) return false;
  c->threads = threads;
  c->fma_gflops_1t = j.value("fma_gflops_1t", 0.0);
  c->fma_gflops = j.value(kJsonKey[0][all], 0.0);
  c->avx512_gflops_1t = j.value("avx512_gflops_1t", 0.0);
  c->avx512_gflops = j.value(kJsonKey[1][all], 0.0);
  c->bf16_gflops_1t = j.value("bf16_gflops_1t", 0.0);
  c->bf16_gflops = j.value(kJsonKey[2][all], 0.0);
  c->amx_gflops_1t = j.value("amx_gflops_1t", 0.0);
  c->amx_gflops = j.value(kJsonKey[3][all], 0.0);
  c->mem_gbs_1t = j.value("mem_gbs_1t", 0.0);
  c->mem_gbs = j.value(one_of_many ? "mem_gbs_1t" : "mem_gbs", 0.0);
  return true;
}

Ceilings machine_ceilings(int threads, Precision p, double peak_gflops, double mem_gbs) {
  const PeakUnit unit = peak_unit_for(p, active_isa());
  Ceilings c{peak_gflops, mem_gbs, "given", peak_gflops > 0 ? "given" : peak_unit_name(unit)};
  Calibration cal;
  if (c.peak_gflops <= 0 && load_calibration(calibration_path(), threads, &cal)) {
    c.peak_gflops = cal.peak(unit);
    if (c.mem_gbs <= 0) c.mem_gbs = cal.mem_gbs;
    c.source = "calibration file";
    static bool warned = false;  // once a process: bench asks for each precision and depth
    const std::string w = peak_scaling_warning(unit, threads, cal.peak_1t(unit), cal.peak(unit));
    if (!w.empty() && !warned) std::fprintf(stderr, "%s (%s)\n", w.c_str(), calibration_path().c_str()), warned = true;
  } else if (c.peak_gflops <= 0) {
    c.peak_gflops = measure_peak_gflops(unit, threads);
    c.source = "measured now";
  }
  if (c.mem_gbs <= 0) c.mem_gbs = measure_triad_gbs(threads);
  return c;
}

}  // namespace frontier
