// The machine's ceilings, measured: the peak of every arithmetic unit the CPU has (independent chains of AVX2 fp32
// FMAs, AVX-512 fp32 FMAs, AVX512_BF16 dot products; kernels/peak.h) and memory bandwidth (a STREAM-style triad
// over arrays far larger than the caches), at 1 thread and at all threads. `frontier calibrate` saves them to
// $FRONTIER_CACHE/calibration.json; train, bench and profile read the peak of the precision a run uses from there
// (else measure it), so MFU is always against the unit that does the work ("mfu 48.1% of bf16 dot peak 744").
#pragma once

#include <string>

#include "kernels/isa.h"
#include "kernels/precision.h"
#include "util/status.h"

namespace frontier {

enum class PeakUnit { kAvx2Fma = 0, kAvx512Fma = 1, kBf16Dot = 2, kAmxBf16 = 3 };
constexpr int kPeakUnits = 4;
const char* peak_unit_name(PeakUnit u);  // "avx2 fp32 fma", "avx512 fp32 fma", "avx512bf16 bf16 dot"
bool peak_unit_supported(PeakUnit u);
// The unit whose peak bounds GEMMs of precision p at tier t: fp32 -> avx512 fma from the avx512 tier up, else avx2
// (the ref tier too: its loops are what the compiler makes of them); bf16 -> the bf16 dot unit at avx512bf16, else
// the fp32 unit (bf16 is then emulated).
PeakUnit peak_unit_for(Precision p, Isa t);

struct Calibration {
  int threads = 0;
  double fma_gflops_1t = 0, fma_gflops = 0;        // AVX2 fp32 FLOP/s (an FMA counts 2)
  double avx512_gflops_1t = 0, avx512_gflops = 0;  // AVX-512 fp32 FMA; 0 where the CPU has none
  double bf16_gflops_1t = 0, bf16_gflops = 0;      // vdpbf16ps (a pair product-sum counts 4); 0 where none
  double amx_gflops_1t = 0, amx_gflops = 0;        // tdpbf16ps (16 x 16 x 32 products); 0 where none
  double mem_gbs_1t = 0, mem_gbs = 0;  // bytes moved by the triad a[i] = b[i] + s * c[i] (3 x 4 bytes each)
  double peak(PeakUnit u) const;       // all threads
  double peak_1t(PeakUnit u) const;
};

double measure_peak_gflops(PeakUnit u, int threads);
// "" when the all-threads peak scales plausibly over the 1-thread one, else a one-line warning naming the
// unit, both peaks and the fix (an MFU against a peak measured while a core was busy reads high).
std::string peak_scaling_warning(PeakUnit u, int threads, double one, double all);
inline double measure_fma_gflops(int threads) { return measure_peak_gflops(PeakUnit::kAvx2Fma, threads); }
double measure_triad_gbs(int threads);
Calibration calibrate(int threads);
// What train.precision = auto runs: bf16 where the CPU has the AVX512_BF16 dot unit, unless its fp32 FMA unit is
// clearly (> 4/3 x) faster, else fp32 (on some Xeons vdpbf16ps has half the FMA's throughput). The peaks: from the
// calibration file when there is one, else from auto_precision_path() for this machine, else both measured on one
// thread and recorded there (once per machine, so every run of a session resolves auto alike). why: one line
// saying which and the peaks.
Precision fastest_precision(std::string* why = nullptr);
std::string auto_precision_path();  // $FRONTIER_CACHE/auto_precision.json: auto's 1-thread peaks, once per machine
std::string calibration_path();  // $FRONTIER_CACHE/calibration.json
Status save_calibration(const Calibration& c, const std::string& path);
// False if absent, for another thread count, or missing a unit this CPU has (a file from an older Frontier).
bool load_calibration(const std::string& path, int threads, Calibration* c);

// The ceilings bench, profile and train measure against: the given values where > 0, else the calibration file
// for this thread count, else measured now (a few seconds). The peak is the unit's that runs GEMMs of precision p
// at the active tier; source says where it came from.
struct Ceilings {
  double peak_gflops = 0, mem_gbs = 0;
  std::string source;
  std::string unit;  // peak_unit_name(), or "given"
};
Ceilings machine_ceilings(int threads, Precision p = Precision::kFp32, double peak_gflops = 0, double mem_gbs = 0);

}  // namespace frontier
