// The advisor's chart: val_bpb against the training budget (log scale), one line per data set and config, from
// the runs `frontier advise --validate/--compare` recorded (validations.jsonl). Labels "advised (depth 4 T 256)"
// form one line, "advised", with each point's shape written beside it: the advice changes with the budget.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace frontier {

// rows: {"label", "data", "budget", "val_bpb"}; the latest row of each (data, label, budget) counts.
std::string budget_chart_svg(const std::vector<nlohmann::json>& rows);

}  // namespace frontier
