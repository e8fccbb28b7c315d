// The machine's ceilings, measured: fp32 FMA peak (independent AVX2 FMA chains) and memory bandwidth (a STREAM-
// style triad over arrays far larger than the caches), at 1 thread and at all threads. `frontier calibrate` saves
// them to $FRONTIER_CACHE/calibration.json; `frontier train` reads the FMA peak from there for MFU (else measures).
#pragma once

#include <string>

#include "util/status.h"

namespace frontier {

struct Calibration {
  int threads = 0;
  double fma_gflops_1t = 0, fma_gflops = 0;  // fp32 FLOP/s (an FMA counts 2)
  double mem_gbs_1t = 0, mem_gbs = 0;        // bytes moved by the triad a[i] = b[i] + s * c[i] (3 x 4 bytes each)
};

double measure_fma_gflops(int threads);
double measure_triad_gbs(int threads);
Calibration calibrate(int threads);
std::string calibration_path();  // $FRONTIER_CACHE/calibration.json
Status save_calibration(const Calibration& c, const std::string& path);
// False if absent or for another thread count.
bool load_calibration(const std::string& path, int threads, Calibration* c);

// The ceilings bench and profile measure against: the given values where > 0, else the calibration file for this
// thread count, else measured now (a few seconds). source says which.
struct Ceilings {
  double peak_gflops = 0, mem_gbs = 0;
  std::string source;
};
Ceilings machine_ceilings(int threads, double peak_gflops = 0, double mem_gbs = 0);

}  // namespace frontier
