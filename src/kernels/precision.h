// The arithmetic precision of GEMM operands: kFp32 everywhere, or kBf16 (inputs rounded to bf16 while packing,
// fp32 accumulation and output). `train.precision` (auto | fp32 | bf16) picks one for a run: auto is bf16 where
// the CPU multiplies bf16 natively (kernels/isa.h, tier avx512bf16), else fp32.
#pragma once

namespace frontier {

enum class Precision { kFp32 = 0, kBf16 = 1 };

inline const char* precision_name(Precision p) { return p == Precision::kBf16 ? "bf16" : "fp32"; }

}  // namespace frontier
