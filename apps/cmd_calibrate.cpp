// frontier calibrate: measure and save the peak of each arithmetic unit and memory bandwidth
// (calibrate/calibrate.h).
#include <omp.h>

#include <cstdio>
#include <memory>

#include "calibrate/calibrate.h"
#include "commands.h"
#include "kernels/isa.h"

namespace frontier::cli {
namespace {

struct CalibrateArgs {
  int threads = 0;
};

int run_calibrate(const CalibrateArgs& a) {
  int n = a.threads > 0 ? a.threads : omp_get_max_threads();
  Calibration c = calibrate(n);
  std::printf("%s\n", kernels_banner().c_str());
  std::printf("cpu features: %s\n", cpu_feature_list().c_str());
  for (PeakUnit u : {PeakUnit::kAvx2Fma, PeakUnit::kAvx512Fma, PeakUnit::kBf16Dot, PeakUnit::kAmxBf16}) {
    if (!peak_unit_supported(u)) {
      std::printf("%-20s not on this CPU\n", peak_unit_name(u));
      continue;
    }
    std::printf("%-20s %7.1f GFLOP/s (1 thread)  %7.1f (%d threads)\n", peak_unit_name(u), c.peak_1t(u), c.peak(u),
                n);
    const std::string w = peak_scaling_warning(u, n, c.peak_1t(u), c.peak(u));
    if (!w.empty()) std::fprintf(stderr, "%s\n", w.c_str());
  }
  std::printf("%-20s %7.1f GB/s    (1 thread)  %7.1f (%d threads)  [triad a = b + s*c]\n", "memory", c.mem_gbs_1t,
              c.mem_gbs, n);
  Status s = save_calibration(c, calibration_path());
  if (!s.ok()) return fail(s);
  std::printf("saved: %s\n", calibration_path().c_str());
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, Commands& cmds) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cal = app.add_subcommand("calibrate",
                                 "Measure the peak of every arithmetic unit this CPU has (AVX2 fp32 FMA, AVX-512 fp32 "
                                 "FMA, AVX512_BF16 dot product) and memory bandwidth, at 1 and N threads; save them "
                                 "for the MFU of train, bench and profile");
  cal->add_option("--threads", a->threads, "Threads (0 = all cores)")->capture_default_str();
  cmds.push_back({cal, [a] { return run_calibrate(*a); }});
}

}  // namespace frontier::cli
