// The config keys a competitor or a research proposal may not set: ONE table, read by the arena
// (arena/submission.h: frozen_key_in, for submissions and again by the scorer) and by research
// (research/research.h: is_frozen_key, for the space, --set and every proposal).
//
//   if (const FrozenKey* f = frozen_key("train.probe_step_seconds"); f && f->arena)
//     return Status::error("config sets " + std::string(f->key) + ": " + f->why);
//
// What is frozen: the frozen evaluator (eval.*), the data, and everything that decides how many optimizer steps a
// budget buys or how time is counted (budget, step cap, excluded warm-up, the budget mode and the probe step time:
// a submission that sets train.probe_step_seconds = 1e-4 would plan a thousand times the steps its budget buys).
// A key added to the train schema that changes the budget's accounting belongs here, and nowhere else.
//
// The probe step time is also checked where it is supplied rather than measured (`--set
// train.probe_step_seconds=...` on the command line, or research's shared probe): check_probe_step_seconds refuses a
// figure far below a measurement of the same step, naming the measured time. The measurement is train's probe
// (src/train/train.cpp, TrainRun::probe), which calls it.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

struct FrozenKey {
  const char* key;  // a full key, or a prefix ending in '.' (every key of that table)
  bool arena;       // refused in a competition's submission (the phase and the scorer decide it)
  bool research;    // refused in a research space, --set or proposal (the loop decides it, or it is not searched)
  const char* why;  // one phrase, for the error message
};

const std::vector<FrozenKey>& frozen_keys();  // the table
const FrozenKey* frozen_key(const std::string& key);  // the entry covering key; nullptr: not frozen

// A supplied probe step time is refused when it is below measured / kProbeSlack, where measured is the fastest of
// the probe's timed steps on this machine (the sample least inflated by other load). The slack is wide because load
// is not: on a 2-core machine with two compilers running, the same tiny step measured 0.0018 s and then 0.39 s, and
// research shares one probe between trials measured at different times. 100x still refuses what the attack needs
// (a figure that plans millions of steps); within the competition and research the key is frozen outright.
constexpr double kProbeSlack = 100.0;
Status check_probe_step_seconds(double supplied, double measured);

}  // namespace frontier
