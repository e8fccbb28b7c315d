#include "train/train.h"

#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "calibrate/calibrate.h"
#include "kernels/isa.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "model/gpt.h"
#include "model/model_config.h"
#include "optim/optim.h"
#include "train/checkpoint.h"
#include "util/file.h"

namespace frontier {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double peak_rss_mb() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;  // KiB on Linux
}

// LR multiplier on time progress: linear warmup, constant, linear warmdown to final_frac (nanochat get_lr_multiplier).
double lr_multiplier(double progress, double warmup, double warmdown, double final_frac) {
  if (warmup > 0 && progress < warmup) return (progress + 1e-9) / warmup;
  if (progress <= 1.0 - warmdown) return 1.0;
  double cooldown = (1.0 - progress) / warmdown;
  return cooldown * 1.0 + (1.0 - cooldown) * final_frac;
}

}  // namespace

Status resolve_precision(const std::string& name, Precision* out) {
  if (name == "auto") {
    *out = active_isa() == Isa::kAvx512Bf16 ? Precision::kBf16 : Precision::kFp32;
  } else if (name == "fp32") {
    *out = Precision::kFp32;
  } else if (name == "bf16") {
    *out = Precision::kBf16;
    if (active_isa() != Isa::kAvx512Bf16)
      std::fprintf(stderr, "warning: train.precision = bf16 on tier %s: bf16 GEMMs run on the reference kernel "
                   "(slow; same numbers); use auto or fp32 for speed\n", isa_name(active_isa()));
  } else {
    return Status::error("train.precision = '" + name + "' is not one of auto, fp32, bf16");
  }
  return ok_status();
}

ConfigSchema train_schema() {
  ConfigSchema s;
  add_model_keys(&s);
  s.add_float("optim.matrix_lr", 0.02, "Muon learning rate for block matrices");
  s.add_float("optim.embedding_lr", 0.2, "AdamW LR for wte and value embeddings, x (dim/768)^-0.5");
  s.add_float("optim.unembedding_lr", 0.004, "AdamW LR for lm_head, x (dim/768)^-0.5");
  s.add_float("optim.scalar_lr", 0.5, "AdamW LR for x0_lambdas (resid_lambdas get 1% of it)");
  s.add_float("optim.weight_decay", 0.2, "Muon cautious weight decay, decaying linearly to 0 with progress");
  s.add_int("optim.momentum_warmup_steps", 300, "Muon momentum warms from 0.85 to 0.95 over this many steps");
  s.add_string("train.data", "data/default", "prepared dataset directory (frontier prepare --out)");
  s.add_float("train.budget_seconds", 60.0, "wall-clock training budget (optimizer steps only)");
  s.add_int("train.micro_batch", 8, "sequences per forward/backward (B)");
  s.add_int("train.total_batch_tokens", 0, "tokens per optimizer step (0 = micro_batch * seq_len, no accumulation)");
  s.add_int("train.warmup_steps_excluded", 2, "first steps not counted in the budget (start-up effects)");
  s.add_float("train.warmup_ratio", 0.0, "LR warmup, as a fraction of the budget");
  s.add_float("train.warmdown_ratio", 0.5, "LR linear warmdown over this last fraction of the budget");
  s.add_float("train.final_lr_frac", 0.0, "LR multiplier at the end of the warmdown");
  s.add_int("train.max_steps", 0, "stop after this many steps (0 = budget only); >0 also runs the schedules on "
            "step progress, which makes runs bit-reproducible");
  s.add_float("train.checkpoint_every_seconds", 60.0, "write a resumable checkpoint this often (0 = at the end only)");
  s.add_int("train.checkpoint_every_steps", 0, "also checkpoint every N steps (0 = off)");
  s.add_int("train.seed", 42, "initialisation and data-order seed");
  s.add_int("train.threads", 0, "threads (0 = all cores)");
  s.add_string("train.run_dir", "", "run directory (default runs/<date>-<time>)");
  s.add_string("train.precision", "auto",
               "GEMM precision: auto (bf16 where the CPU has native bf16 dot products, else fp32) | fp32 | bf16 "
               "(bf16 operands, fp32 accumulation; fp32 master weights, gradients, optimizer state; eval in fp32)");
  s.add_float("train.peak_gflops", 0.0,
              "peak GFLOP/s for MFU (0 = the precision's unit from `frontier calibrate`'s file, else measured)");
  s.add_int("eval.tokens", 32768, "validation tokens scored for val_bpb");
  s.add_int("eval.batch", 8, "validation sequences per forward");
  return s;
}

std::string TrainSummary::format() const {
  char buf[1024];
  std::snprintf(buf, sizeof(buf),
                "---\nval_bpb:          %.6f\ntraining_seconds: %.1f\neval_seconds:     %.1f\ntotal_seconds:    %.1f\n"
                "peak_mem_mb:      %.1f\n"
                "mfu_percent:      %.2f\ntotal_tokens_M:   %.3f\nnum_steps:        %lld\nnum_params_M:     %.2f\n"
                "depth:            %d\ntokens_per_sec:   %.0f\n",
                val_bpb, training_seconds, eval_seconds, total_seconds, peak_mem_mb, mfu_percent, total_tokens_M,
                static_cast<long long>(num_steps), num_params_M, depth, tokens_per_sec);
  std::string out = buf;
  if (!precision.empty()) out += "precision:        " + precision + "\n";
  if (!mfu_peak.empty()) out += "mfu_peak:         " + mfu_peak + "\n";
  return out;
}

Status evaluate_bpb(Gpt& gpt, const PreparedData& data, int64_t eval_tokens, int B, int T, double* bpb,
                    const std::string& split) {
  std::vector<Shard> shards;
  FRONTIER_RETURN_IF_ERROR(data.open_split(split, &shards));
  BestFitLoader loader;
  LoaderConfig lc;
  lc.B = B;
  lc.T = T;
  lc.shuffle = false;
  FRONTIER_RETURN_IF_ERROR(loader.init(shards, lc));
  const auto& tb = data.token_bytes();
  int64_t steps = std::max<int64_t>(1, eval_tokens / (int64_t(B) * T));
  std::vector<int32_t> x(B * T), y(B * T);
  std::vector<float> losses(B * T);
  double nats = 0, bytes = 0;
  for (int64_t s = 0; s < steps; s++) {
    loader.next(x.data(), y.data());
    Tape tape;
    gpt.forward(tape, x.data(), y.data(), B, T, nullptr, losses.data());
    for (int i = 0; i < B * T; i++) {
      int nb = tb[y[i]];
      if (nb > 0) {
        nats += losses[i];
        bytes += nb;
      }
    }
  }
  if (bytes == 0) return Status::error("validation targets have no bytes (is token_bytes.bin all zeros?)");
  *bpb = nats / (std::log(2.0) * bytes);
  return ok_status();
}

Status load_trained_model(const std::string& path, Config* cfg, std::unique_ptr<Gpt>* gpt) {
  std::string toml;
  std::vector<float> w, st;
  std::string meta;
  FRONTIER_RETURN_IF_ERROR(load_checkpoint(path, &toml, &meta, &w, &st));
  ConfigSchema schema = train_schema();
  *cfg = schema.defaults();
  FRONTIER_RETURN_IF_ERROR(schema.load_toml_string(toml, path + " (config)", cfg));
  ModelShape shape;
  FRONTIER_RETURN_IF_ERROR(derive_model_shape(*cfg, &shape));
  auto g = std::make_unique<Gpt>(shape);
  if (g->weights().size() != w.size())
    return Status::error(path + ": " + std::to_string(w.size()) + " weights, but its config's model has " +
                         std::to_string(g->weights().size()));
  g->weights() = std::move(w);
  *gpt = std::move(g);
  return ok_status();
}

Status train(const Config& cfg, TrainSummary* out, const std::string& resume_dir) {
  auto t_start = Clock::now();
  ModelShape shape;
  FRONTIER_RETURN_IF_ERROR(derive_model_shape(cfg, &shape));
  const double budget = cfg.get_float("train.budget_seconds");
  if (!(budget > 0)) return Status::error("train.budget_seconds must be > 0 (got " + std::to_string(budget) + ")");
  const int B = static_cast<int>(cfg.get_int("train.micro_batch")), T = shape.seq_len;
  if (B < 1) return Status::error("train.micro_batch must be >= 1");
  int64_t total = cfg.get_int("train.total_batch_tokens");
  if (total == 0) total = int64_t(B) * T;
  if (total % (int64_t(B) * T) != 0)
    return Status::error("train.total_batch_tokens " + std::to_string(total) + " is not divisible by micro_batch * "
                         "seq_len = " + std::to_string(int64_t(B) * T) + " (choose a multiple)");
  const int64_t accum = total / (int64_t(B) * T);
  int threads = static_cast<int>(cfg.get_int("train.threads"));
  if (threads > 0) omp_set_num_threads(threads);
  threads = omp_get_max_threads();

  PreparedData data;
  FRONTIER_RETURN_IF_ERROR(data.open(cfg.get_string("train.data")));
  if (static_cast<int>(data.tokenizer().vocab_size()) != shape.vocab_size)
    return Status::error("model.vocab_size " + std::to_string(shape.vocab_size) + " does not match the data's "
                         "tokenizer (" + std::to_string(data.tokenizer().vocab_size()) + "); set model.vocab_size=" +
                         std::to_string(data.tokenizer().vocab_size()));
  std::vector<Shard> train_shards;
  FRONTIER_RETURN_IF_ERROR(data.open_split("train", &train_shards));

  std::string run_dir = resume_dir.empty() ? cfg.get_string("train.run_dir") : resume_dir;
  if (run_dir.empty()) {
    char buf[64];
    std::time_t now = std::time(nullptr);
    std::strftime(buf, sizeof(buf), "runs/%Y%m%d-%H%M%S", std::localtime(&now));
    run_dir = buf;
  }
  FRONTIER_RETURN_IF_ERROR(make_dirs(run_dir));
  if (resume_dir.empty()) FRONTIER_RETURN_IF_ERROR(write_file_atomic(run_dir + "/config.toml", cfg.to_toml()));

  Precision prec;
  FRONTIER_RETURN_IF_ERROR(resolve_precision(cfg.get_string("train.precision"), &prec));

  Gpt gpt(shape);
  gpt.init_nanochat(static_cast<uint64_t>(cfg.get_int("train.seed")));
  OptimConfig oc;
  oc.ns_precision = prec;
  oc.matrix_lr = static_cast<float>(cfg.get_float("optim.matrix_lr"));
  oc.embedding_lr = static_cast<float>(cfg.get_float("optim.embedding_lr"));
  oc.unembedding_lr = static_cast<float>(cfg.get_float("optim.unembedding_lr"));
  oc.scalar_lr = static_cast<float>(cfg.get_float("optim.scalar_lr"));
  oc.weight_decay = static_cast<float>(cfg.get_float("optim.weight_decay"));
  Optimizer opt(gpt, oc);
  const int64_t mom_warm = cfg.get_int("optim.momentum_warmup_steps");

  // Parameter counts by group and FLOPs per token (nanochat: 6 x matmul params + 12 * L * H * D * T).
  int64_t n_matrix = 0, n_emb = 0, n_head = 0, n_scalar = 0;
  for (const auto& p : gpt.params()) {
    if (p.group == ParamGroup::kMatrix) n_matrix += p.numel();
    else if (p.group == ParamGroup::kLmHead) n_head += p.numel();
    else if (p.group == ParamGroup::kScalar) n_scalar += p.numel();
    else n_emb += p.numel();
  }
  const double flops_per_token = gpt.flops_per_token();
  // Training needs only the compute peak: a bandwidth of 1 (unused) spares the seconds of a triad measurement.
  const Ceilings ceil = machine_ceilings(threads, prec, cfg.get_float("train.peak_gflops"), 1.0);
  const double peak = ceil.peak_gflops;
  const std::string peak_src = ceil.source == "given"           ? "train.peak_gflops"
                               : ceil.source == "measured now" ? "measured now; `frontier calibrate` saves it"
                                                                : ceil.source;

  std::printf("model: %s\n", shape.describe().c_str());
  std::printf("params: %.3fM total = matrices %.3fM + embeddings %.3fM + lm_head %.3fM + scalars %lld\n",
              gpt.n_params() / 1e6, n_matrix / 1e6, n_emb / 1e6, n_head / 1e6, static_cast<long long>(n_scalar));
  std::printf("%s\n", kernels_banner().c_str());
  std::printf("precision: %s (train.precision = %s)\n", precision_name(prec),
              cfg.get_string("train.precision").c_str());
  std::printf("batch: %d x %d tokens x %lld accumulation = %lld tokens/step; flops/token %.3g; %s peak %.1f "
              "GFLOP/s (%d threads, %s)\n",
              B, T, static_cast<long long>(accum), static_cast<long long>(total), flops_per_token,
              ceil.unit.c_str(), peak, threads, peak_src.c_str());
  std::printf("lr: matrix %.4g, embedding %.4g, lm_head %.4g (x (dim/768)^-0.5 = %.3f); budget %.1fs; run dir %s\n",
              oc.matrix_lr, oc.embedding_lr, oc.unembedding_lr, std::pow(shape.dim / 768.0, -0.5), budget,
              run_dir.c_str());
  std::fflush(stdout);

  BestFitLoader loader;
  LoaderConfig lc;
  lc.B = B;
  lc.T = T;
  lc.seed = static_cast<uint64_t>(cfg.get_int("train.seed"));
  FRONTIER_RETURN_IF_ERROR(loader.init(train_shards, lc));

  std::vector<int32_t> x(B * T), y(B * T);
  const int64_t excluded = cfg.get_int("train.warmup_steps_excluded");
  const int64_t max_steps = cfg.get_int("train.max_steps");
  const double warmup = cfg.get_float("train.warmup_ratio"), warmdown = cfg.get_float("train.warmdown_ratio");
  const double final_frac = cfg.get_float("train.final_lr_frac");
  const double ckpt_secs = cfg.get_float("train.checkpoint_every_seconds");
  const int64_t ckpt_steps = cfg.get_int("train.checkpoint_every_steps");
  double training_time = 0, smooth = 0, loss_val = 0;
  int64_t step = 0, tokens = 0, steps_here = 0;  // steps_here: run by this process (not resumed)
  double all_steps_time = 0;                      // their wall time, excluded warm-up included
  const std::string ckpt_path = run_dir + "/model.ckpt", log_path = run_dir + "/log.jsonl";

  // Resume: weights, optimizer state and step, budget used, tokens and the loader's exact position.
  std::string kept_log;
  if (!resume_dir.empty()) {
    std::string toml, meta_text;
    std::vector<float> w, st;
    FRONTIER_RETURN_IF_ERROR(load_checkpoint(ckpt_path, &toml, &meta_text, &w, &st));
    nlohmann::json meta = nlohmann::json::parse(meta_text, nullptr, false);
    if (meta.is_discarded() || !meta.contains("loader") || w.size() != gpt.weights().size() ||
        st.size() != opt.state().size())
      return Status::error(ckpt_path + " does not fit this run's model (was the config edited?)");
    if (meta.value("finished", false))
      return Status::error(run_dir + " already finished (see its summary.txt); start a new run instead");
    gpt.weights() = std::move(w);
    opt.state() = std::move(st);
    opt.set_steps(meta["optimizer_steps"].get<int64_t>());
    step = meta["step"].get<int64_t>();
    training_time = meta["training_seconds"].get<double>();
    tokens = meta["tokens"].get<int64_t>();
    smooth = meta.value("smooth_loss", 0.0);
    LoaderState ls;
    FRONTIER_RETURN_IF_ERROR(LoaderState::from_json(meta["loader"], &ls));
    FRONTIER_RETURN_IF_ERROR(loader.restore(ls));
    std::string old_log, line;
    read_file(log_path, &old_log);  // keep the lines up to the checkpoint's step; a killed run may have more
    std::istringstream in(old_log);
    while (std::getline(in, line)) {
      nlohmann::json rec = nlohmann::json::parse(line, nullptr, false);
      if (!rec.is_discarded() && rec.value("step", int64_t(0)) <= step) kept_log += line + "\n";
    }
    std::printf("resumed %s at step %lld, %.1fs of the %.1fs budget used\n", run_dir.c_str(),
                static_cast<long long>(step), training_time, budget);
  }
  FRONTIER_RETURN_IF_ERROR(write_file_atomic(log_path, kept_log));
  FILE* log = std::fopen(log_path.c_str(), "ab");  // append-only; resume trims it back to the checkpoint
  if (!log) return Status::error("cannot append to " + log_path);
  auto checkpoint = [&](bool finished) {
    nlohmann::json meta = {{"step", step}, {"training_seconds", training_time}, {"tokens", tokens},
                           {"optimizer_steps", opt.steps()}, {"smooth_loss", smooth}, {"finished", finished},
                           {"loader", loader.state().to_json()}};
    return save_checkpoint(ckpt_path, cfg.to_toml(), meta.dump(), gpt.weights(), opt.state());
  };
  const double explode = 3.0 * std::log(static_cast<double>(shape.vocab_size)) + 5.0;
  auto last_ckpt = Clock::now();
  const char* fault = std::getenv("FRONTIER_FAULT_EXIT_AFTER_STEP");  // tests: die like a killed run
  const int64_t fault_step = fault ? std::atoll(fault) : -1;
  auto last_print = Clock::now() - std::chrono::seconds(10);
  while (true) {
    auto t0 = Clock::now();
    double progress = max_steps > 0 ? static_cast<double>(step) / max_steps : std::min(training_time / budget, 1.0);
    gpt.zero_grad();
    double loss_sum = 0;
    for (int64_t a = 0; a < accum; a++) {
      loader.next(x.data(), y.data());
      Tape tape;
      tape.set_precision(prec);
      Var loss = gpt.forward(tape, x.data(), y.data(), B, T);
      tape.backward(loss, 1.0f / static_cast<float>(accum));
      loss_sum += tape.value(loss)[0];
    }
    loss_val = loss_sum / accum;
    if (!std::isfinite(loss_val) || loss_val > explode) {
      std::fclose(log);
      return Status::error("training diverged at step " + std::to_string(step) + ": loss " +
                           std::to_string(loss_val) + " (lower the learning rates, e.g. --set optim.matrix_lr=0.01)");
    }
    double lr_mult = lr_multiplier(progress, warmup, warmdown, final_frac);
    double frac = std::min(1.0, static_cast<double>(step) / std::max<int64_t>(1, mom_warm));
    double momentum = (1 - frac) * 0.85 + frac * 0.95;
    opt.step(static_cast<float>(lr_mult), static_cast<float>(momentum), static_cast<float>(progress));
    double dt = since(t0);
    if (step >= excluded) training_time += dt;
    all_steps_time += dt;
    steps_here++;
    tokens += total;
    step++;
    smooth = step == 1 ? loss_val : 0.9 * smooth + 0.1 * loss_val;
    double tps = total / dt, mfu = 100.0 * tps * flops_per_token / (peak * 1e9);
    nlohmann::json rec = {{"step", step}, {"loss", loss_val}, {"lr_mult", lr_mult}, {"momentum", momentum},
                          {"tokens_per_sec", tps}, {"mfu", mfu}, {"step_seconds", dt},
                          {"training_seconds", training_time}, {"progress", progress}};
    std::string line = rec.dump() + "\n";
    std::fputs(line.c_str(), log);
    std::fflush(log);
    bool tty = isatty(2);
    if (tty || since(last_print) > 5.0) {
      last_print = Clock::now();
      // Progress and time left: by steps when train.max_steps ends the run first, else by the budget.
      const double step_frac = max_steps > 0 ? static_cast<double>(step) / max_steps : 0.0;
      const double time_frac = std::min(training_time / budget, 1.0);
      const bool by_steps = max_steps > 0 && step_frac >= time_frac;
      const double left = by_steps ? (max_steps - step) * (training_time / std::max<int64_t>(1, step))
                                   : std::max(0.0, budget - training_time);
      std::fprintf(stderr, "%sstep %5lld | %5.1f%% | loss %.4f | lr x%.3f | %7.0f tok/s | mfu %5.2f%% | %5.1fs left %s",
                   tty ? "\r" : "", static_cast<long long>(step), 100.0 * (by_steps ? step_frac : time_frac), smooth,
                   lr_mult, tps, mfu, left, tty ? "" : "\n");
    }
    if ((step > excluded && training_time >= budget) || (max_steps > 0 && step >= max_steps)) break;
    if ((ckpt_steps > 0 && step % ckpt_steps == 0) || (ckpt_secs > 0 && since(last_ckpt) >= ckpt_secs)) {
      Status cs = checkpoint(false);  // not counted in the budget: the step's time was taken above
      if (!cs.ok()) {
        std::fclose(log);
        return cs;
      }
      last_ckpt = Clock::now();
      if (step == fault_step) std::_Exit(75);
    }
  }
  if (isatty(2)) std::fprintf(stderr, "\n");
  std::fclose(log);

  auto t_eval = Clock::now();
  double bpb = 0;
  FRONTIER_RETURN_IF_ERROR(evaluate_bpb(gpt, data, cfg.get_int("eval.tokens"),
                                        static_cast<int>(cfg.get_int("eval.batch")), T, &bpb));
  double eval_s = since(t_eval);
  FRONTIER_RETURN_IF_ERROR(checkpoint(true));

  TrainSummary& s = *out;
  s.val_bpb = bpb;
  s.training_seconds = training_time;
  s.eval_seconds = eval_s;
  s.total_seconds = since(t_start);
  s.peak_mem_mb = peak_rss_mb();
  s.num_steps = step;
  s.total_tokens_M = tokens / 1e6;
  s.num_params_M = gpt.n_params() / 1e6;
  s.depth = shape.depth;
  // Tokens/s over the counted steps; a run shorter than the excluded warm-up (e.g. train.max_steps=2) has none, so
  // it reports the speed of all its steps (timed in this process) instead of dividing by zero.
  const int64_t counted_steps = step - excluded;
  s.tokens_per_sec = counted_steps > 0 && training_time > 0
                         ? counted_steps * static_cast<double>(total) / training_time
                         : (all_steps_time > 0 ? steps_here * static_cast<double>(total) / all_steps_time : 0);
  s.mfu_percent = 100.0 * s.tokens_per_sec * flops_per_token / (peak * 1e9);
  s.precision = precision_name(prec);
  char pk[128];
  std::snprintf(pk, sizeof(pk), "%.1f GFLOP/s %s", peak, ceil.unit.c_str());
  s.mfu_peak = pk;
  s.final_loss = loss_val;
  s.run_dir = run_dir;
  return write_file_atomic(run_dir + "/summary.txt", s.format());
}

}  // namespace frontier
