// Peak-throughput loops for `frontier calibrate` (one per arithmetic unit, each in its tier's folder and compiled
// with that tier's flags): independent chains of the unit's instruction, enough of them to hide its latency.
// Each runs `iters` rounds on the calling thread and returns the FLOPs it performed (an FMA counts 2; a bf16 pair
// dot product 4). Call only where isa_supported() says the unit exists.
#pragma once

#include <cstdint>

namespace frontier {

double peak_loop_avx2_fma(int64_t iters);        // avx2/peak_avx2.cpp: ymm vfmadd231ps
double peak_loop_avx512_fma(int64_t iters);      // avx512/peak_avx512.cpp: zmm vfmadd231ps
double peak_loop_avx512bf16_dot(int64_t iters);  // avx512bf16/peak_avx512bf16.cpp: zmm vdpbf16ps
double peak_loop_amx_bf16(int64_t iters);        // amx/peak_amx.cpp: tdpbf16ps on 4 accumulator tiles

}  // namespace frontier
