// The frozen evaluator's wire format: how the organiser asks a team's binary for next-token distributions.
//
// The team's binary serves; the organiser's code (arena/evaluator.h) tokenizes, checks and computes every number.
//
//   organiser -> team (stdin of `frontier serve-logprobs --checkpoint C`), little-endian, until EOF:
//     per request:  u32 n (1 <= n <= max_len), then n x u32 token ids (each < vocab_size)
//   team -> organiser (stdout):
//     once, first:  8 bytes "FLPROB01", u32 vocab_size V, u32 max_len
//     per request, in order:  u32 n, then n x V float32: row i = log P(next token = v | tokens[0..i]), natural log
//   Anything else on stdout is a protocol error; diagnostics go to stderr. Exit status 0 after EOF.
//
// Whole distributions, not the log-probability of one target: the organiser picks the target's entry itself and
// checks that each row is a distribution (sum of exp within a tolerance), so no team code decides what is scored.
// Rows for n tokens cost 4 n V bytes (V = 8192, n = 512: 16 MiB); the organiser sends requests in chunks.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

inline constexpr char kLogprobMagic[9] = "FLPROB01";

struct ServedHeader {
  uint32_t vocab_size = 0, max_len = 0;
};

// Requests, as the organiser writes them (one buffer for a stdin file).
std::string encode_requests(const std::vector<std::vector<uint32_t>>& seqs);
// The server's side: the next request; *eof at a clean end of input. A truncated request is an error.
Status read_request(FILE* in, std::vector<uint32_t>* tokens, bool* eof);
Status write_header(FILE* out, const ServedHeader& h);
Status write_response(FILE* out, uint32_t n, uint32_t vocab, const float* logp);  // (n, V)

// The organiser's side: parses a whole stdout buffer against the requests that produced it. rows[r] points at
// request r's (n_r, V) block inside data (which must outlive them). Errors name the request and what was wrong
// (bad magic, a count that differs from the request, a short read, trailing bytes).
struct ServedResponses {
  ServedHeader header;
  std::vector<const float*> rows;
};
Status parse_responses(const uint8_t* data, size_t size, const std::vector<size_t>& request_lengths,
                       ServedResponses* out);

}  // namespace frontier
