#include "bench/bench.h"

#include <dlfcn.h>
#include <unistd.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include "autograd/tape.h"
#include "calibrate/calibrate.h"
#include "kernels/attention.h"
#include "bench/onednn_peer.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "model/gpt.h"
#include "model/model_config.h"
#include "optim/optim.h"
#include "util/trace.h"
#include "util/subprocess.h"
#include "train/schema.h"

namespace frontier {

namespace {

const std::string kTcmalloc = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";   // libtcmalloc-minimal4
const std::string kBlis = "/usr/lib/x86_64-linux-gnu/blis-pthread/libblas.so.3";      // libblis4-pthread

using Clock = std::chrono::steady_clock;

// cblas_sgemm from Debian's OpenBLAS, if installed (libopenblas0-pthread).
struct OpenBlas {
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                         int);
  using SetThreads = void (*)(int);
  Sgemm sgemm = nullptr;
  std::string path;
  OpenBlas(int threads) {
    for (const char* name : {"libopenblas.so.0", "libopenblasp.so.0", "libopenblas.so"}) {
      void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (!h) continue;
      sgemm = reinterpret_cast<Sgemm>(dlsym(h, "cblas_sgemm"));
      auto set = reinterpret_cast<SetThreads>(dlsym(h, "openblas_set_num_threads"));
      if (set) set(threads);
      if (sgemm) {
        path = name;
        break;
      }
    }
  }
};

template <typename F>
double best_seconds(int repeats, F fn) {
  fn();  // warm-up (packing buffers, page faults)
  double best = 1e30;
  for (int r = 0; r < repeats; r++) {
    auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// Best of `repeats` for two functions timed in alternating rounds, so that drift in the machine's speed (these VMs
// are noisy) hits both alike. Between rounds it sleeps 200 ms: OpenBLAS's worker threads (and OpenMP's) spin for a
// while after a call and would otherwise steal a core from the other library's first calls.
template <typename F, typename G>
std::pair<double, double> best_pair(int repeats, F f, G g) {
  auto best_of = [](int n, auto fn) {
    double b = 1e30;
    for (int r = 0; r < n; r++) {
      auto t0 = Clock::now();
      fn();
      b = std::min(b, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return b;
  };
  double bf = 1e30, bg = 1e30;
  for (int round = 0; round < std::max(1, repeats); round++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    f();  // warm-up: packing buffers, thread pool
    bf = std::min(bf, best_of(2, f));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    g();
    bg = std::min(bg, best_of(2, g));
  }
  return {bf, bg};
}

// Runs fn with `threads` OpenMP threads, then restores the previous count.
template <typename F>
auto with_threads(int threads, F fn) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  auto r = fn();
  omp_set_num_threads(saved);
  return r;
}

// One run of python/torch_speed.py (the same GPT and optimizer in PyTorch) with env ("KEY=VALUE") added; its JSON
// line, or null if it failed or took over 30 minutes (argv, no shell: util/subprocess.h). stop_above > 0: the
// script stops its first step at that many seconds (its JSON then says "stopped", tokens/s an upper bound).
nlohmann::json run_torch(const std::string& script, const std::vector<std::string>& env, int depth, int64_t T, int B,
                         int threads, int steps, const std::string& precision, double stop_above) {
  Subprocess p;
  char stop[32];
  std::snprintf(stop, sizeof(stop), "%.3f", stop_above);
  p.argv = {"/usr/bin/python3", script, "--json", "--depth", std::to_string(depth), "--seq-len", std::to_string(T),
            "--batch", std::to_string(B), "--threads", std::to_string(threads), "--steps", std::to_string(steps),
            "--precision", precision, "--stop-above", stop};
  p.env = env;
  p.stderr_path = "/dev/null";
  p.timeout_s = 1800;
  SubprocessResult r;
  if (!run_subprocess(p, &r).ok() || !r.ok()) return nullptr;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

bool file_exists(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

std::vector<float> rand_vec(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// The precisions timed: fp32 always, bf16 where the CPU multiplies bf16 natively (or when asked for).
std::vector<Precision> timed_precisions(const BenchOptions& o) {
  std::vector<Precision> precs = {Precision::kFp32};
  if (o.bf16 > 0 || (o.bf16 < 0 && active_isa() >= Isa::kAvx512Bf16)) precs.push_back(Precision::kBf16);
  return precs;
}

// PyTorch as users run it: fp32 (stock, tcmalloc, BLIS + tcmalloc preloaded) and as nanochat trains, bf16
// autocast around forward + loss with Newton-Schulz in bf16 (stock and tcmalloc).
struct TorchVariant {
  std::string name;
  std::vector<std::string> env;  // KEY=VALUE
  std::string precision;
  bool uses(const std::string& lib) const {
    for (const auto& e : env)
      if (e.find(lib) != std::string::npos) return true;
    return false;
  }
};

std::vector<TorchVariant> torch_variants(int threads) {
  return {
      {"stock", {}, "fp32"},
      {"tcmalloc", {"LD_PRELOAD=" + kTcmalloc}, "fp32"},
      {"blis+tcmalloc", {"LD_PRELOAD=" + kBlis + " " + kTcmalloc, "BLIS_NUM_THREADS=" + std::to_string(threads)},
       "fp32"},
      {"bf16", {}, "bf16"},
      {"bf16+tcmalloc", {"LD_PRELOAD=" + kTcmalloc}, "bf16"},
  };
}

// Mean seconds of forward+backward (accum micro-batches of (B, T) tokens x, targets y) and of the optimizer over
// `steps` timed steps, after one warm-up step.
std::pair<double, double> time_train_steps(Gpt& gpt, Optimizer& opt, const std::vector<int32_t>& x,
                                           const std::vector<int32_t>& y, int B, int64_t T, Precision prec,
                                           int accum, int steps) {
  double fb = 0, op = 0;
  for (int i = 0; i <= steps; i++) {
    auto t0 = Clock::now();
    gpt.zero_grad();
    for (int a = 0; a < accum; a++) {
      Tape tape;
      tape.set_precision(prec);
      Var loss = gpt.forward(tape, x.data(), y.data(), B, static_cast<int>(T));
      tape.backward(loss, 1.f / static_cast<float>(accum));
    }
    auto t1 = Clock::now();
    opt.step(1.f, 0.9f, 0.f);
    auto t2 = Clock::now();
    if (i == 0) continue;
    fb += std::chrono::duration<double>(t1 - t0).count();
    op += std::chrono::duration<double>(t2 - t1).count();
  }
  return std::make_pair(fb / steps, op / steps);
}

// One `frontier bench` run, part by part in the order of its report: the machine and the peers, then (o.kernels)
// GEMM, attention and the memory-bound ops, then (o.train) training steps per depth and precision. The members are
// built in the order the measurements need: the ceilings (which may measure) before the peers are loaded.
class BenchRun {
 public:
  BenchRun(const BenchOptions& o, BenchReport* out)
      : o_(o),
        J_(out->json),
        precs_(timed_precisions(o)),
        ceil32_(machine_ceilings(threads_, Precision::kFp32, o.peak_gflops, o.mem_gbs)),
        ceil16_(machine_ceilings(threads_, Precision::kBf16, o.peak_gflops, ceil32_.mem_gbs)),
        blas_(threads_) {}
  Status run();

 private:
  const Ceilings& ceiling(Precision p) const { return p == Precision::kBf16 ? ceil16_ : ceil32_; }
  void describe_machine();
  void bench_gemm();
  void bench_attention();
  void bench_memory_ops();
  Status bench_train();
  Status bench_train_config(size_t ci, Precision prec, const std::vector<TorchVariant>& variants,
                            nlohmann::json* torch_rows);

  const BenchOptions& o_;
  nlohmann::json& J_;  // the report's rows, as they are measured
  const int threads_ = omp_get_max_threads();
  const std::vector<Precision> precs_;
  const Ceilings ceil32_, ceil16_;
  OpenBlas blas_;
  OneDnnMatmul dnnl_;
};

Status BenchRun::run() {
  describe_machine();
  if (o_.kernels) {
    bench_gemm();
    bench_attention();
    bench_memory_ops();
  }
  if (o_.train) FRONTIER_RETURN_IF_ERROR(bench_train());
  return ok_status();
}

void BenchRun::describe_machine() {
  const double peak = ceil32_.peak_gflops, mem = ceil32_.mem_gbs;
  const std::string src = ceil32_.source;
  J_ = {{"machine", {{"threads", threads_}, {"fma_peak_gflops", peak}, {"mem_gbs", mem}, {"peak_source", src},
                     {"isa", isa_name(active_isa())}, {"cpu", cpu_features().cpu_name},
                     {"gemm_kernel", gemm_kernel(Precision::kFp32).name},
                     {"peaks", {{"fp32", {{"unit", ceil32_.unit}, {"gflops", ceil32_.peak_gflops}}},
                                {"bf16", {{"unit", ceil16_.unit}, {"gflops", ceil16_.peak_gflops}}}}},
                     {"bf16_gemm_kernel", gemm_kernel(Precision::kBf16).name}}},
        {"gemm", nlohmann::json::array()}, {"attention", nlohmann::json::array()}, {"train", nlohmann::json::array()}};
  J_["machine"]["openblas"] = blas_.sgemm ? blas_.path : "not installed (apt-get install libopenblas0-pthread)";
  J_["machine"]["onednn"] = dnnl_.available() ? dnnl_.description() : dnnl_.error();
}

// The baseline model's matmuls at B*T = 4096 tokens (dim 512, MLP 2048, vocab 8192), in the three forms, against
// the peer of each precision.
void BenchRun::bench_gemm() {
  struct G {
    const char* what;
    bool ta, tb;
    int64_t M, N, K;
  };
  const G shapes[] = {
      {"qkv fwd   x@W^T", false, true, 4096, 512, 512},    {"fc fwd    x@W^T", false, true, 4096, 2048, 512},
      {"proj fwd  x@W^T", false, true, 4096, 512, 2048},   {"lm_head   x@W^T", false, true, 4096, 8192, 512},
      {"fc dx     g@W", false, false, 4096, 512, 2048},    {"lm dx     g@W", false, false, 4096, 512, 8192},
      {"fc dW     g^T@x", true, false, 2048, 512, 4096},   {"lm dW     g^T@x", true, false, 8192, 512, 4096},
      {"qkv dW    g^T@x", true, false, 512, 512, 4096},
  };
  for (const auto& s : shapes)
    for (Precision prec : precs_) {
      const int64_t lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
      auto A = rand_vec(s.M * s.K, 1), B = rand_vec(s.K * s.N, 2);
      std::vector<float> C(s.M * s.N);
      const double flops = 2.0 * s.M * s.N * s.K, pk = ceiling(prec).peak_gflops;
      auto ours = [&] { gemm(prec, s.ta, s.tb, s.M, s.N, s.K, 1.f, A.data(), lda, B.data(), ldb, 0.f, C.data(), s.N); };
      // The peer: OpenBLAS's sgemm for fp32, oneDNN's bf16 matmul (operands converted beforehand) for bf16.
      bool have_peer = false;
      std::string peer = prec == Precision::kBf16 ? "oneDNN" : "OpenBLAS";
      if (prec == Precision::kFp32) {
        have_peer = blas_.sgemm != nullptr;
      } else if (dnnl_.available()) {
        Status st = dnnl_.prepare(s.ta, s.tb, s.M, s.N, s.K, A.data(), lda, B.data(), ldb, s.N);
        have_peer = st.ok();
        if (!st.ok()) std::fprintf(stderr, "bench: oneDNN: %s\n", st.message().c_str());
      }
      auto theirs = [&] {
        if (!have_peer) return;
        if (prec == Precision::kBf16) {
          (void)dnnl_.run(C.data());
        } else {
          blas_.sgemm(101, s.ta ? 112 : 111, s.tb ? 112 : 111, s.M, s.N, s.K, 1.f, A.data(), lda, B.data(), ldb,
                      0.f, C.data(), s.N);  // CblasRowMajor, CblasNoTrans / CblasTrans
        }
      };
      auto [t, tb] = best_pair(o_.gemm_repeats, ours, theirs);
      nlohmann::json row = {{"op", s.what}, {"M", s.M}, {"N", s.N}, {"K", s.K}, {"gflops", flops / t / 1e9},
                            {"precision", precision_name(prec)}, {"kernel", gemm_kernel(prec).name},
                            {"pct_peak", 100.0 * flops / t / 1e9 / pk}};
      if (o_.scaling && threads_ > 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the peer's spinning threads settle
        const double t1 = with_threads(1, [&] { return best_seconds(o_.gemm_repeats, ours); });
        row["gflops_1t"] = flops / t1 / 1e9;
        row["thread_speedup"] = t1 / t;
      }
      if (have_peer) {
        row["peer"] = peer;
        row["peer_gflops"] = flops / tb / 1e9;
        row["ratio_vs_peer"] = tb / t;
      }
      J_["gemm"].push_back(row);
    }
}

// Attention forward + backward at the baseline's head shape.
void BenchRun::bench_attention() {
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (Precision prec : precs_)
  for (int64_t T : {256, 512, 2048}) {
    const int64_t B = T > 512 ? 2 : 8, H = 4, D = 128, nq = B * T * H * D;
    const double peak = ceiling(prec).peak_gflops;
    auto q = rand_vec(nq, 3), k = rand_vec(nq, 4), v = rand_vec(nq, 5), go = rand_vec(nq, 6);
    std::vector<float> out(nq), lse(B * H * T), dq(nq), dk(nq), dv(nq);
    // Causal FLOPs (as the model's estimate counts them): 2 GEMMs forward, 4 backward (+1 recompute), each
    // 2*T*T*D/2 per head.
    const double fl_f = 2.0 * 2 * B * H * T * T * D / 2, fl_b = 5.0 * 2 * B * H * T * T * D / 2;
    double tf = best_seconds(o_.gemm_repeats, [&] {
      flash_attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), B, T, H, H, D, prec);
    });
    double tbk = best_seconds(o_.gemm_repeats, [&] {
      flash_attention_backward(dq.data(), dk.data(), dv.data(), go.data(), out.data(), lse.data(), q.data(),
                               k.data(), v.data(), B, T, H, H, D, prec);
    });
    J_["attention"].push_back({{"precision", precision_name(prec)}, {"B", B}, {"T", T}, {"H", H}, {"D", D},
                               {"fwd_gflops", fl_f / tf / 1e9}, {"bwd_gflops", fl_b / tbk / 1e9},
                               {"fwd_pct_peak", 100 * fl_f / tf / 1e9 / peak},
                               {"bwd_pct_peak", 100 * fl_b / tbk / 1e9 / peak},
                               {"fwd_bwd_pct_peak", 100 * (fl_f + fl_b) / (tf + tbk) / 1e9 / peak}});
  }
}

// Memory-bound ops at the baseline's shapes (4096 tokens, dim 512, MLP 2048, 4 heads of 128, vocab 8192),
// forward and backward through the autograd ops, timed by their profiler scopes so that the bytes counted are
// those `frontier profile` reports (compulsory traffic); best of the repeats against the calibrated bandwidth.
void BenchRun::bench_memory_ops() {
  const double mem = ceil32_.mem_gbs;
  const int64_t N = 4096, C = 512, Bq = 8, Tq = 512, Hq = 4, Dq = 128, V = 8192;
  auto xc = rand_vec(N * 4 * C, 7), xv = rand_vec(N * V, 8);
  std::vector<float> gc(N * 4 * C), gv(N * V), lam = {0.9f, 0.1f}, glam(2), cs(Tq * Dq / 2), sn(Tq * Dq / 2);
  for (int64_t i = 0; i < Tq * Dq / 2; i++) cs[i] = std::cos(0.001f * i), sn[i] = std::sin(0.001f * i);
  std::vector<int32_t> tg(N);
  for (int64_t i = 0; i < N; i++) tg[i] = static_cast<int32_t>((i * 7919) % V);
  struct MemOp {
    const char* name;
    std::function<Var(Tape&)> build;  // forward; returns a node whose gradient is seeded with ones
  };
  const MemOp ops[] = {
      {"rmsnorm", [&](Tape& t) { return rmsnorm(t, t.param(xc.data(), gc.data(), {N, C}), 1e-6f); }},
      {"relu2", [&](Tape& t) { return relu2(t, t.param(xc.data(), gc.data(), {N, 4 * C})); }},
      {"scale_add",
       [&](Tape& t) {
         Var a = t.param(xc.data(), gc.data(), {N, C}), b = t.param(xc.data() + N * C, gc.data() + N * C, {N, C});
         Var l = t.param(lam.data(), glam.data(), {2});
         return scale_add(t, a, l, 0, b, l, 1);
       }},
      {"rope_rmsnorm",
       [&](Tape& t) {
         return rope_rmsnorm(t, t.param(xc.data(), gc.data(), {Bq, Tq, Hq, Dq}), cs.data(), sn.data(), 1e-6f);
       }},
      {"softcap_ce",
       [&](Tape& t) { return softcap_cross_entropy(t, t.param(xv.data(), gv.data(), {N, V}), tg.data(), 15.f); }},
  };
  for (const auto& op : ops) {
    std::map<std::string, double> best_ns, flops, bytes;
    for (int r = 0; r <= o_.gemm_repeats; r++) {
      Profiler prof;
      if (r > 0) prof.start();  // the first run warms buffers
      {
        Tape t;
        Var out = op.build(t);
        float* g = t.grad(out);
        std::fill(g, g + t.numel(out), 1.f);
        for (int i = out.id; i >= 0; i--)
          if (t.node({i}).backward && t.node({i}).grad) t.node({i}).backward();
      }
      prof.stop();
      for (const auto& e : prof.events()) {
        auto it = best_ns.find(e.phase);
        if (it == best_ns.end() || e.dur_ns < it->second) best_ns[e.phase] = static_cast<double>(e.dur_ns);
        flops[e.phase] = e.flops, bytes[e.phase] = e.bytes;
      }
    }
    for (const char* ph : {"fwd", "bwd"}) {
      if (!best_ns.count(ph)) continue;
      const double gbs = bytes[ph] / best_ns[ph];
      J_["memory_ops"].push_back({{"op", op.name}, {"phase", ph}, {"mb", bytes[ph] / 1e6},
                                  {"gflops", flops[ph] / best_ns[ph]}, {"gbs", gbs},
                                  {"pct_bandwidth", 100 * gbs / mem}});
    }
  }
}

Status BenchRun::bench_train() {
  const std::vector<TorchVariant> variants = torch_variants(threads_);
  for (size_t ci = 0; ci < o_.depths.size(); ci++) {
    nlohmann::json torch_rows = nullptr;  // PyTorch is timed once per depth, compared with each precision
    for (Precision prec : precs_) FRONTIER_RETURN_IF_ERROR(bench_train_config(ci, prec, variants, &torch_rows));
  }
  return ok_status();
}

// Training steps of the config at o.depths[ci] in one precision: tokens/s and MFU, 1 thread vs all (the first
// config), and PyTorch's tokens/s (timed on the first precision of a depth, *torch_rows kept for the others).
Status BenchRun::bench_train_config(size_t ci, Precision prec, const std::vector<TorchVariant>& variants,
                                    nlohmann::json* torch_rows) {
  const int depth = o_.depths[ci];
  Config cfg = train_schema().defaults();
  cfg.set("model.depth", static_cast<int64_t>(depth));
  const int64_t T = depth <= 4 ? 256 : 512;
  cfg.set("model.seq_len", T);
  ModelShape shape;
  FRONTIER_RETURN_IF_ERROR(derive_model_shape(cfg, &shape));
  const int B = 8;
  Gpt gpt(shape);
  gpt.init_nanochat(1);
  OptimConfig oc;
  oc.ns_precision = prec;
  Optimizer opt(gpt, oc);
  const double peak = ceiling(prec).peak_gflops;
  std::mt19937 g(7);
  std::vector<int32_t> x(B * T), y(B * T);
  for (auto& id : x) id = static_cast<int32_t>(g() % shape.vocab_size);
  for (auto& id : y) id = static_cast<int32_t>(g() % shape.vocab_size);
  const int accum = std::max(1, o_.accum);
  auto run = [&] { return time_train_steps(gpt, opt, x, y, B, T, prec, accum, o_.train_steps); };
  auto [fb, op] = run();
  const double secs = fb + op, tokens = static_cast<double>(B) * T * accum, tps = tokens / secs,
               fpt = gpt.flops_per_token();
  nlohmann::json row = {{"depth", depth}, {"precision", precision_name(prec)}, {"peak_unit", ceiling(prec).unit},
                        {"peak_gflops", peak}, {"dim", shape.dim}, {"seq_len", T}, {"batch", B}, {"accum", accum},
                        {"params_M", gpt.n_params() / 1e6}, {"step_seconds", secs},
                        {"optimizer_seconds", op}, {"tokens_per_sec", tps},
                        {"mfu_pct", 100.0 * tps * fpt / (peak * 1e9)},
                        {"fwd_bwd_mfu_pct", 100.0 * tokens * fpt / fb / (peak * 1e9)},
                        // every FLOP executed: attention's visible pairs (recompute included) and Polar Express
                        {"hfu_pct", 100.0 * (tokens * gpt.hardware_flops_per_token() + opt.muon_flops()) / secs /
                                        (peak * 1e9)},
                        {"optimizer_pct_peak", 100.0 * opt.muon_flops() / op / (peak * 1e9)}};
  if (o_.scaling && ci == 0 && threads_ > 1) {  // 1 thread vs all, on the first (smallest) config, each precision
    auto [fb1, op1] = with_threads(1, run);
    row["tokens_per_sec_1t"] = tokens / (fb1 + op1);
    row["thread_speedup"] = (fb1 + op1) / secs;
  }
  if (!o_.torch_script.empty() && accum == 1 && torch_rows->is_null()) {  // torch_speed.py has no accumulation
    *torch_rows = {{"tokens_per_sec", nlohmann::json::object()}, {"stopped", nlohmann::json::array()}};
    double best_tps = 0;
    for (const auto& v : variants) {
      if (v.uses(kTcmalloc) && !file_exists(kTcmalloc)) continue;
      if (v.uses(kBlis) && !file_exists(kBlis)) continue;
      // A variant whose first step runs past 4x the best one's so far cannot win (bf16 autocast without native bf16
      // runs minutes a step): it is stopped there, and its figure, an upper bound, is marked in the table.
      const double stop_above = best_tps > 0 ? 4.0 * B * T / best_tps : 0.0;
      nlohmann::json r =
          run_torch(o_.torch_script, v.env, depth, T, B, threads_, o_.train_steps, v.precision, stop_above);
      if (r.is_null()) {
        std::fprintf(stderr, "bench: torch (%s) failed at depth %d\n", v.name.c_str(), depth);
        continue;
      }
      (*torch_rows)["tokens_per_sec"][v.name] = r["tokens_per_sec"];
      if (r.value("stopped", false)) (*torch_rows)["stopped"].push_back(v.name);
      else best_tps = std::max(best_tps, r["tokens_per_sec"].get<double>());
    }
  }
  if (!torch_rows->is_null() && !(*torch_rows)["tokens_per_sec"].empty()) {
    row["torch"] = (*torch_rows)["tokens_per_sec"];
    if (!(*torch_rows)["stopped"].empty()) row["torch_stopped"] = (*torch_rows)["stopped"];
    double best = 0;
    for (auto it = row["torch"].begin(); it != row["torch"].end(); ++it)
      if (it.value().get<double>() > best) best = it.value().get<double>(), row["torch_best"] = it.key();
    if (best > 0) row["ratio_vs_torch_best"] = tps / best;
  }
  J_["train"].push_back(row);
  std::fprintf(stderr, "bench: depth %d %s done (%.0f tok/s)\n", depth, precision_name(prec), tps);
  return ok_status();
}

}  // namespace

Status run_bench(const BenchOptions& o, BenchReport* out) { return BenchRun(o, out).run(); }

namespace {

// The PyTorch comparison: one line per training row that has one ("" when none does).
std::string torch_table(const nlohmann::json& train) {
  bool torch = false;
  for (const auto& r : train) torch |= r.contains("torch");
  if (!torch) return "";
  std::string s;
  char buf[640];
  s += "\nPyTorch (python/torch_speed.py: same GPT, Muon + AdamW), tokens/s\n"
       "                        ours  | fp32: stock  tcmalloc  blis+tc | bf16 autocast: stock  tcmalloc | "
       "ours/best\n";
  bool any_stopped = false;
  for (const auto& r : train) {
    if (!r.contains("torch")) continue;
    auto get = [&](const char* k, int width) {  // a stopped variant's figure is marked *
      bool stopped = false;
      for (const auto& n : r.value("torch_stopped", nlohmann::json::array())) stopped |= n == k;
      any_stopped |= stopped;
      char cell[32];
      std::snprintf(cell, sizeof(cell), "%*.0f%s", stopped ? width - 1 : width,
                    r["torch"].contains(k) ? r["torch"][k].get<double>() : 0.0, stopped ? "*" : "");
      return std::string(cell);
    };
    std::snprintf(buf, sizeof(buf), "depth %d seq %-4lld %-4s %7.0f  | %s %s %s | %s %s | %8.2fx\n",
                  r["depth"].get<int>(), r["seq_len"].get<long long>(),
                  r.value("precision", std::string("fp32")).c_str(), r["tokens_per_sec"].get<double>(),
                  get("stock", 11).c_str(), get("tcmalloc", 9).c_str(), get("blis+tcmalloc", 8).c_str(),
                  get("bf16", 20).c_str(), get("bf16+tcmalloc", 9).c_str(), r.value("ratio_vs_torch_best", 0.0));
    s += buf;
  }
  if (any_stopped)
    s += "*: stopped during its first (warm-up) step at 4x the best variant's step time; the figure is an upper "
         "bound\n";
  return s;
}

}  // namespace

std::string BenchReport::table() const {
  std::string s;
  char buf[640];
  const auto& m = json["machine"];
  std::snprintf(buf, sizeof(buf),
                "machine: %s, %d threads, tier %s (fp32 gemm %s, bf16 gemm %s); memory %.1f GB/s; peaks (%s):\n",
                m.value("cpu", std::string("?")).c_str(), m["threads"].get<int>(),
                m.value("isa", std::string("?")).c_str(), m["gemm_kernel"].get<std::string>().c_str(),
                m.value("bf16_gemm_kernel", std::string("?")).c_str(), m["mem_gbs"].get<double>(),
                m["peak_source"].get<std::string>().c_str());
  s += buf;
  if (m.contains("peaks"))
    for (const char* p : {"fp32", "bf16"}) {
      std::snprintf(buf, sizeof(buf), "  %s: %.1f GFLOP/s (%s)\n", p, m["peaks"][p]["gflops"].get<double>(),
                    m["peaks"][p]["unit"].get<std::string>().c_str());
      s += buf;
    }
  std::snprintf(buf, sizeof(buf), "peers: OpenBLAS %s; oneDNN %s\n", m["openblas"].get<std::string>().c_str(),
                m.value("onednn", std::string("-")).c_str());
  s += buf;
  if (!json["gemm"].empty()) {
    s += "\nGEMM               prec       M      N      K   GFLOP/s  %peak  peer      GFLOP/s   ours/peer  "
         "1-thread  2t/1t\n";
    for (const auto& r : json["gemm"]) {
      std::snprintf(buf, sizeof(buf), "%-18s %-4s %6lld %6lld %6lld  %8.1f  %5.1f", r["op"].get<std::string>().c_str(),
                    r.value("precision", std::string("fp32")).c_str(), r["M"].get<long long>(),
                    r["N"].get<long long>(), r["K"].get<long long>(), r["gflops"].get<double>(),
                    r["pct_peak"].get<double>());
      s += buf;
      if (r.contains("peer_gflops")) {
        std::snprintf(buf, sizeof(buf), "  %-8s %8.1f  %8.2fx", r["peer"].get<std::string>().c_str(),
                      r["peer_gflops"].get<double>(), r["ratio_vs_peer"].get<double>());
        s += buf;
      } else {
        s += "  -               -          -";
      }
      if (r.contains("thread_speedup")) {
        std::snprintf(buf, sizeof(buf), "  %8.1f  %5.2fx\n", r["gflops_1t"].get<double>(),
                      r["thread_speedup"].get<double>());
        s += buf;
      } else {
        s += "\n";
      }
    }
  }
  if (!json["attention"].empty()) {
    s += "\nattention (causal)  prec   B    T   H    D   fwd GFLOP/s %peak   bwd GFLOP/s %peak   fwd+bwd %peak\n";
    for (const auto& r : json["attention"]) {
      std::snprintf(buf, sizeof(buf), "%-19s %-4s %3lld %4lld %3lld %4lld   %10.1f %5.1f   %10.1f %5.1f   %13.1f\n", "",
                    r.value("precision", std::string("fp32")).c_str(), r["B"].get<long long>(),
                    r["T"].get<long long>(), r["H"].get<long long>(), r["D"].get<long long>(),
                    r["fwd_gflops"].get<double>(), r["fwd_pct_peak"].get<double>(), r["bwd_gflops"].get<double>(),
                    r["bwd_pct_peak"].get<double>(), r.value("fwd_bwd_pct_peak", 0.0));
      s += buf;
    }
  }
  if (json.contains("memory_ops") && !json["memory_ops"].empty()) {
    s += "\nmemory-bound op (4096 tokens)  phase     MB    GB/s  %bandwidth  GFLOP/s\n";
    for (const auto& r : json["memory_ops"]) {
      std::snprintf(buf, sizeof(buf), "%-29s %5s %6.1f %7.1f %11.1f %8.1f\n", r["op"].get<std::string>().c_str(),
                    r["phase"].get<std::string>().c_str(), r["mb"].get<double>(), r["gbs"].get<double>(),
                    r["pct_bandwidth"].get<double>(), r["gflops"].get<double>());
      s += buf;
    }
  }
  if (!json["train"].empty()) {
    s += "\ntrain step (fwd+bwd+Muon/AdamW)  prec  depth  dim  seq  batch  params  tokens/s   MFU%  fwd+bwd MFU%  "
         "optim%   HFU%  optim %peak   (vs the precision's peak; HFU: every FLOP executed, Polar Express "
         "included)\n";
    for (const auto& r : json["train"]) {
      const std::string batch = r.value("accum", 1) > 1 ? std::to_string(r["batch"].get<int>()) + "x" +
                                                              std::to_string(r["accum"].get<int>())
                                                        : std::to_string(r["batch"].get<int>());
      std::snprintf(buf, sizeof(buf), "%-32s %-4s %6d %4d %4lld %6s %6.1fM %9.0f %6.1f %13.1f %7.1f %6.1f %12.1f\n",
                    "", r.value("precision", std::string("fp32")).c_str(), r["depth"].get<int>(), r["dim"].get<int>(),
                    r["seq_len"].get<long long>(), batch.c_str(), r["params_M"].get<double>(),
                    r["tokens_per_sec"].get<double>(), r["mfu_pct"].get<double>(), r["fwd_bwd_mfu_pct"].get<double>(),
                    100.0 * r["optimizer_seconds"].get<double>() / r["step_seconds"].get<double>(),
                    r.value("hfu_pct", 0.0), r.value("optimizer_pct_peak", 0.0));
      s += buf;
    }
    for (const auto& r : json["train"]) {
      if (!r.contains("thread_speedup")) continue;
      std::snprintf(buf, sizeof(buf), "threads: depth %d %s: %.0f tokens/s on 1 thread, %.0f on %d: %.2fx\n",
                    r["depth"].get<int>(), r.value("precision", std::string("fp32")).c_str(),
                    r["tokens_per_sec_1t"].get<double>(), r["tokens_per_sec"].get<double>(),
                    json["machine"]["threads"].get<int>(), r["thread_speedup"].get<double>());
      s += buf;
    }
    s += torch_table(json["train"]);
  }
  s += targets();
  return s;
}

namespace {
const char* n_ok_word(int ok, int n) { return ok == n ? "met  " : "SHORT"; }
}  // namespace

// The native-precision targets (issue 12), checked against this run's rows; causes of shortfalls are measured in
// docs/performance.md.
std::string BenchReport::targets() const {
  std::string s;
  char buf[400];
  auto line = [&](const char* what, double got_lo, double got_hi, double want, const char* unit, int n_ok, int n) {
    std::snprintf(buf, sizeof(buf), "  %-46s %7.2f..%-7.2f %-2s want >= %.2f%-2s %s (%d of %d)\n", what, got_lo,
                  got_hi, unit, want, unit, n_ok == n ? "met  " : "SHORT", n_ok, n);
    s += buf;
  };
  auto range = [&](const nlohmann::json& rows, const char* prec, const char* key, double want, const char* what,
                   const char* unit) {
    double lo = 1e30, hi = -1e30;
    int n = 0, ok = 0;
    for (const auto& r : rows) {
      if (r.value("precision", std::string("fp32")) != prec || !r.contains(key)) continue;
      const double v = r[key].get<double>();
      lo = std::min(lo, v), hi = std::max(hi, v), n++, ok += v >= want;
    }
    if (n) line(what, lo, hi, want, unit, ok, n);
  };
  s += "\ntargets (issue 12; shortfalls and their measured causes: docs/performance.md)\n";
  range(json["gemm"], "bf16", "pct_peak", 75, "bf16 GEMM, % of the bf16 peak", "%");
  range(json["gemm"], "bf16", "ratio_vs_peer", 1.2, "bf16 GEMM, ours / oneDNN", "x");
  range(json["gemm"], "fp32", "pct_peak", 85, "fp32 GEMM, % of the fp32 peak", "%");
  range(json["gemm"], "fp32", "ratio_vs_peer", 1.0, "fp32 GEMM, ours / OpenBLAS", "x");
  range(json["train"], "bf16", "ratio_vs_torch_best", 1.5, "bf16 training, ours / best PyTorch", "x");
  range(json["train"], "bf16", "mfu_pct", 50, "bf16 training MFU, % of the bf16 peak", "%");
  range(json["train"], "bf16", "thread_speedup", 1.8, "bf16 training, 2 threads / 1", "x");
  range(json["train"], "fp32", "thread_speedup", 1.8, "fp32 training, 2 threads / 1", "x");
  s += speed_targets();
  return s;
}

// Issue 30's targets, per precision this run timed, against its own rows (docs/performance.md has the causes).
std::string BenchReport::speed_targets() const {
  std::string s;
  char buf[400];
  auto range = [&](const nlohmann::json& rows, const std::string& prec, const char* key, double want,
                   const std::string& what, const char* unit, int depth = 0, int64_t T = 0) {
    double lo = 1e30, hi = -1e30;
    int n = 0, ok = 0;
    for (const auto& r : rows) {
      if (r.value("precision", std::string("fp32")) != prec || !r.contains(key)) continue;
      if ((depth && r.value("depth", 0) != depth) || (T && r.value("T", int64_t(0)) != T)) continue;
      const double v = r[key].get<double>();
      lo = std::min(lo, v), hi = std::max(hi, v), n++, ok += v >= want;
    }
    if (!n) return;
    std::snprintf(buf, sizeof(buf), "  %-52s %7.2f..%-7.2f %-2s want >= %.2f%-2s %s (%d of %d)\n",
                  (prec + " " + what).c_str(), lo, hi, unit, want, unit, n_ok_word(ok, n), ok, n);
    s += buf;
  };
  s += "\ntargets (issue 30: speed toward the machine's limit; causes of shortfalls: docs/performance.md)\n";
  for (const std::string prec : {"fp32", "bf16"}) {
    range(json["train"], prec, "mfu_pct", 55, "training MFU at depth 8", "%", 8);
    range(json["train"], prec, "mfu_pct", 50, "training MFU at depth 4", "%", 4);
    range(json["train"], prec, "hfu_pct", 70, "training HFU at depth 8", "%", 8);
    range(json["train"], prec, "fwd_bwd_mfu_pct", 70, "forward+backward MFU", "%");
    range(json["train"], prec, "ratio_vs_torch_best", 1.5, "training, ours / best PyTorch", "x");
    range(json["train"], prec, "optimizer_pct_peak", 80, "optimizer (Polar Express), % of peak", "%");
    range(json["attention"], prec, "fwd_bwd_pct_peak", 60, "attention fwd+bwd at T 2048, % of peak", "%", 0, 2048);
  }
  return s;
}

}  // namespace frontier
