// val_bpb: bits per byte of a model on a prepared split, as `frontier train` ends, `eval bpb` and `eval score`
// report it (nanochat's evaluate_bpb, on the windows of data/val_windows.h).
//
//   double bpb = 0, se = 0;
//   FRONTIER_RETURN_IF_ERROR(evaluate_bpb(gpt, data, /*eval_tokens=*/32768, /*B=*/8, gpt.shape().seq_len, &bpb,
//                                         "val", nullptr, &se));
//
// It sits below train/ (docs/architecture.md): a run ends by calling it, and scoring never needs training.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

class Gpt;
class PreparedData;

// nanochat's evaluate_bpb formula: summed nats over summed UTF-8 bytes of the target tokens, specials (0 bytes)
// excluded, on the first eval_tokens target tokens of the validation split, each scored once, in windows of at most
// T (data/val_windows.h: the same text at every T, unlike nanochat's best-fit val loader, which crops documents to
// their first T tokens). Under mpirun the batches are dealt over the ranks (batch i to rank i mod R) and the sums
// reduced: the same batches are scored. *scored (optional): the target tokens scored, eval_tokens or, for a split
// shorter than that, the whole split (a warning says so).
// *se (optional): the standard error of that estimate from the validation sample alone (the windows of T targets
// as samples of a ratio estimator). windows (optional, one process only): each window's (nats, bytes), in order,
// for a paired comparison of two models on the same windows (bpb_difference).
struct BpbWindows {
  std::vector<double> nats, bytes;
};
Status evaluate_bpb(Gpt& gpt, const PreparedData& data, int64_t eval_tokens, int B, int T, double* bpb,
                    const std::string& split = "val", int64_t* scored = nullptr, double* se = nullptr,
                    BpbWindows* windows = nullptr);
// bpb(a) - bpb(b) on the same windows, and its standard error from the paired per-window differences: far smaller
// than either model's own, since both score the same text. False if the windows differ.
bool bpb_difference(const BpbWindows& a, const BpbWindows& b, double* diff, double* se);

}  // namespace frontier
