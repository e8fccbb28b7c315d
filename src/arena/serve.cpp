#include "arena/serve.h"

#include <cmath>
#include <memory>
#include <vector>

#include "arena/protocol.h"
#include "model/gpt.h"
#include "train/checkpoint.h"

namespace frontier {

Status serve_logprobs(const std::string& checkpoint, FILE* in, FILE* out) {
  Config cfg;
  std::unique_ptr<Gpt> gpt;
  FRONTIER_RETURN_IF_ERROR(load_trained_model(checkpoint, &cfg, &gpt));
  const uint32_t V = static_cast<uint32_t>(gpt->shape().vocab_size);
  const uint32_t max_len = static_cast<uint32_t>(gpt->shape().seq_len);
  FRONTIER_RETURN_IF_ERROR(write_header(out, {V, max_len}));
  if (std::fflush(out) != 0) return Status::error("cannot write to stdout (the reader went away?)");
  std::vector<uint32_t> tokens;
  std::vector<int32_t> x, y;
  std::vector<float> rows, logp;
  for (int64_t r = 0;; r++) {
    bool eof = false;
    FRONTIER_RETURN_IF_ERROR(read_request(in, &tokens, &eof));
    if (eof) break;
    const uint32_t n = static_cast<uint32_t>(tokens.size());
    if (n == 0 || n > max_len)
      return Status::error("request " + std::to_string(r) + " has " + std::to_string(n) + " tokens; this model serves 1.." +
                           std::to_string(max_len));
    x.resize(n);
    for (uint32_t i = 0; i < n; i++) {
      if (tokens[i] >= V)
        return Status::error("request " + std::to_string(r) + ": token " + std::to_string(tokens[i]) +
                             " is outside the vocabulary (" + std::to_string(V) + ")");
      x[i] = static_cast<int32_t>(tokens[i]);
    }
    y.assign(n, -1);  // no targets: the loss is not needed (ignored positions)
    rows.resize(n);
    Tape tape;
    Var logits;
    gpt->forward(tape, x.data(), y.data(), 1, static_cast<int>(n), &logits, rows.data());
    const float* z = tape.value(logits);  // (n, V) before the softcap
    const float cap = static_cast<float>(gpt->shape().arch.softcap);
    logp.resize(size_t(n) * V);
    for (uint32_t i = 0; i < n; i++) {
      const float* zi = z + size_t(i) * V;
      float* li = logp.data() + size_t(i) * V;
      double mx = -INFINITY;
      for (uint32_t v = 0; v < V; v++) {
        li[v] = cap > 0 ? cap * std::tanh(zi[v] / cap) : zi[v];
        mx = std::max(mx, static_cast<double>(li[v]));
      }
      double sum = 0;
      for (uint32_t v = 0; v < V; v++) sum += std::exp(li[v] - mx);
      const double lse = mx + std::log(sum);
      for (uint32_t v = 0; v < V; v++) li[v] = static_cast<float>(li[v] - lse);
    }
    FRONTIER_RETURN_IF_ERROR(write_response(out, n, V, logp.data()));
    // Each answer leaves before the next request is read: the organiser's causal check (arena/causal.h) writes
    // request k+1 only after it has the answer to request k.
    if (std::fflush(out) != 0) return Status::error("cannot write to stdout (the reader went away?)");
  }
  if (std::fflush(out) != 0) return Status::error("cannot flush stdout");
  return ok_status();
}

}  // namespace frontier
