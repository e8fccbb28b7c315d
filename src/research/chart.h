// The research session's progress chart as SVG: val_bpb per trial (grey: discarded, green: kept, blue: baseline
// repeats, red x: crashed, rejected, interrupted or still running, hollow: screening runs at a reduced budget) and
// the running best as a line.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace frontier {

std::string progress_svg(const std::vector<nlohmann::json>& ledger);

}  // namespace frontier
