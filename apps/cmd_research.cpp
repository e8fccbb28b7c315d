// frontier research: the autoresearch loop, trials under the budget, keep what lowers val_bpb
// (research/research.h).
#include <limits>
#include <memory>

#include "commands.h"
#include "research/research.h"

namespace frontier::cli {
namespace {

int run_research_command(const ResearchOptions& ro) {
  Status s = run_research(ro);
  if (!s.ok()) return fail(s);
  return 0;
}

}  // namespace

void add_research_command(CLI::App& app, Commands& cmds) {
  auto ro = std::make_shared<ResearchOptions>();
  ro->base = "configs/tiny.toml";
  ro->space = "configs/space.toml";
  auto* rs = app.add_subcommand("research", "The autoresearch loop: run trials of `frontier train` under a fixed "
                                            "budget, keep a change only when it beats the best by more than the "
                                            "measured seed-to-seed spread; ledger, chart, resume (docs/agents.md)");
  rs->add_option("--base", ro->base, "Base config (TOML)")->capture_default_str();
  rs->add_option("--space", ro->space, "Search space (TOML: a table per config key with choices or min/max)")
      ->capture_default_str();
  const auto rs_count = CLI::Range(0, std::numeric_limits<int>::max());
  rs->add_option("--budget", ro->budget, "Training budget per trial, seconds")
      ->check(finite_number(true))->capture_default_str();
  rs->add_option("--hours", ro->hours, "Stop after this many hours (0 = no limit)")
      ->check(finite_number(false))->capture_default_str();
  rs->add_option("--trials", ro->max_trials, "Stop when the ledger has this many trials, baseline included (0 = no "
                                             "limit)")->check(rs_count)->capture_default_str();
  rs->add_option("--proposer", ro->proposer, "random | mutate | halving | a command that reads the ledger as JSON on "
                                             "stdin and prints {\"set\": {...}, \"description\": ...}")
      ->capture_default_str();
  rs->add_option("--proposer-timeout", ro->proposer_timeout, "Seconds an external proposer may take; then it is "
                                                             "killed and the proposal recorded as failed")
      ->check(finite_number(true))->capture_default_str();
  rs->add_option("--repeats", ro->repeats, "Base-config runs (different seeds) that measure the noise floor")
      ->check(rs_count)->capture_default_str();
  rs->add_option("--min-delta", ro->min_delta, "Keep threshold floor: max(spread, this)")
      ->check(finite_number(false))->capture_default_str();
  rs->add_option("--seed", ro->seed, "Proposal and baseline seed")->capture_default_str();
  rs->add_option("--out", ro->out_dir, "Session directory (resumes if it holds a ledger)")->required();
  rs->add_option("--data", ro->data, "Prepared dataset for every trial (overrides the base's train.data)");
  rs->add_option("--set", ro->extra_sets, "key=value applied to every trial (not searched), repeatable");
  rs->add_option("--git", ro->git_repo, "Git mode: commit each kept config to this repository, on a branch "
                                        "frontier/research-<session>");
  rs->add_option("--budget-mode", ro->budget_mode, "probe: each trial trains budget / measured step time steps, "
                                                   "one probe shared by trials of the same speed (reproducible); "
                                                   "wall: wall-clock budgets")
      ->check(CLI::IsMember({"probe", "wall"}))->capture_default_str();
  rs->add_option("--ranks", ro->ranks, "Run each trial on this many ranks under mpirun (docs/distributed.md)")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  cmds.push_back({rs, [ro] { return run_research_command(*ro); }});
}

}  // namespace frontier::cli
