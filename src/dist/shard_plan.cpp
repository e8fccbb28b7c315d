#include "dist/shard_plan.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace frontier {

std::vector<int64_t> ShardPlan::counts() const {
  std::vector<int64_t> c(begin.size() - 1);
  for (size_t r = 0; r + 1 < begin.size(); r++) c[r] = begin[r + 1] - begin[r];
  return c;
}

std::string ShardPlan::describe() const {
  std::string out;
  for (size_t r = 0; r + 1 < begin.size(); r++) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%srank %zu: %.2fM params, %.0f ms est.", r ? "; " : "", r,
                  (begin[r + 1] - begin[r]) / 1e6, 1e3 * est_seconds[r]);
    out += buf;
  }
  return out;
}

double optimizer_cost_seconds(const ParamInfo& p, int ns_steps) {
  const double n = static_cast<double>(p.numel());
  if (p.group == ParamGroup::kMatrix) {
    const double r = static_cast<double>(std::min(p.shape[0], p.shape[1]));
    const double c = static_cast<double>(std::max(p.shape[0], p.shape[1]));
    return (ns_steps * (3.0 * r * r * c + r * r * r) + 12.0 * n) / 150e9;
  }
  return 28.0 * n / 10e9;
}

// dp[k][i]: the smallest possible largest share when the first i parameters go to k ranks. P is ~ 10 L and R small,
// so O(R P^2) is nothing.
ShardPlan plan_optimizer_shards(const std::vector<ParamInfo>& params, int ranks, int ns_steps) {
  const int P = static_cast<int>(params.size());
  std::vector<double> prefix(P + 1, 0.0);
  for (int i = 0; i < P; i++) prefix[i + 1] = prefix[i] + optimizer_cost_seconds(params[i], ns_steps);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> dp(ranks + 1, std::vector<double>(P + 1, inf));
  std::vector<std::vector<int>> cut(ranks + 1, std::vector<int>(P + 1, 0));
  dp[0][0] = 0;
  for (int k = 1; k <= ranks; k++)
    for (int i = 0; i <= P; i++)
      for (int j = 0; j <= i; j++) {  // rank k-1 takes parameters [j, i)
        const double v = std::max(dp[k - 1][j], prefix[i] - prefix[j]);
        if (v < dp[k][i] - 1e-15) {
          dp[k][i] = v;
          cut[k][i] = j;
        }
      }
  std::vector<int> first(ranks + 1);
  first[ranks] = P;
  for (int k = ranks; k >= 1; k--) first[k - 1] = cut[k][first[k]];
  ShardPlan plan;
  const int64_t total = P ? params.back().offset + params.back().numel() : 0;
  for (int k = 0; k <= ranks; k++) plan.begin.push_back(first[k] < P ? params[first[k]].offset : total);
  for (int k = 0; k < ranks; k++) plan.est_seconds.push_back(prefix[first[k + 1]] - prefix[first[k]]);
  return plan;
}

}  // namespace frontier
