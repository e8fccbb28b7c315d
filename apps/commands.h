// The `frontier` command line, one file per command group (apps/cmd_*.cpp), and the helpers they share. A group
// registers its subcommands and their options on the app and adds one Command per subcommand that runs; main()
// (apps/frontier.cpp) parses and runs the one the command line named. A group in its own file:
//
//   struct CalibrateArgs { int threads = 0; };
//
//   void add_calibrate_command(CLI::App& app, Commands& cmds) {
//     auto a = std::make_shared<CalibrateArgs>();  // the options write here when the command line is parsed
//     CLI::App* cal = app.add_subcommand("calibrate", "Measure the peak of every arithmetic unit ...");
//     cal->add_option("--threads", a->threads, "Threads (0 = all cores)")->capture_default_str();
//     cmds.push_back({cal, [a] { return run_calibrate(*a); }});
//   }
//
// Options are registered as `<var>->add_option("--name", ...)` on a variable set by `<var> = <parent>
// .add_subcommand("name", ...)`, the root named `app`: tests/docs_test.cpp (Docs.HelpListsEveryOption) reads
// apps/*.cpp in that form to check that every option appears in its subcommand's --help.
#pragma once

#include <CLI/CLI.hpp>
#include <cfloat>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/status.h"

namespace frontier::cli {

struct Command {
  CLI::App* sub = nullptr;     // the subcommand; run() runs when the command line named it
  std::function<int()> run;    // the handler; returns the process's exit status
  bool under_mpirun = false;   // may run under mpirun (on every rank); any other is refused there
};
using Commands = std::vector<Command>;

// The groups, in the order `frontier --help` lists their subcommands (apps/frontier.cpp calls them in this order).
void add_prepare_command(CLI::App& app, Commands& cmds);         // cmd_prepare.cpp
void add_tokenizer_command(CLI::App& app, Commands& cmds);       // cmd_tokenizer.cpp
void add_inspect_command(CLI::App& app, Commands& cmds);         // cmd_prepare.cpp
void add_train_command(CLI::App& app, Commands& cmds);           // cmd_train.cpp
void add_calibrate_command(CLI::App& app, Commands& cmds);       // cmd_calibrate.cpp
void add_bench_command(CLI::App& app, Commands& cmds);           // cmd_bench.cpp
void add_profile_command(CLI::App& app, Commands& cmds);         // cmd_profile.cpp
void add_serve_logprobs_command(CLI::App& app, Commands& cmds);  // cmd_arena.cpp
void add_arena_command(CLI::App& app, Commands& cmds);           // cmd_arena.cpp
void add_eval_commands(CLI::App& app, Commands& cmds);           // cmd_eval.cpp: eval core / score / bpb
void add_sample_command(CLI::App& app, Commands& cmds);          // cmd_sample.cpp
void add_research_command(CLI::App& app, Commands& cmds);        // cmd_research.cpp
void add_advise_command(CLI::App& app, Commands& cmds);          // cmd_advise.cpp
void add_scale_commands(CLI::App& app, Commands& cmds);          // cmd_scale.cpp: scale comm / project
void add_export_commands(CLI::App& app, Commands& cmds);         // cmd_export.cpp: export, import

// Prints "error: <message>" on stderr; returns 1, the exit status of a failed command.
int fail(const Status& s);

// An option's value must be a number in [lo, hi]. CLI11's NonNegativeNumber and Range let NaN through (every
// comparison with it is false) and print DBL_MAX in full; an unsigned option alone would read "-1" as 2^64 - 1.
CLI::Validator number_in(double lo, double hi = DBL_MAX);

// A finite number > 0 (positive) or >= 0: NaN and inf pass CLI::PositiveNumber, whose message also prints DBL_MAX
// in full.
CLI::Validator finite_number(bool positive);

// train_schema's defaults, then a TOML file (if given), then --set lines: how profile and scale read a config.
Status load_train_config(const std::string& path, const std::vector<std::string>& sets, Config* cfg);

}  // namespace frontier::cli
