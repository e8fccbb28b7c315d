// The team's side of the frozen evaluator: `frontier serve-logprobs --checkpoint C` answers the organiser's
// requests (arena/protocol.h) with next-token log-probabilities over the whole vocabulary.
//
//   FRONTIER_RETURN_IF_ERROR(serve_logprobs("runs/x/model.ckpt", stdin, stdout));
//
// This is the one function a fork that changes the model must keep working: the organiser's scorer runs the fork's
// own binary as the server, so any architecture can be scored, and computes val_bpb from what it is served. Rows
// are log_softmax of the softcapped logits of one fp32 forward per request (causal: row i sees tokens[0..i] only).
#pragma once

#include <cstdio>
#include <string>

#include "util/status.h"

namespace frontier {

Status serve_logprobs(const std::string& checkpoint, FILE* in, FILE* out);

}  // namespace frontier
