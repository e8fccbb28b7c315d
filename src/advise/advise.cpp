#include "advise/advise.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "advise/budget_chart.h"
#include "advise/loss_model.h"
#include "autograd/buffer_pool.h"
#include "advise/levers.h"
#include "calibrate/calibrate.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "dist/scale_model.h"
#include "kernels/isa.h"
#include "model/model_config.h"
#include "research/research.h"
#include "train/recipe.h"
#include "train/schema.h"
#include "train/settings.h"
#include "train/step_parts.h"
#include "util/cache_dir.h"
#include "util/file.h"
#include "util/sha256.h"
#include "util/stop_signal.h"

namespace frontier {

bool sweep_point_reusable(int64_t have, int64_t want) { return 2 * have + 1 >= want && have <= 2 * want + 1; }

using json = nlohmann::json;

namespace {

constexpr int kMinSteps = 10;  // a candidate or sweep run with fewer optimizer steps says nothing useful

// A step's time: the faster of two measurements of 3 timed steps (after 2 warm-up) each. Other work on the machine
// only ever adds time, so the faster is the better estimate of the step alone.
Status time_step(const Config& cfg, int threads, StepParts* out) {
  for (int round = 0; round < 2; round++) {
    StepParts p;
    FRONTIER_RETURN_IF_ERROR(measure_step_parts(cfg, threads, 3, &p));
    if (round == 0 || p.t_fb * p.accum + p.t_opt < out->t_fb * out->accum + out->t_opt) *out = p;
  }
  buffer_pool_trim();  // each shape leaves its own sizes in the pool: 21 shapes held 8 GB through the sweep
  return ok_status();
}

struct Candidate {
  int depth = 0, dim = 0, n_head = 0, T = 0, B = 0, recipe = 0;
  double step_s = 0, t_opt = 0;   // measured: s per optimizer step, of which the optimizer
  int64_t steps = 0, tokens = 0;  // at the budget
  double n_ne = 0, flops_per_token = 0;
  double predicted = 0;
  std::string excluded;  // why it is not a candidate at this budget ("" = it is)
  std::string label() const {
    char b[64];
    std::snprintf(b, sizeof(b), "depth %d T %d", depth, T);
    return b;
  }
  double tokens_per_s() const { return B * double(T) / step_s; }
};

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t c = line.find(':');
      if (c != std::string::npos) return line.substr(line.find_first_not_of(" \t", c + 1));
    }
  }
  return "unknown cpu";
}

Status read_json(const std::string& path, json* out) {
  std::string text;
  FRONTIER_RETURN_IF_ERROR(read_file(path, &text));
  try {
    *out = json::parse(text);
  } catch (const std::exception& e) {
    return Status::error(path + " is not valid JSON (" + e.what() + "): delete it and it is measured again");
  }
  return ok_status();
}

// nanochat's estimate: 6 x (matrix parameters, lm_head included) + attention's 12 L C T, per token (forward and
// backward).
double flops_per_token(int depth, int dim, int T, int vocab) {
  return 6.0 * (non_embedding_params(depth, dim) + double(dim) * vocab) + 12.0 * depth * double(dim) * T;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof(b), f, v);
  return b;
}

std::string si(double v) {
  if (v >= 1e9) return fmt("%.2fG", v / 1e9);
  if (v >= 1e6) return fmt("%.2fM", v / 1e6);
  if (v >= 1e3) return fmt("%.1fk", v / 1e3);
  return fmt("%.0f", v);
}

// The mean and sample standard deviation of v.
void mean_sd(const std::vector<double>& v, double* m, double* sd) {
  *m = 0;
  for (double x : v) *m += x / v.size();
  double ss = 0;
  for (double x : v) ss += (x - *m) * (x - *m);
  *sd = v.size() > 1 ? std::sqrt(ss / (v.size() - 1)) : 0;
}

// One lever of the architecture stage, alone on the first seed.
struct LeverRow {
  const Lever* lever;
  double step_s, bpb, gain;  // its step time, val_bpb, and the base's val_bpb minus it
  bool shared_step, helps;   // it runs the base's step count; it beat the base
};

// What the architecture stage chose: the levers' keys (empty: the base is kept), their names ("a+b"), the step
// time their combination trains at, its val_bpb per seed and mean, and the note saying why.
struct LeverChoice {
  std::map<std::string, std::string> sets;
  std::string names, note;
  double step_s = 0, mean = 0;
  std::vector<double> runs;
};

struct Advisor {
  const AdviseOptions& o;
  Config base;
  // The base's keys, typed, as advise runs it (after setup's overrides: data, budget, threads, precision, ...).
  TrainSettings settings;
  ModelShapeKeys shape_keys;
  LearningRates lrs;
  std::string data_dir, cache_dir, recipe_dir, machine, bin;
  int threads = 0, vocab = 0;
  int64_t train_tokens = 0;
  std::map<int, double> used_share;  // T -> share of the train split's tokens the loader's rows hold (the rest cropped)
  Precision prec = Precision::kFp32;
  Calibration cal;
  double peak = 0;
  std::vector<Candidate> cands;
  std::vector<json> points;  // points.jsonl
  json speed = json::object();
  LossModel model;

  explicit Advisor(const AdviseOptions& opt) : o(opt) {}

  Status setup();
  // setup's parts.
  Status measure_used_share(const PreparedData& data, uint64_t seed);
  Status setup_machine(std::string* peak_src);
  Status open_cache(const json& manifest);
  Status make_candidates();
  void print_setup(const std::string& peak_src) const;
  // The step-time cache's key: the machine, the shape (depth, T, B) and the config fields that change a step's cost
  // (width, heads, the loss's vocabulary chunk), read from k: the base's for a candidate, a compared config's own.
  std::string speed_key(const ModelShapeKeys& k, int depth, int T, int B) const;
  Status measure_speeds();
  Status sweep();
  Status fit();
  void predict();
  Status write_advice(const Candidate& pick, double measured, const std::string& how, double lr_scale = 1.0,
                      const std::map<std::string, std::string>& levers = {}, const std::string& lever_note = "");
  Status lever_step_time(const Config& base_cfg, const Config& lever_cfg, const std::string& what,
                         const Candidate& pick, double* step_s);
  // The architecture stage on the best shape (advise.h).
  Status lever_stage(const Candidate& pick, double lr_scale, LeverChoice* choice);
  // The shapes again with the chosen levers in the base, when they change the step's cost (advise.h): *out the
  // advised shape with the levers' step time, *bpb its mean over the seeds.
  Status reshape(const Candidate& pick, double lr_scale, const LeverChoice& choice, Candidate* out, double* bpb,
                 std::string* note);
  // c's steps and tokens at the budget from its step time, and whether it is excluded (too few steps, or more
  // tokens than the data holds).
  void at_budget(Candidate* c);
  // lever_stage's parts.
  Status lever_base_runs(const Candidate& pick, double lr_scale, std::vector<double>* runs);
  Status lever_rows(const Candidate& pick, double lr_scale, const std::vector<Lever>& levers, double base_first,
                    std::vector<LeverRow>* rows);
  std::vector<const Lever*> lever_table(const Candidate& pick, const std::vector<LeverRow>& rows,
                                        double spread) const;
  Status combination_runs(const Candidate& pick, double lr_scale, const std::vector<const Lever*>& keep,
                          LeverChoice* combo);
  // against: what the base is called in *note ("the base").
  bool decide_combination(const std::string& names, const std::vector<double>& base_runs, double base_mean,
                          const std::vector<double>& combo_runs, double* combo_mean, std::string* note,
                          const std::string& against = "the base") const;
  Status validate(const std::vector<const Candidate*>& picks, std::vector<double>* measured);
  Status compare();
  // extra: keys set on top (levers); seed: 0 = the base's train.seed. Both are part of the cache's match.
  Status run_at_budget(const std::string& label, const std::string& config, const Candidate* c, double step_s,
                       double predicted, double* measured, double lr_scale = 1.0,
                       const std::map<std::string, std::string>& extra = {}, uint64_t seed = 0);
  std::map<std::string, std::string> lr_sets(double scale) const;
  Status append_validation(const json& row);
  Config candidate_config(const Candidate& c) const;
  std::map<std::string, std::string> candidate_sets(const Candidate& c) const;
};

// The base config with advise's overrides, the data's size and vocabulary, the machine, the cache, and the
// candidates (depths x sequence lengths), printed.
Status Advisor::setup() {
  if (!(o.budget > 0) || !std::isfinite(o.budget)) return Status::error("--budget must be a number of seconds > 0");
  ConfigSchema schema = train_schema();
  base = schema.defaults();
  FRONTIER_RETURN_IF_ERROR(schema.load_toml(o.base, &base));
  const TrainSettings given = train_settings(base);  // the base as written, before the overrides below
  const int64_t given_vocab = read_model_shape_keys(base).vocab_size;
  data_dir = o.data.empty() ? given.data : o.data;
  base.set("train.data", data_dir);
  base.set("train.budget_seconds", o.budget);
  base.set("train.total_batch_tokens", int64_t(0));
  PreparedData data;
  Status s = data.open(data_dir, /*verify=*/false);
  if (!s.ok()) return Status::error("advise needs a prepared dataset: " + s.message());
  const json& m = data.manifest();
  train_tokens = m["splits"]["train"]["tokens"].get<int64_t>();
  vocab = m["tokenizer"]["vocab_size"].get<int>();
  FRONTIER_RETURN_IF_ERROR(measure_used_share(data, static_cast<uint64_t>(given.seed)));
  if (given_vocab != 0 && given_vocab != vocab)
    return Status::error(o.base + " sets model.vocab_size = " + std::to_string(given_vocab) +
                         " but " + data_dir + " has " + std::to_string(vocab) + " tokens: set it to 0 (the data's)");
  base.set("model.vocab_size", int64_t(vocab));
  std::string peak_src;
  FRONTIER_RETURN_IF_ERROR(setup_machine(&peak_src));
  FRONTIER_RETURN_IF_ERROR(open_cache(m));
  FRONTIER_RETURN_IF_ERROR(make_candidates());
  print_setup(peak_src);
  return ok_status();
}

// What a pass over the data gives a run at each sequence length: the best-fit loader crops a document that fits
// no row and discards its tail, so long documents give only their first T + 1 tokens. Measured by running the
// loader (up to 20,000 rows of the first epoch): rows' tokens / (rows' tokens + discarded tails).
Status Advisor::measure_used_share(const PreparedData& data, uint64_t seed) {
  std::vector<Shard> shards;
  FRONTIER_RETURN_IF_ERROR(data.open_split("train", &shards));
  for (int T : o.seq_lens) {
    BestFitLoader l;
    LoaderConfig lc;
    lc.B = 1;
    lc.T = T;
    lc.seed = seed;
    lc.min_one_batch = false;
    FRONTIER_RETURN_IF_ERROR(l.init(shards, lc));
    std::vector<int32_t> x(T), y(T);
    for (int r = 0; r < 20000 && l.epoch() == 0; r++) l.next(x.data(), y.data());
    const double kept = double(l.tokens_emitted()), lost = double(l.tokens_cropped());
    used_share[T] = kept + lost > 0 ? kept / (kept + lost) : 1.0;
  }
  return ok_status();
}

// The ISA, threads and precision advise runs at (--isa, --threads, --precision over the base), the base's typed
// keys, and the peak MFU is stated against (*peak_src: where it came from).
Status Advisor::setup_machine(std::string* peak_src) {
  if (!o.isa.empty()) {
    Isa t;
    FRONTIER_RETURN_IF_ERROR(parse_isa(o.isa, &t));
    set_active_isa(t);
    setenv("FRONTIER_ISA", o.isa.c_str(), 1);  // the sweep's and validation's trials (child processes)
  }
  if (o.threads > 0) base.set("train.threads", int64_t(o.threads));
  if (!o.precision.empty()) base.set("train.precision", o.precision);
  settings = train_settings(base);
  shape_keys = read_model_shape_keys(base);
  lrs = read_learning_rates(base);
  FRONTIER_RETURN_IF_ERROR(resolve_precision(settings.precision, &prec));
  threads = settings.threads > 0 ? static_cast<int>(settings.threads) : omp_get_num_procs();
  *peak_src = peak_unit_name(peak_unit_for(prec, active_isa()));
  if (settings.peak_gflops > 0) {
    peak = settings.peak_gflops;
    *peak_src = "train.peak_gflops";
  } else if (load_calibration(calibration_path(), threads, &cal)) {
    peak = cal.peak(peak_unit_for(prec, active_isa()));
  } else {
    return Status::error("no calibration for " + std::to_string(threads) + " threads on this machine (" +
                         calibration_path() + "): run `frontier calibrate` first (or set train.peak_gflops); the "
                         "advisor states each candidate's MFU and the roofline against it");
  }
  return ok_status();
}

// The cache: step times per machine and shape (speed.json), and the points measured under this data and recipe
// (<data fingerprint>-<recipe hash>/points.jsonl); manifest: the data's.
Status Advisor::open_cache(const json& manifest) {
  cache_dir = o.cache.empty() ? frontier_cache_dir() + "/advise" : o.cache;
  machine = cpu_model() + " | " + isa_name(active_isa()) + " | " + std::to_string(threads) + " threads | " +
            precision_name(prec);
  // Everything but the shape that changes what a run of a given shape and step count scores.
  std::string recipe;
  for (const auto& [k, v] : base.values()) {
    bool keep = k.rfind("optim.", 0) == 0 || k.rfind("eval.", 0) == 0 || k == "train.warmup_ratio" ||
                k == "train.warmdown_ratio" || k == "train.final_lr_frac" || k == "train.seed" ||
                k == "train.precision" || k == "model.aspect_ratio" || k == "model.head_dim" ||
                k == "model.n_kv_head" || k == "model.dim";
    if (!keep) continue;
    std::ostringstream ss;
    ss.precision(17);
    std::visit([&ss](const auto& x) { ss << x; }, v);
    recipe += k + "=" + ss.str() + "\n";
  }
  recipe += "precision=" + std::string(precision_name(prec)) + "\n";
  // How val_bpb is scored: points measured before it scored every document's whole text (data/val_windows.h)
  // scored another text per sequence length, and must not be mixed with these.
  recipe += "val_bpb=windows\n";
  const std::string fp = manifest.value("fingerprint", std::string("nofingerprint"));
  recipe_dir = cache_dir + "/" + fp.substr(0, 12) + "-" + sha256_hex(recipe).substr(0, 12);
  FRONTIER_RETURN_IF_ERROR(make_dirs(recipe_dir));
  FRONTIER_RETURN_IF_ERROR(write_file_atomic(recipe_dir + "/recipe.txt", "data: " + data_dir + "\n" + recipe));
  bin = o.frontier_bin.empty() ? "/proc/self/exe" : o.frontier_bin;

  if (file_exists(cache_dir + "/speed.json")) FRONTIER_RETURN_IF_ERROR(read_json(cache_dir + "/speed.json", &speed));
  if (!speed.is_object()) speed = json::object();
  if (file_exists(recipe_dir + "/points.jsonl")) {
    std::ifstream f(recipe_dir + "/points.jsonl");
    std::string line;
    int n = 0;
    while (std::getline(f, line)) {
      n++;
      if (line.empty()) continue;
      try {
        points.push_back(json::parse(line));
      } catch (const std::exception&) {
        return Status::error(recipe_dir + "/points.jsonl:" + std::to_string(n) + ": not JSON (delete the line)");
      }
    }
  }
  return ok_status();
}

// A candidate per sequence length and depth, with its width, parameters and FLOPs per token.
Status Advisor::make_candidates() {
  const int B = static_cast<int>(settings.micro_batch);
  for (size_t r = 0; r < o.seq_lens.size(); r++) {
    for (int d : o.depths) {
      Candidate c;
      c.depth = d;
      c.T = o.seq_lens[r];
      c.B = B;
      c.recipe = static_cast<int>(r);
      Config cc = candidate_config(c);
      ModelShape shape;
      FRONTIER_RETURN_IF_ERROR(derive_model_shape(cc, &shape));
      c.dim = shape.dim;
      c.n_head = shape.n_head;
      c.n_ne = non_embedding_params(d, shape.dim);
      c.flops_per_token = flops_per_token(d, shape.dim, c.T, vocab);
      cands.push_back(c);
    }
  }
  return ok_status();
}

void Advisor::print_setup(const std::string& peak_src) const {
  const int B = static_cast<int>(settings.micro_batch);
  std::printf("advise: budget %.0f s on %s (%s train tokens, vocabulary %d), base %s\n", o.budget, data_dir.c_str(),
              si(double(train_tokens)).c_str(), vocab, o.base.c_str());
  std::printf("advise: a pass over the data gives the loader's rows");
  for (const auto& [T, share] : used_share) std::printf(" %.0f%% (T %d)", 100 * share, T);
  std::printf(" of those tokens (a document cropped to fit a row loses its tail)\n");
  std::printf("advise: machine %s; peak %.0f GFLOP/s (%s)", machine.c_str(), peak, peak_src.c_str());
  if (cal.mem_gbs > 0)
    std::printf(", memory %.1f GB/s: ridge %.0f FLOP/byte", cal.mem_gbs, peak / cal.mem_gbs);
  std::printf("\n");
  std::printf("advise: %zu candidates (depths", cands.size());
  for (int d : o.depths) std::printf(" %d", d);
  std::printf(" x seq_len");
  for (int t : o.seq_lens) std::printf(" %d", t);
  std::printf(", micro_batch %d); cache %s\n", B, recipe_dir.c_str());
}

Config Advisor::candidate_config(const Candidate& c) const {
  Config cc = base;
  cc.set("model.depth", int64_t(c.depth));
  cc.set("model.seq_len", int64_t(c.T));
  cc.set("train.micro_batch", int64_t(c.B));
  return cc;
}

std::map<std::string, std::string> Advisor::candidate_sets(const Candidate& c) const {
  return {{"model.depth", std::to_string(c.depth)},
          {"model.seq_len", std::to_string(c.T)},
          {"train.micro_batch", std::to_string(c.B)},
          {"train.total_batch_tokens", "0"},
          {"model.vocab_size", std::to_string(vocab)},
          {"train.threads", std::to_string(threads)},
          {"train.checkpoint_every_seconds", "0"}};
}

// The base's four learning rates times scale (the candidates' runs keep the base's ratios between them).
std::map<std::string, std::string> Advisor::lr_sets(double scale) const {
  return {{"optim.matrix_lr", fmt("%.9g", lrs.matrix * scale)},
          {"optim.embedding_lr", fmt("%.9g", lrs.embedding * scale)},
          {"optim.unembedding_lr", fmt("%.9g", lrs.unembedding * scale)},
          {"optim.scalar_lr", fmt("%.9g", lrs.scalar * scale)}};
}

std::string Advisor::speed_key(const ModelShapeKeys& k, int depth, int T, int B) const {
  return machine + " | depth " + std::to_string(depth) + " aspect " + std::to_string(k.aspect_ratio) + " head_dim " +
         std::to_string(k.head_dim) + " kv " + std::to_string(k.n_kv_head) + " dim " + std::to_string(k.dim) + " T " +
         std::to_string(T) + " B " + std::to_string(B) + " V " + std::to_string(vocab) + " chunk " +
         std::to_string(k.ce_vocab_chunk);
}

void Advisor::at_budget(Candidate* c) {
  c->steps = static_cast<int64_t>(o.budget / c->step_s);
  c->tokens = c->steps * c->B * c->T;
  c->excluded.clear();
  if (c->steps < kMinSteps) {
    c->excluded = "only " + std::to_string(c->steps) + " steps in the budget (fewer than " +
                  std::to_string(kMinSteps) + ")";
  } else if (c->tokens > used_share[c->T] * train_tokens) {
    c->excluded = "would train on its data " + fmt("%.2f", double(c->tokens) / (used_share[c->T] * train_tokens)) +
                  " times (repeating documents" +
                  (used_share[c->T] < 0.95 ? fmt("; at T %.0f the loader uses ", c->T) +
                                                 fmt("%.0f%% of the split's tokens", 100 * used_share[c->T])
                                           : std::string()) +
                  "); prepare more text";
  }
}

Status Advisor::measure_speeds() {
  int measured = 0;
  for (size_t i = 0; i < cands.size(); i++) {
    Candidate& c = cands[i];
    const std::string key = speed_key(shape_keys, c.depth, c.T, c.B);
    auto it = speed.find(key);
    if (it == speed.end()) {
      if (StopSignals::received()) return Status::error("advise: stopped by a signal");
      StepParts p;
      Status s = time_step(candidate_config(c), threads, &p);
      if (!s.ok()) return Status::error("advise: timing " + c.label() + " failed: " + s.message());
      const double load = [] {
        double l[1] = {0};
        return getloadavg(l, 1) == 1 ? l[0] : -1.0;
      }();
      speed[key] = {{"step_s", p.t_fb * p.accum + p.t_opt}, {"t_opt", p.t_opt}, {"load", load},
                    {"when", static_cast<int64_t>(std::time(nullptr))}};
      FRONTIER_RETURN_IF_ERROR(write_file_atomic(cache_dir + "/speed.json", speed.dump(1)));
      measured++;
      std::printf("speed %2zu/%zu  %-16s %8.4f s/step  %7.0f tokens/s  (load %.1f)\n", i + 1, cands.size(),
                  c.label().c_str(), speed[key]["step_s"].get<double>(),
                  c.B * double(c.T) / speed[key]["step_s"].get<double>(), load);
      std::fflush(stdout);
    }
    c.step_s = speed[key]["step_s"].get<double>();
    c.t_opt = speed[key]["t_opt"].get<double>();
  }
  std::printf("advise: step times: %d measured now, %zu from %s/speed.json\n", measured, cands.size() - measured,
              cache_dir.c_str());
  double fastest = INFINITY;
  for (auto& c : cands) {
    fastest = std::min(fastest, c.step_s);
    at_budget(&c);
  }
  if (o.budget < fastest)
    return Status::error("a budget of " + fmt("%g", o.budget) + " s is shorter than one step of the fastest "
                         "candidate (" + fmt("%.3f", fastest) + " s): give --budget at least " +
                         fmt("%.0f", std::ceil(fastest * kMinSteps)) + " s");
  bool any = false;
  for (const auto& c : cands) any = any || c.excluded.empty();
  if (!any) {
    for (const auto& c : cands)
      if (c.tokens > used_share[c.T] * train_tokens)
        return Status::error("the dataset " + data_dir + " (" + si(double(train_tokens)) + " train tokens) is too "
                             "small for " + fmt("%g", o.budget) + " s: every candidate would repeat it (the "
                             "fastest would see it " +
                             fmt("%.1f", double(c.tokens) / (used_share[c.T] * train_tokens)) +
                             " times); prepare more text or lower --budget");
    return Status::error("a budget of " + fmt("%g", o.budget) + " s gives every candidate fewer than " +
                         std::to_string(kMinSteps) + " steps: give --budget at least " +
                         fmt("%.0f", std::ceil(fastest * kMinSteps)) + " s");
  }
  return ok_status();
}

// The sweep plan (see advise.h), reusing cached points of the same shape within 2x of the wanted steps.
Status Advisor::sweep() {
  struct Plan {
    const Candidate* c;
    double frac;
  };
  std::vector<Plan> plan;
  const int R = static_cast<int>(o.seq_lens.size()), main_r = R / 2;
  const int nd = static_cast<int>(o.depths.size());
  auto depth_at = [&](double q) { return o.depths[static_cast<size_t>(std::lround(q * (nd - 1)))]; };
  auto find = [&](int depth, int r) -> const Candidate* {
    for (const auto& c : cands)
      if (c.depth == depth && c.recipe == r) return &c;
    return nullptr;
  };
  std::vector<int> main_depths = {depth_at(0.15), depth_at(0.5), depth_at(0.85)};
  main_depths.erase(std::unique(main_depths.begin(), main_depths.end()), main_depths.end());
  for (int d : main_depths)
    for (double f : {0.125, 0.5}) plan.push_back({find(d, main_r), f});
  for (int r = 0; r < R; r++)
    if (r != main_r)
      for (int d : {depth_at(0.15), depth_at(0.5)}) plan.push_back({find(d, r), 0.25});

  double planned_s = 0;
  std::vector<std::pair<const Plan*, int64_t>> todo;
  for (const auto& p : plan) {
    int64_t steps = std::max<int64_t>(kMinSteps, static_cast<int64_t>(p.frac * o.budget / p.c->step_s));
    bool cached = false;
    for (const auto& pt : points) {
      if (pt.value("depth", 0) == p.c->depth && pt.value("seq_len", 0) == p.c->T &&
          pt.value("micro_batch", 0) == p.c->B) {
        cached = cached || sweep_point_reusable(pt.value("steps", int64_t(0)), steps);
      }
    }
    for (const auto& [q, qs] : todo) cached = cached || (q->c == p.c && qs == steps);  // planned twice
    if (!cached) {
      todo.push_back({&p, steps});
      planned_s += steps * p.c->step_s;
    }
  }
  if (o.no_sweep) {
    std::printf("advise: loss sweep skipped (--no-sweep): %zu of its %zu runs are not cached; fitting the %zu cached "
                "points (a prediction outside their range of tokens is an extrapolation)\n",
                todo.size(), plan.size(), points.size());
    return ok_status();
  }
  std::printf("advise: loss sweep: %zu runs planned, %zu cached, %zu to run (about %.0f s of training)\n",
              plan.size(), plan.size() - todo.size(), todo.size(), planned_s);
  ResearchOptions ro;
  ro.base = o.base;
  ro.data = data_dir;
  ro.frontier_bin = bin;
  int k = 0;
  for (const auto& [p, steps] : todo) {
    k++;
    const Candidate& c = *p->c;
    auto sets = candidate_sets(c);
    sets["train.max_steps"] = std::to_string(steps);
    sets["train.budget_mode"] = "wall";
    const double expected = steps * c.step_s;
    const std::string dir = recipe_dir + "/runs/d" + std::to_string(c.depth) + "-t" + std::to_string(c.T) + "-b" +
                            std::to_string(c.B) + "-s" + std::to_string(steps);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);  // an interrupted sweep run is started again
    std::printf("sweep %2d/%zu  %-16s %5lld steps (%s tokens, ~%.0f s) ... ", k, todo.size(), c.label().c_str(),
                static_cast<long long>(steps), si(double(steps) * c.B * c.T).c_str(), expected);
    std::fflush(stdout);
    // The budget only guards against a run that never ends: max_steps decides, on step progress.
    TrialResult r = run_trial(ro, sets, 20 * expected + 120, static_cast<uint64_t>(settings.seed), dir);
    if (r.status == "interrupted") return Status::error("advise: " + r.error);
    if (r.status != "ok") {
      std::printf("failed: %s\n", r.error.c_str());
      continue;
    }
    const int64_t done = r.summary.value("num_steps", int64_t(0));
    if (done != steps) {
      std::printf("stopped at step %lld of %lld (the machine was too slow for its guard budget): not used\n",
                  static_cast<long long>(done), static_cast<long long>(steps));
      continue;
    }
    json pt = {{"depth", c.depth}, {"dim", c.dim}, {"seq_len", c.T}, {"micro_batch", c.B}, {"steps", steps},
               {"tokens", steps * c.B * c.T}, {"n_ne", c.n_ne}, {"val_bpb", r.val_bpb},
               {"seconds", r.summary.value("training_seconds", 0.0)}, {"machine", machine},
               {"when", static_cast<int64_t>(std::time(nullptr))}};
    points.push_back(pt);
    std::string all;
    for (const auto& q : points) all += q.dump() + "\n";
    FRONTIER_RETURN_IF_ERROR(write_file_atomic(recipe_dir + "/points.jsonl", all));
    std::printf("val_bpb %.4f (%.0f s)\n", r.val_bpb, r.seconds);
    std::fflush(stdout);
  }
  return ok_status();
}

Status Advisor::fit() {
  std::vector<LossPoint> pts;
  std::vector<const json*> src;
  for (const auto& p : points) {
    auto it = std::find(o.seq_lens.begin(), o.seq_lens.end(), p.value("seq_len", 0));
    if (it == o.seq_lens.end() || p.value("micro_batch", 0) != settings.micro_batch) continue;
    pts.push_back({p.value("n_ne", 0.0), double(p.value("tokens", int64_t(0))),
                   static_cast<int>(it - o.seq_lens.begin()), p.value("val_bpb", 0.0)});
    src.push_back(&p);
  }
  Status s = fit_loss_model(pts, static_cast<int>(o.seq_lens.size()), &model);
  if (!s.ok()) return Status::error("advise: " + s.message() + " (points in " + recipe_dir + "/points.jsonl)");
  std::printf("\nloss model, fitted to %zu sweep points: %s\n", pts.size(), model.describe().c_str());
  std::printf("  %-16s %7s %9s %9s %9s %8s\n", "point", "steps", "tokens", "measured", "fitted", "error");
  for (size_t i = 0; i < pts.size(); i++) {
    double f = model.predict(pts[i].n, pts[i].d, pts[i].recipe);
    std::printf("  depth %d T %-6d %7lld %9s %9.4f %9.4f %+7.2f%%\n", src[i]->value("depth", 0),
                src[i]->value("seq_len", 0), static_cast<long long>(src[i]->value("steps", int64_t(0))),
                si(pts[i].d).c_str(), pts[i].bpb, f, 100 * (f - pts[i].bpb) / pts[i].bpb);
  }
  std::printf("  fit rms error %.4f bpb; leave-one-out (each point predicted from the others, %d points): rms %.4f, "
              "max %.4f bpb\n", model.rmse, model.loo_points, model.loo_rmse, model.loo_max);
  return ok_status();
}

void Advisor::predict() {
  double max_d = 0;
  for (const auto& p : points) max_d = std::max(max_d, double(p.value("tokens", int64_t(0))));
  for (auto& c : cands) c.predicted = model.predict(c.n_ne, double(std::max<int64_t>(c.tokens, 1)), c.recipe);
  std::vector<Candidate*> order;
  for (auto& c : cands) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [](const Candidate* a, const Candidate* b) {
    if (a->excluded.empty() != b->excluded.empty()) return a->excluded.empty();
    return a->predicted < b->predicted;
  });
  std::printf("\ncandidates at %.0f s, best first (predicted val_bpb; MFU against %.0f GFLOP/s)\n", o.budget, peak);
  std::printf("  %-16s %5s %7s %9s %8s %6s %6s %5s %5s %9s %8s  %s\n", "shape", "dim", "N", "tokens/s", "steps",
              "tokens", "tok/N", "MFU", "opt", "attn", "predicted", "");
  for (const Candidate* c : order) {
    const double mfu = c->flops_per_token * c->tokens_per_s() / (peak * 1e9);
    const double attn = 12.0 * c->depth * c->dim * double(c->T) / c->flops_per_token;
    std::printf("  %-16s %5d %7s %9.0f %8lld %6s %6.1f %4.0f%% %4.0f%% %8.1f%% %8.4f  %s\n", c->label().c_str(),
                c->dim, si(c->n_ne).c_str(), c->tokens_per_s(), static_cast<long long>(c->steps),
                si(double(c->tokens)).c_str(), c->tokens / c->n_ne, 100 * mfu, 100 * c->t_opt / c->step_s,
                100 * attn, c->predicted,
                !c->excluded.empty()         ? ("excluded: " + c->excluded).c_str()
                : c->tokens > 2 * max_d      ? fmt("extrapolated: %.1fx the sweep's most tokens", c->tokens / max_d).c_str()
                                             : "");
  }
}

Status Advisor::write_advice(const Candidate& p, double measured, const std::string& how, double lr_scale,
                             const std::map<std::string, std::string>& levers, const std::string& lever_note) {
  ConfigSchema schema = train_schema();
  Config defaults = schema.defaults(), diff;
  Config cc = candidate_config(p);
  if (lr_scale != 1.0)
    for (const auto& [k, v] : lr_sets(lr_scale)) cc.set(k, std::stod(v));
  for (const auto& [k, v] : levers) FRONTIER_RETURN_IF_ERROR(schema.apply_set(k + "=" + v, &cc));
  cc.set("model.vocab_size", int64_t(0));  // the data's
  for (const auto& [k, v] : cc.values()) {
    bool always = k == "model.depth" || k == "model.seq_len" || k == "train.micro_batch" || k == "train.data" ||
                  k == "train.budget_seconds";
    if (always || defaults.values().at(k) != v) diff.set(k, v);
  }
  const double mfu = p.flops_per_token * p.tokens_per_s() / (peak * 1e9);
  char head[2048];
  std::snprintf(head, sizeof(head),
                "# Advised by `frontier advise --budget %.0f` for %s on %s.\n"
                "# depth %d -> dim %d, %d head(s); seq_len %d, %d sequences per step (%d tokens), no accumulation.\n"
                "# Measured here: %.4f s per step, %.0f tokens/s (MFU %.0f%%), so %lld steps and %s tokens in the "
                "budget,\n# %.1f tokens per non-embedding parameter (%s). Predicted val_bpb %.4f (the loss model's "
                "leave-one-out\n# error: rms %.4f, max %.4f). Warmdown and precision are %s's%s.\n",
                o.budget, data_dir.c_str(), machine.c_str(), p.depth, p.dim, p.n_head, p.T, p.B, p.B * p.T,
                p.step_s, p.tokens_per_s(), 100 * mfu, static_cast<long long>(p.steps),
                si(double(p.tokens)).c_str(), p.tokens / p.n_ne, si(p.n_ne).c_str(), p.predicted, model.loo_rmse,
                model.loo_max, o.base.c_str(),
                lr_scale == 1.0 ? "; so are its learning rates"
                                : fmt("; its learning rates x %g (measured best)", lr_scale).c_str());
  std::string text = head;
  if (!lever_note.empty()) text += "# Architecture stage: " + lever_note + "\n";
  if (measured > 0) text += "# Measured here at the full budget: val_bpb " + fmt("%.4f", measured) + " (" + how + ").\n";
  FRONTIER_RETURN_IF_ERROR(write_file_atomic(o.out, text + diff.to_toml()));
  std::printf("\nadvice: %s%s, seq_len %d, micro_batch %d: predicted val_bpb %.4f%s; written to %s\n",
              p.label().c_str(), lr_scale == 1.0 ? "" : fmt(", learning rates x %g", lr_scale).c_str(), p.T, p.B,
              p.predicted,
              measured > 0 ? (", measured " + fmt("%.4f", measured) + " (" + how + ")").c_str() : "", o.out.c_str());
  return ok_status();
}

Status Advisor::append_validation(const json& row) {
  std::string all;
  read_file(recipe_dir + "/validations.jsonl", &all).ok();  // absent the first time
  return write_file_atomic(recipe_dir + "/validations.jsonl", all + row.dump() + "\n");
}

// The shape a validations.jsonl row trained: its "shape", or the one in an "advised (depth 2 T 128)" label.
std::string row_shape(const json& r) {
  if (r.contains("shape") && r["shape"].is_string()) return r["shape"].get<std::string>();
  const std::string l = r.value("label", std::string());
  if (l.rfind("advised (", 0) == 0 && l.back() == ')') return l.substr(9, l.size() - 10);
  return l.rfind("depth ", 0) == 0 ? l : "";
}

// Trains a config (or a candidate) at the full budget in probe mode with the step time the advisor measured, so
// that the prediction and the run see the same number of steps. A run of the same config, shape, budget and step
// time recorded before is not trained again (probe mode makes it the same run): its val_bpb is reused.
Status Advisor::run_at_budget(const std::string& label, const std::string& config, const Candidate* c,
                              double step_s, double predicted, double* measured, double lr_scale,
                              const std::map<std::string, std::string>& extra, uint64_t seed) {
  *measured = 0;
  const std::string shape = c != nullptr ? c->label() : "";
  const std::string scale_key = lr_scale == 1.0 ? "" : fmt(" lr x %.9g", lr_scale);  // rows before it have none
  const uint64_t base_seed = static_cast<uint64_t>(settings.seed);
  if (seed == 0) seed = base_seed;
  // Rows written before levers and seeds have neither: theirs are "" and the base's seed.
  const std::string lever_key = sets_key(extra);
  const std::string run_key = (lever_key.empty() ? "" : " levers " + lever_key) +
                              (seed == base_seed ? "" : " seed " + std::to_string(seed));
  const int64_t steps = static_cast<int64_t>(o.budget / step_s);
  std::printf("validate  %-28s %6lld steps ... ", label.c_str(), static_cast<long long>(steps));
  std::fflush(stdout);
  std::string all;
  if (read_file(recipe_dir + "/validations.jsonl", &all).ok()) {
    std::istringstream in(all);
    for (std::string line; std::getline(in, line);) {
      json r = json::parse(line, nullptr, false);
      if (!r.is_object() || r.value("config", std::string()) != config || r.value("budget", 0.0) != o.budget ||
          std::fabs(r.value("step_s", 0.0) / step_s - 1) > 1e-9 || row_shape(r) != shape || r.value("advice", false) ||
          r.value("lr_scale", 1.0) != lr_scale || r.value("levers", std::string()) != lever_key ||
          r.value("seed", base_seed) != seed)
        continue;
      *measured = r.value("val_bpb", 0.0);
    }
  }
  const bool cached = *measured > 0;
  std::string dir;
  if (!cached) {
    ResearchOptions ro;
    ro.base = config;
    ro.data = data_dir;
    ro.frontier_bin = bin;
    std::map<std::string, std::string> sets;
    if (c != nullptr) sets = candidate_sets(*c);
    if (lr_scale != 1.0)
      for (const auto& [k, v] : lr_sets(lr_scale)) sets[k] = v;
    for (const auto& [k, v] : extra) sets[k] = v;
    sets["train.budget_mode"] = "probe";
    sets["train.probe_step_seconds"] = fmt("%.9g", step_s);
    sets["train.threads"] = std::to_string(threads);
    sets["train.checkpoint_every_seconds"] = "0";
    dir = recipe_dir + "/validate/" +
          sha256_hex(config + shape + scale_key + run_key + fmt("%.9g", step_s) + fmt("%.0f", o.budget)).substr(0, 12);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    TrialResult r = run_trial(ro, sets, o.budget, seed, dir);
    if (r.status == "interrupted") return Status::error("advise: " + r.error);
    if (r.status != "ok") {
      std::printf("failed: %s\n", r.error.c_str());
      return ok_status();
    }
    *measured = r.val_bpb;
    json v = {{"label", label}, {"shape", shape}, {"config", config}, {"budget", o.budget},
              {"steps", r.summary.value("num_steps", 0)}, {"tokens_M", r.summary.value("total_tokens_M", 0.0)},
              {"step_s", step_s}, {"val_bpb", r.val_bpb}, {"machine", machine}, {"data", data_dir},
              {"when", static_cast<int64_t>(std::time(nullptr))}};
    if (predicted > 0) v["predicted"] = predicted;
    if (lr_scale != 1.0) v["lr_scale"] = lr_scale;
    if (!lever_key.empty()) v["levers"] = lever_key;
    if (seed != base_seed) v["seed"] = seed;
    FRONTIER_RETURN_IF_ERROR(append_validation(v));
  }
  std::string pred = predicted > 0 ? fmt("predicted %.4f, ", predicted) : "";
  std::printf("%smeasured %.4f", pred.c_str(), *measured);
  if (predicted > 0) std::printf(" (error %+.2f%%)", 100 * (predicted - *measured) / *measured);
  std::printf("  [%s]\n", cached ? "recorded before: validations.jsonl" : dir.c_str());
  return ok_status();
}

Status Advisor::validate(const std::vector<const Candidate*>& picks, std::vector<double>* measured) {
  measured->assign(picks.size(), 0.0);
  if (picks.empty()) return ok_status();
  std::printf("\ntraining the best of each sequence length at the full budget (probe mode: budget / the step time "
              "above; val_bpb as `frontier train` scores it)\n");
  for (size_t i = 0; i < picks.size(); i++)
    FRONTIER_RETURN_IF_ERROR(run_at_budget(picks[i]->label(), o.base, picks[i], picks[i]->step_s,
                                           picks[i]->predicted, &(*measured)[i]));
  return ok_status();
}

Status Advisor::compare() {
  if (o.compare.empty()) return ok_status();
  std::printf("\ntraining the configs to compare at the full budget (probe mode: a config of a candidate's shape "
              "takes that shape's step time, any other is timed as the candidates were)\n");
  ConfigSchema schema = train_schema();
  for (const auto& path : o.compare) {
    Config cc = schema.defaults();
    FRONTIER_RETURN_IF_ERROR(schema.load_toml(path, &cc));
    cc.set("train.data", data_dir);
    cc.set("model.vocab_size", int64_t(vocab));
    cc.set("train.threads", int64_t(threads));
    const ModelShapeKeys ck = read_model_shape_keys(cc);
    const TrainSettings cs = train_settings(cc);
    const int depth = static_cast<int>(ck.depth), T = static_cast<int>(ck.seq_len);
    const int B = static_cast<int>(cs.micro_batch);
    // Its step time: a config of a candidate's shape (the speed key's fields, the same precision, no accumulation;
    // learning rates and schedule do not change the step's cost) shares that shape's probe, so two configs of one
    // shape train the same number of steps, and the comparison is of recipes, not of two noisy probes (the
    // quick start's tiny.toml once got 2,090 steps at 300 s from its own probe while its shape's got 2,492).
    // Any other config is timed on its own, as the candidates were, and cached alike.
    const std::string shape_key = speed_key(ck, depth, T, B);
    const bool same_shape = shape_key == speed_key(shape_keys, depth, T, B) && cs.total_batch_tokens == 0 &&
                            cs.precision == settings.precision;
    const std::string key = speed_key(shape_keys, depth, T, B) + (same_shape ? "" : " | " + path);
    if (!speed.contains(key)) {
      StepParts p;
      Status s = time_step(cc, threads, &p);
      if (!s.ok()) return Status::error("advise: timing " + path + " failed: " + s.message());
      speed[key] = {{"step_s", p.t_fb * p.accum + p.t_opt}, {"t_opt", p.t_opt}};
      FRONTIER_RETURN_IF_ERROR(write_file_atomic(cache_dir + "/speed.json", speed.dump(1)));
    }
    const double step_s = speed[key]["step_s"].get<double>();
    // A prediction only where the loss model covers the config: a searched sequence length, the same batch in
    // sequences, no accumulation, and the recipe of the base (same optim.*, schedule, seed, eval, precision).
    double predicted = 0;
    auto it = std::find(o.seq_lens.begin(), o.seq_lens.end(), T);
    bool same_recipe = cs.total_batch_tokens == 0 && B == settings.micro_batch;
    for (const auto& [k, v] : base.values()) {
      bool rk = k.rfind("optim.", 0) == 0 || k == "train.warmdown_ratio" || k == "train.warmup_ratio" ||
                k == "train.final_lr_frac" || k == "train.seed" || k == "train.precision" ||
                k == "model.aspect_ratio" || k == "model.head_dim" || k == "model.dim" || k == "model.n_kv_head";
      if (rk && cc.values().at(k) != v) same_recipe = false;
    }
    if (it != o.seq_lens.end() && same_recipe) {
      ModelShape shape;
      FRONTIER_RETURN_IF_ERROR(derive_model_shape(cc, &shape));
      const int64_t tokens = static_cast<int64_t>(o.budget / step_s) * B * T;
      predicted = model.predict(non_embedding_params(depth, shape.dim), double(std::max<int64_t>(tokens, 1)),
                                static_cast<int>(it - o.seq_lens.begin()));
    }
    double measured = 0;
    FRONTIER_RETURN_IF_ERROR(run_at_budget(path, path, nullptr, step_s, predicted, &measured));
  }
  return ok_status();
}

// A lever's step time: the base's shape and the lever's timed back to back (each the faster of two timings) and
// the base's measured step time scaled by their ratio, so that a drift of the machine's speed between the shape
// stage and now does not count as the lever's cost. Cached with the lever's keys.
Status Advisor::lever_step_time(const Config& base_cfg, const Config& lever_cfg, const std::string& what,
                                const Candidate& pick, double* step_s) {
  const std::string key = speed_key(shape_keys, pick.depth, pick.T, pick.B) + " | " + sha256_hex(lever_cfg.to_toml()).substr(0, 16);
  if (!speed.contains(key)) {
    StepParts pb, pl;
    Status st = time_step(base_cfg, threads, &pb);
    if (st.ok()) st = time_step(lever_cfg, threads, &pl);
    if (!st.ok()) return Status::error("advise: timing " + what + " failed: " + st.message());
    const double ratio = (pl.t_fb * pl.accum + pl.t_opt) / (pb.t_fb * pb.accum + pb.t_opt);
    speed[key] = {{"ratio", ratio}, {"what", what}};
    FRONTIER_RETURN_IF_ERROR(write_file_atomic(cache_dir + "/speed.json", speed.dump(1)));
  }
  *step_s = pick.step_s * speed[key]["ratio"].get<double>();
  return ok_status();
}

// The architecture stage (advise.h): the base on every seed, each lever alone on the first, the combination of the
// levers that beat the base on the first seed on every seed, decided by the paired differences.
Status Advisor::lever_stage(const Candidate& pick, double lr_scale, LeverChoice* choice) {
  *choice = LeverChoice();
  std::vector<Lever> levers;
  FRONTIER_RETURN_IF_ERROR(parse_levers(o.levers, &levers));
  if (levers.empty()) return ok_status();
  const int nseeds = std::max(1, o.seeds);
  std::printf("\narchitecture stage: %s at its best learning rates, %zu lever(s), the base and the combination on %d "
              "seed(s) (probe mode, as above)\n", pick.label().c_str(), levers.size(), nseeds);
  std::vector<double> base_runs;
  FRONTIER_RETURN_IF_ERROR(lever_base_runs(pick, lr_scale, &base_runs));
  double base_mean = 0, spread = 0;
  mean_sd(base_runs, &base_mean, &spread);
  std::printf("base: mean val_bpb %.4f over %d seed(s), seed spread (sample s.d.) %.4f\n", base_mean, nseeds, spread);

  std::vector<LeverRow> rows;
  FRONTIER_RETURN_IF_ERROR(lever_rows(pick, lr_scale, levers, base_runs[0], &rows));
  const std::vector<const Lever*> keep = lever_table(pick, rows, spread);
  if (keep.empty()) {
    choice->note = "no lever beat the base on the first seed; the base is kept";
    std::printf("%s\n", choice->note.c_str());
    return ok_status();
  }
  LeverChoice combo;
  FRONTIER_RETURN_IF_ERROR(combination_runs(pick, lr_scale, keep, &combo));
  if (combo.runs.size() != base_runs.size()) {
    choice->note = combo.names + " failed to train on some seed; the base is kept";
    std::printf("%s\n", choice->note.c_str());
    return ok_status();
  }
  const bool take = decide_combination(combo.names, base_runs, base_mean, combo.runs, &combo.mean, &combo.note);
  std::printf("%s\n", combo.note.c_str());
  if (take) *choice = combo;
  else choice->note = combo.note;
  return ok_status();
}

// The base at the pick's shape and learning rates on every seed (*runs: val_bpb per seed).
Status Advisor::lever_base_runs(const Candidate& pick, double lr_scale, std::vector<double>* runs) {
  const uint64_t seed0 = static_cast<uint64_t>(settings.seed);
  const int nseeds = std::max(1, o.seeds);
  for (int k = 0; k < nseeds; k++) {
    double m = 0;
    FRONTIER_RETURN_IF_ERROR(run_at_budget(pick.label() + fmt(", seed %.0f", double(seed0 + k)), o.base, &pick,
                                           pick.step_s, 0, &m, lr_scale, {}, seed0 + k));
    if (m <= 0) return Status::error("advise: the base did not train on seed " + std::to_string(seed0 + k));
    runs->push_back(m);
  }
  return ok_status();
}

// Each lever alone on the first seed, at its own step time (the base's when within the timing's noise); a lever
// that failed to train is left out (run_at_budget said why).
Status Advisor::lever_rows(const Candidate& pick, double lr_scale, const std::vector<Lever>& levers,
                           double base_first, std::vector<LeverRow>* rows) {
  const uint64_t seed0 = static_cast<uint64_t>(settings.seed);
  Config pc = candidate_config(pick);
  for (const Lever& l : levers) {
    if (StopSignals::received()) return Status::error("advise: stopped by a signal");
    Config lc = pc;
    ConfigSchema schema = train_schema();
    for (const auto& [k, v] : l.sets) FRONTIER_RETURN_IF_ERROR(schema.apply_set(k + "=" + v, &lc));
    double own = pick.step_s;
    if (!l.same_cost) FRONTIER_RETURN_IF_ERROR(lever_step_time(pc, lc, "lever " + l.name, pick, &own));
    // Within 3% of the base's step time (the timing's own noise here): the base's probe, the same steps.
    const bool shared = std::fabs(own / pick.step_s - 1) < 0.03;
    LeverRow r{&l, shared ? pick.step_s : own, 0, 0, shared, false};
    FRONTIER_RETURN_IF_ERROR(run_at_budget(pick.label() + " + " + l.name, o.base, &pick, r.step_s, 0, &r.bpb, lr_scale,
                                           l.sets, seed0));
    if (r.bpb <= 0) continue;  // failed: said above
    r.gain = base_first - r.bpb;
    r.helps = r.gain > 0;  // a candidate for the combination, which the seeds then decide
    rows->push_back(r);
  }
  return ok_status();
}

// The levers' table, printed; the levers that beat the base on the first seed, the largest gain first.
std::vector<const Lever*> Advisor::lever_table(const Candidate& pick, const std::vector<LeverRow>& rows,
                                               double spread) const {
  std::printf("\n%-20s %9s %7s %9s %9s  %s\n", "lever", "step s", "steps", "val_bpb", "gain", "verdict (the paired "
              "gain on the first seed)");
  std::vector<const Lever*> keep;
  std::map<std::string, double> gain_of;
  for (const LeverRow& r : rows) {
    const double cost = r.step_s / pick.step_s - 1;
    std::string verdict = r.helps ? (r.gain > spread ? "better, beyond the seed spread" : "better, within the seed spread")
                                  : r.gain == 0 ? "no change" : "worse";
    if (std::fabs(cost) > 0.10)
      verdict += fmt(", step %+.0f%%: moves the shapes (timed again with it if it is chosen)", 100 * cost);
    else if (r.shared_step)
      verdict += ", same step time";
    std::printf("%-20s %9.4f %7lld %9.4f %+9.4f  %s\n", r.lever->name.c_str(), r.step_s,
                static_cast<long long>(o.budget / r.step_s), r.bpb, r.gain, verdict.c_str());
    if (r.helps) keep.push_back(r.lever), gain_of[r.lever->name] = r.gain;
  }
  // Two levers setting one key differently (swiglu and leaky_relu2): the larger gain's.
  std::sort(keep.begin(), keep.end(), [&](const Lever* a, const Lever* b) { return gain_of[a->name] > gain_of[b->name]; });
  return keep;
}

// The kept levers merged (a lever setting a key a larger gain's lever sets differently is left out: *sets, *names
// "a+b"), timed unless every one costs the base's step, and trained on every seed (*runs: those that trained).
Status Advisor::combination_runs(const Candidate& pick, double lr_scale, const std::vector<const Lever*>& keep,
                                 LeverChoice* c) {
  const uint64_t seed0 = static_cast<uint64_t>(settings.seed);
  const int nseeds = std::max(1, o.seeds);
  std::vector<const Lever*> combo;
  for (const Lever* l : keep) {
    std::map<std::string, std::string> trial = c->sets;
    std::vector<const Lever*> one = {l};
    if (merge_levers(one, &trial).ok()) c->sets = trial, combo.push_back(l);
    else std::printf("%s left out: it sets a key a larger gain's lever sets differently\n", l->name.c_str());
  }
  for (const Lever* l : combo) c->names += (c->names.empty() ? "" : "+") + l->name;
  Config pc = candidate_config(pick);
  Config cc = pc;
  ConfigSchema schema = train_schema();
  for (const auto& [k, v] : c->sets) FRONTIER_RETURN_IF_ERROR(schema.apply_set(k + "=" + v, &cc));
  bool same_cost = true;
  for (const Lever* l : combo) same_cost = same_cost && l->same_cost;
  c->step_s = pick.step_s;
  if (!same_cost) FRONTIER_RETURN_IF_ERROR(lever_step_time(pc, cc, "levers " + c->names, pick, &c->step_s));
  if (std::fabs(c->step_s / pick.step_s - 1) < 0.03) c->step_s = pick.step_s;
  std::printf("\ncombining %s on %d seed(s)\n", c->names.c_str(), nseeds);
  for (int k = 0; k < nseeds; k++) {
    double m = 0;
    FRONTIER_RETURN_IF_ERROR(run_at_budget(pick.label() + " + " + c->names + fmt(", seed %.0f", double(seed0 + k)),
                                           o.base, &pick, c->step_s, 0, &m, lr_scale, c->sets, seed0 + k));
    if (m > 0) c->runs.push_back(m);
  }
  return ok_status();
}

// Paired by seed: the base and the combination share each seed's initialisation and data order, which move
// val_bpb far more than most levers do (measured: a seed spread of 0.024 against paired differences within 0.003
// of each other), so the per-seed differences are the measurement; their standard error decides. Returns whether
// the combination is taken; *note says why.
bool Advisor::decide_combination(const std::string& names, const std::vector<double>& base_runs, double base_mean,
                                 const std::vector<double>& combo_runs, double* combo_mean, std::string* note,
                                 const std::string& against) const {
  const int nseeds = std::max(1, o.seeds);
  double combo_sd = 0, diff = 0, diff_sd = 0;
  mean_sd(combo_runs, combo_mean, &combo_sd);
  std::vector<double> diffs;
  for (size_t k = 0; k < combo_runs.size(); k++) diffs.push_back(base_runs[k] - combo_runs[k]);
  mean_sd(diffs, &diff, &diff_sd);
  const double se = diff_sd / std::sqrt(static_cast<double>(nseeds));
  const bool take = nseeds > 1 ? diff > 2 * se && diff > 0 : diff > 0;
  *note = names + fmt(": mean val_bpb %.4f", *combo_mean) + " vs " + against + fmt("'s %.4f", base_mean) + " over " +
          std::to_string(nseeds) + " seed(s), paired difference " + fmt("%.4f", diff) +
          (nseeds > 1 ? " +- " + fmt("%.4f", se) + " (s.e.)" : std::string(" (one seed: no standard error)")) + ": " +
          (take ? "taken" : nseeds > 1 ? "not beyond twice its standard error; " + against + " is kept"
                                       : "not better; " + against + " is kept");
  return take;
}

// The shapes again with the chosen levers in the base (advise.h). A lever that changes the step's cost changes the
// tokens each shape's budget buys, and not by one factor for every shape (windows cut attention, a larger share of
// a long sequence's or a deep stack's step), so every candidate's step is timed with the levers (back to back with
// its own, cached), the loss model ranks the candidates at the tokens that step buys (it was fitted without the
// levers: their effect beyond the step's cost is taken to be the same at every shape, which leaves the ranking as
// it is), and the best K of each sequence length, the pick's shape aside, are trained with the levers on the first
// seed. One that beats the pick with the levers there is trained on every seed and taken when its paired
// difference is beyond twice its standard error, as the combination was; the best mean of those taken wins.
Status Advisor::reshape(const Candidate& pick, double lr_scale, const LeverChoice& ch, Candidate* out, double* bpb,
                        std::string* note) {
  const uint64_t seed0 = static_cast<uint64_t>(settings.seed);
  const int nseeds = std::max(1, o.seeds);
  auto same_shape = [](const Candidate& a, const Candidate& b) { return a.depth == b.depth && a.T == b.T && a.B == b.B; };
  std::printf("\nthe shapes again with %s in the base: its step is %+.0f%% of the base's at %s (--reshape-above "
              "%.0f%%), which moves the tokens each shape buys\n", ch.names.c_str(),
              100 * (ch.step_s / pick.step_s - 1), pick.label().c_str(), 100 * o.reshape_above);
  ConfigSchema schema = train_schema();
  std::vector<Candidate> lc = cands;
  for (Candidate& c : lc) {
    if (StopSignals::received()) return Status::error("advise: stopped by a signal");
    Status timed = ok_status();
    if (same_shape(c, pick)) {
      c.step_s = ch.step_s;
    } else {
      Config bc = candidate_config(c), cc = bc;
      for (const auto& [k, v] : ch.sets) FRONTIER_RETURN_IF_ERROR(schema.apply_set(k + "=" + v, &cc));
      double own = c.step_s;
      timed = lever_step_time(bc, cc, "levers " + ch.names + " at " + c.label(), c, &own);
      c.step_s = own;
    }
    at_budget(&c);
    c.predicted = model.predict(c.n_ne, double(std::max<int64_t>(c.tokens, 1)), c.recipe);
    if (!timed.ok()) c.excluded = "the levers do not run at this shape: " + timed.message();  // e.g. a window > T
  }
  std::vector<Candidate*> order;
  for (Candidate& c : lc) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [](const Candidate* a, const Candidate* b) {
    if (a->excluded.empty() != b->excluded.empty()) return a->excluded.empty();
    return a->predicted < b->predicted;
  });
  std::printf("  %-16s %9s %9s %7s %8s %6s %9s  %s\n", "shape", "base s", "levers s", "change", "steps", "tokens",
              "predicted", "");
  for (const Candidate* c : order) {
    const Candidate& b = cands[static_cast<size_t>(c - lc.data())];
    std::printf("  %-16s %9.4f %9.4f %+6.0f%% %8lld %6s %9.4f  %s\n", c->label().c_str(), b.step_s, c->step_s,
                100 * (c->step_s / b.step_s - 1), static_cast<long long>(c->steps), si(double(c->tokens)).c_str(),
                c->predicted, !c->excluded.empty() ? ("excluded: " + c->excluded).c_str()
                                                   : same_shape(*c, pick) ? "(the pick: measured above)" : "");
  }
  *out = lc[static_cast<size_t>(std::find_if(lc.begin(), lc.end(), [&](const Candidate& c) {
                                   return same_shape(c, pick);
                                 }) - lc.begin())];
  *bpb = ch.mean;
  std::vector<const Candidate*> tries;
  for (size_t r = 0; r < o.seq_lens.size(); r++) {
    int k = 0;
    for (const Candidate* c : order)
      if (c->excluded.empty() && c->recipe == static_cast<int>(r) && !same_shape(*c, pick) &&
          k < std::max(1, o.validate))
        tries.push_back(c), k++;
  }
  std::string taken;
  for (const Candidate* c : tries) {
    const std::string name = c->label() + " + " + ch.names;
    double first = 0;
    FRONTIER_RETURN_IF_ERROR(run_at_budget(name, o.base, c, c->step_s, c->predicted, &first, lr_scale, ch.sets, seed0));
    if (first <= 0) continue;
    if (first >= ch.runs[0]) {
      std::printf("  %s: not better than %s + %s on the first seed (%.4f)\n", c->label().c_str(),
                  pick.label().c_str(), ch.names.c_str(), ch.runs[0]);
      continue;
    }
    std::vector<double> runs = {first};
    for (int k = 1; k < nseeds; k++) {
      double m = 0;
      FRONTIER_RETURN_IF_ERROR(run_at_budget(name + fmt(", seed %.0f", double(seed0 + k)), o.base, c, c->step_s, 0,
                                             &m, lr_scale, ch.sets, seed0 + k));
      if (m > 0) runs.push_back(m);
    }
    if (runs.size() != ch.runs.size()) continue;
    double mean = 0;
    std::string why;
    const bool take = decide_combination(name, ch.runs, ch.mean, runs, &mean, &why, pick.label() + " + " + ch.names);
    std::printf("  %s\n", why.c_str());
    if (take && mean < *bpb) *out = *c, *bpb = mean, taken = why;
  }
  *note = taken.empty() ? "the shapes again with " + ch.names + ": " + pick.label() + " kept"
                        : "the shapes again with " + ch.names + ": " + taken;
  std::printf("%s\n", note->c_str());
  return ok_status();
}

}  // namespace

Status run_advise(const AdviseOptions& o) {
  if (!o.chart.empty()) {
    // The chart of every validation recorded under the cache (all data sets and recipes), by data set.
    const std::string dir = o.cache.empty() ? frontier_cache_dir() + "/advise" : o.cache;
    std::vector<json> rows;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      std::ifstream f(e.path() / "validations.jsonl");
      std::string line;
      while (std::getline(f, line)) {
        try {
          if (!line.empty()) rows.push_back(json::parse(line));
        } catch (const std::exception&) {
          return Status::error((e.path() / "validations.jsonl").string() + ": a line that is not JSON");
        }
      }
    }
    if (ec) return Status::error("cannot read " + dir + ": " + ec.message());
    if (rows.empty()) return Status::error("no validated runs under " + dir + ": run `frontier advise --budget S "
                                           "--compare CONFIG` first");
    FRONTIER_RETURN_IF_ERROR(write_file_atomic(o.chart, budget_chart_svg(rows)));
    std::printf("advise: chart of %zu runs written to %s\n", rows.size(), o.chart.c_str());
    return ok_status();
  }
  if (o.depths.empty() || o.seq_lens.empty()) return Status::error("advise: no depths or sequence lengths to try");
  std::vector<Lever> levers;
  FRONTIER_RETURN_IF_ERROR(parse_levers(o.levers, &levers));  // before any measurement
  StopSignals stop("\nfrontier advise: stopping after the current run (again to quit at once)\n");
  Advisor a(o);
  FRONTIER_RETURN_IF_ERROR(a.setup());
  FRONTIER_RETURN_IF_ERROR(a.measure_speeds());
  FRONTIER_RETURN_IF_ERROR(a.sweep());
  FRONTIER_RETURN_IF_ERROR(a.fit());
  a.predict();
  std::vector<const Candidate*> order;
  for (const auto& c : a.cands)
    if (c.excluded.empty()) order.push_back(&c);
  std::sort(order.begin(), order.end(), [](const Candidate* x, const Candidate* y) {
    return x->predicted < y->predicted;
  });
  // The loss model ranks shapes within a sequence length better than across them (its per-length term is fitted
  // from few points, and a longer context pays more the longer the training: measured, docs/codesign.md), so the
  // best K of each sequence length are trained at the full budget and the advice is the best measured.
  std::vector<const Candidate*> picks;
  for (size_t r = 0; r < o.seq_lens.size(); r++) {
    int k = 0;
    for (const Candidate* c : order)
      if (c->recipe == static_cast<int>(r) && k < o.validate) picks.push_back(c), k++;
  }
  std::vector<double> measured;
  FRONTIER_RETURN_IF_ERROR(a.validate(picks, &measured));
  size_t best = picks.size();
  for (size_t i = 0; i < picks.size(); i++)
    if (measured[i] > 0 && (best == picks.size() || measured[i] < measured[best])) best = i;
  if (best == picks.size()) {
    FRONTIER_RETURN_IF_ERROR(a.write_advice(*order[0], 0, ""));
  } else {
    // The learning rate: the best measured shape again at each multiple of the base's rates.
    double best_bpb = measured[best], best_scale = 1.0;
    int runs = static_cast<int>(picks.size());
    if (std::any_of(o.lr_scales.begin(), o.lr_scales.end(), [](double sc) { return sc != 1.0; }))
      std::printf("\ntraining %s at the full budget with the base's learning rates scaled\n",
                  picks[best]->label().c_str());
    for (double sc : o.lr_scales) {
      if (sc == 1.0) continue;
      double m = 0;
      FRONTIER_RETURN_IF_ERROR(a.run_at_budget(picks[best]->label() + fmt(", learning rates x %g", sc), o.base,
                                               picks[best], picks[best]->step_s, 0, &m, sc));
      runs++;
      if (m > 0 && m < best_bpb) best_bpb = m, best_scale = sc;
    }
    LeverChoice choice;
    FRONTIER_RETURN_IF_ERROR(a.lever_stage(*picks[best], best_scale, &choice));
    Candidate advised = *picks[best];
    double advised_bpb = best_bpb;
    std::string how = "the best measured of " + std::to_string(runs) + " trained at the full budget";
    std::string note = choice.note;
    if (!choice.sets.empty()) {
      how = "the mean over " + std::to_string(std::max(1, o.seeds)) + (o.seeds > 1 ? " seeds" : " seed") +
            " with the levers";
      advised.step_s = choice.step_s;
      a.at_budget(&advised);
      advised_bpb = choice.mean;
      if (o.reshape_above == 0 || std::fabs(choice.step_s / picks[best]->step_s - 1) > o.reshape_above) {
        std::string reshape_note;
        FRONTIER_RETURN_IF_ERROR(a.reshape(*picks[best], best_scale, choice, &advised, &advised_bpb, &reshape_note));
        note += "; " + reshape_note;
      }
    }
    FRONTIER_RETURN_IF_ERROR(a.write_advice(advised, advised_bpb, how, best_scale, choice.sets, note));
    const std::string lr_note = best_scale == 1.0 ? "" : fmt(", learning rates x %g", best_scale);
    json row = {{"label", "advised (" + advised.label() + lr_note + ")"}, {"shape", advised.label()},
                {"advice", true}, {"config", o.base}, {"budget", o.budget}, {"step_s", advised.step_s},
                {"val_bpb", advised_bpb}, {"predicted", advised.predicted}, {"data", a.data_dir},
                {"machine", a.machine}, {"when", static_cast<int64_t>(std::time(nullptr))}};
    if (best_scale != 1.0) row["lr_scale"] = best_scale;
    if (!choice.sets.empty()) row["levers"] = sets_key(choice.sets);
    FRONTIER_RETURN_IF_ERROR(a.append_validation(row));
  }
  FRONTIER_RETURN_IF_ERROR(a.compare());
  return ok_status();
}

}  // namespace frontier
