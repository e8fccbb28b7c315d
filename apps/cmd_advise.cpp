// frontier advise: the co-design advisor, the shape predicted to reach the lowest val_bpb in a budget
// (advise/advise.h).
#include <memory>

#include "advise/advise.h"
#include "advise/levers.h"
#include "commands.h"

namespace frontier::cli {
namespace {

int run_advise_command(const AdviseOptions& ao) {
  if (ao.budget <= 0 && ao.chart.empty()) return fail(Status::error("advise needs --budget SECONDS"));
  Status s = run_advise(ao);
  if (!s.ok()) return fail(s);
  return 0;
}

}  // namespace

void add_advise_command(CLI::App& app, Commands& cmds) {
  auto ao = std::make_shared<AdviseOptions>();
  auto* ad = app.add_subcommand("advise", "The co-design advisor: time candidate shapes here, fit a loss model "
                                          "L(N, D) to a sweep of short runs on the data (both cached), predict each "
                                          "candidate's val_bpb at the budget, write the best as a config and train "
                                          "it to check (docs/codesign.md)");
  ad->add_option("--budget", ao->budget, "Training budget, seconds (no default: required, except with --chart)")
      ->check(finite_number(true));
  ad->add_option("--base", ao->base, "Base config: the recipe kept (learning rates, schedule, batch in sequences, "
                                     "precision)")->capture_default_str();
  ad->add_option("--data", ao->data, "Prepared dataset (default: the base's train.data)");
  ad->add_option("--out", ao->out, "Write the advised config here")->capture_default_str();
  ad->add_option("--cache", ao->cache, "Cache of step times, sweep points and validations (default "
                                       "$FRONTIER_CACHE/advise)");
  ad->add_option("--validate", ao->validate, "Train the best K candidates of each sequence length at the full budget "
                                             "(predicted vs measured); the advice is the best measured (0: the best "
                                             "predicted)")
      ->check(CLI::Range(0, 64))->capture_default_str();
  ad->add_option("--lr-scales", ao->lr_scales, "Train the best measured shape again with the base's learning rates "
                 "times each of these (comma-separated; 1 alone: none) and advise the best measured")
      ->check(CLI::Range(1e-3, 1e3))
      ->delimiter(',')
      ->capture_default_str();
  std::string names;  // the catalogue's, so the help cannot fall behind it
  for (const auto& l : lever_catalogue()) names += (names.empty() ? "" : ", ") + l.name;
  ad->add_option("--levers", ao->levers, "The architecture stage's levers on the best shape: default, all, none, or "
                 "comma-separated names (" + names + "; advise/levers.h)")
      ->capture_default_str();
  ad->add_option("--reshape-above", ao->reshape_above, "When the chosen levers change the pick's step time by more "
                 "than this fraction, time every shape again with them and train the best (0: whenever levers are "
                 "chosen)")
      ->check(CLI::Range(0.0, 100.0))->capture_default_str();
  ad->add_option("--seeds", ao->seeds, "Seeds of the base and of the levers' combination in the architecture stage")
      ->check(CLI::Range(1, 16))->capture_default_str();
  ad->add_option("--isa", ao->isa, "Advise for this instruction-set tier of this CPU (ref, avx2, avx512, avx512bf16, amx; "
                 "default: the best it has), as FRONTIER_ISA");
  ad->add_option("--threads", ao->threads, "Advise for this many threads (default: the base's train.threads, 0 = all "
                 "cores)")->check(CLI::Range(0, 4096))->capture_default_str();
  ad->add_option("--precision", ao->precision, "Advise for this precision (auto, fp32, bf16; default: the base's "
                 "train.precision)");
  ad->add_option("--compare", ao->compare, "Configs to train at the full budget beside the advice, repeatable");
  ad->add_option("--depths", ao->depths, "Candidate depths")->check(CLI::Range(1, 64))->delimiter(',')
      ->capture_default_str();
  ad->add_option("--seq-lens", ao->seq_lens, "Candidate sequence lengths (at least one)")->check(CLI::Range(8, 65536))
      ->delimiter(',')->capture_default_str();
  ad->add_flag("--no-sweep", ao->no_sweep, "Run no sweep: fit the cached points only (a longer budget than they cover "
                                           "is then an extrapolation, which the output says)");
  ad->add_option("--chart", ao->chart, "Only draw val_bpb against budget of every recorded validation as SVG here");
  cmds.push_back({ad, [ao] { return run_advise_command(*ao); }});
}

}  // namespace frontier::cli
