// The helpers the command groups share (apps/commands.h).
#include "commands.h"

#include <cmath>
#include <cstdio>

#include "train/schema.h"

namespace frontier::cli {

int fail(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
}

CLI::Validator number_in(double lo, double hi) {
  char range[64];
  std::snprintf(range, sizeof(range), hi == DBL_MAX ? ">= %g" : "in [%g, %g]", lo, hi);
  return CLI::Validator(
      [lo, hi, what = std::string(range)](std::string& v) {
        double x = 0;
        bool ok = CLI::detail::lexical_cast(v, x) && x >= lo && x <= hi;  // false for NaN
        return ok ? std::string() : "Value " + v + " is not a number " + what;
      },
      std::string(hi == DBL_MAX ? "" : "FINITE ") + (lo == 0 ? "NONNEGATIVE" : lo == 1 ? "POSITIVE" : range));
}

CLI::Validator finite_number(bool positive) {
  return CLI::Validator(
      [positive](std::string& v) {
        double x = 0;
        bool ok = CLI::detail::lexical_cast(v, x) && std::isfinite(x) && (positive ? x > 0 : x >= 0);
        return ok ? std::string() : "Value " + v + " is not a finite number " + (positive ? "> 0" : ">= 0");
      },
      positive ? "FINITE > 0" : "FINITE >= 0");
}

Status load_train_config(const std::string& path, const std::vector<std::string>& sets, Config* cfg) {
  ConfigSchema schema = train_schema();
  *cfg = schema.defaults();
  if (!path.empty()) FRONTIER_RETURN_IF_ERROR(schema.load_toml(path, cfg));
  for (const auto& kv : sets) FRONTIER_RETURN_IF_ERROR(schema.apply_set(kv, cfg));
  return ok_status();
}

}  // namespace frontier::cli
