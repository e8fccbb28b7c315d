// The causal spot check: a sample of requests is streamed to a fresh server process one position at a time, so
// that the distribution at position p is served before the server has been sent any token after p.
//
//   std::vector<CausalProbe> probes = {{window_tokens, {3, 9, 17}}};
//   std::vector<std::vector<std::vector<float>>> rows;    // rows[k][j]: the V log-probabilities at positions[j]
//   FRONTIER_RETURN_IF_ERROR(stream_causal(server_argv, work_dir, V, probes, timeout_s, &rows, &used_s));
//
// Why: the look-ahead probes (arena/evaluator.h) re-query a window with its future changed, and a server that keeps
// what it was asked and replays the rows of a shared prefix answers them consistently while still looking ahead on
// every row it serves first. Here each sampled position p is sent as the request tokens[0..p] over a pipe, and the
// next request is written only after the answer to this one was read: row p is the last row of its request, and
// nothing after p exists anywhere yet, so it is causal by construction. The evaluator then compares it with row p
// of the same window served in the batch; a server whose batch rows depend on the future differs there.
// Each probe runs in its own, new server process (no memory of the batch, which comes later, nor of other probes,
// whose text may overlap: CORE's few-shot examples, the options of one item).
//
// Protocol demand this adds (docs/arena.md): the server answers each request before it reads the next one, i.e.
// it flushes stdout after every response. A server that waits for EOF before answering never answers here: the
// check fails with that reason after timeout_s.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

struct CausalProbe {
  std::vector<uint32_t> tokens;    // the whole request as the batch sends it
  std::vector<int64_t> positions;  // increasing, each < tokens.size()
};

// One server process per probe (argv: the team's `serve-logprobs` command line, stderr to work_dir/causal_K.err).
// Errors: the server could not be started, died, broke the protocol, or did not answer within the time left of
// timeout_s (the evaluation's budget; *used_s is added to).
Status stream_causal(const std::vector<std::string>& argv, const std::string& work_dir, uint32_t vocab_size,
                     const std::vector<CausalProbe>& probes, double timeout_s,
                     std::vector<std::vector<std::vector<float>>>* rows, double* used_s);

}  // namespace frontier
