// The `frontier` command line. Thin: parses flags, calls the library, prints results. Each command group registers
// its options and runs in its own file (apps/commands.h); this one builds the app, parses, refuses under mpirun what
// is not written for it, and runs the parsed command. Subcommands:
//   prepare    raw text -> tokenizer + token shards (data/prepare.h)                              cmd_prepare.cpp
//   tokenizer  encode / decode text with a prepared tokenizer                                     cmd_tokenizer.cpp
//   inspect    verify a prepared dataset, show a first batch                                      cmd_prepare.cpp
//   train      train the GPT under a wall-clock budget (train/train.h)                            cmd_train.cpp
//   calibrate  measure and save the peak of each arithmetic unit and memory bandwidth             cmd_calibrate.cpp
//              (calibrate/calibrate.h)
//   bench      kernel GFLOP/s vs the ceilings and OpenBLAS, training tokens/s and MFU             cmd_bench.cpp
//              (bench/bench.h)
//   profile    per-op time, FLOPs, bytes and roofline bound of a few training steps, Perfetto     cmd_profile.cpp
//              trace (profile/profile.h)
//   serve-logprobs  next-token log-probabilities of a checkpoint for the arena's evaluator        cmd_arena.cpp
//              (arena/protocol.h)
//   arena      the competition: submit, score (build, train, frozen evaluator), verify,           cmd_arena.cpp
//              leaderboard, serve (arena/)
//   eval       core: the CORE benchmark (eval/core_eval.h); score: the composite (eval/score.h);  cmd_eval.cpp
//              bpb: val_bpb of a checkpoint
//   sample     generate text from a checkpoint with a KV cache (model/sampler.h)                  cmd_sample.cpp
//   research   the autoresearch loop: trials under the budget, keep what lowers val_bpb           cmd_research.cpp
//              (research/research.h)
//   advise     the co-design advisor: the shape predicted to reach the lowest val_bpb in a        cmd_advise.cpp
//              budget (advise/advise.h)
//   scale      comm: collective speeds between ranks; project: tokens/s on R ranks (dist/)        cmd_scale.cpp
//   export     a checkpoint's model as safetensors + config.json + tokenizer, nanochat's names    cmd_export.cpp
//              (export/model_dir.h)
//   import     such a directory back into a checkpoint (eval, sample, train --resume)             cmd_export.cpp
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>

#include "commands.h"
#include "dist/comm.h"
#include "kernels/isa.h"

using namespace frontier;
using namespace frontier::cli;

namespace {

// Every group registers its subcommands, in the order `frontier --help` lists them.
void add_commands(CLI::App& app, Commands& cmds) {
  add_prepare_command(app, cmds);
  add_tokenizer_command(app, cmds);
  add_inspect_command(app, cmds);
  add_train_command(app, cmds);
  add_calibrate_command(app, cmds);
  add_bench_command(app, cmds);
  add_profile_command(app, cmds);
  // The arena (docs/arena.md): the one command a team's binary must answer, and the organiser's.
  add_serve_logprobs_command(app, cmds);
  add_arena_command(app, cmds);
  add_eval_commands(app, cmds);
  add_sample_command(app, cmds);
  add_research_command(app, cmds);
  add_advise_command(app, cmds);
  add_scale_commands(app, cmds);
  add_export_commands(app, cmds);
}

// Runs the command the command line named. Under mpirun every rank runs it: only those written for it may.
int run_parsed(const Commands& cmds) {
  for (const Command& c : cmds) {
    if (!c.sub->parsed()) continue;
    if (Comm::world().distributed() && !c.under_mpirun)
      return !Comm::world().root() ? 1
                                   : fail(Status::error("only `frontier train` and `frontier scale comm` run under "
                                                        "mpirun (every rank would run this command on its own)"));
    return c.run();
  }
  return 0;
}

int run_main(int argc, char** argv) {
  isa_init_or_exit();  // a bad FRONTIER_ISA is a one-line error before anything runs
  CLI::App app{"Frontier: train the best language model this machine can train in a fixed wall-clock budget."};
  app.require_subcommand(1);
  // A bad flag or value ends, like every other failure, with one line "error: ..." (CLI11's default puts a
  // "Run with --help" line after it). Subcommands inherit it, so it is set before they are added.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return "error: " + std::string(e.what()) + " (see `" + a->get_name() + " --help`)\n";
  });
  Commands cmds;
  add_commands(app, cmds);
  CLI11_PARSE(app, argc, argv);
  return run_parsed(cmds);
}

}  // namespace

// No exception ends the process with an abort: out of memory and anything a library throws become the one-line
// error every other failure gives (the subcommands return Status; this is the net under them).
int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) would kill the process with SIGXFSZ mid-write: no message, no summary, a stray
  // .tmp. Ignored, the write fails with EFBIG instead and takes the ordinary error path (AtomicFile removes its .tmp).
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    Status s = Comm::init(&argc, &argv);  // MPI only when started by mpirun
    if (!s.ok()) return fail(s);
    int rc = run_main(argc, argv);
    Comm::finalize();
    return rc;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: out of memory (free memory, or use a smaller model or batch: model.depth, "
                 "train.micro_batch, eval.batch)\n");
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s (unexpected; please report it with the command line)\n", e.what());
  }
  if (Comm::world().distributed()) Comm::abort_job(1);  // the other ranks would wait for this one
  return 1;
}
