// The MLP half of a block: relu2 (nanochat), leaky_relu2, the gated swiglu / geglu (c_fc's rows are [gate | up],
// one GEMM for both, gate and activation fused in one pass), or a mixture of experts.
#include "model/blocks.h"

namespace frontier {

void add_mlp_params(const ModelShape& s, int i, const AddParam& add) {
  const int64_t C = s.dim;
  const std::string p = "h." + std::to_string(i) + ".mlp.";
  if (s.is_moe(i)) {
    // Expert e's c_fc and c_proj are separate matrices (Muon orthogonalises each), laid out back to back so the
    // E of them are one (E, hidden, C) / (E, C, hidden) view for the grouped GEMM.
    const int64_t E = s.arch.moe_experts, Hd = s.arch.moe_hidden;
    add(p + "router", {E, C}, ParamGroup::kMatrix);
    for (int64_t e = 0; e < E; e++) add(p + "experts." + std::to_string(e) + ".c_fc", {Hd, C}, ParamGroup::kMatrix);
    for (int64_t e = 0; e < E; e++)
      add(p + "experts." + std::to_string(e) + ".c_proj", {C, Hd}, ParamGroup::kMatrix);
    return;
  }
  const bool gated = s.arch.mlp == MlpKind::kSwiglu || s.arch.mlp == MlpKind::kGeglu;
  add(p + "c_fc", {(gated ? 2 : 1) * int64_t(s.mlp_dim), C}, ParamGroup::kMatrix);
  add(p + "c_proj", {C, s.mlp_dim}, ParamGroup::kMatrix);
}

Var mlp(const BlockCtx& c, int i, Var h, MoeStats* stats) {
  Tape& t = c.t;
  const ModelArch& a = c.s.arch;
  const std::string p = "h." + std::to_string(i) + ".mlp.";
  if (c.s.is_moe(i)) {
    const int64_t E = a.moe_experts, Hd = a.moe_hidden, C = c.s.dim;
    // The E experts' matrices are adjacent in the arena: one (E, ...) parameter view over them.
    Var fc = c.PV(p + "experts.0.c_fc", {E, Hd, C}), proj = c.PV(p + "experts.0.c_proj", {E, C, Hd});
    const float slope = a.mlp == MlpKind::kLeakyRelu2 ? static_cast<float>(a.mlp_slope) : 0.f;
    return moe_mlp(t, h, c.P(p + "router"), fc, proj, a.moe_top_k, slope, static_cast<float>(a.moe_aux_weight) * c.loss_seed,
                   stats);
  }
  Var u = linear(t, h, c.P(p + "c_fc"));
  switch (a.mlp) {
    case MlpKind::kRelu2: u = relu2(t, u); break;
    case MlpKind::kLeakyRelu2: u = leaky_relu2(t, u, static_cast<float>(a.mlp_slope)); break;
    case MlpKind::kSwiglu: u = gated_act(t, u, GatedAct::kSwiglu); break;
    case MlpKind::kGeglu: u = gated_act(t, u, GatedAct::kGeglu); break;
  }
  return linear(t, u, c.P(p + "c_proj"));
}

}  // namespace frontier
