// A reverse-mode tape: forward ops record a backward closure; backward() replays them in reverse. Composing
// existing ops never needs hand-written backward code; a new primitive op adds one function here (its forward and
// backward call the reference kernels in src/reference/, or fast kernels with the same contract).
//
//   Tape tape;
//   Var x = tape.param(W_data, W_grad, {N, K});   // parameters point into the arenas (no copy)
//   Var y = linear(tape, inp, x);                  // y = inp @ W^T
//   Var loss = softcap_cross_entropy(tape, y, targets, 15.f);
//   tape.backward(loss);                           // accumulates into W_grad
//
// Values and gradients of intermediate nodes live in the tape and are freed by clear(). Shapes are row-major;
// the last dimension is contiguous.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "autograd/buffer_pool.h"
#include "kernels/precision.h"
#include "reference/gated_act.h"  // GatedAct (gated_act below)

namespace frontier {

struct Node {
  std::vector<int64_t> shape;
  float* value = nullptr;  // numel()
  float* grad = nullptr;   // numel(); null until needed
  PooledBuffer own_value, own_grad;        // storage for intermediate nodes (reused across steps)
  std::function<void()> backward;          // reads this->grad, accumulates into inputs' grads
  bool requires_grad = false;
  bool is_param = false;                   // made by Tape::param: value and grad are external (the arenas)
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

struct Var {
  int id = -1;
};

class Tape {
 public:
  Var param(float* value, float* grad, std::vector<int64_t> shape);  // external storage, gradient accumulates
  Var constant(const float* value, std::vector<int64_t> shape);       // no gradient
  Var make(std::vector<int64_t> shape, bool requires_grad);           // new intermediate, uninitialised: the op
                                                                      // writes every element
  Var view(Var x, std::vector<int64_t> shape);  // same numel; shares x's value and gradient (allocated now)
  Node& node(Var v) { return *nodes_[v.id]; }
  float* value(Var v) { return nodes_[v.id]->value; }
  float* grad(Var v);  // allocates (zeroed) on first use
  // The gradient for an op that can write it whole: on first use *fresh is set and the buffer is left
  // uninitialised (the caller must store every element: a GEMM with beta 0), else it accumulates as grad's. Saves
  // the zero fill and the read of zeros (the logits' gradient is 134 MB at the baseline).
  float* grad_or_fresh(Var v, bool* fresh);
  const std::vector<int64_t>& shape(Var v) { return nodes_[v.id]->shape; }
  int64_t numel(Var v) { return nodes_[v.id]->numel(); }
  bool requires_grad(Var v) { return nodes_[v.id]->requires_grad; }
  void backward(Var scalar_loss, float seed = 1.f);  // d loss / d loss = seed (1/accum for accumulation)
  // The same, calling param_final(node) for each parameter node as soon as its gradient is final: every op that
  // read it recorded after it, so once the reverse replay reaches the node, nothing more accumulates into its
  // gradient. A data-parallel run starts a bucket's gradient exchange from here, during the backward
  // (dist/grad_exchange.h). Called on the calling thread, between ops.
  void backward(Var scalar_loss, float seed, const std::function<void(const Node&)>& param_final);
  void clear() { nodes_.clear(); }
  // The precision of the GEMMs that ops recorded on this tape run (linear, attention, lm_head; forward and
  // backward): like PyTorch's autocast region. Values, gradients and everything else stay fp32.
  Precision precision() const { return precision_; }
  void set_precision(Precision p) { precision_ = p; }
  size_t size() const { return nodes_.size(); }

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  Precision precision_ = Precision::kFp32;
};

// ---- primitive ops (src/autograd/ops.cpp) ----
Var embedding(Tape& t, const int32_t* idx, int64_t n, Var table);           // (n,) ids, table (V, C) -> (n, C)
Var linear(Tape& t, Var x, Var W);                                           // x (..., K), W (N, K) -> (..., N)
Var rmsnorm(Tape& t, Var x, float eps);                                      // over the last dim
Var rope(Tape& t, Var x, const float* cos_t, const float* sin_t);            // x (B, T, H, D)
Var relu2(Tape& t, Var x);
Var add(Tape& t, Var a, Var b);                                              // same shape
Var scale(Tape& t, Var x, Var s, int64_t i);                                 // s[i] * x, s a vector param
Var reshape(Tape& t, Var x, std::vector<int64_t> shape);                     // a view (no copy)
Var slice_last(Tape& t, Var x, int64_t begin, int64_t end);                  // x[..., begin:end]
// Fused (one pass each way instead of three / two): out = sa[i] * a + sb[j] * b (residual/lambda mixing), and
// rmsnorm(rope(x)) over each head vector of x (B, T, H, D) (QK-norm). Same arithmetic as the composed ops.
Var scale_add(Tape& t, Var a, Var sa, int64_t i, Var b, Var sb, int64_t j);
Var rope_rmsnorm(Tape& t, Var x, const float* cos_t, const float* sin_t, float eps);
// v + scale*sigmoid(g) (broadcast over D) * ve: v, ve (B, T, Hkv, D); g (B, T, Hkv)
Var gated_add(Tape& t, Var v, Var g, Var ve, float scale = 2.f);
// q (B,T,H,D), k, v (B,T,Hkv,D); scores scale * q.k (0: 1/sqrt(D)); window W > 0: query t sees keys [t-W, t].
Var causal_attention(Tape& t, Var q, Var k, Var v, float scale = 0.f, int64_t window = 0);
// Mean cross-entropy of softcapped logits (N, V) over targets >= 0 -> scalar (shape {1}); per-row losses (nats, 0
// for ignored rows) also go to row_losses (N) when given.
Var softcap_cross_entropy(Tape& t, Var logits, const int32_t* targets, float cap, float* row_losses = nullptr);
// softcap_cross_entropy(linear(x, W)) without the (N, V) logits: vocabulary chunks of vchunk columns, recomputed in
// backward (one more lm_head GEMM). x (N, C), W (V, C).
Var lm_head_softcap_ce(Tape& t, Var x, Var W, const int32_t* targets, float cap, int64_t vchunk,
                       float* row_losses = nullptr);

// ---- embedding and loss variants (src/autograd/embed_ops.cpp) ----
// Hashed n-gram embedding: idx (B, T) token ids, table (buckets, C) -> (B*T, C); row (b, t) is
// table[ngram_bucket(idx[b, t], idx[b, t-1], ..., idx[b, t-n+1])] for t >= n-1 and zero for t < n-1 (the hash is
// in reference/ngram.h, its PyTorch twin in python/frontier_ngram.py). 1 <= n <= kNgramMax (16).
Var ngram_embedding(Tape& t, const int32_t* idx, int64_t B, int64_t T, int n, int64_t buckets, Var table);
// Multi-token prediction on shared logits (N, V) -> scalar: sum_k weights[k] * mean over rows with targets[k][r] >= 0
// of the cross-entropy of the softcapped logits (cap == 0: no softcap). The log-sum-exp is computed once per row
// for all k, so each extra target costs O(N). targets[k] (N,), -1 = ignore. row_losses (N) gets k = 0's per-row
// losses (nats, 0 for ignored rows) when given. One target, weight 1: softcap_cross_entropy, bit for bit.
Var softcap_ce_multi(Tape& t, Var logits, const std::vector<const int32_t*>& targets,
                     const std::vector<float>& weights, float cap, float* row_losses = nullptr);

// ---- architecture-variant ops (src/autograd/variant_ops.cpp) ----
// Fast kernels in kernels/variant_kernels.h; each formula and its derivative heads its reference kernel in
// src/reference/.
Var leaky_relu2(Tape& t, Var x, float slope);                     // (x >= 0 ? x : slope * x)^2, elementwise
Var gated_act(Tape& t, Var x, GatedAct kind);                     // x (..., 2H) -> act(x[..., :H]) * x[..., H:]
// nanochat's smear: x (B*T, C) or (B, T, C), w (1, G) with G <= C, lam (1); out_0 = x_0 and, for t >= 1,
// out_t = x_t + lam * sigmoid(x_t[:G] . w) * x_{t-1}.
Var smear(Tape& t, Var x, Var w, Var lam, int64_t B, int64_t T);
Var axpy(Tape& t, Var a, Var b, Var s, int64_t i, float alpha);  // a + alpha * s[i] * b (backout: alpha = -1)
// Partial key offset: k (B, T, Hkv, D); dims d with d mod (D/2) >= p0 (not rotated) take position t-1's value.
Var key_shift(Tape& t, Var k, int64_t p0);

// ---- mixture of experts (src/autograd/moe_op.cpp) ----
// Per-step routing statistics, for the training summary.
struct MoeStats {
  std::vector<int64_t> tokens_per_expert;  // (E) (token, slot) pairs routed to each expert
  int64_t dropped = 0;                     // always 0: no capacity limit, every routed token is computed
  double aux_loss = 0;                     // the load-balance loss below (its value, before aux_weight)
};
// Mixture-of-experts MLP: x (..., C) -> (..., C); router (E, C), fc (E, Hd, C) (expert e's c_fc), proj (E, C, Hd)
// (expert e's c_proj). Each token goes to its top_k experts by softmax(x @ router^T) (ties: lower index), weighted
// by the chosen probs renormalised to sum 1; act(u) = (u >= 0 ? u : slope * u)^2 (slope 0: relu^2). No capacity
// limit (nothing dropped). The Switch-Transformer load-balance loss aux = E * sum_e f_e * P_e is NOT part of the
// output: backward adds aux_weight * d(aux)/d(router logits) itself, so the model's loss need not carry it (its
// value goes to stats). It is added once per backward, unscaled by the loss seed: with gradient accumulation
// (seed 1/accum) pass aux_weight/accum. Routing design and math: src/reference/moe.h; fast kernel: src/kernels/moe.h.
//   MoeStats st;
//   Var y = moe_mlp(tape, x, router, fc, proj, /*top_k=*/2, /*slope=*/0.f, /*aux_weight=*/0.01f, &st);
Var moe_mlp(Tape& t, Var x, Var router, Var fc, Var proj, int top_k, float slope, float aux_weight, MoeStats* stats);

}  // namespace frontier
