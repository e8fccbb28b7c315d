// Autoregressive sampling with a KV cache: each new token runs one position through the model (GEMVs against the
// weights, attention over the cached keys and values), instead of re-running the whole prefix. Same math as
// Gpt::forward (tested: logits at every position match the full forward).
//
//   Sampler s(gpt);                          // cache for gpt.shape().seq_len positions
//   std::vector<float> logits;
//   for (uint32_t t : prompt) s.push(t, &logits);   // prefill
//   uint32_t next = s.sample(logits, /*temperature=*/0.8f, /*top_k=*/50, &rng);
//
// Sampling: temperature 0 is greedy (argmax, lowest id on ties); otherwise softmax(logits / temperature) over the
// top_k largest logits (0 = all). The KV-cache path covers windows, the QK scale, partial RoPE, the value-embedding
// layout and gate, the MLP width, softcap and a tied head; smear, backout, n-gram tables, the key offset, gated or
// leaky MLPs and experts run the whole prefix through Gpt::forward instead (same logits, O(T^2) per token).
// The RNG is util/rng.h's splitmix64, so a seed gives the same text on every machine.
// temperature must be finite and >= 0, top_k >= 0 (a CHECK: callers validate user input first).
#pragma once

#include <cstdint>
#include <vector>

#include "model/gpt.h"
#include "util/rng.h"

namespace frontier {

class Sampler {
 public:
  explicit Sampler(const Gpt& gpt);
  // Runs token at the next position; logits (V) of the softcapped head for the following token.
  void push(uint32_t token, std::vector<float>* logits);
  int64_t position() const { return pos_; }
  int64_t capacity() const { return gpt_.shape().seq_len; }
  void reset() {
    pos_ = 0;
    history_.clear();
  }
  static uint32_t sample(const std::vector<float>& logits, float temperature, int top_k, Rng* rng);

 private:
  const Gpt& gpt_;
  const float* w(const std::string& name) const;
  int64_t pos_ = 0;
  std::vector<float> kcache_, vcache_;  // (L, seq_len, Hkv, D)
  bool cached_ = true;                   // the KV-cache path covers this architecture (else: full forward)
  std::vector<int32_t> history_;         // the tokens so far, for the full-forward path
};

}  // namespace frontier
