// frontier profile: per-op time, FLOPs, bytes and roofline bound of a few training steps, Perfetto trace
// (profile/profile.h).
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "profile/profile.h"
#include "util/file.h"

namespace frontier::cli {
namespace {

struct ProfileArgs {
  ProfileOptions pfo;
  std::string config, trace = "profile_trace.json", json;
  std::vector<std::string> sets;
};

int run_profile_command(const ProfileArgs& a) {
  Config cfg;
  Status s = load_train_config(a.config, a.sets, &cfg);
  if (!s.ok()) return fail(s);
  ProfileReport rep;
  if (!(s = run_profile(cfg, a.pfo, &rep)).ok()) return fail(s);
  std::printf("%s", rep.table().c_str());
  if (!a.trace.empty()) {
    if (!(s = write_chrome_trace(rep.events, a.trace)).ok()) return fail(s);
    std::printf("trace: %s (%zu events; open in ui.perfetto.dev or chrome://tracing)\n", a.trace.c_str(),
                rep.events.size());
  }
  if (!a.json.empty() && !(s = write_file_atomic(a.json, rep.json.dump(2) + "\n")).ok()) return fail(s);
  return 0;
}

}  // namespace

void add_profile_command(CLI::App& app, Commands& cmds) {
  auto a = std::make_shared<ProfileArgs>();
  ProfileOptions& pfo = a->pfo;
  auto* pf = app.add_subcommand("profile",
                                 "Run a few training steps of a config and report per-op time, FLOPs, bytes, GFLOP/s, "
                                 "GB/s and compute/memory bound against the calibrated roofline; write a "
                                 "Chrome/Perfetto trace");
  pf->add_option("--config", a->config, "TOML config (as for train); defaults apply without it");
  pf->add_option("--set", a->sets, "key=value override, repeatable (e.g. --set model.depth=4)");
  pf->add_option("--steps", pfo.steps, "Profiled training steps")->capture_default_str();
  pf->add_option("--warmup", pfo.warmup, "Unprofiled warm-up steps first")->capture_default_str();
  pf->add_option("--trace", a->trace, "Chrome/Perfetto trace JSON to write (\"\" = none)")->capture_default_str();
  pf->add_option("--json", a->json, "Also write the per-op table as JSON here");
  pf->add_option("--peak-gflops", pfo.peak_gflops,
                 "Peak GFLOP/s for the roofline (0 = the unit of train.precision from the calibration file, else "
                 "measured)")->capture_default_str();
  pf->add_option("--mem-gbs", pfo.mem_gbs, "Memory bandwidth for the roofline (0 = calibration file, else measured)")
      ->capture_default_str();
  cmds.push_back({pf, [a] { return run_profile_command(*a); }});
}

}  // namespace frontier::cli
