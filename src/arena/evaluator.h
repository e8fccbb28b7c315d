// The organiser's frozen evaluator: scores a team's checkpoint through the team's own server (arena/protocol.h),
// computing val_bpb and every CORE decision itself and checking what it is served.
//
//   EvalInputs in;
//   FRONTIER_RETURN_IF_ERROR(load_hidden_text("hidden.jsonl", &in.docs));
//   in.core = &bundle;  in.core_max_per_task = 20;          // a composite phase; nullptr: val_bpb only
//   EvalOutcome o;
//   FRONTIER_RETURN_IF_ERROR(evaluate_served({bin, "serve-logprobs", "--checkpoint", ckpt}, team_tokenizer, in,
//                                            checks, work_dir, timeout_s, &o));
//   if (o.verdict == "disqualified") ...          // o.reason and o.evidence say what was caught
//
// What it does, in order (docs/arena.md has the tolerances and the reasoning):
//  1. Tokenizes each hidden document with the *team's* tokenizer (<|bos|> first) and requires decode(encode(doc)) ==
//     doc byte for byte: val_bpb counts the original UTF-8 bytes, so a tokenizer that loses bytes could not be
//     compared. Teams may change the tokenizer; bits per byte stays comparable.
//  2. Asks the server for its context length (a call with no requests), cuts each document into windows of at most
//     that many input tokens (each token predicted once). A composite phase adds CORE: every item planned by
//     eval/core_eval.h's plan_core_task (the same code as `frontier eval core`) with the team's tokenizer and the
//     served context length; each option's sequence is one request. Then `probes` look-ahead probes: a copy of a
//     request with every token after a random position p replaced by random tokens.
//  3. The causal spot check (arena/causal.h), before any batch call: `causal_requests` requests, `causal_positions`
//     positions each, streamed one position at a time to fresh server processes.
//  4. The batch: requests go out shuffled, in chunks. Checks every served row: finite, and |sum_v exp(logp_v) - 1| <=
//     normalisation_tolerance; each probe: the distribution at p (which sees only tokens 0..p) must equal the
//     original's within lookahead_tolerance; each streamed row must equal the batch row within the same tolerance.
//     A failure disqualifies, with the request, position and numbers as evidence.
//  5. val_bpb = sum over targets of -log2 P(target) / sum of the documents' UTF-8 bytes. CORE: per item, the losses
//     (-logp of each next token) and greedy predictions (the first maximum of each row) go to decide_core_item, the
//     decision `frontier eval core` makes in process. composite = 0.5 bpb_score + 0.5 CORE (eval/score.h).
// An error Status means the evaluation could not be done (the server crashed or broke the protocol, e.g. on a
// missing or corrupt checkpoint); a verdict is only given when every row was received.
//
// What the checks cannot catch: a server that persists what it was asked across processes (files) and replays the
// streamed rows when the same prefix comes again in the batch. docs/arena.md discusses it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/core_eval.h"
#include "util/status.h"

namespace frontier {

class Tokenizer;

// .jsonl ("text" of each line) or any other file as one document. Empty documents are skipped; invalid UTF-8 is
// an error naming the line.
Status load_hidden_text(const std::string& path, std::vector<std::string>* docs);

struct EvalChecks {
  double normalisation_tolerance = 1e-3;
  int probes = 16;
  double lookahead_tolerance = 1e-4;  // also the causal check's: max |logp change| streamed vs batch
  int causal_requests = 4;            // requests streamed one position at a time, each in a new server process
  int causal_positions = 4;           // positions per streamed request
  uint64_t seed = 0;                // probe positions and replacement tokens; 0: drawn from std::random_device
  size_t max_call_bytes = 256 << 20;  // served bytes per server process (requests are chunked to stay below)
};

struct EvalInputs {
  std::vector<std::string> docs;       // the hidden validation text
  const CoreBundle* core = nullptr;    // a composite phase: CORE through the server too
  int64_t core_max_per_task = 0;       // CORE items per task (0: all)
};

struct EvalOutcome {
  std::string verdict;  // "ok" | "disqualified"
  std::string reason;   // what disqualified it (one line)
  nlohmann::json evidence = nlohmann::json::object();
  double val_bpb = 0, seconds = 0;
  int64_t docs = 0, bytes = 0, targets = 0, requests = 0, probes = 0, calls = 0;
  uint32_t vocab_size = 0, max_len = 0;
  double worst_normalisation = 0;  // max |sum exp - 1| seen
  double worst_probe_change = 0;   // max |logp change| at a probed position
  int64_t causal_requests = 0, causal_positions = 0;
  double worst_causal_change = 0;  // max |logp change| between a streamed row and its batch row
  // A composite phase: CORE decided from the served rows, and the composite (docs/scoring.md).
  bool has_core = false;
  CoreReport core;
  int64_t core_requests = 0;
  double composite = 0;
  uint64_t seed = 0;
  nlohmann::json json() const;
};

Status evaluate_served(const std::vector<std::string>& server_argv, const Tokenizer& tok, const EvalInputs& in,
                       const EvalChecks& checks, const std::string& work_dir, double timeout_s, EvalOutcome* out);

}  // namespace frontier
