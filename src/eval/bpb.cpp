#include "eval/bpb.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "autograd/tape.h"
#include "data/dataset.h"
#include "data/val_windows.h"
#include "dist/comm.h"
#include "model/gpt.h"

namespace frontier {

Status evaluate_bpb(Gpt& gpt, const PreparedData& data, int64_t eval_tokens, int B, int T, double* bpb,
                    const std::string& split, int64_t* scored, double* se, BpbWindows* per_window) {
  std::vector<Shard> shards;
  FRONTIER_RETURN_IF_ERROR(data.open_split(split, &shards));
  ValWindows windows;
  FRONTIER_RETURN_IF_ERROR(windows.init(shards, T, eval_tokens));
  Comm& comm = Comm::world();
  if (per_window) *per_window = BpbWindows{};
  // Fewer tokens in the split than asked: all of them are scored, once (no text twice), and the number is said.
  if (windows.targets() < eval_tokens && comm.root())
    std::fprintf(stderr, "warning: scoring the whole %s split of %s, %lld tokens, fewer than the %lld asked (lower "
                 "eval.tokens, or eval bpb --tokens)\n", split.c_str(), data.dir().c_str(),
                 static_cast<long long>(windows.targets()), static_cast<long long>(eval_tokens));
  const auto& tb = data.token_bytes();
  std::vector<int32_t> x(B * T), y(B * T);
  std::vector<float> losses(B * T);
  double nats = 0, bytes = 0;
  // Per window (a row of T targets): sums for the ratio estimator's variance (se below).
  double rows = 0, nn = 0, nb = 0, bb = 0;
  Status bad;
  for (int64_t s = 0; bad.ok() && windows.next(B, x.data(), y.data()); s++) {
    if (s % comm.size() != comm.rank()) continue;  // another rank's batch
    Tape tape;
    gpt.forward(tape, x.data(), y.data(), B, T, nullptr, losses.data());
    for (int r = 0; r < B && bad.ok(); r++) {
      double rn = 0, rb = 0;
      for (int i = r * T; i < (r + 1) * T; i++) {
        int nbytes = tb[y[i]];  // 0 for specials: the padding after a window (BOS) is not scored
        if (nbytes == 0) continue;
        if (!std::isfinite(losses[i])) {
          bad = Status::error("the model's loss is not finite at validation position " +
                              std::to_string(s * B * T + i) + " (its weights or activations overflow); val_bpb "
                              "would be meaningless");
          break;
        }
        rn += losses[i];
        rb += nbytes;
      }
      if (rb == 0) continue;
      if (per_window && comm.size() == 1) per_window->nats.push_back(rn), per_window->bytes.push_back(rb);
      nats += rn;
      bytes += rb;
      rows += 1, nn += rn * rn, nb += rn * rb, bb += rb * rb;
    }
  }
  FRONTIER_RETURN_IF_ERROR(comm.agree(bad));
  double sums[6] = {nats, bytes, rows, nn, nb, bb};
  FRONTIER_RETURN_IF_ERROR(comm.allreduce_sum(sums, 6, "the val_bpb sums"));
  nats = sums[0];
  bytes = sums[1];
  if (bytes == 0) return Status::error("validation targets have no bytes (is token_bytes.bin all zeros?)");
  *bpb = nats / (std::log(2.0) * bytes);
  if (se) {  // windows as the samples of a ratio estimator: var(R) ~ k/(k-1) sum (n_i - R b_i)^2 / (sum b_i)^2
    const double R = nats / bytes, k = sums[2];
    const double ss = std::max(0.0, sums[3] - 2 * R * sums[4] + R * R * sums[5]);
    *se = k > 1 ? std::sqrt(k / (k - 1) * ss) / bytes / std::log(2.0) : 0.0;
  }
  if (scored) *scored = windows.targets();
  return ok_status();
}

bool bpb_difference(const BpbWindows& a, const BpbWindows& b, double* diff, double* se) {
  const size_t k = a.nats.size();
  if (k == 0 || b.nats.size() != k || a.bytes != b.bytes) return false;
  double d = 0, bytes = 0;
  for (size_t i = 0; i < k; i++) d += a.nats[i] - b.nats[i], bytes += a.bytes[i];
  const double D = d / bytes;  // nats per byte
  double ss = 0;
  for (size_t i = 0; i < k; i++) {
    const double r = a.nats[i] - b.nats[i] - D * a.bytes[i];
    ss += r * r;
  }
  *diff = D / std::log(2.0);
  *se = k > 1 ? std::sqrt(double(k) / (k - 1) * ss) / bytes / std::log(2.0) : 0.0;
  return true;
}

}  // namespace frontier
