// `frontier advise --budget S`: the co-design advisor. For this machine, this data and this budget, which model
// shape and recipe reach the lowest val_bpb? It answers with a ready config (--out) and the reasons, from three
// measurements, each cached so that advising again (another budget, another day on the same machine) reuses them:
//
//  1. Speed (per machine): every candidate shape (depth x sequence length; width and heads derive from depth) is
//     timed here, forward + backward + optimizer on random tokens (train/step_parts.h's measure_step_parts: 2
//     warm-up and 3 timed steps, median; the faster of two such), so the budget buys steps = S / step time and
//     D = steps x B x T tokens.
//     Cache: $FRONTIER_CACHE/advise/speed.json, keyed by CPU, ISA tier, threads, precision and shape.
//  2. Loss (per data set and recipe): a sweep of short fixed-step runs (train.max_steps: schedules on step
//     progress, so each point is bit-reproducible and does not depend on how loaded the machine was), chosen to
//     span the candidates' sizes and token counts at this budget: on the middle sequence length, three depths at
//     1/8 and 1/2 of the budget; on the others, two depths at 1/4. About 3 x the budget of training, once; a cached
//     point of the same shape within 2x of the wanted steps is reused. Cache: $FRONTIER_CACHE/advise/<data>-<recipe>/
//     points.jsonl (the recipe hash covers optim.*, the schedule, the seed and eval.*).
//  3. The fit (advise/loss_model.h): L = E_r + A/N^alpha + B/D^beta; its leave-one-out error is printed as the
//     prediction's error.
// Then every candidate's val_bpb at the budget is predicted. Candidates that would see the training data more than
// once are excluded and listed (the loader would repeat documents). The model ranks shapes of one sequence length
// better than it ranks sequence lengths (measured: docs/codesign.md), so --validate K (default 1) trains the best K
// of each sequence length at the full budget and the advice is the best measured (--validate 0: the best
// predicted). --compare trains given configs likewise. All print predicted vs measured; they run in budget_mode =
// probe with the step time of step 1, so a loaded machine slows them but does not change their result, and a run
// recorded before (same config, shape, budget, step time) is reused, not repeated. validations.jsonl keeps them
// all, with one "advice" row per decision, which --chart draws.
//
// Learning rate: the best measured shape is trained again with the base's four learning rates (optim.matrix_lr,
// embedding_lr, unembedding_lr, scalar_lr) all scaled by each of --lr-scales (default 0.5 and 2), and the advice
// is the best measured of all; the loss model does not predict these (its sweep ran at the base's rates).
//
// Architecture and recipe (--levers, default: advise/levers.h's default list; none skips the stage): on the best
// shape at its best learning rates, the base is trained on --seeds seeds (default 3: 42, 43, 44 from train.seed);
// each lever alone on the first seed, with its own step time measured here (timed back to back with the base's
// shape; a lever whose step is the base's by construction, or within 3% of it, shares the base's, so that the
// comparison is not of two noisy probes; one that is slower buys fewer steps, and the table shows both its cost and
// its gain); the levers that beat the base on the first seed are combined (a key two of them set differently goes
// to the larger gain) and the combination is trained on every seed. The advice takes the combination when its
// paired difference from the base (seed by seed: both share each seed's initialisation and data order) is more than
// twice its standard error, else the base. The seed spread is printed beside the single-seed gains.
//
// The shapes again (--reshape-above, default 10%): when the chosen levers change the pick's step time by more than
// that (windows make long sequences and deep stacks cheaper), every candidate's step is timed with them, the loss
// model ranks the candidates at the tokens their new step buys, and the best K of each sequence length are trained
// with the levers, first on one seed, then, if better than the pick with the levers there, on every seed; a shape
// whose paired difference from the pick with the levers beats twice its standard error becomes the advice. The
// loss model was fitted without the levers, so this assumes their gain beyond the step's cost is the same at every
// shape; the training runs are the check.
//
// Not searched (the base config's values are kept and printed): the learning rates' ratios, warmdown, batch in
// sequences, head_dim, precision. `frontier research` tunes those around the advised shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

struct AdviseOptions {
  double budget = 0;                    // seconds of training (train.budget_seconds)
  std::string base = "configs/baseline.toml";  // recipe and everything not searched
  std::string data;                     // prepared dataset (default: the base's train.data)
  std::string out = "advice.toml";      // the advised config
  std::string cache;                    // default $FRONTIER_CACHE/advise
  int validate = 1;                     // train the best K of each sequence length at the full budget
  std::vector<std::string> compare;     // configs trained at the full budget beside them
  std::vector<int> depths = {1, 2, 3, 4, 5, 6, 8};
  std::vector<int> seq_lens = {128, 256, 512};
  std::vector<double> lr_scales = {0.5, 2.0};  // the best measured shape again at these multiples of the base's LRs
  std::string frontier_bin;             // runs the sweep and validation (default /proc/self/exe)
  bool no_sweep = false;                // fit the cached sweep points only (e.g. to extrapolate to a long budget)
  std::string chart;                    // write the budget chart (SVG) of validations.jsonl here and stop
  std::string levers = "default";       // the architecture stage's levers (advise/levers.h): default, all, none, names
  int seeds = 3;                        // seeds of the base and the combination in the architecture stage
  double reshape_above = 0.10;          // the chosen levers' step-cost change beyond which the shapes are rerun
  // The hardware profile to advise for, on this CPU (docs/hardware-frontier.md): an instruction-set tier at or below
  // what the CPU has (as FRONTIER_ISA; the trials inherit it), a thread count and a precision ("" / 0: the base
  // config's train.threads and train.precision, and the CPU's best tier). Each profile has its own caches.
  std::string isa;
  int threads = 0;
  std::string precision;
};

Status run_advise(const AdviseOptions& o);

// Whether a cached sweep point of `have` steps stands in for a wanted one of `want` steps (same shape): within 2x
// either way, on the truncated step counts. A budget's steps are floor(f x budget / step time), so the point made
// at half a budget can be a step short of half of what the whole budget wants (900 s and 1800 s at 0.1996 s/step:
// 2,254 and 4,509), and must still count, or doubling the budget reruns the sweep it was meant to reuse.
bool sweep_point_reusable(int64_t have, int64_t want);

}  // namespace frontier
