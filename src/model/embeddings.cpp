// The ends of the model: token embedding (plus hashed n-gram tables and nanochat's smear) in, and the head out
// (tied or untied lm_head, softcap, next-token cross-entropy, and multi-token prediction's extra targets on the
// same logits, as modded-nanogpt's record 53).
#include <limits>

#include "model/blocks.h"

namespace frontier {

namespace {
constexpr float kNormEps = std::numeric_limits<float>::epsilon();
}

void add_embedding_params(const ModelShape& s, const AddParam& add) {
  // Tied to the head, the table takes the head's optimizer group (AdamW at the unembedding learning rate): at the
  // embedding rate (50x larger) the logits diverge within a few steps.
  add("wte", {s.vocab_size, s.dim}, s.arch.tie_embeddings ? ParamGroup::kLmHead : ParamGroup::kEmbedding);
  // One table per order (buckets, C), an embedding for the optimizer (AdamW at the embedding learning rate).
  for (int n : s.arch.ngram_orders)
    add("ngram_embeds." + std::to_string(n), {s.arch.ngram_buckets, s.dim}, ParamGroup::kEmbedding);
}

void add_head_params(const ModelShape& s, const AddParam& add) {
  // model.untie_at: a tied model's own head exists from the start (idle until the untie), so the arena, the
  // optimizer state and the checkpoint keep one layout over the whole run.
  if (!s.arch.tie_embeddings || s.arch.untie_at > 0) add("lm_head", {s.vocab_size, s.dim}, ParamGroup::kLmHead);
}

Var embed_tokens(const BlockCtx& c) {
  Tape& t = c.t;
  const int64_t N = int64_t(c.B) * c.T;
  Var e = embedding(t, c.idx, N, c.P("wte"));  // (N, C)
  for (int n : c.s.arch.ngram_orders)  // hash of the n tokens ending at t -> a learned row (zero before t = n-1)
    e = add(t, e, ngram_embedding(t, c.idx, c.B, c.T, n, c.s.arch.ngram_buckets, c.P("ngram_embeds." + std::to_string(n))));
  Var x = rmsnorm(t, e, kNormEps);
  if (c.s.arch.smear)  // x[t] += smear_lambda * sigmoid(x[t, :24] . smear_gate) * x[t-1]: a cheap bigram
    x = smear(t, x, c.P("smear_gate"), c.P("smear_lambda"), c.B, c.T);
  return x;
}

Var head_loss(const BlockCtx& c, Var x, const int32_t* targets, const std::vector<float>& mtp_w, Var* logits_out,
              float* row_losses, std::vector<std::vector<int32_t>>* mtp_targets) {
  Tape& t = c.t;
  const ModelShape& s = c.s;
  const float cap = static_cast<float>(s.arch.softcap);
  Var W = c.P(s.head_param());
  bool mtp = false;
  for (float w : mtp_w) mtp = mtp || w > 0;
  if (!mtp && cap > 0 && s.ce_vocab_chunk > 0 && !logits_out)  // (N, V) logits never stored
    return lm_head_softcap_ce(t, x, W, targets, cap, s.ce_vocab_chunk, row_losses);
  Var logits = linear(t, x, W);  // (N, V)
  if (logits_out) *logits_out = logits;
  if (!mtp && cap > 0) return softcap_cross_entropy(t, logits, targets, cap, row_losses);
  // Token t+1+j is targets[t+j] of the same row; past the row's end, ignored (-1). One log-sum-exp per row
  // serves every target, so each extra predicted token costs O(N), not another O(N V) pass.
  std::vector<const int32_t*> tg{targets};
  std::vector<float> w{1.f};
  mtp_targets->resize(mtp_w.size());
  for (size_t j = 1; j <= mtp_w.size(); j++) {
    if (!(mtp_w[j - 1] > 0)) continue;
    std::vector<int32_t>& tj = (*mtp_targets)[j - 1];
    tj.assign(static_cast<size_t>(c.B) * c.T, -1);
    for (int b = 0; b < c.B; b++)
      for (int p = 0; p + static_cast<int>(j) < c.T; p++) tj[size_t(b) * c.T + p] = targets[size_t(b) * c.T + p + j];
    tg.push_back(tj.data());
    w.push_back(mtp_w[j - 1]);
  }
  return softcap_ce_multi(t, logits, tg, w, cap, row_losses);
}

}  // namespace frontier
