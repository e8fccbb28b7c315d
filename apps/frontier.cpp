// The `frontier` command line. Thin: parses flags, calls the library, prints results. Subcommands:
//   prepare    raw text -> tokenizer + token shards (data/prepare.h)
//   tokenizer  encode / decode text with a prepared tokenizer
//   inspect    verify a prepared dataset, show a first batch
//   train      train the GPT under a wall-clock budget (train/train.h)
//   eval core  the CORE benchmark on a checkpoint (eval/core_eval.h)
//   calibrate  measure and save the peak of each arithmetic unit and memory bandwidth (calibrate/calibrate.h)
//   sample     generate text from a checkpoint with a KV cache (model/sampler.h)
//   research   the autoresearch loop: trials under the budget, keep what lowers val_bpb (research/research.h)
//   advise     the co-design advisor: the shape predicted to reach the lowest val_bpb in a budget (advise/advise.h)
//   bench      kernel GFLOP/s vs the ceilings and OpenBLAS, training tokens/s and MFU (bench/bench.h)
//   profile    per-op time, FLOPs, bytes and roofline bound of a few training steps, Perfetto trace (profile/profile.h)
//   export     a checkpoint's model as safetensors + config.json + tokenizer, nanochat's names (export/model_dir.h)
//   import     such a directory back into a checkpoint (eval, sample, train --resume) (export/model_dir.h)
//   arena      the competition: submit, score (build, train, frozen evaluator), verify, leaderboard, serve (arena/)
//   serve-logprobs  next-token log-probabilities of a checkpoint for the arena's evaluator (arena/protocol.h)
#include <omp.h>

#include <CLI/CLI.hpp>
#include <cfloat>
#include <filesystem>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "arena/leaderboard.h"
#include "arena/scorer.h"
#include "arena/serve.h"
#include "bench/bench.h"
#include "bench/variants.h"
#include "profile/profile.h"
#include "calibrate/calibrate.h"
#include "kernels/isa.h"
#include "data/dataset.h"
#include "eval/core_eval.h"
#include "eval/score.h"
#include "export/model_dir.h"
#include "model/gpt.h"
#include "model/sampler.h"
#include <nlohmann/json.hpp>
#include "data/loader.h"
#include "data/prepare.h"
#include "dist/comm.h"
#include "dist/comm_bench.h"
#include "dist/scale_model.h"
#include "tokenizer/tokenizer.h"
#include "research/research.h"
#include "advise/advise.h"
#include "train/eval_checkpoint.h"
#include "train/identity.h"
#include "train/train.h"
#include "train/step_parts.h"
#include "util/cache_dir.h"
#include "util/file.h"
#include "util/utf8.h"

using namespace frontier;

static int fail(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
}

// An option's value must be a number in [lo, hi]. CLI11's NonNegativeNumber and Range let NaN through (every
// comparison with it is false) and print DBL_MAX in full; an unsigned option alone would read "-1" as 2^64 - 1.
static CLI::Validator number_in(double lo, double hi = DBL_MAX) {
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

// Trains and prints the summary, also when the run stopped early with results to show (interrupted, a file not
// saved): then the error follows it, and the exit status is 128 + the signal for an interrupted run, else 1.
// Under mpirun rank 0 prints; an error every rank shares (Comm::agreed) is printed once and the ranks end normally,
// any other (a rank gone, a collective timed out) ends the whole job from here.
static int run_train(const Config& cfg, const TrainOptions& to) {
  TrainSummary sum;
  Status s = train(cfg, &sum, to);
  Comm& comm = Comm::world();
  if (sum.has_summary && comm.root()) {
    std::printf("%s", sum.format().c_str());
    std::printf("run_dir:          %s\n", sum.run_dir.c_str());
    std::fflush(stdout);
  }
  if (!s.ok()) {
    if (comm.distributed() && !comm.agreed()) {
      fail(s);
      Comm::abort_job(1);
    }
    if (!comm.quiet_errors()) fail(s);
    return sum.signal ? 128 + sum.signal : 1;
  }
  return 0;
}

static void print_prepare_summary(const PrepareOptions& o, const PrepareResult& r) {
  auto line = [](const char* name, const SplitStats& s) {
    std::printf("%-6s docs: %llu  bytes: %.1f MB  tokens: %.2f M  bytes/token: %.3f  shards: %zu\n", name,
                static_cast<unsigned long long>(s.docs), s.bytes / 1e6, s.tokens / 1e6,
                s.tokens ? static_cast<double>(s.bytes) / s.tokens : 0.0, s.shards.size());
  };
  std::printf("---\n");
  std::printf("dataset: %s%s\n", o.out_dir.c_str(), r.up_to_date ? "  (up to date: nothing to do)" : "");
  std::printf("vocab_size: %u\n", r.vocab_size);
  line("train", r.train);
  line("val", r.val);
  // Null Parquet values are not documents: say how many were skipped (a held-out val split reads the train input).
  const uint64_t nulls = r.train.nulls + (o.val_inputs.empty() ? 0 : r.val.nulls);
  if (nulls) std::printf("nulls: %llu null '%s' values skipped\n", static_cast<unsigned long long>(nulls),
                         o.text_column.c_str());
  if (!r.up_to_date) {
    if (r.tokenizer_train_bytes)
      std::printf("tokenizer: trained on %.1f MB in %.1f s\n", r.tokenizer_train_bytes / 1e6, r.tokenizer_seconds);
    double mb = (r.train.bytes + r.val.bytes) / 1e6;
    std::printf("encode: %.1f MB in %.1f s (%.1f MB/s, %d threads)\n", mb, r.encode_seconds,
                r.encode_seconds > 0 ? mb / r.encode_seconds : 0.0, omp_get_max_threads());
  }
}

// train_schema's defaults, then a TOML file (if given), then --set lines: how profile and scale read a config.
static Status load_train_config(const std::string& path, const std::vector<std::string>& sets, Config* cfg) {
  ConfigSchema schema = train_schema();
  *cfg = schema.defaults();
  if (!path.empty()) FRONTIER_RETURN_IF_ERROR(schema.load_toml(path, cfg));
  for (const auto& kv : sets) FRONTIER_RETURN_IF_ERROR(schema.apply_set(kv, cfg));
  return ok_status();
}

static int run_main(int argc, char** argv);

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

static int run_main(int argc, char** argv) {
  isa_init_or_exit();  // a bad FRONTIER_ISA is a one-line error before anything runs
  CLI::App app{"Frontier: train the best language model this machine can train in a fixed wall-clock budget."};
  app.require_subcommand(1);
  // A bad flag or value ends, like every other failure, with one line "error: ..." (CLI11's default puts a
  // "Run with --help" line after it). Subcommands inherit it.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return "error: " + std::string(e.what()) + " (see `" + a->get_name() + " --help`)\n";
  });

  PrepareOptions po;
  std::string utf8 = "error";
  bool quiet = false;
  auto* prep = app.add_subcommand("prepare",
                                  "Tokenize a corpus: train a BPE tokenizer, write token shards, token_bytes and a "
                                  "manifest. With no --train input, uses the built-in default corpus (Brown + "
                                  "nlp-corpus, installed by scripts/install_deps.sh).");
  prep->add_option("--train", po.train_inputs,
                   "Training text: .txt / .jsonl / .jsonl.zst / .parquet files, directories or globs");
  prep->add_option("--val", po.val_inputs,
                   "Validation text (pinned). Without it, every --val-every-th training document is held out");
  prep->add_option("--val-every", po.val_every, "Hold out every N-th document for validation")->capture_default_str();
  prep->add_option("--out", po.out_dir, "Output directory")->capture_default_str();
  prep->add_option("--vocab-size", po.vocab_size, "Vocabulary size including special tokens")->capture_default_str();
  prep->add_option("--tokenizer", po.tokenizer_dir, "Reuse this tokenizer directory instead of training one");
  prep->add_option("--tokenizer-max-chars", po.tokenizer_max_chars, "Train the tokenizer on at most this many bytes")
      ->check(number_in(1))
      ->capture_default_str();
  prep->add_option("--shard-tokens", po.shard_tokens, "Tokens per shard (shards end at document boundaries)")
      ->check(number_in(1))
      ->capture_default_str();
  prep->add_option("--invalid-utf8", utf8, "Invalid UTF-8 in the input: error (stop, naming file:line) or replace "
                                           "(substitute U+FFFD)")
      ->check(CLI::IsMember({"error", "replace"}))
      ->capture_default_str();
  prep->add_option("--text-column", po.text_column,
                   "The Parquet column (or JSON Lines field) that holds each document")
      ->capture_default_str();
  prep->add_option("--max-doc-bytes", po.max_doc_bytes,
                   "Split documents longer than this many bytes at paragraph / line / sentence boundaries, each "
                   "piece its own document (the loader keeps only a document's first row of T tokens when it "
                   "crops); 0 = whole documents; -1 = 1024 for the built-in corpus, 0 for --train inputs")
      ->check(CLI::Range(int64_t(-1), int64_t(1) << 40))
      ->capture_default_str();
  prep->add_option("--threads", po.threads, "Threads (0 = all cores)")
      ->check(number_in(0))
      ->capture_default_str();
  prep->add_flag("--quiet", quiet, "No progress output");

  auto* tk = app.add_subcommand("tokenizer", "Encode or decode with a tokenizer directory");
  std::string tk_dir, tk_text;
  bool tk_decode = false;
  tk->add_option("--dir", tk_dir, "Tokenizer directory (e.g. data/default/tokenizer)")->required();
  tk->add_option("--text", tk_text, "Text to encode (default: read standard input)");
  tk->add_flag("--decode", tk_decode, "Decode whitespace-separated token ids from --text or standard input");

  auto* insp = app.add_subcommand("inspect", "Verify a prepared dataset and show its statistics and a first batch");
  std::string insp_dir = "data/default";
  int insp_T = 64;
  insp->add_option("--data", insp_dir, "Prepared dataset directory")->capture_default_str();
  insp->add_option("--seq-len", insp_T, "Row length for the sample batch")->capture_default_str();

  auto* tr = app.add_subcommand("train",
                                "Train the GPT on a prepared dataset under a wall-clock budget, then print val_bpb "
                                "and a summary. Config: TOML file, then --set overrides; unknown keys are errors.");
  std::string tr_config, tr_data;
  double tr_budget = 0;
  std::vector<std::string> tr_sets;
  bool tr_keys = false;
  tr->add_option("--config", tr_config, "TOML config (e.g. configs/baseline.toml); defaults apply without it");
  tr->add_option("--budget", tr_budget, "Training budget in seconds (overrides train.budget_seconds; default: the config's)");
  tr->add_option("--data", tr_data, "Prepared dataset directory (overrides train.data)");
  tr->add_option("--set", tr_sets, "key=value override, repeatable (e.g. --set model.depth=4)");
  std::string tr_resume;
  tr->add_option("--resume", tr_resume, "Continue an interrupted run from RUN_DIR/model.ckpt (uses RUN_DIR/config.toml)");
  tr->add_flag("--list-keys", tr_keys, "List every config key with its type, default and meaning, then exit");
  bool tr_force = false;
  tr->add_flag("--force", tr_force, "Overwrite a train.run_dir that already holds a run (finished or not)");

  auto* cal = app.add_subcommand("calibrate",
                                 "Measure the peak of every arithmetic unit this CPU has (AVX2 fp32 FMA, AVX-512 fp32 "
                                 "FMA, AVX512_BF16 dot product) and memory bandwidth, at 1 and N threads; save them "
                                 "for the MFU of train, bench and profile");
  int cal_threads = 0;
  cal->add_option("--threads", cal_threads, "Threads (0 = all cores)")->capture_default_str();

  auto* bn = app.add_subcommand("bench", "GEMM GFLOP/s by shape and precision against the calibrated peak of the "
                                          "unit used and the peers (OpenBLAS fp32, oneDNN bf16), attention, "
                                          "memory-bound ops in GB/s, 1- vs N-thread speedups, and training tokens/s "
                                          "and MFU at depth 4, 6 and 8 per precision (--torch: vs PyTorch fp32 and "
                                          "bf16 autocast)");
  BenchOptions bo;
  std::string bn_json, bn_only;
  bn->add_option("--json", bn_json, "Also write the results as JSON here");
  bn->add_option("--only", bn_only,
                 "Run only this part (default: all parts; variants: the architecture-variant ops and their headline "
                 "ratios, bench/variants.h)")
      ->check(CLI::IsMember({"kernels", "train", "variants"}));
  int bn_repeats = 5;
  bool bn_quick = false;
  bn->add_option("--repeats", bn_repeats, "--only variants: best of this many runs per row")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  bn->add_flag("--quick", bn_quick, "--only variants: a quarter of the tokens (a smoke run, not for comparison)");
  bn->add_option("--steps", bo.train_steps, "Timed training steps per config")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  bn->add_option("--accum", bo.accum, "Micro-batches of 8 sequences per optimizer step (gradient accumulation)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  bn->add_option("--depths", bo.depths, "Model depths for the training benchmark")->capture_default_str();
  bn->add_option("--peak-gflops", bo.peak_gflops, "Peak for %peak/MFU, all precisions (0 = each precision's unit from the calibration "
                 "file, else measured)")
      ->capture_default_str();
  bool bn_torch = false, bn_no_scaling = false;
  bn->add_flag("--torch", bn_torch,
               "Also time the same GPT and optimizer in PyTorch (/usr/bin/python3 + python3-torch; fp32: stock, "
               "tcmalloc and BLIS + tcmalloc preloaded; bf16 autocast + bf16 Newton-Schulz as nanochat: stock and "
               "tcmalloc) and print ours / best of all");
  bn->add_flag("--no-scaling", bn_no_scaling, "Skip the 1-thread runs (thread speedup)");
  std::string bn_prec = "auto";
  bn->add_option("--precision", bn_prec,
                 "auto: fp32, plus bf16 where the CPU has native bf16 (tier avx512bf16); fp32: fp32 only; all: both")
      ->check(CLI::IsMember({"auto", "fp32", "all"}))
      ->capture_default_str();

  auto* pf = app.add_subcommand("profile",
                                 "Run a few training steps of a config and report per-op time, FLOPs, bytes, GFLOP/s, "
                                 "GB/s and compute/memory bound against the calibrated roofline; write a "
                                 "Chrome/Perfetto trace");
  ProfileOptions pfo;
  std::string pf_config, pf_trace = "profile_trace.json", pf_json;
  std::vector<std::string> pf_sets;
  pf->add_option("--config", pf_config, "TOML config (as for train); defaults apply without it");
  pf->add_option("--set", pf_sets, "key=value override, repeatable (e.g. --set model.depth=4)");
  pf->add_option("--steps", pfo.steps, "Profiled training steps")->capture_default_str();
  pf->add_option("--warmup", pfo.warmup, "Unprofiled warm-up steps first")->capture_default_str();
  pf->add_option("--trace", pf_trace, "Chrome/Perfetto trace JSON to write (\"\" = none)")->capture_default_str();
  pf->add_option("--json", pf_json, "Also write the per-op table as JSON here");
  pf->add_option("--peak-gflops", pfo.peak_gflops, "Peak GFLOP/s for the roofline (0 = the unit of train.precision from the calibration "
                 "file, else measured)")->capture_default_str();
  pf->add_option("--mem-gbs", pfo.mem_gbs, "Memory bandwidth for the roofline (0 = calibration file, else measured)")
      ->capture_default_str();

  // The arena (docs/arena.md): the organiser's commands, and the one a team's binary must answer.
  auto* slp = app.add_subcommand("serve-logprobs", "Serve next-token log-probabilities of a checkpoint on stdin/stdout "
                                                   "(the arena's frozen-evaluator protocol, arena/protocol.h)");
  std::string slp_ckpt;
  slp->add_option("--checkpoint", slp_ckpt, "Checkpoint to serve")->required();
  auto* ar = app.add_subcommand("arena", "The competition: submissions, the sealed scorer, the record, the leaderboard");
  ar->require_subcommand(1);
  std::string ar_comp, ar_team, ar_phase, ar_config, ar_repo, ar_commit, ar_sub, ar_bin, ar_html;
  uint64_t ar_seed = 0;
  int ar_port = 8080;
  auto* ar_submit = ar->add_subcommand("submit", "Submit a config (organiser's build) or a fork (--repo --commit)");
  auto* ar_score = ar->add_subcommand("score", "Build, train and score every accepted, unscored submission");
  auto* ar_verify = ar->add_subcommand("verify", "Check the record's hash chain; name any changed or deleted row");
  auto* ar_lb = ar->add_subcommand("leaderboard", "Print the rankings; --html writes the static page");
  auto* ar_serve = ar->add_subcommand("serve", "Serve the leaderboard page on http://127.0.0.1:PORT/");
  for (auto* sc : {ar_submit, ar_score, ar_verify, ar_lb, ar_serve})
    sc->add_option("--competition", ar_comp, "The competition's definition (TOML, docs/arena.md)")->required();
  ar_submit->add_option("--team", ar_team, "Team name")->required();
  ar_submit->add_option("--phase", ar_phase, "Phase name (default: the first)");
  ar_submit->add_option("--config", ar_config, "The training config (TOML)")->required();
  ar_submit->add_option("--repo", ar_repo, "A fork: git repository (path or URL)");
  ar_submit->add_option("--commit", ar_commit, "A fork: commit (id, tag or branch; resolved and recorded in full)");
  ar_score->add_option("--submission", ar_sub, "Only this submission (a hash prefix)");
  ar_score->add_option("--organiser-binary", ar_bin, "The organiser's frontier for config submissions (default: this one)");
  ar_score->add_option("--seed", ar_seed, "Seed of the evaluator's probes (default: random, recorded)");
  ar_lb->add_option("--html", ar_html, "Also write the static leaderboard page here");
  ar_serve->add_option("--port", ar_port, "Port on 127.0.0.1")->check(CLI::Range(1, 65535))->capture_default_str();
  // The scorer's evaluation worker (arena/scorer.h: evaluation_worker): run by `arena score`, not by people.
  auto* ar_eval = ar->add_subcommand("evaluate", "The scorer's evaluation worker")->group("");  // hidden
  std::string ae_work, ae_bin;
  ar_eval->add_option("--competition", ar_comp)->required();
  ar_eval->add_option("--phase", ar_phase)->required();
  ar_eval->add_option("--work", ae_work)->required();
  ar_eval->add_option("--binary", ae_bin)->required();
  ar_eval->add_option("--seed", ar_seed);

  auto* ev = app.add_subcommand("eval", "Evaluate a trained checkpoint");
  ev->require_subcommand(1);
  auto* ev_core = ev->add_subcommand("core", "The CORE benchmark (DCLM, 22 tasks) as nanochat computes it");
  std::string ev_ckpt, ev_bundle = "../shared/data/eval_bundle", ev_data, ev_json;
  int64_t ev_max = 0;
  ev_core->add_option("--checkpoint", ev_ckpt, "RUN_DIR/model.ckpt from frontier train")->required();
  ev_core->add_option("--bundle", ev_bundle, "Eval bundle in nanochat's layout")->capture_default_str();
  ev_core->add_option("--data", ev_data, "Prepared dataset whose tokenizer to use (default: the run's train.data)");
  ev_core->add_option("--max-per-task", ev_max, "At most N items per task (0 = all)")
      ->check(number_in(0))
      ->capture_default_str();
  ev_core->add_option("--json", ev_json, "Also write the per-task results as JSON here");

  auto* ev_score = ev->add_subcommand("score", "The composite leaderboard score: 0.5 (1 - val_bpb/8) + 0.5 CORE "
                                               "(docs/scoring.md), with val_bpb and CORE on their frozen settings");
  std::string es_ckpt, es_bundle = "../shared/data/eval_bundle", es_data, es_json;
  int64_t es_max = 0;
  ev_score->add_option("--checkpoint", es_ckpt, "RUN_DIR/model.ckpt from frontier train")->required();
  ev_score->add_option("--bundle", es_bundle, "Eval bundle in nanochat's layout")->capture_default_str();
  ev_score->add_option("--data", es_data, "Prepared dataset (default: the run's train.data)");
  bool es_cross = false;
  ev_score->add_flag("--cross-data", es_cross, "Allow --data to be a dataset other than the run's (same tokenizer); "
                     "said so in the result");
  ev_score->add_option("--max-per-task", es_max, "At most N CORE items per task (0 = all; the leaderboard uses 0)")
      ->check(number_in(0))
      ->capture_default_str();
  ev_score->add_option("--json", es_json, "Also write val_bpb, CORE, the composite and the per-task table as JSON");

  auto* ev_bpb = ev->add_subcommand("bpb", "val_bpb (nanochat's evaluate_bpb) of a checkpoint on a prepared split");
  std::string eb_ckpt, eb_data, eb_split = "val";
  int64_t eb_tokens = 0;
  ev_bpb->add_option("--checkpoint", eb_ckpt, "RUN_DIR/model.ckpt from frontier train")->required();
  ev_bpb->add_option("--data", eb_data, "Prepared dataset (default: the run's train.data)");
  bool eb_cross = false;
  ev_bpb->add_flag("--cross-data", eb_cross, "Allow --data to be a dataset other than the run's (same tokenizer): a "
                   "deliberate cross-data evaluation, said so in the result");
  ev_bpb->add_option("--split", eb_split, "Split to score")->check(CLI::IsMember({"val", "train"}))->capture_default_str();
  ev_bpb->add_option("--tokens", eb_tokens, "Tokens to score (0 = the run's eval.tokens)")->check(number_in(0))
      ->capture_default_str();
  std::string eb_against;
  ev_bpb->add_option("--against", eb_against,
                     "Another checkpoint (same seq_len and tokenizer) scored on the same windows: prints the "
                     "difference and its paired standard error, far smaller than either score's own");

  auto* sm = app.add_subcommand("sample", "Generate text from a checkpoint (KV cache; temperature, top-k; "
                                          "deterministic for a seed)");
  std::string sm_ckpt, sm_data, sm_prompt;
  int sm_tokens = 100, sm_topk = 50;
  float sm_temp = 0.8f;
  uint64_t sm_seed = 42;
  sm->add_option("--checkpoint", sm_ckpt, "RUN_DIR/model.ckpt from frontier train")->required();
  sm->add_option("--data", sm_data, "Prepared dataset whose tokenizer to use (default: the run's train.data)");
  sm->add_option("--prompt", sm_prompt, "Text to continue (default: unconditioned, from <|bos|> alone)");
  sm->add_option("--tokens", sm_tokens, "Tokens to generate (stops earlier at the model's context length)")
      ->check(number_in(0))
      ->capture_default_str();
  sm->add_option("--temperature", sm_temp, "Softmax temperature; 0 = greedy")
      ->check(number_in(0, FLT_MAX))  // finite as a float
      ->capture_default_str();
  sm->add_option("--top-k", sm_topk, "Sample among the k most likely tokens (0 = all)")
      ->check(number_in(0))
      ->capture_default_str();
  sm->add_option("--seed", sm_seed, "Sampling seed")->check(number_in(0))->capture_default_str();

  auto* rs = app.add_subcommand("research", "The autoresearch loop: run trials of `frontier train` under a fixed "
                                            "budget, keep a change only when it beats the best by more than the "
                                            "measured seed-to-seed spread; ledger, chart, resume (docs/agents.md)");
  ResearchOptions ro;
  ro.base = "configs/tiny.toml";
  ro.space = "configs/space.toml";
  rs->add_option("--base", ro.base, "Base config (TOML)")->capture_default_str();
  rs->add_option("--space", ro.space, "Search space (TOML: a table per config key with choices or min/max)")
      ->capture_default_str();
  // A finite number > 0 (or >= 0): NaN and inf pass CLI::PositiveNumber, whose message also prints DBL_MAX in full.
  auto rs_finite = [](bool positive) {
    return CLI::Validator(
        [positive](std::string& v) {
          double x = 0;
          bool ok = CLI::detail::lexical_cast(v, x) && std::isfinite(x) && (positive ? x > 0 : x >= 0);
          return ok ? std::string() : "Value " + v + " is not a finite number " + (positive ? "> 0" : ">= 0");
        },
        positive ? "FINITE > 0" : "FINITE >= 0");
  };
  const auto rs_count = CLI::Range(0, std::numeric_limits<int>::max());
  rs->add_option("--budget", ro.budget, "Training budget per trial, seconds")
      ->check(rs_finite(true))->capture_default_str();
  rs->add_option("--hours", ro.hours, "Stop after this many hours (0 = no limit)")
      ->check(rs_finite(false))->capture_default_str();
  rs->add_option("--trials", ro.max_trials, "Stop when the ledger has this many trials, baseline included (0 = no "
                                            "limit)")->check(rs_count)->capture_default_str();
  rs->add_option("--proposer", ro.proposer, "random | mutate | halving | a command that reads the ledger as JSON on "
                                            "stdin and prints {\"set\": {...}, \"description\": ...}")
      ->capture_default_str();
  rs->add_option("--proposer-timeout", ro.proposer_timeout, "Seconds an external proposer may take; then it is "
                                                            "killed and the proposal recorded as failed")
      ->check(rs_finite(true))->capture_default_str();
  rs->add_option("--repeats", ro.repeats, "Base-config runs (different seeds) that measure the noise floor")
      ->check(rs_count)->capture_default_str();
  rs->add_option("--min-delta", ro.min_delta, "Keep threshold floor: max(spread, this)")
      ->check(rs_finite(false))->capture_default_str();
  rs->add_option("--seed", ro.seed, "Proposal and baseline seed")->capture_default_str();
  rs->add_option("--out", ro.out_dir, "Session directory (resumes if it holds a ledger)")->required();
  rs->add_option("--data", ro.data, "Prepared dataset for every trial (overrides the base's train.data)");
  rs->add_option("--set", ro.extra_sets, "key=value applied to every trial (not searched), repeatable");
  rs->add_option("--git", ro.git_repo, "Git mode: commit each kept config to this repository, on a branch "
                                       "frontier/research-<session>");
  rs->add_option("--budget-mode", ro.budget_mode, "probe: each trial trains budget / measured step time steps, "
                                                  "one probe shared by trials of the same speed (reproducible); "
                                                  "wall: wall-clock budgets")
      ->check(CLI::IsMember({"probe", "wall"}))->capture_default_str();
  rs->add_option("--ranks", ro.ranks, "Run each trial on this many ranks under mpirun (docs/distributed.md)")
      ->check(CLI::Range(1, 4096))->capture_default_str();

  auto* ad = app.add_subcommand("advise", "The co-design advisor: time candidate shapes here, fit a loss model "
                                          "L(N, D) to a sweep of short runs on the data (both cached), predict each "
                                          "candidate's val_bpb at the budget, write the best as a config and train "
                                          "it to check (docs/codesign.md)");
  AdviseOptions ao;
  ad->add_option("--budget", ao.budget, "Training budget, seconds (no default: required, except with --chart)")
      ->check(rs_finite(true));
  ad->add_option("--base", ao.base, "Base config: the recipe kept (learning rates, schedule, batch in sequences, "
                                    "precision)")->capture_default_str();
  ad->add_option("--data", ao.data, "Prepared dataset (default: the base's train.data)");
  ad->add_option("--out", ao.out, "Write the advised config here")->capture_default_str();
  ad->add_option("--cache", ao.cache, "Cache of step times, sweep points and validations (default "
                                      "$FRONTIER_CACHE/advise)");
  ad->add_option("--validate", ao.validate, "Train the best K candidates of each sequence length at the full budget "
                                            "(predicted vs measured); the advice is the best measured (0: the best "
                                            "predicted)")
      ->check(CLI::Range(0, 64))->capture_default_str();
  ad->add_option("--lr-scales", ao.lr_scales, "Train the best measured shape again with the base's learning rates "
                 "times each of these (comma-separated; 1 alone: none) and advise the best measured")
      ->check(CLI::Range(1e-3, 1e3))
      ->delimiter(',')
      ->capture_default_str();
  ad->add_option("--levers", ao.levers, "The architecture stage's levers on the best shape: default, all, none, or "
                 "comma-separated names (windows, swiglu, leaky_relu2, smear, backout, qk_scale, ve_gate, "
                 "value_embeds_all, rope_half, mtp, ngram, normuon, nanochat_schedules, ns3, ema; advise/levers.h)")
      ->capture_default_str();
  ad->add_option("--seeds", ao.seeds, "Seeds of the base and of the levers' combination in the architecture stage")
      ->check(CLI::Range(1, 16))->capture_default_str();
  ad->add_option("--isa", ao.isa, "Advise for this instruction-set tier of this CPU (ref, avx2, avx512, avx512bf16; "
                 "default: the best it has), as FRONTIER_ISA");
  ad->add_option("--threads", ao.threads, "Advise for this many threads (default: the base's train.threads, 0 = all "
                 "cores)")->check(CLI::Range(0, 4096))->capture_default_str();
  ad->add_option("--precision", ao.precision, "Advise for this precision (auto, fp32, bf16; default: the base's "
                 "train.precision)");
  ad->add_option("--compare", ao.compare, "Configs to train at the full budget beside the advice, repeatable");
  ad->add_option("--depths", ao.depths, "Candidate depths")->check(CLI::Range(1, 64))->delimiter(',')
      ->capture_default_str();
  ad->add_option("--seq-lens", ao.seq_lens, "Candidate sequence lengths (at least one)")->check(CLI::Range(8, 65536))
      ->delimiter(',')->capture_default_str();
  ad->add_flag("--no-sweep", ao.no_sweep, "Run no sweep: fit the cached points only (a longer budget than they cover "
                                         "is then an extrapolation, which the output says)");
  ad->add_option("--chart", ao.chart, "Only draw val_bpb against budget of every recorded validation as SVG here");

  // Scale-out (dist/, docs/distributed.md): collective speeds between ranks, and a projection to more ranks.
  auto* sc = app.add_subcommand("scale", "Data-parallel scaling: `mpirun -np R frontier scale comm` times the "
                                         "collectives between ranks; `frontier scale project` projects tokens/s "
                                         "and efficiency of a config on R ranks and networks from measured parts");
  sc->require_subcommand(1);
  auto* sc_comm = sc->add_subcommand("comm", "All-reduce / reduce-scatter / all-gather bandwidth and latency by "
                                             "size between the ranks it runs on (run under mpirun)");
  CommBenchOptions cbo;
  std::string sc_json;
  sc_comm->add_option("--max-mb", cbo.max_mb, "Largest message, MB")->check(CLI::Range(0.01, 4096.0))
      ->capture_default_str();
  sc_comm->add_option("--json", sc_json, "Also write the results here (input of `scale project --comm`)");
  auto* sc_proj = sc->add_subcommand("project", "Measure a config's forward+backward and optimizer time here, then "
                                                "project R ranks over shared memory and networks (ring model)");
  std::string sp_config, sp_comm, sp_json;
  std::vector<std::string> sp_sets;
  int sp_threads = 1, sp_steps = 3;
  sc_proj->add_option("--config", sp_config, "Config (TOML)");
  sc_proj->add_option("--set", sp_sets, "key=value override, repeatable");
  sc_proj->add_option("--comm", sp_comm, "`scale comm --json` file: the measured link for ranks on one node "
                                         "(default: an assumed 10 GB/s, 1 us)");
  sc_proj->add_option("--threads", sp_threads, "Threads per rank")->check(CLI::Range(1, 4096))->capture_default_str();
  sc_proj->add_option("--steps", sp_steps, "Timed steps")->check(CLI::Range(1, 1000))->capture_default_str();
  sc_proj->add_option("--json", sp_json, "Also write the projection here");

  // Models out and in (export/model_dir.h, docs/formats.md "Model directory").
  auto* ex = app.add_subcommand("export", "Write a checkpoint's model as OUT/model.safetensors (nanochat's parameter "
                                          "names), OUT/config.json (nanochat's GPTConfig) and OUT/tokenizer/; "
                                          "python/frontier_torch.py loads it in PyTorch");
  ExportOptions exo;
  std::string ex_dtype = "fp32";
  ex->add_option("--checkpoint", exo.checkpoint, "RUN_DIR/model.ckpt")->required();
  ex->add_option("--out", exo.out_dir, "Output directory")->required();
  ex->add_option("--dtype", ex_dtype, "Weights as fp32 (exact) or bf16 (rounded to nearest even; half the size)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  ex->add_option("--data", exo.data, "Dataset whose tokenizer to copy (default: the run's train.data)");
  ex->add_flag("--force", exo.force, "Replace an --out directory that already holds files");
  auto* im = app.add_subcommand("import", "Turn a model directory (frontier export's layout) into RUN_DIR/model.ckpt "
                                          "+ config.toml for eval, sample and, with --data, train --resume");
  ImportOptions imo;
  im->add_option("dir", imo.dir, "Model directory: config.json, model.safetensors, tokenizer/")->required();
  im->add_option("--out", imo.run_dir, "Run directory to write (config.toml, model.ckpt)")->required();
  im->add_option("--data", imo.data, "Prepared dataset with the model's tokenizer: the run's train.data, and a "
                                     "training state at step 0 so `frontier train --resume RUN_DIR` trains further");
  im->add_option("--set", imo.sets, "key=value for the run's config, repeatable (train.*, optim.*, eval.*)");
  im->add_flag("--force", imo.force, "Overwrite a run directory that already holds a run");

  CLI11_PARSE(app, argc, argv);

  if (ex->parsed()) {
    exo.bf16 = ex_dtype == "bf16";
    ExportResult er;
    Status s = export_model(exo, &er);
    if (!s.ok()) return fail(s);
    std::printf("exported %s: %s\n", exo.checkpoint.c_str(), er.shape.describe().c_str());
    std::printf("  %s (%zu tensors, %s, %.2f MB)\n  %s/config.json\n  %s/tokenizer/ (from %s)\n",
                er.safetensors_path.c_str(), er.n_tensors, ex_dtype.c_str(), er.bytes / 1e6, exo.out_dir.c_str(),
                exo.out_dir.c_str(), er.tokenizer_from.c_str());
    return 0;
  }

  if (im->parsed()) {
    ImportResult ir;
    Status s = import_model(imo, &ir);
    if (!s.ok()) return fail(s);
    std::printf("imported %s (%s): %s\n  %s\n", imo.dir.c_str(), ir.dtype.c_str(), ir.shape.describe().c_str(),
                ir.checkpoint.c_str());
    if (ir.resumable)
      std::printf("  train further: frontier train --resume %s   (budget: its config.toml)\n", imo.run_dir.c_str());
    else
      std::printf("  evaluate: frontier eval core --checkpoint %s; eval bpb needs --data DATASET (and --cross-data "
                  "unless it is the data the model was trained on); to train further, import with --data\n",
                  ir.checkpoint.c_str());
    return 0;
  }

  // Under mpirun every rank runs the command: only those written for it may.
  if (Comm::world().distributed() && !tr->parsed() && !sc_comm->parsed())
    return !Comm::world().root() ? 1 : fail(Status::error("only `frontier train` and `frontier scale comm` run under mpirun (every rank would "
                              "run this command on its own)"));

  if (sc_comm->parsed()) {
    CommBenchReport rep;
    Status s = run_comm_bench(cbo, &rep);
    if (!s.ok()) return fail(s);
    if (Comm::world().root()) {
      std::printf("%s", rep.table().c_str());
      if (!sc_json.empty() && !(s = write_file_atomic(sc_json, rep.json().dump(2) + "\n")).ok()) return fail(s);
    }
    return 0;
  }

  if (sc_proj->parsed()) {
    Config cfg;
    Status s = load_train_config(sp_config, sp_sets, &cfg);
    if (!s.ok()) return fail(s);
    Link shm{1e-6, 10e9, "assumed: shared memory, 10 GB/s, 1 us"};
    if (!sp_comm.empty()) {
      std::string text;
      if (!(s = read_file(sp_comm, &text)).ok()) return fail(s);
      nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
      if (!(s = link_from_comm_bench(j, &shm)).ok()) return fail(Status::error(sp_comm + ": " + s.message()));
    }
    StepParts parts;
    if (!(s = measure_step_parts(cfg, sp_threads, sp_steps, &parts)).ok()) return fail(s);
    const std::vector<Projection> rows = standard_projections(parts, shm);
    std::printf("%s", projection_table(parts, rows).c_str());
    if (!sp_json.empty()) {
      const nlohmann::json j = projections_json(parts, rows);
      if (!(s = write_file_atomic(sp_json, j.dump(2) + "\n")).ok()) return fail(s);
    }
    return 0;
  }

  if (slp->parsed()) {
    std::setvbuf(stdout, nullptr, _IOFBF, 1 << 20);
    Status s = serve_logprobs(slp_ckpt, stdin, stdout);
    return s.ok() ? 0 : fail(s);
  }

  if (ar->parsed()) {
    Competition comp;
    Status s = load_competition(ar_comp, &comp);
    if (!s.ok()) return fail(s);
    if (ar_eval->parsed()) {  // no record: the worker only writes WORK/eval_result.json
      s = evaluation_worker(comp, ar_phase, ae_work, ae_bin, ar_seed);
      return s.ok() ? 0 : fail(s);
    }
    if ((s = make_dirs(comp.work_dir)).ok()) s = make_dirs(std::filesystem::path(comp.record).parent_path().string());
    Record rec;
    if (!s.ok() || !(s = rec.open(comp.record)).ok()) return fail(s);
    auto page = [&](std::string* html, std::string* text) {
      std::vector<RecordRow> rows;
      VerifyReport v;
      Status st = rec.rows(&rows);
      if (st.ok()) st = rec.verify(&v);
      if (st.ok()) st = v.status(rec.path());  // a tampered record is never published
      if (!st.ok()) return st;
      auto boards = build_leaderboard(comp, rows);
      if (html) *html = leaderboard_html(comp, boards, v);
      if (text) *text = leaderboard_text(boards);
      return st;
    };
    if (ar_submit->parsed()) {
      SubmitRequest q{ar_team, ar_phase.empty() ? comp.phases[0].name : ar_phase, ar_config, ar_repo, ar_commit};
      Submission sub;
      RecordRow row;
      if (!(s = submit(comp, rec, q, &sub, &row)).ok()) {
        if (row.seq == 0) return fail(s);  // nothing recorded (a record that fails verification)
        std::fprintf(stderr, "error: submission %s (recorded as row %lld): %s\n", row.status.c_str(),
                     static_cast<long long>(row.seq), s.message().c_str());
        return 1;
      }
      std::printf("submission: %s\nteam: %s\nphase: %s\nkind: %s%s\nrecorded: row %lld\n", sub.hash.c_str(),
                  sub.team.c_str(), sub.phase.c_str(), sub.kind.c_str(),
                  sub.kind == "fork" ? (" (commit " + sub.commit + ")").c_str() : "", static_cast<long long>(row.seq));
      return 0;
    }
    if (ar_score->parsed()) {
      ScoreOptions so;
      so.organiser_binary = ar_bin;
      so.seed = ar_seed;
      std::vector<RecordRow> done;
      s = score_pending(comp, rec, so, ar_sub, &done);
      for (const auto& r : done)
        std::printf("row %lld: %s %s %s %s%s\n", static_cast<long long>(r.seq), r.team.c_str(),
                    r.submission.substr(0, 12).c_str(), r.status.c_str(),
                    std::isfinite(r.score) ? ("val_bpb " + std::to_string(r.score)).c_str() : "",
                    r.reason.empty() ? "" : ("(" + r.reason + ")").c_str());
      if (done.empty() && s.ok()) std::printf("nothing to score\n");
      return s.ok() ? 0 : fail(s);
    }
    if (ar_verify->parsed()) {
      VerifyReport v;
      if (!(s = rec.verify(&v)).ok()) return fail(s);
      for (const auto& p : v.problems) std::printf("TAMPERED: %s\n", p.c_str());
      std::printf("%s: %lld rows, chain head %s\n", v.ok ? "ok" : "FAILED", static_cast<long long>(v.rows),
                  v.head.c_str());
      return v.ok ? 0 : 2;
    }
    if (ar_lb->parsed()) {
      std::string html, text;
      if (!(s = page(ar_html.empty() ? nullptr : &html, &text)).ok()) return fail(s);
      std::printf("%s", text.c_str());
      if (!ar_html.empty() && !(s = write_file_atomic(ar_html, html)).ok()) return fail(s);
      return 0;
    }
    if (ar_serve->parsed()) {
      std::string html;
      if (!(s = page(&html, nullptr)).ok()) return fail(s);  // refused at start: nothing served from a broken record
      s = serve_leaderboard(ar_port, [&](std::string* body) { return page(body, nullptr); });
      return s.ok() ? 0 : fail(s);
    }
    return 0;
  }

  if (ad->parsed()) {
    if (ao.budget <= 0 && ao.chart.empty()) return fail(Status::error("advise needs --budget SECONDS"));
    Status s = run_advise(ao);
    if (!s.ok()) return fail(s);
    return 0;
  }

  if (rs->parsed()) {
    Status s = run_research(ro);
    if (!s.ok()) return fail(s);
    return 0;
  }

  if (sm->parsed()) {
    EvalCheckpoint ec;
    Status s = open_checkpoint_for_eval(sm_ckpt, sm_data, EvalNeeds::kTokenizer, false, &ec);
    if (!s.ok()) return fail(s);
    std::unique_ptr<Gpt>& gpt = ec.gpt;
    const Tokenizer& tok = ec.tok;
    if (utf8_first_invalid(sm_prompt) != std::string::npos) return fail(Status::error("--prompt is not valid UTF-8"));
    std::vector<uint32_t> ids = {tok.bos_id()};
    if (Status es = tok.encode_ordinary(sm_prompt, &ids); !es.ok()) return fail(Status::error("--prompt: " + es.message()));
    Sampler smp(*gpt);
    if (static_cast<int64_t>(ids.size()) >= smp.capacity())
      return fail(Status::error("the prompt has " + std::to_string(ids.size()) + " tokens; the model's context is " +
                                std::to_string(smp.capacity())));
    std::vector<float> logits;
    for (uint32_t t : ids) smp.push(t, &logits);
    std::printf("%s", sm_prompt.c_str());
    Rng rng{sm_seed};
    std::vector<uint32_t> gen;
    std::string shown;
    int n = 0;
    for (; n < sm_tokens; n++) {
      uint32_t t = Sampler::sample(logits, sm_temp, sm_topk, &rng);
      gen.push_back(t);
      std::string text = tok.decode(gen);  // decode the whole tail: tokens may split UTF-8 sequences
      if (utf8_first_invalid(text) == std::string::npos) {
        std::printf("%s", text.substr(shown.size()).c_str());
        std::fflush(stdout);
        shown = text;
      }
      if (smp.position() >= smp.capacity()) {
        n++;
        break;
      }
      smp.push(t, &logits);
    }
    std::printf("%s\n", tok.decode(gen).substr(shown.size()).c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "[sample] %d tokens, temperature %.2f, top-k %d, seed %llu%s\n", n, sm_temp, sm_topk,
                 static_cast<unsigned long long>(sm_seed),
                 smp.position() >= smp.capacity() ? " (stopped at the model's context length)" : "");
    return 0;
  }

  if (ev_score->parsed()) {
    EvalCheckpoint ec;
    Status s = open_checkpoint_for_eval(es_ckpt, es_data, EvalNeeds::kData, es_cross, &ec);
    if (!s.ok()) return fail(s);
    const Config& cfg = ec.cfg;
    std::unique_ptr<Gpt>& gpt = ec.gpt;
    const PreparedData& data = ec.data;
    const std::string& cross = ec.note;
    double bpb = 0;
    if (!(s = evaluate_bpb(*gpt, data, cfg.get_int("eval.tokens"), static_cast<int>(cfg.get_int("eval.batch")),
                           gpt->shape().seq_len, &bpb)).ok())
      return fail(s);
    CoreBundle bundle;
    if (!(s = load_core_bundle(es_bundle, &bundle)).ok()) return fail(s);
    CoreReport rep;
    if (!(s = evaluate_core(*gpt, data.tokenizer(), bundle, es_max, &rep)).ok()) return fail(s);
    std::printf("%s", rep.table().c_str());
    const double comp = composite_score(bpb, rep.core);
    std::printf("val_bpb:   %.6f  (bpb_score 1 - val_bpb/8 = %.6f)%s\n", bpb, bpb_score(bpb),
                cross.empty() ? "" : ("  [" + cross + "]").c_str());
    std::printf("CORE (%d/%d tasks%s): %.6f\n", rep.n_present, rep.n_total,
                es_max > 0 ? (", " + std::to_string(es_max) + " items per task").c_str() : "", rep.core);
    std::printf("composite: %.6f  (0.5 bpb_score + 0.5 CORE)\n", comp);
    if (!es_json.empty()) {
      nlohmann::json j = rep.json();  // core, tasks, crop counts
      j.update({{"val_bpb", bpb}, {"bpb_score", bpb_score(bpb)}, {"max_per_task", es_max}, {"composite", comp}});
      if (!cross.empty()) j["cross_data"] = cross;
      if (!(s = write_file_atomic(es_json, j.dump(2) + "\n")).ok()) return fail(s);
    }
    return 0;
  }

  if (ev_bpb->parsed()) {
    EvalCheckpoint ec;
    Status s = open_checkpoint_for_eval(eb_ckpt, eb_data, EvalNeeds::kData, eb_cross, &ec);
    if (!s.ok()) return fail(s);
    const Config& cfg = ec.cfg;
    std::unique_ptr<Gpt>& gpt = ec.gpt;
    const PreparedData& data = ec.data;
    const std::string& cross = ec.note;
    int64_t n = eb_tokens > 0 ? eb_tokens : cfg.get_int("eval.tokens");
    double bpb = 0, se = 0;
    BpbWindows wa;
    if (!(s = evaluate_bpb(*gpt, data, n, static_cast<int>(cfg.get_int("eval.batch")), gpt->shape().seq_len, &bpb,
                           eb_split, &n, &se, &wa)).ok())
      return fail(s);
    std::printf("%s_bpb: %.6f  (%lld tokens at seq_len %d; standard error of the sample %.6f)%s\n",
                eb_split.c_str(), bpb, static_cast<long long>(n), gpt->shape().seq_len, se,
                cross.empty() ? "" : ("  [" + cross + "]").c_str());
    if (!eb_against.empty()) {  // the other model on the same windows: the paired difference
      Config cfg_b;
      std::unique_ptr<Gpt> gpt_b;
      RunIdentity id_b;
      if (!(s = load_trained_model(eb_against, &cfg_b, &gpt_b, &id_b)).ok()) return fail(s);
      if (gpt_b->shape().seq_len != gpt->shape().seq_len || gpt_b->shape().vocab_size != gpt->shape().vocab_size ||
          (!id_b.tokenizer.empty() && !ec.id.tokenizer.empty() && id_b.tokenizer != ec.id.tokenizer))
        return fail(Status::error("--against " + eb_against + " has seq_len " +
                                  std::to_string(gpt_b->shape().seq_len) + " and vocab_size " +
                                  std::to_string(gpt_b->shape().vocab_size) + " (or another tokenizer); the paired "
                                  "comparison needs the same windows: seq_len " +
                                  std::to_string(gpt->shape().seq_len) + ", the same tokenizer"));
      double bpb_b = 0, se_b = 0, diff = 0, dse = 0;
      BpbWindows wb;
      if (!(s = evaluate_bpb(*gpt_b, data, n, static_cast<int>(cfg.get_int("eval.batch")), gpt->shape().seq_len,
                             &bpb_b, eb_split, nullptr, &se_b, &wb)).ok())
        return fail(s);
      if (!bpb_difference(wa, wb, &diff, &dse))
        return fail(Status::error("the paired comparison needs one process (not under mpirun)"));
      std::printf("against:  %.6f  (%s; standard error of the sample %.6f)\n", bpb_b, eb_against.c_str(), se_b);
      std::printf("difference: %+.6f  (paired standard error %.6f over %zu windows: %.1f standard errors)\n", diff,
                  dse, wa.nats.size(), dse > 0 ? diff / dse : 0.0);
    }
    return 0;
  }

  if (ev_core->parsed()) {
    EvalCheckpoint ec;
    Status s = open_checkpoint_for_eval(ev_ckpt, ev_data, EvalNeeds::kTokenizer, false, &ec);
    if (!s.ok()) return fail(s);
    std::unique_ptr<Gpt>& gpt = ec.gpt;
    const Tokenizer& tok = ec.tok;
    CoreBundle bundle;
    if (!(s = load_core_bundle(ev_bundle, &bundle)).ok()) return fail(s);
    CoreReport rep;
    if (!(s = evaluate_core(*gpt, tok, bundle, ev_max, &rep)).ok()) return fail(s);
    std::printf("%s", rep.table().c_str());
    if (!ev_json.empty()) {
      nlohmann::json j = rep.json();
      if (!(s = write_file_atomic(ev_json, j.dump(2) + "\n")).ok()) return fail(s);
    }
    return 0;
  }

  if (bn->parsed() && bn_only == "variants") {
    VariantBenchOptions vo;
    vo.repeats = bn_repeats;
    vo.peak_gflops = bo.peak_gflops;
    vo.quick = bn_quick;
    nlohmann::json j;
    std::string table;
    Status s = run_variants_bench(vo, &j, &table);
    if (!s.ok()) return fail(s);
    std::printf("%s", table.c_str());
    if (!bn_json.empty() && !(s = write_file_atomic(bn_json, j.dump(2) + "\n")).ok()) return fail(s);
    return 0;
  }

  if (bn->parsed()) {
    bo.kernels = bn_only != "train";
    bo.train = bn_only != "kernels";
    bo.scaling = !bn_no_scaling;
    bo.bf16 = bn_prec == "auto" ? -1 : bn_prec == "all" ? 1 : 0;
    if (bn_torch) bo.torch_script = std::string(FRONTIER_SOURCE_DIR) + "/bench/torch_speed.py";
    BenchReport rep;
    Status s = run_bench(bo, &rep);
    if (!s.ok()) return fail(s);
    std::printf("%s", rep.table().c_str());
    if (!bn_json.empty() && !(s = write_file_atomic(bn_json, rep.json.dump(2) + "\n")).ok()) return fail(s);
    return 0;
  }

  if (pf->parsed()) {
    Config cfg;
    Status s = load_train_config(pf_config, pf_sets, &cfg);
    if (!s.ok()) return fail(s);
    ProfileReport rep;
    if (!(s = run_profile(cfg, pfo, &rep)).ok()) return fail(s);
    std::printf("%s", rep.table().c_str());
    if (!pf_trace.empty()) {
      if (!(s = write_chrome_trace(rep.events, pf_trace)).ok()) return fail(s);
      std::printf("trace: %s (%zu events; open in ui.perfetto.dev or chrome://tracing)\n", pf_trace.c_str(),
                  rep.events.size());
    }
    if (!pf_json.empty() && !(s = write_file_atomic(pf_json, rep.json.dump(2) + "\n")).ok()) return fail(s);
    return 0;
  }

  if (cal->parsed()) {
    int n = cal_threads > 0 ? cal_threads : omp_get_max_threads();
    Calibration c = calibrate(n);
    std::printf("%s\n", kernels_banner().c_str());
    std::printf("cpu features: %s\n", cpu_feature_list().c_str());
    for (PeakUnit u : {PeakUnit::kAvx2Fma, PeakUnit::kAvx512Fma, PeakUnit::kBf16Dot}) {
      if (!peak_unit_supported(u)) {
        std::printf("%-20s not on this CPU\n", peak_unit_name(u));
        continue;
      }
      std::printf("%-20s %7.1f GFLOP/s (1 thread)  %7.1f (%d threads)\n", peak_unit_name(u), c.peak_1t(u), c.peak(u),
                  n);
    }
    std::printf("%-20s %7.1f GB/s    (1 thread)  %7.1f (%d threads)  [triad a = b + s*c]\n", "memory", c.mem_gbs_1t,
                c.mem_gbs, n);
    Status s = save_calibration(c, calibration_path());
    if (!s.ok()) return fail(s);
    std::printf("saved: %s\n", calibration_path().c_str());
    return 0;
  }

  if (tr->parsed()) {
    ConfigSchema schema = train_schema();
    if (tr_keys) {
      std::printf("%s", schema.help().c_str());
      return 0;
    }
    Config cfg = schema.defaults();
    Status s;
    if (!tr_resume.empty()) {
      if (!tr_config.empty() || !tr_sets.empty() || tr->count("--budget") || !tr_data.empty())
        return fail(Status::error("--resume takes the run's own config.toml; drop --config/--set/--budget/--data"));
      if (!(s = schema.load_toml(tr_resume + "/config.toml", &cfg)).ok()) return fail(s);
      TrainOptions to;
      to.resume_dir = tr_resume;
      return run_train(cfg, to);
    }
    if (!tr_config.empty() && !(s = schema.load_toml(tr_config, &cfg)).ok()) return fail(s);
    for (const auto& kv : tr_sets)
      if (!(s = schema.apply_set(kv, &cfg)).ok()) return fail(s);
    if (tr->count("--budget")) {  // the key's bounds are checked again when training starts
      if (!std::isfinite(tr_budget) || tr_budget <= 0)
        return fail(Status::error("--budget must be a finite number of seconds > 0 (got " + std::to_string(tr_budget) +
                                  ")"));
      cfg.set("train.budget_seconds", tr_budget);
    }
    if (!tr_data.empty()) cfg.set("train.data", tr_data);
    TrainOptions to;
    to.force = tr_force;
    return run_train(cfg, to);
  }

  if (prep->parsed()) {
    po.utf8 = utf8 == "replace" ? Utf8Policy::kReplace : Utf8Policy::kError;
    po.progress = !quiet;
    if (po.train_inputs.empty() && !quiet)
      std::fprintf(stderr, "prepare: no --train input, using the built-in default corpus (%s/npm)\n",
                   frontier_cache_dir().c_str());
    PrepareResult r;
    Status s = prepare(po, &r);
    if (!s.ok()) return fail(s);
    print_prepare_summary(po, r);
    return 0;
  }

  if (tk->parsed()) {
    Tokenizer tok;
    Status s = tok.load(tk_dir);
    if (!s.ok()) return fail(s);
    if (tk_text.empty()) {
      std::stringstream ss;
      ss << std::cin.rdbuf();
      tk_text = ss.str();
    }
    if (tk_decode) {
      // Every whitespace-separated word must be a token id: a stray word is an error naming it, not the end.
      std::vector<uint32_t> ids;
      std::istringstream in(tk_text);
      std::string word;
      for (size_t n = 1; in >> word; n++) {
        const bool digits = word.size() <= 10 && word.find_first_not_of("0123456789") == std::string::npos;
        const unsigned long long v = digits ? std::stoull(word) : 0;
        if (!digits || v >= tok.vocab_size())
          return fail(Status::error("--decode: word " + std::to_string(n) + " \"" + word.substr(0, 40) +
                                    (word.size() > 40 ? "..." : "") + "\" is not a token id (0 to " +
                                    std::to_string(tok.vocab_size() - 1) + ", separated by whitespace)"));
        ids.push_back(static_cast<uint32_t>(v));
      }
      std::string out = tok.decode(ids);
      std::fwrite(out.data(), 1, out.size(), stdout);
      return 0;
    }
    size_t bad = utf8_first_invalid(tk_text);
    if (bad != std::string::npos)
      return fail(Status::error("input is not valid UTF-8 (first bad byte at offset " + std::to_string(bad) + ")"));
    std::vector<uint32_t> ids;
    if (Status es = tok.encode_ordinary(tk_text, &ids); !es.ok()) return fail(es);
    for (size_t i = 0; i < ids.size(); i++) std::printf("%s%u", i ? " " : "", ids[i]);
    std::printf("\n");
    return 0;
  }

  if (insp->parsed()) {
    PreparedData data;
    Status s = data.open(insp_dir, /*verify=*/true);
    if (!s.ok()) return fail(s);
    std::printf("dataset: %s (all %zu files match their SHA-256)\n", insp_dir.c_str(),
                data.manifest()["files"].size());
    std::printf("vocab_size: %u  bos_id: %u\n", data.tokenizer().vocab_size(), data.tokenizer().bos_id());
    for (const char* split : {"train", "val"}) {
      std::vector<Shard> shards;
      s = data.open_split(split, &shards);
      if (!s.ok()) return fail(s);
      uint64_t toks = 0, docs = 0;
      for (auto& sh : shards) toks += sh.n_tokens(), docs += sh.n_docs();
      std::printf("%-5s shards: %zu  docs: %llu  tokens: %llu\n", split, shards.size(),
                  static_cast<unsigned long long>(docs), static_cast<unsigned long long>(toks));
      if (std::string(split) == "train") {
        BestFitLoader loader;
        LoaderConfig cfg;
        cfg.B = 2;
        cfg.T = insp_T;
        cfg.knobs = "--seq-len";
        s = loader.init(shards, cfg);
        if (!s.ok()) return fail(s);
        std::vector<int32_t> x(2 * insp_T), y(2 * insp_T);
        loader.next(x.data(), y.data());
        std::vector<uint32_t> row(x.begin(), x.begin() + insp_T);
        std::printf("first row of a B=2, T=%d batch, decoded:\n%s\n", insp_T, data.tokenizer().decode(row).c_str());
      }
    }
    return 0;
  }
  return 0;
}
