// The microkernel rows each tier's folder defines (internal to src/kernels: the driver's dispatch table in
// gemm.cpp and the tests use them). A tier's file is compiled with that tier's target flags only.
#pragma once

#include "kernels/gemm.h"

namespace frontier {

const GemmKernel& gemm_kernel_ref_fp32();        // ref/ukernel_ref.cpp
const GemmKernel& gemm_kernel_ref_bf16();        // ref/ukernel_ref.cpp
const GemmKernel& gemm_kernel_avx2_fp32();       // avx2/ukernel_avx2.cpp
const GemmKernel& gemm_kernel_avx512_fp32();     // avx512/ukernel_avx512.cpp
const GemmKernel& gemm_kernel_avx512bf16_bf16();  // avx512bf16/ukernel_avx512bf16.cpp
const GemmKernel& gemm_kernel_amx_bf16();        // amx/ukernel_amx.cpp

}  // namespace frontier
