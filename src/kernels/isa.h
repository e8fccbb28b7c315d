// Instruction-set tiers and runtime dispatch (BLIS's context / ggml's cpu feature checks). The CPU's features are
// read once (Debian's libcpuinfo: cpuid plus the OS's XSAVE state, so AVX-512 counts only where the kernel saves
// zmm registers); the best tier it can run is chosen unless FRONTIER_ISA forces one.
//
//   isa_init_or_exit();                       // once, at start: a bad FRONTIER_ISA is a one-line error, exit 1
//   Isa t = active_isa();                     // e.g. Isa::kAvx512Bf16
//   std::printf("%s\n", kernels_banner().c_str());   // "kernels: avx512bf16 (fp32: avx512 12x32, bf16: ...)"
//
// Tiers, each a superset of the one before (the kernels for each live in src/kernels/<tier>/, compiled with that
// tier's target flags only, so the binary runs on any x86-64 CPU and never executes an instruction it lacks):
//   ref         portable C++ microkernels (the reference every tier is tested against)
//   avx2        AVX2 + FMA fp32 GEMM (6x16), libmvec AVX2 exp/tanh
//   avx512      AVX-512 F/BW/VL/DQ fp32 GEMM (12x32)
//   avx512bf16  + AVX512_BF16: bf16 GEMM by vdpbf16ps (12x32 pairs), the native mixed-precision tier
//   amx         + AMX-TILE and AMX-BF16 (Sapphire Rapids and later Xeons): bf16 GEMM on the tile unit (32x32 of
//               TDPBF16PS), granted by the kernel per process (arch_prctl); everything else as avx512bf16
// A tier without a native bf16 kernel runs bf16 GEMMs on the reference bf16 microkernel (same numbers, slow):
// `precision = auto` picks bf16 only on avx512bf16.
#pragma once

#include <string>

#include "util/status.h"

namespace frontier {

enum class Isa { kRef = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Bf16 = 3, kAmx = 4 };

struct CpuFeatures {
  bool avx2_fma = false;    // AVX2 and FMA3
  bool avx512 = false;      // AVX-512 F, BW, VL, DQ (OS saves zmm state)
  bool avx512bf16 = false;  // AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16)
  bool amx = false;         // AMX-TILE + AMX-BF16 by cpuid (Debian 12's libcpuinfo predates them), OS-enabled and granted
  std::string cpu_name;     // e.g. "AMD EPYC"
  int l1d_kb = 0, l2_kb = 0, l3_kb = 0;  // per core (L1, L2) and total (L3), 0 if unknown
  int cores = 0;  // physical cores (SMT siblings share one core's arithmetic units), 0 if unknown
};

const CpuFeatures& cpu_features();
const char* isa_name(Isa t);
bool isa_supported(Isa t);  // by this CPU
Isa best_isa();             // the highest tier this CPU supports
// Parses a tier name ("ref", "avx2", "avx512", "avx512bf16"); error names the valid ones and what the CPU has.
Status parse_isa(const std::string& name, Isa* out);
// Reads FRONTIER_ISA (unset or empty: best_isa()); an unknown name or a tier the CPU lacks is an error.
Status isa_from_env(Isa* out);
// Calls isa_from_env once and sets the active tier; on error prints "error: ..." and exits 1.
void isa_init_or_exit();
Isa active_isa();          // isa_init_or_exit() on first use
void set_active_isa(Isa t);  // tests and benchmarks compare tiers (FRONTIER_CHECKs the CPU supports it)
// "kernels: avx512bf16 (fp32 gemm: avx512 12x32, bf16 gemm: avx512bf16 12x32) cpu: AMD EPYC"
std::string kernels_banner();
// The CPU's features as a space-separated list ("avx2 fma avx512 avx512bf16").
std::string cpu_feature_list();

}  // namespace frontier
