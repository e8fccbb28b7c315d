// Mixture-of-experts MLP as one primitive op (the routing is not a composition of the existing ops): the fast
// kernel (kernels/moe.h) both ways; ref::moe_* (reference/moe.h, which states the routing design) stays the ground
// truth in tests/moe_test.cpp.
#include <memory>

#include "autograd/tape.h"
#include "kernels/moe.h"
#include "util/status.h"
#include "util/trace.h"

namespace frontier {

Var moe_mlp(Tape& t, Var x, Var router, Var fc, Var proj, int top_k, float slope, float aux_weight,
            MoeStats* stats) {
  const std::vector<int64_t>&sr = t.shape(router), &sf = t.shape(fc), &sp = t.shape(proj);
  FRONTIER_CHECK(sr.size() == 2 && sf.size() == 3 && sp.size() == 3);
  const int64_t E = sr[0], C = sr[1], Hd = sf[1], N = t.numel(x) / C, k = top_k;
  FRONTIER_CHECK(t.shape(x).back() == C && sf[0] == E && sf[2] == C && sp[0] == E && sp[1] == C &&
                 sp[2] == Hd);
  FRONTIER_CHECK(1 <= k && k <= E);
  const bool rg =
      t.requires_grad(x) || t.requires_grad(router) || t.requires_grad(fc) || t.requires_grad(proj);
  // FLOPs: the active parameters only (k experts per token) and the router. Bytes: x, all weights, out, u.
  const double expert_flops = 2.0 * k * N * (2.0 * Hd * C), router_flops = 2.0 * N * E * C;
  const double weight_bytes = 4.0 * (E * C + 2.0 * E * Hd * C);
  ProfScope ps("moe_mlp", "fwd", expert_flops + router_flops,
               weight_bytes + 4.0 * (2.0 * N * C + N * k * Hd));
  Var out = t.make(t.shape(x), rg);
  auto route = std::make_shared<MoeRoute>();
  auto u = std::make_shared<PooledBuffer>(N * k * Hd, /*zero=*/false);  // (N * k, Hd) pre-activations, sorted
  const Precision prec = t.precision();
  moe_route(route.get(), t.value(x), t.value(router), N, C, E, k);
  moe_forward(t.value(out), u->data(), *route, t.value(x), t.value(fc), t.value(proj), N, C, Hd, slope, prec);
  if (stats) {
    stats->tokens_per_expert.resize(E);
    for (int64_t e = 0; e < E; e++) stats->tokens_per_expert[e] = route->offset[e + 1] - route->offset[e];
    stats->dropped = 0;  // no capacity limit
    stats->aux_loss = moe_aux_loss(*route);
  }
  if (rg)
    t.node(out).backward = [&t, out, x, router, fc, proj, route, u, N, C, Hd, slope, aux_weight, prec,
                            expert_flops, router_flops, weight_bytes]() {
      ProfScope ps("moe_mlp", "bwd", 2 * expert_flops + 2 * router_flops,
                   2 * weight_bytes + 4.0 * (4.0 * N * C + N * route->k * Hd));
      auto grad = [&t](Var v) { return t.requires_grad(v) ? t.grad(v) : nullptr; };
      moe_backward(grad(x), grad(router), grad(fc), grad(proj), t.grad(out), *route, u->data(), t.value(x),
                   t.value(router), t.value(fc), t.value(proj), N, C, Hd, slope, aux_weight, prec);
    };
  return out;
}

}  // namespace frontier
