// Mixture-of-experts MLP, fast: the routing and arithmetic of ref::moe_* (reference/moe.h, which states the
// design), with the tokens sorted by expert so that each expert is a few large GEMMs instead of per-token
// GEMVs.
//
//   MoeRoute r;
//   moe_route(&r, x, router, N, C, E, k);  // router GEMM (fp32), softmax, top-k, counting sort
//   std::vector<float> u(N * k * Hd);       // saved pre-activations, sorted order
//   moe_forward(out, u.data(), r, x, fc, proj, N, C, Hd, slope, prec);
//   double aux = moe_aux_loss(r);
//   moe_backward(dx, drouter, dfc, dproj, dout, r, u.data(), x, router, fc, proj, N, C, Hd, slope,
//                aux_weight, prec);
//
// The N * k (token, slot) pairs are counting-sorted by expert (stable: pair order inside an expert), so
// expert e owns the rows [offset[e], offset[e+1]) of every "sorted" (N * k, .) buffer. Forward: gather x's
// rows, then per expert one GEMM for fc and one for proj; backward: three GEMMs per expert (dproj, dfc, dx)
// plus one to bring dout through proj. The gate scaling and the scatter-add into out / dx run per token over
// its k slots in slot order, so results are bit-identical for any thread count (no atomics). Cost: the dense
// MLP's GEMM FLOPs at equal active size, plus gathers of N * k rows of x and dout (C floats each) and the
// router's (N, E) GEMMs.
//
// The router GEMMs run in fp32 whatever prec says (Switch Transformer's "selective precision": a bf16 router
// flips near-tied routing decisions); prec applies to the expert GEMMs, as in `linear`.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/precision.h"

namespace frontier {

struct MoeRoute {
  int64_t N = 0, E = 0, k = 0;
  std::vector<float> probs;     // (N, E) softmax of the router logits
  std::vector<int32_t> expert;  // (N, k) chosen experts by descending prob
  std::vector<float> gate;      // (N, k) their renormalised probs
  std::vector<int64_t> offset;  // (E + 1) expert e's rows of the sorted order: [offset[e], offset[e+1])
  std::vector<int32_t> pair;    // (N * k) sorted row -> pair n * k + j
  std::vector<int32_t> row;     // (N * k) pair n * k + j -> sorted row
};

// x (N, C), router (E, C).
void moe_route(MoeRoute* r, const float* x, const float* router, int64_t N, int64_t C, int64_t E, int64_t k);

// E * sum_e f_e * P_e, summed in double in a fixed order; f (E) receives f_e when given.
double moe_aux_loss(const MoeRoute& r, double* f = nullptr);

// out (N, C); u (N * k, Hd) receives the pre-activations fc[e] @ x[n] in sorted order (backward reads them).
// fc (E, Hd, C), proj (E, C, Hd).
void moe_forward(float* out, float* u, const MoeRoute& r, const float* x, const float* fc, const float* proj,
                 int64_t N, int64_t C, int64_t Hd, float slope, Precision prec);

// Accumulates (+=) the gradients of sum(out * dout) + aux_weight * aux into dx (N, C), drouter (E, C), dfc
// (E, Hd, C), dproj (E, C, Hd); a null one is skipped (and the work only it needs).
void moe_backward(float* dx, float* drouter, float* dfc, float* dproj, const float* dout, const MoeRoute& r,
                  const float* u, const float* x, const float* router, const float* fc, const float* proj,
                  int64_t N, int64_t C, int64_t Hd, float slope, float aux_weight, Precision prec);

}  // namespace frontier
