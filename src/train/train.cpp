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
#include "config/frozen_keys.h"
#include "kernels/isa.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "dist/comm.h"
#include "dist/grad_exchange.h"
#include "dist/shard_plan.h"
#include "eval/bpb.h"
#include "model/gpt.h"
#include "model/model_config.h"
#include "optim/optim.h"
#include "train/checkpoint.h"
#include "train/identity.h"
#include "train/memory.h"
#include "train/recipe.h"
#include "train/schedule.h"
#include "train/schema.h"
#include "train/settings.h"
#include "train/step_parts.h"
#include "util/file.h"
#include "util/file_lock.h"
#include "util/sha256.h"
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

// train.mtp_weights: k comma-separated weights >= 0 for model.mtp_heads = k ("" = 0.5, 0.25, ...).
Status parse_mtp_weights(const std::string& text, int k, std::vector<float>* out) {
  out->clear();
  if (text.empty()) {
    for (int j = 1; j <= k; j++) out->push_back(static_cast<float>(std::pow(0.5, j)));
    return ok_status();
  }
  for (size_t i = 0; i <= text.size();) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    const std::string tok = text.substr(i, j - i);
    char* end = nullptr;
    const double w = std::strtod(tok.c_str(), &end);
    if (tok.empty() || *end != '\0' || !(w >= 0) || w > 100)
      return Status::error("train.mtp_weights is '" + text.substr(0, 40) + "'; use comma-separated weights in [0, 100], "
                           "one per extra target (model.mtp_heads)");
    out->push_back(static_cast<float>(w));
    i = j + 1;
  }
  if (static_cast<int>(out->size()) != k)
    return Status::error("train.mtp_weights has " + std::to_string(out->size()) + " weights, but model.mtp_heads is " +
                         std::to_string(k) + " (one weight per extra target)");
  return ok_status();
}


}  // namespace

std::string TrainSummary::format() const {
  std::string out = "---\n";
  auto line = [&out](const char* key, const std::string& v) {
    std::string k = std::string(key) + ":";
    k.resize(std::max<size_t>(18, k.size() + 1), ' ');  // aligned, and a space after the longest keys too
    out += k + v + "\n";
  };
  auto num = [](const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), f, v);
    return std::string(buf);
  };
  if (!interrupted.empty()) line("status", interrupted);
  else line("val_bpb", num("%.6f", val_bpb));
  if (interrupted.empty() && val_bpb_se > 0) line("val_bpb_se", num("%.6f", val_bpb_se));
  if (!weights.empty()) line("weights", weights);
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
  if (optimizer_pct > 0) line("optimizer_pct", num("%.1f", optimizer_pct) + " (Muon and AdamW, of the step time)");
  if (!precision.empty()) line("precision", precision);
  if (!mfu_peak.empty()) line("mfu_peak", mfu_peak);
  if (!tokenizer_id.empty()) line("tokenizer_id", tokenizer_id);
  if (!data_id.empty()) line("data_id", data_id);
  if (budget_mode == "probe") {
    line("budget_mode", "probe");
    line("probe_step_seconds", num("%.5f", probe_step_seconds));
  }
  if (ranks > 0) line("ranks", std::to_string(ranks));
  if (threads > 0) line("threads_per_rank", std::to_string(threads));
  if (ranks > 1) line("comm_ms_per_step", num("%.1f", comm_ms_per_step));
  if (data_epochs >= 1) line("data_epochs", num("%.2f", data_epochs) + " (documents repeated)");
  if (!moe_expert_share.empty()) {
    line("active_params_M", num("%.2f", active_params_M));
    line("moe_expert_share", moe_expert_share + " (% of routed tokens)");
    line("moe_dropped", std::to_string(moe_dropped));
    line("moe_aux_loss", num("%.4f", moe_aux_loss));
  }
  if (!not_saved.empty()) line("not_saved", not_saved);
  return out;
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

// Processes on this host started by the same mpirun (OpenMPI says), for the thread and memory defaults.
int local_ranks() {
  const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  return v && std::atoi(v) > 0 ? std::atoi(v) : 1;
}

// CPUs this process may run on (mpirun binds each rank to a core by default).
int affinity_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

// run_steps' settings and state across the steps (one per run), with rank 0's log.jsonl, closed at the end.
struct StepLoop {
  StepLoop() = default;
  StepLoop(const StepLoop&) = delete;
  StepLoop& operator=(const StepLoop&) = delete;
  ~StepLoop() {
    if (log) std::fclose(log);
  }
  int64_t excluded = 0;     // train.warmup_steps_excluded: the first steps the budget does not count
  int64_t max_steps = 0;    // train.max_steps (0: none)
  bool probe_mode = false;  // budget_mode = probe: the step count alone ends the run
  double ckpt_secs = 0;     // train.checkpoint_every_seconds
  int64_t ckpt_steps = 0;   // train.checkpoint_every_steps
  int R = 1;                // ranks
  std::vector<int32_t> x, y;  // (B, T) a micro-batch's tokens and targets
  FILE* log = nullptr;        // rank 0's; append-only; resume trims it back to the checkpoint
  double explode = 0;         // a loss above this (or not finite) is divergence
  Clock::time_point last_ckpt, last_print;
  int64_t fault_step = -1, hang_step = -1, kill_step = -1;  // tests (start_steps)
  int64_t bucket_bytes = 0;  // train.comm_bucket_mb
  std::string alternate;     // FRONTIER_BENCH_ALTERNATE under mpirun: "overlap" | "bf16" | ""
};

// What one step did, for its log line and progress print.
struct StepDone {
  double progress = 0;  // of the run, in [0, 1]: by steps with train.max_steps, else by the budget
  int B_now = 0, T_now = 0;  // the micro-batch's rows and row length (train.seq_warmup_ratio)
  Gpt::Schedule sched;       // the window and head at this step
  double lr_mult = 0, momentum = 0;
  double dt = 0;  // the step's seconds
};

// One training run, in named phases: set up (validate, reserve the run dir, build, resume), the steps, save,
// evaluate, finish. Each failure point is handled in one phase; nothing computed is lost on the way out.
//
// Under mpirun (docs/distributed.md) every rank runs the same phases on its own data streams; rank 0 alone owns
// the run directory (lock, config, log, checkpoints, summary: the directory need not be shared between hosts),
// reads a checkpoint on resume and broadcasts it, decides when the budget is spent, and prints. Errors found in
// set-up are agreed (Comm::agree) so that every rank stops together and rank 0 prints one line; a rank that stops
// answering later is named by the per-step liveness check and the job is aborted (Comm::abort_job).
class TrainRun {
 public:
  TrainRun(const Config& cfg, const TrainOptions& o) : cfg_(cfg), opt_(o) {}
  Status setup();
  Status run_steps();
  bool root() const { return comm_.root(); }
  Status save();  // the final (or interrupted) checkpoint; a failed write is recorded, not fatal
  Status evaluate();
  Status finish(TrainSummary* s);
  bool interrupted() const { return stop_signal_ != 0; }
  bool eval_only() const { return eval_only_; }
  int stop_signal() const { return stop_signal_; }

 private:
  Status setup_local();
  Status check_ranks_agree();
  Status probe();
  Status reserve_run_dir();
  Status check_disk_space();
  Status resume();
  Status checkpoint(bool training_done, Status* written);
  Status exchange_gradients(double* loss_sum);
  // run_steps' parts, in the order a step runs them.
  Status start_steps(StepLoop* loop);
  Status train_step(StepLoop& loop, StepDone* done);
  void schedule_step(StepDone* done);
  void forward_backward(StepLoop& loop, const StepDone& done, double* loss_sum);
  void add_stream_grads(int64_t lo, int64_t hi);
  Status update_weights(StepDone* done);
  Status decide_after_step(const StepLoop& loop, int64_t decide[3]);
  void log_step(StepLoop& loop, const StepDone& done);
  void note_not_saved(const std::string& what, const Status& why);
  void fill_summary(TrainSummary* s);
  std::vector<float> mtp_weights_at(double progress) const;
  void copy_head_from_wte();  // model.untie_at: lm_head <- wte, in the weights and their average

  Config cfg_;  // a copy: model.vocab_size = 0 becomes the data's
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
  Comm& comm_ = Comm::world();
  int streams_ = 1;                     // data streams in all; this rank reads streams rank, rank + R, ...
  std::vector<BestFitLoader> loaders_;  // this rank's streams, in order
  std::vector<float> stream_grads_;     // more than one stream on this rank: their gradients' running sum
  bool sharded_ = false;                // ranks > 1 with train.shard_optimizer
  ShardPlan plan_;
  bool overlap_ = false;                // ranks > 1 with train.overlap_comm
  bool repeat_warned_ = false;          // the "documents repeat" warning was printed
  CommDtype comm_dtype_ = CommDtype::kFp32;
  GradExchange exchange_;
  double flops_per_token_ = 0, peak_ = 0;
  std::string peak_unit_;
  // Progress, restored on resume.
  double training_time_ = 0, smooth_ = 0, loss_val_ = 0, all_steps_time_ = 0, eval_s_ = 0, bpb_ = 0, bpb_se_ = 0;
  double optim_time_ = 0;  // seconds in the optimizer's update (this process's steps): its share of all_steps_time_
  int64_t step_ = 0, tokens_ = 0, steps_here_ = 0;
  std::string kept_log_;
  bool eval_only_ = false;
  bool probe_measured_ = false;
  double probe_step_s_ = 0;  // budget_mode = probe
  int stop_signal_ = 0;
  std::string not_saved_;
  std::vector<float> mtp_base_;  // model.mtp_heads > 0: train.mtp_weights (before the anneal)
  TrainSettings set_;            // the train.* and eval.* keys, typed
  std::string auto_why_;         // "auto" when train.precision = auto was resolved here (config.toml records the result)
  Recipe recipe_;                // the optim.* and schedule keys, typed
  std::vector<float> ema_;       // train.ema_decay > 0: the weights' moving average (the whole arena)
  int64_t accum_now_ = 0;        // this step's micro-batches (train.batch_warmup_ratio; else accum_)
  bool untied_ = false;          // model.untie_at: the head is lm_head now (restored on resume)
};

// model.untie_at. Before the untie lm_head is idle (the head reads wte; no gradient reaches lm_head, so its AdamW
// moments stay zero and its update is zero); the untie copies wte into it, and so does every checkpoint before it,
// so that a checkpoint's lm_head is its head for eval, the sampler and export. The copy at a checkpoint changes
// nothing training reads: the untie copies again. From the untie lm_head trains in the lm_head group from zero
// moments (Adam's bias correction continues from the run's step count), and wte keeps its group and moments.
void TrainRun::copy_head_from_wte() {
  const ParamInfo &wte = gpt_->param("wte"), &head = gpt_->param("lm_head");
  for (std::vector<float>* a : {&gpt_->weights(), &ema_})
    if (!a->empty()) std::copy_n(a->data() + wte.offset, wte.numel(), a->data() + head.offset);
}

// Extra target j of k (1-based) keeps its weight until (k - j) / (k + 1) of the run, then fades linearly to 0 at
// (k - j + 1) / (k + 1): for k = 2, [0.5, 0.25 -> 0] over the first third, [0.5 -> 0] over the second, none after.
std::vector<float> TrainRun::mtp_weights_at(double progress) const {
  const int k = static_cast<int>(mtp_base_.size());
  std::vector<float> w(k);
  for (int j = 1; j <= k; j++) {
    const double start = double(k - j) / (k + 1), end = double(k - j + 1) / (k + 1);
    const double f = progress <= start ? 1.0 : progress >= end ? 0.0 : (end - progress) / (end - start);
    w[j - 1] = static_cast<float>(mtp_base_[j - 1] * f);
  }
  return w;
}

Status TrainRun::setup() {
  if (!root()) std::freopen("/dev/null", "w", stdout);  // rank 0 prints for the job
  // Each phase ends with the ranks agreeing: all go on, or all stop with rank 0 printing the first error
  // (setup_local sets train.comm_timeout_seconds before the first).
  FRONTIER_RETURN_IF_ERROR(comm_.agree(setup_local()));
  FRONTIER_RETURN_IF_ERROR(check_ranks_agree());
  if (opt_.resume_dir.empty()) FRONTIER_RETURN_IF_ERROR(probe());  // a resumed run's config holds its probe
  Status s;
  if (root()) {
    s = reserve_run_dir();
    if (s.ok()) s = check_disk_space();
  }
  FRONTIER_RETURN_IF_ERROR(comm_.agree(s));
  FRONTIER_RETURN_IF_ERROR(comm_.bcast(&run_dir_, "the run directory's name"));
  ckpt_path_ = run_dir_ + "/model.ckpt";
  log_path_ = run_dir_ + "/log.jsonl";
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
  // Under mpirun the peak is the job's: R ranks' threads.
  const Ceilings ceil = machine_ceilings(threads_, prec_, set_.peak_gflops, 1.0);
  peak_ = ceil.peak_gflops * comm_.size();
  peak_unit_ = ceil.unit;
  const std::string peak_src = ceil.source == "given"           ? "train.peak_gflops"
                               : ceil.source == "measured now" ? "measured now; `frontier calibrate` saves it"
                                                                : ceil.source;
  const OptimConfig& oc = optim_->config();
  std::printf("model: %s\n", shape_.describe().c_str());
  if (!shape_.describe_arch().empty()) std::printf("architecture: %s\n", shape_.describe_arch().c_str());
  if (shape_.arch.moe_experts)
    std::printf("experts: %.3fM active of %.3fM parameters (FLOPs and MFU count the active ones)\n",
                gpt_->n_active_params() / 1e6, gpt_->n_params() / 1e6);
  std::printf("params: %.3fM total = matrices %.3fM + embeddings %.3fM + lm_head %.3fM + scalars %lld\n",
              gpt_->n_params() / 1e6, n_matrix / 1e6, n_emb / 1e6, n_head / 1e6, static_cast<long long>(n_scalar));
  std::printf("%s\n", kernels_banner().c_str());
  std::string why;
  if (!auto_why_.empty() && root()) fastest_precision(&why);  // rank 0 decided auto and prints; others would time again
  std::printf("precision: %s (train.precision = %s%s)\n", precision_name(prec_),
              auto_why_.empty() ? set_.precision.c_str() : "auto", why.empty() ? "" : (": " + why).c_str());
  if (comm_.distributed())
    std::printf("ranks: %d x %d threads (mpirun); %d data streams; optimizer %s; gradients %s, %s; comm timeout "
                "%.0fs\n", comm_.size(), threads_, streams_,
                sharded_ ? ("sharded: " + plan_.describe()).c_str() : "replicated (all-reduce)",
                comm_dtype_name(comm_dtype_),
                overlap_ ? "in buckets during the backward" : "after the backward", comm_.timeout());
  const std::string ranks = comm_.distributed() ? " x " + std::to_string(comm_.size()) + " ranks" : "";
  std::printf("batch: %d x %d tokens x %lld accumulation%s = %lld tokens/step; flops/token %.3g; %s peak %.1f "
              "GFLOP/s (%s%d threads, %s)\n",
              B_, T_, static_cast<long long>(accum_), ranks.c_str(), static_cast<long long>(total_),
              flops_per_token_, ceil.unit.c_str(), peak_, comm_.distributed() ? (ranks.substr(3) + " x ").c_str() : "",
              threads_, peak_src.c_str());
  std::printf("memory: about %s per rank (estimate); %.1f GB available\n", mem_.describe().c_str(),
              available_memory_bytes() / 1e9);
  std::printf("data: %s (tokenizer %s, data %s)\n", data_.dir().c_str(), short_hash(identity_.tokenizer).c_str(),
              short_hash(identity_.data).c_str());
  std::printf("lr: matrix %.4g, embedding %.4g, lm_head %.4g (x (dim/768)^-0.5 = %.3f); budget %.1fs; run dir %s\n",
              oc.matrix_lr, oc.embedding_lr, oc.unembedding_lr, std::pow(shape_.dim / 768.0, -0.5), budget_,
              run_dir_.c_str());
  const std::string recipe = describe_recipe(recipe_);
  if (!recipe.empty()) std::printf("recipe: %s\n", recipe.c_str());
  std::printf("%s", describe_warmups(recipe_, shape_, B_, set_.max_steps).c_str());
  std::fflush(stdout);
  return ok_status();
}

// Everything a rank can check and build on its own: config, data, memory, model, optimizer, loaders.
Status TrainRun::setup_local() {
  FRONTIER_RETURN_IF_ERROR(train_schema().validate(cfg_));
  FRONTIER_RETURN_IF_ERROR(read_train_settings(cfg_, &set_));
  comm_.set_timeout(set_.comm_timeout_seconds);
  // The vocabulary belongs to the data: model.vocab_size = 0 (the default) takes the prepared tokenizer's, and the
  // resolved value is what config.toml and the checkpoint record.
  FRONTIER_RETURN_IF_ERROR(data_.open(set_.data));
  const int64_t data_vocab = static_cast<int64_t>(data_.tokenizer().vocab_size());
  if (read_model_shape_keys(cfg_).vocab_size == 0) cfg_.set("model.vocab_size", data_vocab);
  FRONTIER_RETURN_IF_ERROR(derive_model_shape(cfg_, &shape_));
  FRONTIER_RETURN_IF_ERROR(parse_mtp_weights(set_.mtp_weights, shape_.arch.mtp_heads, &mtp_base_));
  const int R = comm_.size();
  budget_ = set_.budget_seconds;
  B_ = static_cast<int>(set_.micro_batch);
  T_ = shape_.seq_len;
  const int64_t per_micro = int64_t(B_) * T_ * R;  // tokens of one micro-step over all ranks
  total_ = set_.total_batch_tokens;
  if (total_ == 0) total_ = per_micro;
  if (total_ % per_micro != 0)
    return Status::error("train.total_batch_tokens " + std::to_string(total_) + " is not divisible by micro_batch * "
                         "seq_len" + (R > 1 ? " * ranks" : "") + " = " + std::to_string(per_micro) +
                         " (choose a multiple)");
  accum_ = total_ / per_micro;
  streams_ = static_cast<int>(set_.data_streams);
  if (streams_ == 0) streams_ = R;
  if (streams_ % R != 0)
    return Status::error("train.data_streams = " + std::to_string(streams_) + " is not a multiple of the " +
                         std::to_string(R) + " ranks (each rank reads the same number of streams)");
  threads_ = static_cast<int>(set_.threads);
  const int cpus = affinity_cpus();
  if (threads_ == 0 && comm_.distributed()) {
    // All cores shared by this host's ranks, within what mpirun bound this rank to.
    threads_ = std::max(1, omp_get_num_procs() / local_ranks());
    if (cpus > 0) threads_ = std::min(threads_, cpus);
  } else if (threads_ > 0 && comm_.distributed() && cpus > 0 && threads_ > cpus && root()) {
    std::fprintf(stderr, "warning: train.threads = %d, but mpirun bound each rank to %d CPU(s): pass `--bind-to "
                 "none` or `--map-by slot:PE=%d` to mpirun\n", threads_, cpus, threads_);
  }
  if (threads_ > 0) omp_set_num_threads(threads_);
  threads_ = omp_get_max_threads();

  if (data_vocab != shape_.vocab_size)
    return Status::error("model.vocab_size " + std::to_string(shape_.vocab_size) + " does not match the data's "
                         "tokenizer (" + std::to_string(data_vocab) + "); set model.vocab_size=" +
                         std::to_string(data_vocab) + " or leave it unset (0: the data's)");
  identity_ = RunIdentity::of(data_);
  FRONTIER_RETURN_IF_ERROR(data_.open_split("train", &train_shards_));
  // train.precision = auto times both units; under mpirun rank 0 alone decides (ranks timing on a loaded host
  // could choose differently, and every rank must run the same config).
  std::string precision = set_.precision;
  if (precision == "auto" && comm_.distributed()) {
    Precision p = Precision::kFp32;
    if (root() && resolve_precision("auto", &p).ok()) precision = precision_name(p);
    FRONTIER_RETURN_IF_ERROR(comm_.bcast(&precision, "train.precision = auto"));
  }
  FRONTIER_RETURN_IF_ERROR(resolve_precision(precision, &prec_));
  if (set_.precision == "auto") auto_why_ = "auto", cfg_.set("train.precision", std::string(precision_name(prec_)));
  FRONTIER_RETURN_IF_ERROR(parse_comm_dtype(set_.comm_dtype, &comm_dtype_));
  FRONTIER_RETURN_IF_ERROR(read_recipe(cfg_, prec_, &recipe_));
  if (recipe_.batch_warmup > 0 && accum_ < 2 * (streams_ / R))
    return Status::error("train.batch_warmup_ratio needs gradient accumulation to grow the batch, but a step has " +
                         std::to_string(accum_) + " micro-batch(es) per process; set train.total_batch_tokens to at "
                         "least " + std::to_string(2 * streams_ * int64_t(B_) * T_) +
                         " (2 micro-batches of micro_batch x seq_len per data stream)");
  FRONTIER_RETURN_IF_ERROR(fit_recipe_to_shape(shape_, &recipe_));

  // Refuse what cannot fit before allocating anything large (every rank on this host needs its share).
  mem_ = estimate_train_memory(shape_, B_, set_.eval_batch);
  const double avail = available_memory_bytes();
  const int here = comm_.distributed() ? local_ranks() : 1;
  if (avail > 0 && mem_.total() * here > avail) {
    const bool acts = mem_.activations_bytes > mem_.params_bytes;
    // The activations are the larger batch's: the evaluation's when eval.batch exceeds the micro-batch.
    const bool eval_acts = acts && set_.eval_batch > B_;
    char buf[512];
    std::snprintf(buf, sizeof(buf), "this config needs about %s%s, but %.2f GB of memory is available; lower %s",
                  mem_.describe().c_str(), here > 1 ? (" per rank x " + std::to_string(here) + " ranks on this "
                  "host").c_str() : "", avail / 1e9,
                  eval_acts ? "eval.batch (the validation's sequences per forward; activations)"
                  : acts    ? "train.micro_batch (activations; keep the batch with train.total_batch_tokens) or "
                              "model.seq_len"
                            : "model.depth or model.dim (parameters)");
    return Status::error(buf);
  }

  gpt_ = std::make_unique<Gpt>(shape_);
  gpt_->init_nanochat(static_cast<uint64_t>(set_.seed));
  const OptimConfig& oc = recipe_.optim;
  optim_ = std::make_unique<Optimizer>(*gpt_, oc);
  if (recipe_.ema_decay > 0) ema_ = gpt_->weights();
  sharded_ = comm_.distributed() && set_.shard_optimizer;
  if (sharded_) {
    plan_ = plan_optimizer_shards(gpt_->params(), R, oc.ns_steps);
    optim_->set_owned_range(plan_.lo(comm_.rank()), plan_.hi(comm_.rank()));
  }
  overlap_ = comm_.distributed() && set_.overlap_comm;
  exchange_.init(&comm_, gpt_->grads().data(), static_cast<int64_t>(gpt_->grads().size()),
                 sharded_ ? plan_.begin : std::vector<int64_t>(), comm_dtype_);

  for (int st = comm_.rank(); st < streams_; st += R) {
    LoaderConfig lc;
    lc.B = B_;
    lc.T = T_;
    lc.seed = static_cast<uint64_t>(set_.seed);
    lc.rank = st;
    lc.world = streams_;
    loaders_.emplace_back();
    Status s = loaders_.back().init(train_shards_, lc);
    if (!s.ok() && streams_ > 1)
      return Status::error("data stream " + std::to_string(st) + " of " + std::to_string(streams_) + ": " +
                           s.message() + "; the train split of " + data_.dir() + " is too small for " +
                           std::to_string(streams_) + " streams (fewer ranks, or train.data_streams, or more data)");
    FRONTIER_RETURN_IF_ERROR(s);
  }
  return ok_status();
}

// Ranks must run the same binary on the same config and data: a hash of each, compared on rank 0, which names the
// first rank that differs.
Status TrainRun::check_ranks_agree() {
  if (!comm_.distributed()) return ok_status();
  std::string exe_hash;
  Status s = sha256_file("/proc/self/exe", &exe_hash);
  if (!s.ok()) exe_hash = "unknown";
  const std::string mine[3] = {sha256_hex(cfg_.to_toml()), exe_hash, identity_.tokenizer + identity_.data};
  std::vector<std::string> all;
  FRONTIER_RETURN_IF_ERROR(comm_.gather_strings(mine[0] + " " + mine[1] + " " + mine[2], &all, "the config check"));
  Status verdict;
  if (root()) {
    const char* what[3] = {"config (its --config/--set/--budget/--data)", "frontier binary", "prepared data"};
    for (int r = 1; r < comm_.size() && verdict.ok(); r++) {
      std::istringstream in(all[r]);
      std::string theirs[3];
      in >> theirs[0] >> theirs[1] >> theirs[2];
      for (int k = 0; k < 3; k++)
        if (theirs[k] != mine[k]) {
          verdict = Status::error("rank " + std::to_string(r) + " runs a different " + what[k] + " than rank 0 (" +
                                  theirs[k].substr(0, 12) + " vs " + mine[k].substr(0, 12) + "): start every rank " +
                                  "with the same command line, binary and data");
          break;
        }
    }
  }
  return comm_.share(verdict);
}

// budget_mode = probe: the step's time, measured on this model before training (2 warm-up and 5 timed steps on
// random tokens, the median; every rank measures at once, as they will train, and rank 0's figure counts), turns
// the budget into train.max_steps. Weights and optimizer state are then reset to the seed's initialisation, and the
// resolved figures go into the config that config.toml and the checkpoint record (a resume trains the same steps).
Status TrainRun::probe() {
  if (set_.budget_mode == BudgetMode::kWall) return ok_status();
  double t = set_.probe_step_seconds;
  probe_measured_ = t == 0;
  // A supplied step time (--set, a config, research's or the advisor's shared probe) is checked against one timed
  // step (after one warm-up) and refused when far below it (config/frozen_keys.h: 1e-7 s would plan tens of
  // millions of steps). A step that looks too slow is timed again, up to 5 times, and the fastest counts: a burst of
  // load inflates one step of a tiny model 180x (a 0.002-s step measured 0.36 s under a parallel test suite), a
  // wrong figure stays wrong however often it is timed.
  {
    const double supplied = t;
    StepTimes st;
    time_random_steps(*gpt_, *optim_, prec_, B_, T_, accum_, probe_measured_ ? 2 : 1, probe_measured_ ? 5 : 1, &st);
    std::vector<double> times;
    for (size_t i = 0; i < st.fb.size(); i++) times.push_back(st.fb[i] + st.opt[i]);
    double fastest = *std::min_element(times.begin(), times.end());
    for (int again = 0; !probe_measured_ && again < 5 && !check_probe_step_seconds(supplied, fastest).ok(); again++) {
      StepTimes more;
      time_random_steps(*gpt_, *optim_, prec_, B_, T_, accum_, 0, 1, &more);
      fastest = std::min(fastest, more.fb[0] + more.opt[0]);
    }
    FRONTIER_RETURN_IF_ERROR(comm_.bcast(&fastest, sizeof(fastest), "the probe's fastest step"));
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    t = times[times.size() / 2];
    FRONTIER_RETURN_IF_ERROR(comm_.bcast(&t, sizeof(t), "the probe's step time"));
    gpt_->init_nanochat(static_cast<uint64_t>(set_.seed));  // as if the probe never ran
    optim_->set_owned_range(optim_->owned_lo(), optim_->owned_hi());
    optim_->set_steps(0);
    if (!probe_measured_) {
      FRONTIER_RETURN_IF_ERROR(comm_.share(check_probe_step_seconds(supplied, fastest)));
      t = supplied;
    }
  }
  int64_t steps = std::max<int64_t>(1, static_cast<int64_t>(budget_ / t));
  const int64_t cap = set_.max_steps;
  if (cap > 0) steps = std::min(steps, cap);
  cfg_.set("train.probe_step_seconds", t);  // config.toml and the checkpoint record them
  cfg_.set("train.max_steps", steps);
  set_.probe_step_seconds = t;
  set_.max_steps = steps;
  probe_step_s_ = t;
  std::printf("budget: probe mode: %.4f s per step (%s) -> %lld steps for %.1f s\n", t,
              probe_measured_ ? "median of 5 after 2 warm-up, measured now" : "train.probe_step_seconds",
              static_cast<long long>(steps), budget_);
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
  run_dir_ = set_.run_dir;
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
  const double ckpt = 4.0 * ((1.0 + optim_->sections()) * gpt_->weights().size() + ema_.size()) +
                     1e6;  // weights, the state sections, EMA
  const double need = (opt_.resume_dir.empty() ? 2.0 : 1.0) * ckpt + 16e6;
  if (free_b < need) {
    char buf[256];
    std::snprintf(buf, sizeof(buf), "%.1f MB free, but its checkpoints need %.1f MB (%.1f MB each, two during an "
                  "atomic rewrite)", free_b / 1e6, need / 1e6, ckpt / 1e6);
    return Status::error("the disk of " + run_dir_ + " has " + buf + "; free space or choose another train.run_dir");
  }
  return ok_status();
}

// Weights, optimizer state and step, budget used, tokens and each data stream's exact position; the data must be
// the data the run started on. Rank 0 reads the checkpoint and broadcasts it (the run directory is its alone); each
// rank keeps its share of the optimizer state.
Status TrainRun::resume() {
  std::string toml, meta_text;
  std::vector<float> w, st;
  const int64_t N = static_cast<int64_t>(gpt_->weights().size()), V = optim_->normuon_size();
  const int K = optim_->sections();
  const int64_t S = K * N + V + static_cast<int64_t>(ema_.size());  // the layout of TrainRun::checkpoint
  Status s;
  if (root()) {
    s = load_checkpoint(ckpt_path_, &toml, &meta_text, &w, &st);
    if (s.ok() && (static_cast<int64_t>(w.size()) != N || static_cast<int64_t>(st.size()) != S))
      s = Status::error(ckpt_path_ + " does not fit this run's model (was " + run_dir_ + "/config.toml edited?)");
    if (s.ok()) s = check_finite(w, ckpt_path_);
  }
  FRONTIER_RETURN_IF_ERROR(comm_.agree(s));
  FRONTIER_RETURN_IF_ERROR(comm_.bcast(&meta_text, "the checkpoint's metadata"));
  w.resize(N);
  st.resize(S);
  FRONTIER_RETURN_IF_ERROR(comm_.bcast(w.data(), 4 * N, "the checkpoint's weights"));
  FRONTIER_RETURN_IF_ERROR(comm_.bcast(st.data(), 4 * S, "the checkpoint's optimizer state"));
  nlohmann::json meta = nlohmann::json::parse(meta_text, nullptr, false);
  s = ok_status();
  if (meta.is_discarded() || !meta.is_object() || (!meta.contains("loader") && !meta.contains("loaders")))
    s = Status::error("corrupt checkpoint " + ckpt_path_ + ": its metadata is not a training state");
  // The streams the run started with: "loader" (one stream) in checkpoints from before data streams.
  int64_t ckpt_streams = 1;
  if (s.ok() && meta.contains("loaders")) {
    if (!meta["loaders"].is_array() || meta["loaders"].empty())
      s = Status::error("corrupt checkpoint " + ckpt_path_ + ": metadata field 'loaders' is not a list of states");
    else
      ckpt_streams = static_cast<int64_t>(meta["loaders"].size());
  }
  if (s.ok() && ckpt_streams != streams_) {
    const int64_t ranks = meta.contains("ranks") && meta["ranks"].is_number_integer() ? meta["ranks"].get<int64_t>()
                                                                                       : 1;
    s = Status::error(
        run_dir_ + " was trained on " + std::to_string(ckpt_streams) + " data streams (" + std::to_string(ranks) +
        " rank" + (ranks > 1 ? "s" : "") + "), but this job has " + std::to_string(streams_) + " (" +
        std::to_string(comm_.size()) + " rank" + (comm_.size() > 1 ? "s" : "") + "): resume it with `mpirun -np " +
        std::to_string(ranks) + "`" + (ckpt_streams % comm_.size() == 0 && comm_.size() != ranks
                                           ? " (or set train.data_streams = " + std::to_string(ckpt_streams) +
                                                 " in its config.toml to read the same streams on these ranks)"
                                           : "") );
  }
  std::string note;
  const RunIdentity ckpt_id =
      RunIdentity::from_json(meta.is_object() && meta.contains("identity") ? meta["identity"] : nlohmann::json());
  if (s.ok()) s = ckpt_id.check_data(data_, /*cross_data=*/false, ckpt_path_, &note);
  bool done = false;
  int64_t opt_steps = 0;
  if (s.ok()) s = meta_get(meta, "finished", ckpt_path_, &done);
  if (s.ok() && done && root() && file_exists(run_dir_ + "/summary.txt"))
    s = Status::error(run_dir_ + " already finished (see its summary.txt); start a new run instead");
  if (s.ok()) s = meta_get(meta, "optimizer_steps", ckpt_path_, &opt_steps);
  if (s.ok()) s = meta_get(meta, "step", ckpt_path_, &step_);
  if (s.ok()) s = meta_get(meta, "training_seconds", ckpt_path_, &training_time_);
  if (s.ok()) s = meta_get(meta, "tokens", ckpt_path_, &tokens_);
  if (s.ok() && meta.contains("smooth_loss")) s = meta_get(meta, "smooth_loss", ckpt_path_, &smooth_);
  if (s.ok() && meta.contains("untied")) s = meta_get(meta, "untied", ckpt_path_, &untied_);
  for (size_t i = 0; s.ok() && i < loaders_.size(); i++) {
    const int stream = comm_.rank() + static_cast<int>(i) * comm_.size();
    LoaderState ls;
    s = LoaderState::from_json(meta.contains("loaders") ? meta["loaders"][stream] : meta["loader"], &ls);
    if (s.ok()) s = loaders_[i].restore(ls);
  }
  FRONTIER_RETURN_IF_ERROR(comm_.agree(s));
  gpt_->weights() = std::move(w);
  // This rank's share [lo, hi) of each of the K state sections [m | v | momentum (| last Muon update)].
  const int64_t lo = optim_->owned_lo(), n = optim_->owned_hi() - lo;
  std::vector<float>& mine = optim_->state();
  for (int k = 0; k < K; k++) std::copy(st.begin() + k * N + lo, st.begin() + k * N + lo + n, mine.begin() + k * n);
  std::copy(st.begin() + K * N, st.begin() + K * N + V, optim_->normuon_state());
  optim_->keep_owned_normuon();
  if (!ema_.empty()) std::copy(st.begin() + K * N + V, st.end(), ema_.begin());
  optim_->set_steps(opt_steps);
  eval_only_ = done;  // training had finished; the evaluation (or the summary) had not
  if (root()) {
    std::string old_log, line;
    read_file(log_path_, &old_log);  // keep the lines up to the checkpoint's step; a killed run may have more
    std::istringstream in(old_log);
    while (std::getline(in, line)) {
      nlohmann::json rec = nlohmann::json::parse(line, nullptr, false);
      if (rec.is_object() && rec.contains("step") && rec["step"].is_number_integer() &&
          rec["step"].get<int64_t>() <= step_)
        kept_log_ += line + "\n";
    }
  }
  if (eval_only_)
    std::printf("resumed %s: training had finished at step %lld; running the final evaluation\n", run_dir_.c_str(),
                static_cast<long long>(step_));
  else
    std::printf("resumed %s at step %lld, %.1fs of the %.1fs budget used\n", run_dir_.c_str(),
                static_cast<long long>(step_), training_time_, budget_);
  return ok_status();
}

// One file written by rank 0, in the layout of a one-process run (the full optimizer state gathered from its
// owners, every stream's loader position), so a checkpoint does not depend on how many ranks wrote it. Every rank
// calls this. Returns the collectives' status (an error: a rank is gone); *written gets rank 0's write status.
Status TrainRun::checkpoint(bool training_done, Status* written) {
  *written = ok_status();
  if (shape_.arch.untie_at > 0 && !untied_) copy_head_from_wte();  // before the untie: the head, for readers
  const int64_t N = static_cast<int64_t>(gpt_->weights().size()), V = optim_->normuon_size();
  // [m | v | momentum (| last Muon update, optim.muon_every > 1)] (K N) [NorMuon moments] (V) [weight EMA] (N,
  // train.ema_decay > 0): one process's layout.
  const int K = optim_->sections();
  std::vector<float> full;
  const std::vector<float>* state = &optim_->state();
  if (sharded_) {
    const std::vector<int64_t> counts = plan_.counts();
    const int64_t n = optim_->owned_hi() - optim_->owned_lo();
    if (root()) full.resize(K * N + V);
    for (int k = 0; k < K; k++)
      FRONTIER_RETURN_IF_ERROR(comm_.gather(optim_->state().data() + k * n, root() ? full.data() + k * N : nullptr,
                                            counts, "gathering the optimizer state"));
    if (V > 0) {  // each matrix's moments are on its owner alone (zeros elsewhere): their sum gathers them
      std::vector<float> nv(optim_->normuon_state(), optim_->normuon_state() + V);
      FRONTIER_RETURN_IF_ERROR(comm_.allreduce_sum(nv.data(), V, "gathering the NorMuon moments"));
      if (root()) std::copy(nv.begin(), nv.end(), full.begin() + K * N);
    }
    state = &full;
  }
  if (!ema_.empty()) {
    if (state != &full) full = *state;
    full.insert(full.end(), ema_.begin(), ema_.end());
    state = &full;
  }
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& l : loaders_) mine.push_back(l.state().to_json());
  std::vector<std::string> all;
  FRONTIER_RETURN_IF_ERROR(comm_.gather_strings(mine.dump(), &all, "gathering the loader positions"));
  if (!root()) return ok_status();
  nlohmann::json loaders = nlohmann::json::array();
  std::vector<nlohmann::json> per_rank;
  for (const auto& a : all) per_rank.push_back(nlohmann::json::parse(a));
  for (int st = 0; st < streams_; st++) loaders.push_back(per_rank[st % comm_.size()][st / comm_.size()]);
  nlohmann::json meta = {{"step", step_}, {"training_seconds", training_time_}, {"tokens", tokens_},
                         {"optimizer_steps", optim_->steps()}, {"smooth_loss", smooth_}, {"finished", training_done},
                         {"loaders", loaders}, {"ranks", comm_.size()}, {"identity", identity_.to_json()}};
  if (shape_.arch.untie_at > 0) meta["untied"] = untied_;
  *written = save_checkpoint(ckpt_path_, cfg_.to_toml(), meta.dump(), gpt_->weights(), *state);
  return ok_status();
}

void TrainRun::note_not_saved(const std::string& what, const Status& why) {
  if (not_saved_.find(what) != std::string::npos) return;
  std::fprintf(stderr, "\nwarning: %s not saved: %s\n", what.c_str(), why.message().c_str());
  not_saved_ += (not_saved_.empty() ? "" : "; ") + what + " (" + why.message() + ")";
}

// After the micro-steps: the liveness check (a hung rank is named here), then the gradient sum over ranks, into
// each owner's range (sharded) or everywhere (replicated), and the summed loss. With overlap most buckets are already
// in flight (started during the backward, in the same order on every rank; the liveness check's collective follows
// them on every rank, as MPI requires): this completes them and sends the rest.
Status TrainRun::exchange_gradients(double* loss_sum) {
  if (!comm_.distributed()) return ok_status();
  FRONTIER_RETURN_IF_ERROR(comm_.arrive(step_, "the forward and backward"));
  FRONTIER_RETURN_IF_ERROR(exchange_.finish());
  return comm_.allreduce_sum(loss_sum, 1, "the loss sum");
}

// The steps until the budget is spent (or train.max_steps, a signal, an error): each step is trained
// (train_step), then rank 0 decides for the job whether to stop or checkpoint (decide_after_step), logs it
// (log_step), and the periodic checkpoint is written.
Status TrainRun::run_steps() {
  if (eval_only_) return ok_status();
  StepLoop loop;
  FRONTIER_RETURN_IF_ERROR(start_steps(&loop));
  StopSignals signals(root() ? "\nfrontier: stopping after this step and saving a checkpoint (again to quit at once)\n"
                             : nullptr);  // rank 0 speaks for the job
  comm_.reset_stats();
  gpt_->moe_totals() = {};  // the routing of this run's steps (not the probe's)
  loop.bucket_bytes = static_cast<int64_t>(set_.comm_bucket_mb * 1e6);
  // Benchmarks (scripts/bench_dist.sh): alternate the exchange's form step by step, so that both forms are timed
  // under the same (drifting) load of a shared machine: "overlap" (odd steps overlapped; results unchanged) or
  // "bf16" (odd steps in bf16).
  const char* alt_env = std::getenv("FRONTIER_BENCH_ALTERNATE");
  loop.alternate = alt_env && comm_.distributed() ? alt_env : "";
  while (true) {
    StepDone done;
    FRONTIER_RETURN_IF_ERROR(train_step(loop, &done));
    int64_t decide[3] = {0, 0, StopSignals::received()};  // stop, checkpoint, signal
    FRONTIER_RETURN_IF_ERROR(decide_after_step(loop, decide));
    if (root()) log_step(loop, done);
    if (decide[0]) break;
    if (decide[2]) {
      stop_signal_ = static_cast<int>(decide[2]);
      break;
    }
    if (decide[1]) {
      // Not counted in the budget: the step's time was taken above. A failed write (a full disk) is reported and
      // training goes on: the final checkpoint is tried again, and the summary says what was not saved.
      Status ws;
      FRONTIER_RETURN_IF_ERROR(checkpoint(false, &ws));
      if (!ws.ok()) note_not_saved("periodic checkpoint", ws);
      loop.last_ckpt = Clock::now();
      if (step_ == loop.fault_step) std::_Exit(75);
    }
  }
  if (isatty(2) && root()) std::fprintf(stderr, "\n");
  gpt_->set_schedule({});  // the model as configured: the final window, the head of the last step
  return ok_status();
}

// The loop's settings, the micro-batch buffers, rank 0's log (opened for appending) and the test faults.
Status TrainRun::start_steps(StepLoop* loop) {
  loop->excluded = set_.warmup_steps_excluded;
  loop->max_steps = set_.max_steps;
  loop->probe_mode = set_.budget_mode == BudgetMode::kProbe;
  loop->ckpt_secs = set_.checkpoint_every_seconds;
  loop->ckpt_steps = set_.checkpoint_every_steps;
  loop->R = comm_.size();
  loop->x.resize(int64_t(B_) * T_);
  loop->y.resize(int64_t(B_) * T_);
  if (root()) {
    FRONTIER_RETURN_IF_ERROR(write_file_atomic(log_path_, kept_log_));
    loop->log = std::fopen(log_path_.c_str(), "ab");
    if (!loop->log) return Status::error("cannot append to " + log_path_);
  }
  loop->explode = 3.0 * std::log(static_cast<double>(shape_.vocab_size)) + 5.0;
  loop->last_ckpt = Clock::now();
  // Tests: die like a killed run (after the periodic checkpoint of that step), or, on one rank
  // (FRONTIER_FAULT_RANK), hang or be killed at a step.
  auto env_step = [](const char* name) -> int64_t {
    const char* v = std::getenv(name);
    return v ? std::atoll(v) : -1;
  };
  loop->fault_step = env_step("FRONTIER_FAULT_EXIT_AFTER_STEP");
  const bool fault_rank = env_step("FRONTIER_FAULT_RANK") < 0 || env_step("FRONTIER_FAULT_RANK") == comm_.rank();
  loop->hang_step = fault_rank ? env_step("FRONTIER_FAULT_HANG_AT_STEP") : -1;
  loop->kill_step = fault_rank ? env_step("FRONTIER_FAULT_KILL_AT_STEP") : -1;
  loop->last_print = Clock::now() - std::chrono::seconds(10);
  return ok_status();
}

// One optimizer step, timed: the schedule at this progress, the micro-steps, the gradient exchange, the loss
// check, the update, and the step's accounting.
Status TrainRun::train_step(StepLoop& loop, StepDone* done) {
  if (loop.alternate == "overlap") overlap_ = step_ % 2 == 1;
  if (loop.alternate == "bf16") comm_dtype_ = step_ % 2 == 1 ? CommDtype::kBf16 : CommDtype::kFp32;
  if (loop.alternate == "bf16") exchange_.set_dtype(comm_dtype_);
  auto t0 = Clock::now();
  done->progress =
      loop.max_steps > 0 ? static_cast<double>(step_) / loop.max_steps : std::min(training_time_ / budget_, 1.0);
  double loss_sum = 0;
  schedule_step(done);
  forward_backward(loop, *done, &loss_sum);
  if (step_ == loop.kill_step) raise(SIGKILL);
  if (step_ == loop.hang_step)
    while (true) pause();
  Status cs = exchange_gradients(&loss_sum);
  if (!cs.ok()) return cs;  // the caller ends the job: another rank may be gone
  loss_val_ = loss_sum / (accum_now_ * loop.R);
  if (!std::isfinite(loss_val_) || loss_val_ > loop.explode) {
    comm_.mark_agreed();  // the summed loss: every rank sees it
    return Status::error("training diverged at step " + std::to_string(step_) + ": loss " +
                         std::to_string(loss_val_) + " (lower the learning rates, e.g. --set optim.matrix_lr=0.01)");
  }
  FRONTIER_RETURN_IF_ERROR(update_weights(done));
  done->dt = since(t0);
  if (step_ >= loop.excluded) training_time_ += done->dt;
  all_steps_time_ += done->dt;
  steps_here_++;
  tokens_ += total_ / accum_ * accum_now_;
  step_++;
  smooth_ = step_ == 1 ? loss_val_ : 0.9 * smooth_ + 0.1 * loss_val_;
  return ok_status();
}

// The recipe's schedules at this step's progress: the micro-batches, the rows' length, the untie, the window.
void TrainRun::schedule_step(StepDone* done) {
  const double progress = done->progress;
  const int64_t k = static_cast<int64_t>(loaders_.size());
  // train.batch_warmup_ratio: fewer micro-batches early on (every stream reads as many), the LR scaled by
  // sqrt of the batch's share.
  accum_now_ = accum_at(progress, accum_, k, recipe_.batch_warmup, recipe_.batch_start);
  // train.seq_warmup_ratio: shorter rows, more of them (B x T tokens either way); train.window_warmup_ratio: the
  // S layers' window; model.untie_at: the head reads wte until the first step at or past it (copy_head_from_wte).
  done->T_now = seq_len_at(progress, T_, recipe_.seq_warmup, recipe_.seq_len_start);
  done->B_now = B_ * (T_ / done->T_now);
  if (recipe_.seq_warmup > 0)
    for (auto& l : loaders_) l.set_rows(done->B_now, done->T_now);
  if (shape_.arch.untie_at > 0 && !untied_ && progress >= shape_.arch.untie_at) {
    copy_head_from_wte();
    untied_ = true;
  }
  Gpt::Schedule& sched = done->sched;
  if (recipe_.window_warmup > 0)
    sched.short_window = window_at(progress, shape_.arch.short_window, recipe_.window_warmup, recipe_.window_start);
  sched.head_from_wte = shape_.arch.untie_at > 0 && !untied_;
  gpt_->set_schedule(sched);
}

// The last stream's gradient plus the others' sum, over [lo, hi) (a bucket's range just before it is sent).
void TrainRun::add_stream_grads(int64_t lo, int64_t hi) {
  std::vector<float>& g = gpt_->grads();
  for (int64_t i = lo; i < hi; i++) g[i] = stream_grads_[i] + g[i];
}

// The micro-steps, stream by stream: each stream's gradient is summed on its own and the streams' sums are
// added in stream order, as ranks each sum theirs before MPI adds them. One process reading 2 streams thus
// computes the very floats that 2 ranks do (with more, MPI's reduction order may differ in the last bits).
void TrainRun::forward_backward(StepLoop& loop, const StepDone& done, double* loss_sum) {
  const int64_t k = static_cast<int64_t>(loaders_.size());
  // The mean over every rank's micro-batches.
  const float grad_scale = 1.0f / static_cast<float>(accum_now_ * loop.R);
  std::vector<float>& g = gpt_->grads();
  if (comm_.distributed())
    exchange_.begin_step(k > 1 ? std::function<void(int64_t, int64_t)>(
                                     [this](int64_t lo, int64_t hi) { add_stream_grads(lo, hi); })
                               : nullptr);
  for (int64_t j = 0; j < k; j++) {
    gpt_->zero_grad();
    double stream_loss = 0;
    for (int64_t a = j; a < accum_now_; a += k) {
      loaders_[j].next(loop.x.data(), loop.y.data());
      if (!repeat_warned_ && loaders_[j].epoch() > 0 && loaders_[j].epochs_read() > 1) {
        repeat_warned_ = true;
        if (comm_.root())
          std::fprintf(stderr, "warning: step %lld: the training data is used up; from here documents repeat (the "
                       "loader keeps only the first %lld tokens of a document it crops: `frontier prepare "
                       "--max-doc-bytes` splits long ones; or prepare more text, or lower the budget)\n",
                       static_cast<long long>(step_ + 1), static_cast<long long>(T_ + 1));
      }
      Tape tape;
      tape.set_precision(prec_);
      gpt_->mtp_weights() = mtp_weights_at(done.progress);
      gpt_->set_loss_seed(grad_scale);
      Var loss = gpt_->forward(tape, loop.x.data(), loop.y.data(), done.B_now, done.T_now);
      if (overlap_ && j == k - 1 && a + k >= accum_now_) {  // the step's last backward: buckets go as they are final
        exchange_.plan_buckets(tape, loop.bucket_bytes);
        tape.backward(loss, grad_scale, [this](const Node& n) { exchange_.param_final(n); });
      } else {
        tape.backward(loss, grad_scale);
      }
      stream_loss += tape.value(loss)[0];
    }
    *loss_sum += stream_loss;
    if (k == 1) break;
    if (j == 0) stream_grads_ = g;
    else if (j < k - 1)
      for (size_t i = 0; i < g.size(); i++) stream_grads_[i] += g[i];
  }
  if (k > 1 && !comm_.distributed()) add_stream_grads(0, static_cast<int64_t>(g.size()));
}

// The update from the summed gradients at this step's LR, momentum and weight decay; under sharding, the weights
// made whole again; train.ema_decay: the weights' average.
Status TrainRun::update_weights(StepDone* done) {
  const double progress = done->progress;
  const Recipe& rc = recipe_;
  done->lr_mult = lr_multiplier(progress, rc.warmup, rc.warmdown, rc.final_lr_frac) *
                  std::sqrt(static_cast<double>(accum_now_) / accum_);
  done->momentum = muon_momentum(rc.momentum, step_, rc.momentum_warmup_steps, progress, rc.warmdown);
  const auto t_opt = Clock::now();
  optim_->step(static_cast<float>(done->lr_mult), static_cast<float>(done->momentum),
               static_cast<float>(progress), static_cast<float>(weight_decay_multiplier(rc.decay, progress)));
  optim_time_ += since(t_opt);
  if (sharded_)
    FRONTIER_RETURN_IF_ERROR(comm_.allgather(gpt_->weights().data(), plan_.counts(), "the weight all-gather"));
  if (!ema_.empty()) {  // every rank holds the whole average (the weights are whole after the all-gather)
    const float d = static_cast<float>(ema_decay_at(rc.ema_decay, optim_->steps()));
    const float* w = gpt_->weights().data();
    float* e = ema_.data();
    const int64_t n = static_cast<int64_t>(ema_.size());
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i++) e[i] = d * e[i] + (1.f - d) * w[i];
  }
  return ok_status();
}

// Rank 0 decides for the job (its clock is the budget's): stop, checkpoint now; any rank's signal stops all.
// decide: {stop, checkpoint, signal}, the signal already this rank's; on return, the job's.
Status TrainRun::decide_after_step(const StepLoop& loop, int64_t decide[3]) {
  if (root()) {
    const bool by_budget = set_.budget_mode == BudgetMode::kWall;  // probe: the step count alone
    decide[0] = (by_budget && step_ > loop.excluded && training_time_ >= budget_) ||
                (loop.max_steps > 0 && step_ >= loop.max_steps);
    decide[1] = (loop.ckpt_steps > 0 && step_ % loop.ckpt_steps == 0) ||
                (loop.ckpt_secs > 0 && since(loop.last_ckpt) >= loop.ckpt_secs);
  }
  return comm_.allreduce_max(decide, 3, "the stop decision");
}

// Rank 0: the step's line in log.jsonl, and the progress line on stderr (every step on a terminal, else every 5 s).
void TrainRun::log_step(StepLoop& loop, const StepDone& done) {
  const double dt = done.dt;
  double tps = static_cast<double>(total_ / accum_ * accum_now_) / dt;
  double mfu = 100.0 * tps * flops_per_token_ / (peak_ * 1e9);
  nlohmann::json rec = {{"step", step_}, {"loss", loss_val_}, {"lr_mult", done.lr_mult},
                        {"momentum", done.momentum}, {"tokens_per_sec", tps}, {"mfu", mfu}, {"step_seconds", dt},
                        {"training_seconds", training_time_}, {"progress", done.progress}};
  if (accum_now_ != accum_) rec["batch_tokens"] = total_ / accum_ * accum_now_;
  if (recipe_.seq_warmup > 0) rec["seq_len"] = done.T_now;
  if (recipe_.window_warmup > 0) rec["window"] = done.sched.short_window;
  if (shape_.arch.untie_at > 0) rec["head"] = untied_ ? "lm_head" : "wte";
  if (comm_.distributed()) {
    rec["comm_seconds"] = comm_.stats().seconds;  // since the start: inside MPI calls, waiting included
    rec["overlap"] = overlap_;
    rec["comm_dtype"] = comm_dtype_name(comm_dtype_);
  }
  std::string line = rec.dump() + "\n";
  if (std::fputs(line.c_str(), loop.log) < 0 || std::fflush(loop.log) != 0)
    note_not_saved("log.jsonl", Status::error(std::string(std::strerror(errno)) + "; the log is incomplete"));
  bool tty = isatty(2);
  if (tty || since(loop.last_print) > 5.0) {
    loop.last_print = Clock::now();
    // Progress and time left: by steps when train.max_steps ends the run first (always in probe mode, where the
    // step count, not the clock, ends it), else by the budget.
    const int64_t max_steps = loop.max_steps;
    const double step_frac = max_steps > 0 ? static_cast<double>(step_) / max_steps : 0.0;
    const double time_frac = std::min(training_time_ / budget_, 1.0);
    const bool by_steps = max_steps > 0 && (loop.probe_mode || step_frac >= time_frac);
    const double left = by_steps ? (max_steps - step_) * (training_time_ / std::max<int64_t>(1, step_))
                                 : std::max(0.0, budget_ - training_time_);
    std::fprintf(stderr,
                 "%sstep %5lld | %5.1f%% | loss %.4f | lr x%.3f | %7.0f tok/s | mfu %5.2f%% | %5.1fs left %s",
                 tty ? "\r" : "", static_cast<long long>(step_), 100.0 * (by_steps ? step_frac : time_frac),
                 smooth_, done.lr_mult, tps, mfu, left, tty ? "" : "\n");
  }
}

Status TrainRun::save() {
  if (eval_only_) return ok_status();  // the checkpoint on disk already holds the finished training
  // train.ema_decay: a finished run's checkpoint and val_bpb are the averaged weights' (an interrupted run keeps
  // its own, to train on after --resume).
  if (!ema_.empty() && !interrupted()) gpt_->weights() = ema_;
  Status s;
  FRONTIER_RETURN_IF_ERROR(checkpoint(/*training_done=*/!interrupted(), &s));
  if (!s.ok()) note_not_saved("model.ckpt", s);
  else if (not_saved_.find("periodic checkpoint") != std::string::npos)
    not_saved_.clear();  // the final one got through: nothing is lost
  return ok_status();
}

Status TrainRun::evaluate() {
  if (std::getenv("FRONTIER_FAULT_EXIT_IN_EVAL")) std::_Exit(75);  // tests: die as a kill during evaluation would
  auto t_eval = Clock::now();
  // The weights are on disk (or the failure is recorded): a kill now loses only the evaluation, which
  // `frontier train --resume` re-runs.
  Status s = evaluate_bpb(*gpt_, data_, set_.eval_tokens, static_cast<int>(set_.eval_batch), T_,
                          &bpb_, "val", nullptr, &bpb_se_);
  eval_s_ = since(t_eval);
  if (!s.ok())
    return Status::error("final evaluation failed: " + s.message() +
                         (not_saved_.empty() ? " (the trained weights are saved in " + ckpt_path_ + ")" : ""));
  return ok_status();
}

void TrainRun::fill_summary(TrainSummary* out) {
  TrainSummary& s = *out;
  s.val_bpb = bpb_;
  s.val_bpb_se = bpb_se_;
  if (recipe_.ema_decay > 0) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "EMA (train.ema_decay = %g)", recipe_.ema_decay);
    s.weights = buf;
  }
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
  // With a batch-size warm-up the steps differ in tokens: their mean stands for each.
  const int64_t counted_steps = step_ - set_.warmup_steps_excluded;
  const double step_tokens = step_ > 0 ? static_cast<double>(tokens_) / step_ : static_cast<double>(total_);
  s.tokens_per_sec = counted_steps > 0 && training_time_ > 0
                         ? counted_steps * step_tokens / training_time_
                         : (all_steps_time_ > 0 ? steps_here_ * step_tokens / all_steps_time_ : 0);
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
  s.ranks = comm_.size();
  s.threads = threads_;
  s.budget_mode = set_.budget_mode == BudgetMode::kProbe ? "probe" : "wall";
  s.probe_step_seconds = set_.probe_step_seconds;
  if (all_steps_time_ > 0) s.optimizer_pct = 100.0 * optim_time_ / all_steps_time_;
  if (comm_.distributed() && steps_here_ > 0) s.comm_ms_per_step = 1e3 * comm_.stats().seconds / steps_here_;
  s.data_epochs = 0;
  for (const auto& l : loaders_) s.data_epochs += l.epochs_read() / static_cast<double>(loaders_.size());
  const Gpt::MoeTotals& m = gpt_->moe_totals();
  if (shape_.arch.moe_experts > 0 && m.calls > 0) {  // this process's steps (rank 0's share under mpirun)
    int64_t total = 0;
    for (int64_t n : m.tokens_per_expert) total += n;
    s.moe_expert_share.clear();
    for (int64_t n : m.tokens_per_expert) {
      char b[16];
      std::snprintf(b, sizeof(b), "%.1f", 100.0 * n / std::max<int64_t>(1, total));
      s.moe_expert_share += (s.moe_expert_share.empty() ? "" : " ") + std::string(b);
    }
    s.moe_dropped = m.dropped;
    s.moe_aux_loss = m.aux_loss / m.calls;
    s.active_params_M = gpt_->n_active_params() / 1e6;
  }
  s.has_summary = true;
}

Status TrainRun::finish(TrainSummary* out) {
  comm_.mark_agreed();  // every rank ends here alike (the decision to stop was shared); rank 0 reports
  if (interrupted()) {
    fill_summary(out);
    out->signal = stop_signal_;
    const char* sig = stop_signal_ == SIGINT ? "SIGINT" : stop_signal_ == SIGTERM ? "SIGTERM" : "a signal";
    out->interrupted = std::string("interrupted (") + sig + " at step " + std::to_string(step_) + ")";
    if (!not_saved_.empty())
      return Status::error(std::string("interrupted by ") + sig + " at step " + std::to_string(step_) +
                           "; the checkpoint could NOT be saved: " + not_saved_);
    const std::string launcher = comm_.distributed() ? "mpirun -np " + std::to_string(comm_.size()) + " " : "";
    return Status::error(std::string("interrupted by ") + sig + " at step " + std::to_string(step_) + "; saved " +
                         ckpt_path_ + ": continue with `" + launcher + "frontier train --resume " + run_dir_ + "`");
  }
  fill_summary(out);
  Status s = root() ? write_file_atomic(run_dir_ + "/summary.txt", out->format()) : ok_status();
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
  FRONTIER_RETURN_IF_ERROR(run.save());  // before the evaluation: a crash or kill there loses no training
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
