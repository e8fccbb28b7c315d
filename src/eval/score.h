// The leaderboard's composite score (docs/scoring.md): val_bpb and CORE weighted 50/50 after putting both on a
// 0..1 scale where 0 is "knows nothing" and 1 is perfect:
//   bpb_score = clamp(1 - val_bpb / 8, 0, 1)   (8 bits per byte = uniform over bytes; 0 bits = perfect)
//   core      = mean centered accuracy       (0 = the DCLM random baseline; 1 = every item right)
//   composite = 0.5 * bpb_score + 0.5 * core
#pragma once

#include <algorithm>

namespace frontier {

inline double bpb_score(double val_bpb) { return std::clamp(1.0 - val_bpb / 8.0, 0.0, 1.0); }
inline double composite_score(double val_bpb, double core) { return 0.5 * bpb_score(val_bpb) + 0.5 * core; }

}  // namespace frontier
