// Frontier's bf16 mixed precision (Tape::set_precision(Precision::kBf16): every GEMM on the tape rounds its
// fp32 operands to bf16, multiplies exactly and accumulates in fp32; all else stays fp32) on the whole GPT,
// measured against the truth: the PyTorch peer (tests/torch/gpt_ref.py) run in float64 on the same fp32
// weights and batch. The yardstick is PyTorch's own bf16 mixed precision, torch.autocast("cpu", bfloat16) on
// the same peer, which also rounds every matmul's output to bf16 and keeps softmax, tanh, relu^2 and the
// rotary products in bf16, so Frontier's bf16 should be at least as close to the truth. Per tensor (loss,
// logits, every parameter gradient): relative error = max |x - truth| / max |truth|; every measured error is
// printed as a table.
//
// Bounds, from bf16's unit roundoff u = 2^-9 ~ 2e-3: a product of two rounded operands is off by <= 2u ~ 4e-3
// relative, so a GEMM output is off by ~2u of the magnitudes it sums, and errors compound along the chain of
// GEMMs. Measured over 7 seeds x both cases (each case is deterministic: its GEMMs sum in a fixed order):
//   logits                     3.5e-3 .. 6.3e-3  (~1.5 x 2u) -> bound 1e-2
//   loss                       <= 2.8e-4 (a mean over tokens: their errors partly cancel) -> bound 2e-3 (= u)
//   matrix, embedding grads    2.5e-3 .. 1.2e-2  (~1-3 x 2u; backward chains more GEMMs) -> bound 3e-2
//   resid/x0_lambdas grads     up to 4.2e-2 (torch: 4.4e-2): each is one sum over B*T*C products that largely
//                              cancel, so rounding is amplified by the cancellation -> bound 0.1
// Against torch autocast, per tensor err / torch err was 0.36 .. 1.43 for logits and matrix/embedding
// gradients (tensors of thousands of elements, whose max error is a stable statistic) -> bound 2; for the
// loss and the lambdas, single sums where torch's error can cancel by luck, 0.05 .. 10, so they get no
// per-tensor ratio bound. Over all tensors the geometric mean of the ratio was 0.57 .. 0.79 -> bound 1
// (Frontier no worse on average).
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "model/gpt.h"
#include "test_util.h"
#include "torch_peer.h"

using namespace frontier;
using namespace frontier::testing;

namespace {

// One forward + backward, widened to double: loss, logits (B*T, V; empty if not computed), gradient arena.
struct Result {
  double loss = 0;
  std::vector<double> logits, grads;
};

double rel_err(const std::vector<double>& a, const std::vector<double>& truth, int64_t off, int64_t n) {
  double err = 0, mx = 0;
  for (int64_t i = off; i < off + n; i++) {
    err = std::max(err, std::abs(a[i] - truth[i]));
    mx = std::max(mx, std::abs(truth[i]));
  }
  return mx > 0 ? err / mx : err;
}

ModelShape make_shape(int depth, int dim, int head_dim, int n_kv_head, int V, int T, int ce_vocab_chunk) {
  ConfigSchema schema;
  add_model_keys(&schema);
  Config cfg = schema.defaults();
  for (auto kv :
       {"model.depth=" + std::to_string(depth), "model.dim=" + std::to_string(dim),
        "model.head_dim=" + std::to_string(head_dim), "model.n_kv_head=" + std::to_string(n_kv_head),
        "model.vocab_size=" + std::to_string(V), "model.seq_len=" + std::to_string(T),
        "model.ce_vocab_chunk=" + std::to_string(ce_vocab_chunk)}) {
    Status st = schema.apply_set(kv, &cfg);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  ModelShape shape;
  Status st = derive_model_shape(cfg, &shape);
  EXPECT_TRUE(st.ok()) << st.message();
  return shape;
}

Result run_frontier(Gpt& gpt, Precision prec, const std::vector<int32_t>& idx,
                    const std::vector<int32_t>& tgt, int B, int T) {
  Tape tape;
  tape.set_precision(prec);
  gpt.zero_grad();
  Var logits;
  const bool want_logits = gpt.shape().ce_vocab_chunk == 0;  // the fused lm_head + CE never stores them
  Var loss = gpt.forward(tape, idx.data(), tgt.data(), B, T, want_logits ? &logits : nullptr);
  tape.backward(loss);
  Result r;
  r.loss = tape.value(loss)[0];
  if (want_logits) r.logits.assign(tape.value(logits), tape.value(logits) + tape.numel(logits));
  r.grads.assign(gpt.grads().begin(), gpt.grads().end());
  return r;
}

// The peer's output: loss, logits (NV), gradient arena (n), as float64 ("float64": true) or float32.
Result run_peer(Gpt& gpt, const std::vector<int32_t>& idx, const std::vector<int32_t>& tgt, int B, int T,
                const nlohmann::json& mode) {
  const int64_t NV = int64_t(B) * T * gpt.shape().vocab_size, n = static_cast<int64_t>(gpt.n_params());
  const bool f64 = mode.value("float64", false);
  std::string d = make_temp_dir("gpt_bf16_torch"), out;
  Result r;
  bool ok = run_gpt_peer(gpt, gpt.weights(), B, T, idx, tgt, mode, d, &out);
  std::filesystem::remove_all(d);
  if (!ok) return r;
  const size_t want = static_cast<size_t>(1 + NV + n) * (f64 ? 8 : 4);
  EXPECT_EQ(out.size(), want) << mode.dump();
  if (out.size() != want) return r;
  std::vector<double> all(1 + NV + n);
  for (int64_t i = 0; i < 1 + NV + n; i++) {
    if (f64) {
      std::memcpy(&all[i], out.data() + 8 * i, 8);
    } else {
      float f;
      std::memcpy(&f, out.data() + 4 * i, 4);
      all[i] = f;
    }
  }
  r.loss = all[0];
  r.logits.assign(all.begin() + 1, all.begin() + 1 + NV);
  r.grads.assign(all.begin() + 1 + NV, all.end());
  return r;
}

void run_case(int depth, int dim, int head_dim, int n_kv_head, int V, int B, int T) {
  ModelShape shape = make_shape(depth, dim, head_dim, n_kv_head, V, T, 0);
  Gpt gpt(shape);
  // Random weights as in gpt_torch_test.cpp (nanochat's zero-initialised projections would zero many
  // gradients).
  std::mt19937 rng(321);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (const auto& p : gpt.params()) {
    float sd = p.group == ParamGroup::kScalar
                   ? 0.3f
                   : (p.group == ParamGroup::kMatrix ? 1.f / std::sqrt(p.shape[1]) : 0.8f);
    float* w = gpt.weights().data() + p.offset;
    for (int64_t i = 0; i < p.numel(); i++)
      w[i] = nd(rng) * sd + (p.group == ParamGroup::kScalar ? 0.7f : 0.f);
  }
  std::vector<int32_t> idx(B * T), tgt(B * T);
  for (int i = 0; i < B * T; i++) {
    idx[i] = static_cast<int32_t>(rng() % V);
    tgt[i] = i % 7 == 3 ? -1 : static_cast<int32_t>(rng() % V);
  }
  // The same model with the lm_head fused into the cross-entropy over vocabulary chunks (its own bf16 GEMMs).
  Gpt fused(make_shape(depth, dim, head_dim, n_kv_head, V, T, V / 4));
  fused.weights() = gpt.weights();

  const Result f32 = run_frontier(gpt, Precision::kFp32, idx, tgt, B, T);
  const Result bf16 = run_frontier(gpt, Precision::kBf16, idx, tgt, B, T);
  const Result bf16_fused = run_frontier(fused, Precision::kBf16, idx, tgt, B, T);
  const Result truth = run_peer(gpt, idx, tgt, B, T, {{"float64", true}});
  const Result autocast = run_peer(gpt, idx, tgt, B, T, {{"autocast", "bf16"}});
  ASSERT_FALSE(truth.grads.empty());
  ASSERT_FALSE(autocast.grads.empty());

  // bf16 actually engaged: fp32 logits agree with the truth to ~6e-7, bf16's differ from fp32's by ~5e-3.
  const int64_t NV = static_cast<int64_t>(truth.logits.size());
  const double engaged = rel_err(bf16.logits, f32.logits, 0, NV);
  EXPECT_GT(engaged, 1e-4) << "bf16 logits equal fp32's: Tape::set_precision(kBf16) had no effect";
  EXPECT_NE(bf16_fused.loss, f32.loss) << "the fused lm_head + CE ignored Tape::set_precision(kBf16)";

  enum Kind { kLoss, kLogits, kMatrix, kScalar };  // bounds in the header comment
  struct Row {
    std::string name;
    Kind kind;
    double f32, bf16, fused, torch;  // rel err vs the fp64 truth; fused < 0: not computed
  };
  std::vector<Row> rows;
  auto loss_err = [&](const Result& r) { return std::abs(r.loss - truth.loss) / std::abs(truth.loss); };
  rows.push_back({"loss", kLoss, loss_err(f32), loss_err(bf16), loss_err(bf16_fused), loss_err(autocast)});
  rows.push_back({"logits", kLogits, rel_err(f32.logits, truth.logits, 0, NV),
                  rel_err(bf16.logits, truth.logits, 0, NV), -1,
                  rel_err(autocast.logits, truth.logits, 0, NV)});
  for (const auto& p : gpt.params()) {
    auto e = [&](const Result& r) { return rel_err(r.grads, truth.grads, p.offset, p.numel()); };
    rows.push_back({"grad " + p.name, p.group == ParamGroup::kScalar ? kScalar : kMatrix, e(f32), e(bf16),
                    e(bf16_fused), e(autocast)});
  }

  std::printf(
      "[gpt-bf16] depth %d dim %d heads %d/%d V %d B %d T %d: rel err vs the fp64 truth "
      "(bf16 vs fp32 logits differ by %.2g)\n",
      depth, shape.dim, shape.n_head, shape.n_kv_head, V, B, T, engaged);
  std::printf("  %-24s %10s %10s %10s %10s %7s\n", "tensor", "fr-fp32", "fr-bf16", "fr-bf16-ce", "torch-ac",
              "bf16/ac");
  double sum_log_ratio = 0;
  for (const auto& r : rows) {
    char fused_s[16] = "         -";
    if (r.fused >= 0) std::snprintf(fused_s, sizeof fused_s, "%10.2e", r.fused);
    const double ratio = r.bf16 / r.torch;
    std::printf("  %-24s %10.2e %10.2e %s %10.2e %7.2f\n", r.name.c_str(), r.f32, r.bf16, fused_s, r.torch,
                ratio);
    sum_log_ratio += std::log(ratio);

    EXPECT_LE(r.f32, 1e-4) << r.name << ": fp32 disagrees with the fp64 peer (not the same model?)";
    const double bound = r.kind == kLoss ? 2e-3 : r.kind == kLogits ? 1e-2 : r.kind == kMatrix ? 3e-2 : 0.1;
    EXPECT_LE(r.bf16, bound) << r.name << ": bf16 vs the fp64 truth";
    if (r.fused >= 0)
      EXPECT_LE(r.fused, bound) << r.name << ": bf16 with the fused lm_head + CE vs the fp64 truth";
    if (r.kind == kLogits || r.kind == kMatrix)
      EXPECT_LE(ratio, 2.0) << r.name << ": bf16 error " << r.bf16 << " vs torch autocast's " << r.torch;
  }
  const double geo_mean = std::exp(sum_log_ratio / rows.size());
  std::printf("  geometric mean of fr-bf16 / torch-ac over %zu tensors: %.3f\n", rows.size(), geo_mean);
  EXPECT_LE(geo_mean, 1.0) << "Frontier's bf16 is further from the truth than torch autocast on average";
}

}  // namespace

TEST(GptBf16Torch, CloserToFp64ThanTorchAutocast) {
  run_case(2, 128, 64, 0, 512, 2, 64);
}
TEST(GptBf16Torch, GroupedQueryAttention) {
  run_case(2, 128, 32, 2, 384, 2, 48);
}
