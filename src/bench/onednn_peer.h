// oneDNN's bf16 matmul, the peer `frontier bench` times Frontier's bf16 GEMM against (as OpenBLAS is the fp32
// peer). libdnnl is loaded at run time only (dlopen of libdnnl.so.2, then libdnnl.so; Debian's libdnnl-dev,
// installed by scripts/install_deps.sh): Frontier has no link-time dependency on it, and a machine without it
// still runs.
//
//   OneDnnMatmul dnnl;  // dlopen + dlsym; never throws
//   if (!dnnl.available()) puts(dnnl.error().c_str());
//   // C (M, N) = op(A) @ op(B), the conventions of frontier::gemm (kernels/gemm.h): row-major with leading
//   // dimensions; op(A) is A (M, K), lda >= K, or with trans_a A^T of a (K, M) array, lda >= M; op(B) is
//   // B (K, N), ldb >= N, or with trans_b B^T of an (N, K) array, ldb >= K.
//   Status s = dnnl.prepare(false, true, M, N, K, x, K, W, K, N);  // out = x @ W^T: bf16 copies, primitive
//   s = dnnl.run(out);                                             // the part to time; out (M, N), ldc = N
//   puts(dnnl.impl().c_str());                                     // "brg:avx512_core_bf16"
//
// What is compared: a dnnl_matmul primitive on the CPU engine, src and weights bf16, dst fp32 (fp32
// accumulation), against frontier::gemm(Precision::kBf16, ...), which takes the same fp32 arrays. Both
// multiply the same bf16-rounded values (round to nearest even, frontier::to_bf16) and differ only in fp32
// summation order. Fairness caveat: oneDNN gets its best case. prepare() converts A and B to bf16 once,
// outside the timed run(), and the primitive is created once; Frontier's gemm converts fp32 to bf16 while
// packing, inside every call. So run() measures oneDNN's matmul on ready bf16 operands (it still
// packs/reorders them itself if its kernel wants blocked layouts), and a ratio near 1 means Frontier keeps up
// while also doing the conversion. The first run() after prepare() is slow (JIT, thread start): warm up
// first. Dense operands (lda, ldb, ldc equal to the row lengths) get oneDNN's brgemm kernels
// (brg:avx512_core_bf16 on CPUs with avx512_bf16); padded leading dimensions make 2.6 fall back to its older
// gemm:jit path, so the bench should pass dense arrays.
//
// Threads: Debian's oneDNN is built with the OpenMP runtime (the same libgomp as Frontier), so it uses
// omp_get_max_threads() of the calling thread, like frontier::gemm; omp_set_num_threads() sets both. oneDNN
// picks its blocking for the thread count at prepare() time: prepare and run under the same
// omp_get_max_threads().
//
// Errors never crash: a missing library or symbol leaves available() false with error() saying why (and the
// fix); a failing dnnl call makes prepare()/run() return a Status naming the call and oneDNN's status. The
// library is never dlclose'd (its OpenMP threads may outlive any one object); each object owns its engine,
// stream, primitive and bf16 copies, and is movable but not copyable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "util/status.h"

namespace frontier {

class OneDnnMatmul {
 public:
  // library: a file name or path for dlopen; empty tries libdnnl.so.2, then libdnnl.so.
  explicit OneDnnMatmul(const std::string& library = "");
  ~OneDnnMatmul();
  OneDnnMatmul(OneDnnMatmul&&) noexcept;
  OneDnnMatmul& operator=(OneDnnMatmul&&) noexcept;
  OneDnnMatmul(const OneDnnMatmul&) = delete;
  OneDnnMatmul& operator=(const OneDnnMatmul&) = delete;

  bool available() const;            // library loaded, every symbol resolved, CPU engine and stream created
  const std::string& error() const;  // why not available ("" when available)
  std::string path() const;          // the library dlopen found, e.g. "libdnnl.so.2"
  std::string description() const;   // "oneDNN 2.6.3 (libdnnl.so.2, OpenMP runtime)"

  // Prepares C (M, N) = op(A) @ op(B) with C's leading dimension ldc (>= N): copies A and B to bf16 (same
  // layout and leading dimensions), creates the memory descriptors and the matmul primitive. A and B are not
  // read again. Replaces any earlier problem.
  Status prepare(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                 const float* B, int64_t ldb, int64_t ldc);
  // Executes the prepared primitive into C (M, N), row stride ldc as prepared, and waits for it. C is only
  // written (beta = 0).
  Status run(float* C);
  // The implementation oneDNN dispatched for the prepared problem (dnnl_query_impl_info_str), e.g.
  // "brg:avx512_core_bf16"; "" before prepare().
  std::string impl() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace frontier
