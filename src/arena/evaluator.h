// The organiser's frozen evaluator: scores a team's checkpoint through the team's own server (arena/protocol.h),
// computing val_bpb itself and checking what it is served.
//
//   std::vector<std::string> docs;
//   FRONTIER_RETURN_IF_ERROR(load_hidden_text("hidden.jsonl", &docs));
//   EvalOutcome o;
//   FRONTIER_RETURN_IF_ERROR(evaluate_served({bin, "serve-logprobs", "--checkpoint", ckpt}, team_tokenizer, docs,
//                                            checks, work_dir, timeout_s, &o));
//   if (o.verdict == "disqualified") ...          // o.reason and o.evidence say what was caught
//
// What it does, in order (docs/arena.md has the tolerances and the reasoning):
//  1. Tokenizes each hidden document with the *team's* tokenizer (<|bos|> first) and requires decode(encode(doc)) ==
//     doc byte for byte: val_bpb counts the original UTF-8 bytes, so a tokenizer that loses bytes could not be
//     compared. Teams may change the tokenizer; bits per byte stays comparable.
//  2. Asks the server for its context length (a call with no requests), cuts each document into windows of at most
//     that many input tokens (each token predicted once), and adds `probes` look-ahead probes: a copy of a window
//     with every token after a random position p replaced by random tokens. Requests go out shuffled, in chunks.
//  3. Checks every served row: finite, and |sum_v exp(logp_v) - 1| <= normalisation_tolerance; checks each probe:
//     the distribution at p (which sees only tokens 0..p) must equal the original's within lookahead_tolerance.
//     A failure disqualifies, with the request, position and numbers as evidence.
//  4. val_bpb = sum over targets of -log2 P(target) / sum of the documents' UTF-8 bytes.
// An error Status means the evaluation could not be done (the server crashed or broke the protocol, e.g. on a
// missing or corrupt checkpoint); a verdict is only given when every row was received.
//
// What the probes cannot catch: a server that remembers earlier requests and replays the rows of a shared prefix
// stays consistent under re-querying. docs/arena.md discusses it and the interactive alternative.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

class Tokenizer;

// .jsonl ("text" of each line) or any other file as one document. Empty documents are skipped; invalid UTF-8 is
// an error naming the line.
Status load_hidden_text(const std::string& path, std::vector<std::string>* docs);

struct EvalChecks {
  double normalisation_tolerance = 1e-3;
  int probes = 16;
  double lookahead_tolerance = 1e-4;
  uint64_t seed = 0;                // probe positions and replacement tokens; 0: drawn from std::random_device
  size_t max_call_bytes = 256 << 20;  // served bytes per server process (requests are chunked to stay below)
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
  uint64_t seed = 0;
  nlohmann::json json() const;
};

Status evaluate_served(const std::vector<std::string>& server_argv, const Tokenizer& tok,
                       const std::vector<std::string>& docs, const EvalChecks& checks, const std::string& work_dir,
                       double timeout_s, EvalOutcome* out);

}  // namespace frontier
