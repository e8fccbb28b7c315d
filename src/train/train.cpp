#include "train/train.h"

#include <omp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

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
#include "train/identity.h"
#include "train/memory.h"
#include "util/file.h"
#include "util/file_lock.h"
#include "util/stop_signal.h"

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
  s.add_float("optim.matrix_lr", 0.02, "Muon learning rate for block matrices", {0, 100});
  s.add_float("optim.embedding_lr", 0.2, "AdamW LR for wte and value embeddings, x (dim/768)^-0.5", {0, 100});
  s.add_float("optim.unembedding_lr", 0.004, "AdamW LR for lm_head, x (dim/768)^-0.5", {0, 100});
  s.add_float("optim.scalar_lr", 0.5, "AdamW LR for x0_lambdas (resid_lambdas get 1% of it)", {0, 100});
  s.add_float("optim.weight_decay", 0.2, "Muon cautious weight decay, decaying linearly to 0 with progress",
              {0, 100});
  s.add_int("optim.momentum_warmup_steps", 300, "Muon momentum warms from 0.85 to 0.95 over this many steps",
            {0, 1e12});
  s.add_string("train.data", "data/default", "prepared dataset directory (frontier prepare --out)");
  s.add_float("train.budget_seconds", 60.0, "wall-clock training budget (optimizer steps only)",
              {1e-3, 30 * 86400.0});
  s.add_int("train.micro_batch", 8, "sequences per forward/backward (B)", {1, 1 << 20});
  s.add_int("train.total_batch_tokens", 0, "tokens per optimizer step (0 = micro_batch * seq_len, no accumulation)",
            {0, 1e15});
  s.add_int("train.warmup_steps_excluded", 2, "first steps not counted in the budget (start-up effects)", {0, 1e6});
  s.add_float("train.warmup_ratio", 0.0, "LR warmup, as a fraction of the budget", {0, 1});
  s.add_float("train.warmdown_ratio", 0.5, "LR linear warmdown over this last fraction of the budget", {0, 1});
  s.add_float("train.final_lr_frac", 0.0, "LR multiplier at the end of the warmdown", {0, 10});
  s.add_int("train.max_steps", 0, "stop after this many steps (0 = budget only); >0 also runs the schedules on "
            "step progress, which makes runs bit-reproducible",
            {0, 1e15});
  s.add_float("train.checkpoint_every_seconds", 60.0, "write a resumable checkpoint this often (0 = at the end only)",
              {0, 1e9});
  s.add_int("train.checkpoint_every_steps", 0, "also checkpoint every N steps (0 = off)", {0, 1e15});
  s.add_int("train.seed", 42, "initialisation and data-order seed", {0, 9.2e18});
  s.add_int("train.threads", 0, "threads (0 = all cores)", {0, 4096});
  s.add_string("train.run_dir", "", "run directory (default runs/<date>-<time>)");
  s.add_string("train.precision", "auto",
               "GEMM precision: auto (bf16 where the CPU has native bf16 dot products, else fp32) | fp32 | bf16 "
               "(bf16 operands, fp32 accumulation; fp32 master weights, gradients, optimizer state; eval in fp32)");
  s.add_float("train.peak_gflops", 0.0,
              "peak GFLOP/s for MFU (0 = the precision's unit from `frontier calibrate`'s file, else measured)",
              {0, 1e12});
  s.add_int("eval.tokens", 32768, "validation tokens scored for val_bpb", {1, 1e12});
  s.add_int("eval.batch", 8, "validation sequences per forward", {1, 1 << 20});
  return s;
}

std::string TrainSummary::format() const {
  std::string out = "---\n";
  auto line = [&out](const char* key, const std::string& v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%-18s", (std::string(key) + ":").c_str());
    out += buf + v + "\n";
  };
  auto num = [](const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), f, v);
    return std::string(buf);
  };
  if (!interrupted.empty()) line("status", interrupted);
  else line("val_bpb", num("%.6f", val_bpb));
  line("training_seconds", num("%.1f", training_seconds));
  line("eval_seconds", num("%.1f", eval_seconds));
  line("total_seconds", num("%.1f", total_seconds));
  line("peak_mem_mb", num("%.1f", peak_mem_mb));
  line("mfu_percent", num("%.2f", mfu_percent));
  line("total_tokens_M", num("%.3f", total_tokens_M));
  line("num_steps", std::to_string(num_steps));
  line("num_params_M", num("%.2f", num_params_M));
  line("depth", std::to_string(depth));
  line("tokens_per_sec", num("%.0f", tokens_per_sec));
  if (!precision.empty()) line("precision", precision);
  if (!mfu_peak.empty()) line("mfu_peak", mfu_peak);
  if (!tokenizer_id.empty()) line("tokenizer_id", tokenizer_id);
  if (!data_id.empty()) line("data_id", data_id);
  if (!not_saved.empty()) line("not_saved", not_saved);
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
  if (eval_tokens < 1) return Status::error("eval.tokens must be >= 1 (got " + std::to_string(eval_tokens) + ")");
  // Scoring more tokens than the split holds scores some of its text twice (the loader wraps around): a weighted
  // mean of the same text, not a wrong number, so a warning that names the knob (small test datasets do this).
  int64_t split_tokens = 0;
  for (const auto& sh : shards) split_tokens += static_cast<int64_t>(sh.n_tokens());
  const int64_t steps = std::max<int64_t>(1, eval_tokens / (int64_t(B) * T));
  if (steps * B * T > split_tokens)
    std::fprintf(stderr, "warning: scoring %lld tokens, but the %s split of %s has %lld: some text is scored twice "
                 "(lower eval.tokens, or eval bpb --tokens, to at most %lld)\n", static_cast<long long>(steps * B * T),
                 split.c_str(), data.dir().c_str(), static_cast<long long>(split_tokens),
                 static_cast<long long>(split_tokens));
  const auto& tb = data.token_bytes();
  std::vector<int32_t> x(B * T), y(B * T);
  std::vector<float> losses(B * T);
  double nats = 0, bytes = 0;
  for (int64_t s = 0; s < steps; s++) {
    loader.next(x.data(), y.data());
    Tape tape;
    gpt.forward(tape, x.data(), y.data(), B, T, nullptr, losses.data());
    for (int i = 0; i < B * T; i++) {
      if (!std::isfinite(losses[i]))
        return Status::error("the model's loss is not finite at validation position " + std::to_string(s * B * T + i) +
                             " (its weights or activations overflow); val_bpb would be meaningless");
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

Status load_trained_model(const std::string& path, Config* cfg, std::unique_ptr<Gpt>* gpt, RunIdentity* id) {
  std::string toml;
  std::vector<float> w, st;
  std::string meta_text;
  FRONTIER_RETURN_IF_ERROR(load_checkpoint(path, &toml, &meta_text, &w, &st));
  ConfigSchema schema = train_schema();
  *cfg = schema.defaults();
  FRONTIER_RETURN_IF_ERROR(schema.load_toml_string(toml, path + " (config)", cfg));
  ModelShape shape;
  FRONTIER_RETURN_IF_ERROR(derive_model_shape(*cfg, &shape));
  if (Gpt::param_table(shape).back().offset + Gpt::param_table(shape).back().numel() !=
      static_cast<int64_t>(w.size()))
    return Status::error(path + ": " + std::to_string(w.size()) + " weights, but its config's model has a different "
                         "count (corrupt checkpoint)");
  FRONTIER_RETURN_IF_ERROR(check_finite(w, path));
  auto g = std::make_unique<Gpt>(shape);
  g->weights() = std::move(w);
  *gpt = std::move(g);
  if (id) {
    nlohmann::json meta = nlohmann::json::parse(meta_text, nullptr, false);
    *id = RunIdentity::from_json(meta.is_object() && meta.contains("identity") ? meta["identity"] : nlohmann::json());
  }
  return ok_status();
}

Status check_finite(const std::vector<float>& w, const std::string& path) {
  for (size_t i = 0; i < w.size(); i++)
    if (!std::isfinite(w[i]))
      return Status::error(path + ": weight " + std::to_string(i) + " of " + std::to_string(w.size()) + " is " +
                           (std::isnan(w[i]) ? "NaN" : "infinite") + " (the run diverged or the file was altered); "
                           "use an earlier checkpoint");
  return ok_status();
}

namespace {

// Typed reads of checkpoint metadata: a field that is missing or of the wrong type is an error naming it.
template <typename T>
Status meta_get(const nlohmann::json& meta, const char* key, const std::string& path, T* out) {
  auto it = meta.find(key);
  bool ok = it != meta.end();
  if constexpr (std::is_same_v<T, double>) ok = ok && it->is_number();
  else if constexpr (std::is_same_v<T, bool>) ok = ok && it->is_boolean();
  else ok = ok && it->is_number_integer();
  if (!ok) return Status::error("corrupt checkpoint " + path + ": metadata field '" + key + "' is missing or not a " +
                                (std::is_same_v<T, bool> ? "boolean" : "number"));
  *out = it->get<T>();
  return ok_status();
}

// One training run, in named phases: set up (validate, reserve the run dir, build, resume), the steps, save,
// evaluate, finish. Each failure point is handled in one phase; nothing computed is lost on the way out.
class TrainRun {
 public:
  TrainRun(const Config& cfg, const TrainOptions& o) : cfg_(cfg), opt_(o) {}
  Status setup();
  Status run_steps();
  void save();          // the final (or interrupted) checkpoint; a failure is recorded, not fatal
  Status evaluate();
  Status finish(TrainSummary* s);
  bool interrupted() const { return stop_signal_ != 0; }
  bool eval_only() const { return eval_only_; }
  int stop_signal() const { return stop_signal_; }

 private:
  Status reserve_run_dir();
  Status check_disk_space();
  Status resume();
  Status checkpoint(bool training_done);
  void note_not_saved(const std::string& what, const Status& why);
  void fill_summary(TrainSummary* s);

  const Config& cfg_;
  TrainOptions opt_;
  Clock::time_point t_start_ = Clock::now();
  ModelShape shape_;
  double budget_ = 0;
  int B_ = 0, T_ = 0, threads_ = 0;
  int64_t total_ = 0, accum_ = 0;
  Precision prec_ = Precision::kFp32;
  PreparedData data_;
  RunIdentity identity_;
  std::vector<Shard> train_shards_;
  MemoryEstimate mem_;
  std::string run_dir_, ckpt_path_, log_path_;
  DirLock lock_;
  std::unique_ptr<Gpt> gpt_;
  std::unique_ptr<Optimizer> optim_;
  BestFitLoader loader_;
  double flops_per_token_ = 0, peak_ = 0;
  std::string peak_unit_;
  // Progress, restored on resume.
  double training_time_ = 0, smooth_ = 0, loss_val_ = 0, all_steps_time_ = 0, eval_s_ = 0, bpb_ = 0;
  int64_t step_ = 0, tokens_ = 0, steps_here_ = 0;
  std::string kept_log_;
  bool eval_only_ = false;
  int stop_signal_ = 0;
  std::string not_saved_;
};

Status TrainRun::setup() {
  FRONTIER_RETURN_IF_ERROR(train_schema().validate(cfg_));
  FRONTIER_RETURN_IF_ERROR(derive_model_shape(cfg_, &shape_));
  budget_ = cfg_.get_float("train.budget_seconds");
  B_ = static_cast<int>(cfg_.get_int("train.micro_batch"));
  T_ = shape_.seq_len;
  total_ = cfg_.get_int("train.total_batch_tokens");
  if (total_ == 0) total_ = int64_t(B_) * T_;
  if (total_ % (int64_t(B_) * T_) != 0)
    return Status::error("train.total_batch_tokens " + std::to_string(total_) + " is not divisible by micro_batch * "
                         "seq_len = " + std::to_string(int64_t(B_) * T_) + " (choose a multiple)");
  accum_ = total_ / (int64_t(B_) * T_);
  threads_ = static_cast<int>(cfg_.get_int("train.threads"));
  if (threads_ > 0) omp_set_num_threads(threads_);
  threads_ = omp_get_max_threads();

  FRONTIER_RETURN_IF_ERROR(data_.open(cfg_.get_string("train.data")));
  if (static_cast<int>(data_.tokenizer().vocab_size()) != shape_.vocab_size)
    return Status::error("model.vocab_size " + std::to_string(shape_.vocab_size) + " does not match the data's "
                         "tokenizer (" + std::to_string(data_.tokenizer().vocab_size()) + "); set model.vocab_size=" +
                         std::to_string(data_.tokenizer().vocab_size()));
  identity_ = RunIdentity::of(data_);
  FRONTIER_RETURN_IF_ERROR(data_.open_split("train", &train_shards_));
  FRONTIER_RETURN_IF_ERROR(resolve_precision(cfg_.get_string("train.precision"), &prec_));

  // Refuse what cannot fit before allocating anything large.
  mem_ = estimate_train_memory(shape_, B_, cfg_.get_int("eval.batch"));
  const double avail = available_memory_bytes();
  if (avail > 0 && mem_.total() > avail) {
    const bool acts = mem_.activations_bytes > mem_.params_bytes;
    char buf[512];
    std::snprintf(buf, sizeof(buf), "this config needs about %s, but %.2f GB of memory is available; lower %s",
                  mem_.describe().c_str(), avail / 1e9,
                  acts ? "train.micro_batch (activations; keep the batch with train.total_batch_tokens) or "
                         "model.seq_len"
                       : "model.depth or model.dim (parameters)");
    return Status::error(buf);
  }

  FRONTIER_RETURN_IF_ERROR(reserve_run_dir());
  ckpt_path_ = run_dir_ + "/model.ckpt";
  log_path_ = run_dir_ + "/log.jsonl";

  gpt_ = std::make_unique<Gpt>(shape_);
  gpt_->init_nanochat(static_cast<uint64_t>(cfg_.get_int("train.seed")));
  OptimConfig oc;
  oc.ns_precision = prec_;
  oc.matrix_lr = static_cast<float>(cfg_.get_float("optim.matrix_lr"));
  oc.embedding_lr = static_cast<float>(cfg_.get_float("optim.embedding_lr"));
  oc.unembedding_lr = static_cast<float>(cfg_.get_float("optim.unembedding_lr"));
  oc.scalar_lr = static_cast<float>(cfg_.get_float("optim.scalar_lr"));
  oc.weight_decay = static_cast<float>(cfg_.get_float("optim.weight_decay"));
  optim_ = std::make_unique<Optimizer>(*gpt_, oc);
  FRONTIER_RETURN_IF_ERROR(check_disk_space());

  LoaderConfig lc;
  lc.B = B_;
  lc.T = T_;
  lc.seed = static_cast<uint64_t>(cfg_.get_int("train.seed"));
  FRONTIER_RETURN_IF_ERROR(loader_.init(train_shards_, lc));
  if (!opt_.resume_dir.empty()) FRONTIER_RETURN_IF_ERROR(resume());

  // Parameter counts by group and FLOPs per token (nanochat: 6 x matmul params + 12 * L * H * D * T).
  int64_t n_matrix = 0, n_emb = 0, n_head = 0, n_scalar = 0;
  for (const auto& p : gpt_->params()) {
    if (p.group == ParamGroup::kMatrix) n_matrix += p.numel();
    else if (p.group == ParamGroup::kLmHead) n_head += p.numel();
    else if (p.group == ParamGroup::kScalar) n_scalar += p.numel();
    else n_emb += p.numel();
  }
  flops_per_token_ = gpt_->flops_per_token();
  // Training needs only the compute peak: a bandwidth of 1 (unused) spares the seconds of a triad measurement.
  const Ceilings ceil = machine_ceilings(threads_, prec_, cfg_.get_float("train.peak_gflops"), 1.0);
  peak_ = ceil.peak_gflops;
  peak_unit_ = ceil.unit;
  const std::string peak_src = ceil.source == "given"           ? "train.peak_gflops"
                               : ceil.source == "measured now" ? "measured now; `frontier calibrate` saves it"
                                                                : ceil.source;
  std::printf("model: %s\n", shape_.describe().c_str());
  std::printf("params: %.3fM total = matrices %.3fM + embeddings %.3fM + lm_head %.3fM + scalars %lld\n",
              gpt_->n_params() / 1e6, n_matrix / 1e6, n_emb / 1e6, n_head / 1e6, static_cast<long long>(n_scalar));
  std::printf("%s\n", kernels_banner().c_str());
  std::printf("precision: %s (train.precision = %s)\n", precision_name(prec_),
              cfg_.get_string("train.precision").c_str());
  std::printf("batch: %d x %d tokens x %lld accumulation = %lld tokens/step; flops/token %.3g; %s peak %.1f "
              "GFLOP/s (%d threads, %s)\n",
              B_, T_, static_cast<long long>(accum_), static_cast<long long>(total_), flops_per_token_,
              ceil.unit.c_str(), peak_, threads_, peak_src.c_str());
  std::printf("memory: about %s (estimate); %.1f GB available\n", mem_.describe().c_str(), avail / 1e9);
  std::printf("data: %s (tokenizer %s, data %s)\n", data_.dir().c_str(), short_hash(identity_.tokenizer).c_str(),
              short_hash(identity_.data).c_str());
  std::printf("lr: matrix %.4g, embedding %.4g, lm_head %.4g (x (dim/768)^-0.5 = %.3f); budget %.1fs; run dir %s\n",
              oc.matrix_lr, oc.embedding_lr, oc.unembedding_lr, std::pow(shape_.dim / 768.0, -0.5), budget_,
              run_dir_.c_str());
  std::fflush(stdout);
  return ok_status();
}

// The run directory is owned by this process while it runs (DirLock), and a directory that already holds a run is
// never overwritten without --force. The default name is made with mkdir, which fails if the name exists, so two
// runs started in the same second get different directories.
Status TrainRun::reserve_run_dir() {
  if (!opt_.resume_dir.empty()) {
    run_dir_ = opt_.resume_dir;
    return lock_.acquire(run_dir_, "train --resume");
  }
  run_dir_ = cfg_.get_string("train.run_dir");
  if (run_dir_.empty()) {
    char stamp[64];
    std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof(stamp), "runs/%Y%m%d-%H%M%S", std::localtime(&now));
    FRONTIER_RETURN_IF_ERROR(make_dirs("runs", "train.run_dir"));
    for (int i = 1;; i++) {
      std::string d = i == 1 ? std::string(stamp) : std::string(stamp) + "-" + std::to_string(i);
      if (mkdir(d.c_str(), 0755) == 0) {
        run_dir_ = d;
        break;
      }
      if (errno != EEXIST || i > 1000)
        return Status::error("cannot create a run directory under runs/: " + std::string(std::strerror(errno)) +
                             " (set train.run_dir)");
    }
  }
  FRONTIER_RETURN_IF_ERROR(make_dirs(run_dir_, "train.run_dir"));
  FRONTIER_RETURN_IF_ERROR(lock_.acquire(run_dir_, "train.run_dir"));
  const bool has_ckpt = file_exists(run_dir_ + "/model.ckpt"), has_summary = file_exists(run_dir_ + "/summary.txt");
  if ((has_ckpt || has_summary) && !opt_.force)
    return Status::error("train.run_dir " + run_dir_ + " already holds a" + (has_summary ? " finished" : "n unfinished") +
                         " run; " + (has_summary ? "" : "continue it with `frontier train --resume " + run_dir_ + "`, ") +
                         "choose another train.run_dir, or pass --force to overwrite it");
  for (const char* f : {"model.ckpt", "summary.txt", "log.jsonl"}) std::filesystem::remove(run_dir_ + "/" + f);
  return write_file_atomic(run_dir_ + "/config.toml", cfg_.to_toml());
}

// A checkpoint is rewritten atomically (a temporary, then a rename), so the disk must hold two of them at once.
Status TrainRun::check_disk_space() {
  struct statvfs fs;
  if (statvfs(run_dir_.c_str(), &fs) != 0) return ok_status();  // cannot tell: the writes will say
  const double free_b = static_cast<double>(fs.f_bavail) * fs.f_frsize;
  const double ckpt = 4.0 * (gpt_->weights().size() + optim_->state().size()) + 1e6;
  const double need = (opt_.resume_dir.empty() ? 2.0 : 1.0) * ckpt + 16e6;
  if (free_b < need) {
    char buf[256];
    std::snprintf(buf, sizeof(buf), "%.1f MB free, but its checkpoints need %.1f MB (%.1f MB each, two during an "
                  "atomic rewrite)", free_b / 1e6, need / 1e6, ckpt / 1e6);
    return Status::error("the disk of " + run_dir_ + " has " + buf + "; free space or choose another train.run_dir");
  }
  return ok_status();
}

// Weights, optimizer state and step, budget used, tokens and the loader's exact position; the data must be the data
// the run started on.
Status TrainRun::resume() {
  std::string toml, meta_text;
  std::vector<float> w, st;
  FRONTIER_RETURN_IF_ERROR(load_checkpoint(ckpt_path_, &toml, &meta_text, &w, &st));
  nlohmann::json meta = nlohmann::json::parse(meta_text, nullptr, false);
  if (meta.is_discarded() || !meta.is_object() || !meta.contains("loader"))
    return Status::error("corrupt checkpoint " + ckpt_path_ + ": its metadata is not a training state");
  if (w.size() != gpt_->weights().size() || st.size() != optim_->state().size())
    return Status::error(ckpt_path_ + " does not fit this run's model (was " + run_dir_ + "/config.toml edited?)");
  FRONTIER_RETURN_IF_ERROR(check_finite(w, ckpt_path_));
  std::string note;
  const RunIdentity ckpt_id =
      RunIdentity::from_json(meta.contains("identity") ? meta["identity"] : nlohmann::json());
  FRONTIER_RETURN_IF_ERROR(ckpt_id.check_data(data_, /*cross_data=*/false, ckpt_path_, &note));
  bool done = false;
  int64_t opt_steps = 0;
  FRONTIER_RETURN_IF_ERROR(meta_get(meta, "finished", ckpt_path_, &done));
  if (done && file_exists(run_dir_ + "/summary.txt"))
    return Status::error(run_dir_ + " already finished (see its summary.txt); start a new run instead");
  FRONTIER_RETURN_IF_ERROR(meta_get(meta, "optimizer_steps", ckpt_path_, &opt_steps));
  FRONTIER_RETURN_IF_ERROR(meta_get(meta, "step", ckpt_path_, &step_));
  FRONTIER_RETURN_IF_ERROR(meta_get(meta, "training_seconds", ckpt_path_, &training_time_));
  FRONTIER_RETURN_IF_ERROR(meta_get(meta, "tokens", ckpt_path_, &tokens_));
  if (meta.contains("smooth_loss")) FRONTIER_RETURN_IF_ERROR(meta_get(meta, "smooth_loss", ckpt_path_, &smooth_));
  LoaderState ls;
  FRONTIER_RETURN_IF_ERROR(LoaderState::from_json(meta["loader"], &ls));
  FRONTIER_RETURN_IF_ERROR(loader_.restore(ls));
  gpt_->weights() = std::move(w);
  optim_->state() = std::move(st);
  optim_->set_steps(opt_steps);
  eval_only_ = done;  // training had finished; the evaluation (or the summary) had not
  std::string old_log, line;
  read_file(log_path_, &old_log);  // keep the lines up to the checkpoint's step; a killed run may have more
  std::istringstream in(old_log);
  while (std::getline(in, line)) {
    nlohmann::json rec = nlohmann::json::parse(line, nullptr, false);
    if (rec.is_object() && rec.contains("step") && rec["step"].is_number_integer() &&
        rec["step"].get<int64_t>() <= step_)
      kept_log_ += line + "\n";
  }
  if (eval_only_)
    std::printf("resumed %s: training had finished at step %lld; running the final evaluation\n", run_dir_.c_str(),
                static_cast<long long>(step_));
  else
    std::printf("resumed %s at step %lld, %.1fs of the %.1fs budget used\n", run_dir_.c_str(),
                static_cast<long long>(step_), training_time_, budget_);
  return ok_status();
}

Status TrainRun::checkpoint(bool training_done) {
  nlohmann::json meta = {{"step", step_}, {"training_seconds", training_time_}, {"tokens", tokens_},
                         {"optimizer_steps", optim_->steps()}, {"smooth_loss", smooth_}, {"finished", training_done},
                         {"loader", loader_.state().to_json()}, {"identity", identity_.to_json()}};
  return save_checkpoint(ckpt_path_, cfg_.to_toml(), meta.dump(), gpt_->weights(), optim_->state());
}

void TrainRun::note_not_saved(const std::string& what, const Status& why) {
  if (not_saved_.find(what) != std::string::npos) return;
  std::fprintf(stderr, "\nwarning: %s not saved: %s\n", what.c_str(), why.message().c_str());
  not_saved_ += (not_saved_.empty() ? "" : "; ") + what + " (" + why.message() + ")";
}

Status TrainRun::run_steps() {
  if (eval_only_) return ok_status();
  const int64_t excluded = cfg_.get_int("train.warmup_steps_excluded");
  const int64_t max_steps = cfg_.get_int("train.max_steps");
  const int64_t mom_warm = cfg_.get_int("optim.momentum_warmup_steps");
  const double warmup = cfg_.get_float("train.warmup_ratio"), warmdown = cfg_.get_float("train.warmdown_ratio");
  const double final_frac = cfg_.get_float("train.final_lr_frac");
  const double ckpt_secs = cfg_.get_float("train.checkpoint_every_seconds");
  const int64_t ckpt_steps = cfg_.get_int("train.checkpoint_every_steps");
  std::vector<int32_t> x(int64_t(B_) * T_), y(int64_t(B_) * T_);
  FRONTIER_RETURN_IF_ERROR(write_file_atomic(log_path_, kept_log_));
  FILE* log = std::fopen(log_path_.c_str(), "ab");  // append-only; resume trims it back to the checkpoint
  if (!log) return Status::error("cannot append to " + log_path_);
  struct CloseLog {
    FILE* f;
    ~CloseLog() { std::fclose(f); }
  } close_log{log};
  const double explode = 3.0 * std::log(static_cast<double>(shape_.vocab_size)) + 5.0;
  auto last_ckpt = Clock::now();
  const char* fault = std::getenv("FRONTIER_FAULT_EXIT_AFTER_STEP");  // tests: die like a killed run
  const int64_t fault_step = fault ? std::atoll(fault) : -1;
  auto last_print = Clock::now() - std::chrono::seconds(10);
  StopSignals signals("\nfrontier: stopping after this step and saving a checkpoint (again to quit at once)\n");
  while (true) {
    auto t0 = Clock::now();
    double progress =
        max_steps > 0 ? static_cast<double>(step_) / max_steps : std::min(training_time_ / budget_, 1.0);
    gpt_->zero_grad();
    double loss_sum = 0;
    for (int64_t a = 0; a < accum_; a++) {
      loader_.next(x.data(), y.data());
      Tape tape;
      tape.set_precision(prec_);
      Var loss = gpt_->forward(tape, x.data(), y.data(), B_, T_);
      tape.backward(loss, 1.0f / static_cast<float>(accum_));
      loss_sum += tape.value(loss)[0];
    }
    loss_val_ = loss_sum / accum_;
    if (!std::isfinite(loss_val_) || loss_val_ > explode)
      return Status::error("training diverged at step " + std::to_string(step_) + ": loss " +
                           std::to_string(loss_val_) + " (lower the learning rates, e.g. --set optim.matrix_lr=0.01)");
    double lr_mult = lr_multiplier(progress, warmup, warmdown, final_frac);
    double frac = std::min(1.0, static_cast<double>(step_) / std::max<int64_t>(1, mom_warm));
    double momentum = (1 - frac) * 0.85 + frac * 0.95;
    optim_->step(static_cast<float>(lr_mult), static_cast<float>(momentum), static_cast<float>(progress));
    double dt = since(t0);
    if (step_ >= excluded) training_time_ += dt;
    all_steps_time_ += dt;
    steps_here_++;
    tokens_ += total_;
    step_++;
    smooth_ = step_ == 1 ? loss_val_ : 0.9 * smooth_ + 0.1 * loss_val_;
    double tps = total_ / dt, mfu = 100.0 * tps * flops_per_token_ / (peak_ * 1e9);
    nlohmann::json rec = {{"step", step_}, {"loss", loss_val_}, {"lr_mult", lr_mult}, {"momentum", momentum},
                          {"tokens_per_sec", tps}, {"mfu", mfu}, {"step_seconds", dt},
                          {"training_seconds", training_time_}, {"progress", progress}};
    std::string line = rec.dump() + "\n";
    if (std::fputs(line.c_str(), log) < 0 || std::fflush(log) != 0)
      note_not_saved("log.jsonl", Status::error(std::string(std::strerror(errno)) + "; the log is incomplete"));
    bool tty = isatty(2);
    if (tty || since(last_print) > 5.0) {
      last_print = Clock::now();
      // Progress and time left: by steps when train.max_steps ends the run first, else by the budget.
      const double step_frac = max_steps > 0 ? static_cast<double>(step_) / max_steps : 0.0;
      const double time_frac = std::min(training_time_ / budget_, 1.0);
      const bool by_steps = max_steps > 0 && step_frac >= time_frac;
      const double left = by_steps ? (max_steps - step_) * (training_time_ / std::max<int64_t>(1, step_))
                                   : std::max(0.0, budget_ - training_time_);
      std::fprintf(stderr, "%sstep %5lld | %5.1f%% | loss %.4f | lr x%.3f | %7.0f tok/s | mfu %5.2f%% | %5.1fs left %s",
                   tty ? "\r" : "", static_cast<long long>(step_), 100.0 * (by_steps ? step_frac : time_frac),
                   smooth_, lr_mult, tps, mfu, left, tty ? "" : "\n");
    }
    if ((step_ > excluded && training_time_ >= budget_) || (max_steps > 0 && step_ >= max_steps)) break;
    if (StopSignals::received()) {
      stop_signal_ = StopSignals::received();
      break;
    }
    if ((ckpt_steps > 0 && step_ % ckpt_steps == 0) || (ckpt_secs > 0 && since(last_ckpt) >= ckpt_secs)) {
      // Not counted in the budget: the step's time was taken above. A failed write (a full disk) is reported and
      // training goes on: the final checkpoint is tried again, and the summary says what was not saved.
      Status cs = checkpoint(false);
      if (!cs.ok()) note_not_saved("periodic checkpoint", cs);
      last_ckpt = Clock::now();
      if (step_ == fault_step) std::_Exit(75);
    }
  }
  if (isatty(2)) std::fprintf(stderr, "\n");
  return ok_status();
}

void TrainRun::save() {
  if (eval_only_) return;  // the checkpoint on disk already holds the finished training
  Status s = checkpoint(/*training_done=*/!interrupted());
  if (!s.ok()) note_not_saved("model.ckpt", s);
  else if (not_saved_.find("periodic checkpoint") != std::string::npos)
    not_saved_.clear();  // the final one got through: nothing is lost
}

Status TrainRun::evaluate() {
  if (std::getenv("FRONTIER_FAULT_EXIT_IN_EVAL")) std::_Exit(75);  // tests: die as a kill during evaluation would
  auto t_eval = Clock::now();
  // The weights are on disk (or the failure is recorded): a kill now loses only the evaluation, which
  // `frontier train --resume` re-runs.
  Status s = evaluate_bpb(*gpt_, data_, cfg_.get_int("eval.tokens"), static_cast<int>(cfg_.get_int("eval.batch")), T_,
                          &bpb_);
  eval_s_ = since(t_eval);
  if (!s.ok())
    return Status::error("final evaluation failed: " + s.message() +
                         (not_saved_.empty() ? " (the trained weights are saved in " + ckpt_path_ + ")" : ""));
  return ok_status();
}

void TrainRun::fill_summary(TrainSummary* out) {
  TrainSummary& s = *out;
  s.val_bpb = bpb_;
  s.training_seconds = training_time_;
  s.eval_seconds = eval_s_;
  s.total_seconds = since(t_start_);
  s.peak_mem_mb = peak_rss_mb();
  s.num_steps = step_;
  s.total_tokens_M = tokens_ / 1e6;
  s.num_params_M = gpt_->n_params() / 1e6;
  s.depth = shape_.depth;
  // Tokens/s over the counted steps; a run shorter than the excluded warm-up (e.g. train.max_steps=2) has none, so
  // it reports the speed of all its steps (timed in this process) instead of dividing by zero.
  const int64_t counted_steps = step_ - cfg_.get_int("train.warmup_steps_excluded");
  s.tokens_per_sec = counted_steps > 0 && training_time_ > 0
                         ? counted_steps * static_cast<double>(total_) / training_time_
                         : (all_steps_time_ > 0 ? steps_here_ * static_cast<double>(total_) / all_steps_time_ : 0);
  s.mfu_percent = 100.0 * s.tokens_per_sec * flops_per_token_ / (peak_ * 1e9);
  s.precision = precision_name(prec_);
  char pk[128];
  std::snprintf(pk, sizeof(pk), "%.1f GFLOP/s %s", peak_, peak_unit_.c_str());
  s.mfu_peak = pk;
  s.final_loss = loss_val_;
  s.run_dir = run_dir_;
  s.tokenizer_id = short_hash(identity_.tokenizer);
  s.data_id = short_hash(identity_.data);
  s.not_saved = not_saved_;
  s.has_summary = true;
}

Status TrainRun::finish(TrainSummary* out) {
  if (interrupted()) {
    fill_summary(out);
    out->signal = stop_signal_;
    const char* sig = stop_signal_ == SIGINT ? "SIGINT" : stop_signal_ == SIGTERM ? "SIGTERM" : "a signal";
    out->interrupted = std::string("interrupted (") + sig + " at step " + std::to_string(step_) + ")";
    if (!not_saved_.empty())
      return Status::error(std::string("interrupted by ") + sig + " at step " + std::to_string(step_) +
                           "; the checkpoint could NOT be saved: " + not_saved_);
    return Status::error(std::string("interrupted by ") + sig + " at step " + std::to_string(step_) + "; saved " +
                         ckpt_path_ + ": continue with `frontier train --resume " + run_dir_ + "`");
  }
  fill_summary(out);
  Status s = write_file_atomic(run_dir_ + "/summary.txt", out->format());
  if (!s.ok()) {
    note_not_saved("summary.txt", s);
    out->not_saved = not_saved_;
  }
  if (!not_saved_.empty())
    return Status::error("not saved: " + not_saved_ + "; the results above were computed (free disk space and "
                         "re-run to keep them)");
  return ok_status();
}

}  // namespace

Status train(const Config& cfg, TrainSummary* out, const TrainOptions& opts) {
  TrainRun run(cfg, opts);
  FRONTIER_RETURN_IF_ERROR(run.setup());
  FRONTIER_RETURN_IF_ERROR(run.run_steps());
  run.save();  // before the evaluation: a crash or kill there loses no training
  if (run.interrupted()) return run.finish(out);
  FRONTIER_RETURN_IF_ERROR(run.evaluate());
  return run.finish(out);
}

Status train(const Config& cfg, TrainSummary* out, const std::string& resume_dir) {
  TrainOptions o;
  o.resume_dir = resume_dir;
  return train(cfg, out, o);
}

}  // namespace frontier
