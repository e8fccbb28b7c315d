#include "bench/variants.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "autograd/tape.h"
#include "calibrate/calibrate.h"
#include "kernels/isa.h"
#include "model/gpt.h"
#include "model/model_config.h"
#include "reference/attention.h"
#include "reference/gated_act.h"
#include "reference/key_shift.h"
#include "reference/leaky_relu2.h"
#include "reference/moe.h"
#include "reference/ngram.h"
#include "reference/smear.h"
#include "reference/softcap_ce_multi.h"
#include "train/schema.h"

namespace frontier {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A timed run: returns its seconds (so that a run can leave its set-up out of the time).
using Timed = std::function<double()>;

Timed wall(std::function<void()> fn) {
  return [fn] {
    auto t0 = Clock::now();
    fn();
    return seconds_since(t0);
  };
}

// Best of `repeats` runs, after one warm-up run (packing buffers, the tape's pool, page faults) when warm_up.
double best_seconds(int repeats, const Timed& fn, bool warm_up = true) {
  if (warm_up) fn();
  double best = 1e30;
  for (int r = 0; r < std::max(1, repeats); r++) best = std::min(best, fn());
  return best;
}

// Best of `repeats` for a pair timed in alternating runs, so that drift in the machine's speed (these VMs are
// noisy) hits both sides of a ratio alike.
std::pair<double, double> best_pair(int repeats, const Timed& f, const Timed& g) {
  f(), g();
  double bf = 1e30, bg = 1e30;
  for (int r = 0; r < std::max(1, repeats); r++) bf = std::min(bf, f()), bg = std::min(bg, g());
  return {bf, bg};
}

std::vector<float> rand_vec(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

std::vector<int32_t> rand_ids(size_t n, int64_t V, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = static_cast<int32_t>(g() % V);
  return v;
}

// One forward + backward on a fresh tape at precision prec; returns its seconds. build records the forward
// and returns its outputs, whose gradients are seeded with ones (for a scalar loss, Tape::backward's seed;
// the seeding is left out of the time: in a model the consumer's backward writes it); the nodes' backward
// closures then run in reverse, as Tape::backward does.
double fwd_bwd(Precision prec, const std::function<std::vector<Var>(Tape&)>& build) {
  Tape t;
  t.set_precision(prec);
  auto t0 = Clock::now();
  std::vector<Var> outs = build(t);
  double s = seconds_since(t0);
  int last = -1;
  for (Var v : outs) {
    float* g = t.grad(v);
    std::fill(g, g + t.numel(v), 1.f);
    last = std::max(last, v.id);
  }
  t0 = Clock::now();
  for (int i = last; i >= 0; i--) {
    Node& n = t.node(Var{i});
    if (n.backward && n.grad) n.backward();
  }
  return s + seconds_since(t0);
}

// A parameter tensor with its own value and gradient storage (the tape points into them).
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> value, grad;
  Tensor(std::vector<int64_t> s, uint32_t seed, float scale = 1.f) : shape(std::move(s)) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    value = rand_vec(n, seed, scale);
    grad.assign(n, 0.f);
  }
  Var on(Tape& t) { return t.param(value.data(), grad.data(), shape); }
};

// Visible (query, key) pairs of causal attention over T positions with window W (0: full): sum_t min(t, W)
// + 1.
double attention_pairs(int64_t T, int64_t W) {
  double p = 0;
  for (int64_t t = 0; t < T; t++) p += static_cast<double>(W > 0 ? std::min(t, W) : t) + 1;
  return p;
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof(buf), f, ap);
  va_end(ap);
  return buf;
}

class Report {
 public:
  Report(nlohmann::json* j, double peak32, double peak16) : j_(j), peak32_(peak32), peak16_(peak16) {}
  // gflop: the row's FLOPs in billions (0: not counted, a memory-bound op); ref_s: the reference's time (0:
  // none).
  void row(const std::string& op, Precision p, const std::string& shape, double s, double gflop,
           double ref_s = 0) {
    nlohmann::json r = {{"op", op}, {"precision", precision_name(p)}, {"shape", shape}, {"ms", 1e3 * s}};
    if (gflop > 0) {
      r["gflops"] = gflop / s;
      r["pct_peak"] = 100 * gflop / s / (p == Precision::kBf16 ? peak16_ : peak32_);
    }
    if (ref_s > 0) r["ref_ms"] = 1e3 * ref_s, r["ref_over_fast"] = ref_s / s;
    (*j_)["rows"].push_back(r);
  }
  // want_max: the target is an upper bound (value <= target), else a lower bound.
  void headline(int n, Precision p, const std::string& what, double value, bool want_max, double target,
                const std::string& note) {
    const bool met = want_max ? value <= target : value >= target;
    (*j_)["headlines"].push_back({{"n", n},
                                  {"precision", precision_name(p)},
                                  {"what", what},
                                  {"ratio", value},
                                  {"target", target},
                                  {"want", want_max ? "<=" : ">="},
                                  {"met", met},
                                  {"note", note}});
  }

 private:
  nlohmann::json* j_;
  double peak32_, peak16_;
};

std::string make_table(const nlohmann::json& j) {
  std::string s;
  const auto& m = j["machine"];
  s += fmt("machine: %s, %d threads, tier %s; peaks (%s): fp32 %.1f GFLOP/s (%s), bf16 %.1f GFLOP/s (%s)\n",
           m["cpu"].get<std::string>().c_str(), m["threads"].get<int>(), m["isa"].get<std::string>().c_str(),
           m["peak_source"].get<std::string>().c_str(), m["peaks"]["fp32"]["gflops"].get<double>(),
           m["peaks"]["fp32"]["unit"].get<std::string>().c_str(), m["peaks"]["bf16"]["gflops"].get<double>(),
           m["peaks"]["bf16"]["unit"].get<std::string>().c_str());
  if (j["quick"].get<bool>())
    s += "quick run: a quarter of the tokens (attention at T = 1024); not for comparison\n";
  s += "\nvariant op, fwd+bwd            prec  shape                              ms   GFLOP/s  %peak    ref "
       "ms  "
       "ref/fast\n";
  for (const auto& r : j["rows"]) {
    s += fmt("%-30s %-5s %-28s %9.2f", r["op"].get<std::string>().c_str(),
             r["precision"].get<std::string>().c_str(), r["shape"].get<std::string>().c_str(),
             r["ms"].get<double>());
    s += r.contains("gflops") ? fmt(" %9.1f %6.1f", r["gflops"].get<double>(), r["pct_peak"].get<double>())
                              : fmt(" %9s %6s", "-", "-");
    s += r.contains("ref_ms")
             ? fmt(" %9.2f %8.1fx\n", r["ref_ms"].get<double>(), r["ref_over_fast"].get<double>())
             : fmt(" %9s %9s\n", "-", "-");
  }
  s += "\nheadline ratios (measured in this run)\n";
  std::vector<nlohmann::json> hs(j["headlines"].begin(), j["headlines"].end());
  std::stable_sort(hs.begin(), hs.end(), [](const auto& a, const auto& b) { return a["n"] < b["n"]; });
  for (const auto& h : hs)
    s += fmt("headline %d %-4s %-52s ratio %7.4f  want %s %.2f  %s  %s\n", h["n"].get<int>(),
             h["precision"].get<std::string>().c_str(), h["what"].get<std::string>().c_str(),
             h["ratio"].get<double>(), h["want"].get<std::string>().c_str(), h["target"].get<double>(),
             h["met"].get<bool>() ? "met  " : "SHORT", h["note"].get<std::string>().c_str());
  for (const auto& x : j["mtp"])
    s += fmt(
        "mtp %-4s cost per extra predicted token (V = %lld): (t3 - t1)/2 = %.2f ms = %.2f%% of one lm_head "
        "GEMM+CE (%.2f ms)\n",
        x["precision"].get<std::string>().c_str(), x["V"].get<long long>(), x["ms_per_extra"].get<double>(),
        x["pct_of_lm_head"].get<double>(), x["lm_head_ms"].get<double>());
  return s;
}

// The run's settings and its report, and one method per section of the report, in the order run_variants_bench
// calls them. The members keep the names the sections use: o, rep (best of), ref_rep (the references' best of),
// precs, J (the JSON), R (its rows and headlines), N (tokens of the MLP, MoE and loss rows), C and V.
struct VariantRun {
  VariantRun(const VariantBenchOptions& opt, const std::vector<Precision>& p, nlohmann::json* j, double peak32,
             double peak16)
      : o(opt), precs(p), J(*j), R(j, peak32, peak16) {}
  void sliding_window_attention();  // headline 1
  void mlps();                      // headlines 2 and 3
  Status ngram_tables();            // headline 4
  void mtp_cost();
  void primitives();
  void leaky_relu2_vs_ref();
  void gated_act_vs_ref(GatedAct kind, int64_t Hs);
  void smear_vs_ref(int64_t B, int64_t T);
  void key_shift_vs_ref(int64_t B, int64_t T);
  void ngram_embedding_vs_ref(int64_t B, int64_t T);
  void softcap_ce_multi_vs_ref();
  void window_attention_vs_ref();
  void moe_vs_ref();
  std::string ntok(int64_t n) const { return fmt("N=%lld", static_cast<long long>(n)); }

  const VariantBenchOptions& o;
  const std::vector<Precision>& precs;
  nlohmann::json& J;
  Report R;
  const int rep = o.repeats, ref_rep = std::min(o.repeats, 2);
  const int64_t N = o.quick ? 1024 : 4096;
  const int64_t C = 512, V = 8192;
};

// Headline 1: sliding-window attention. B=1, H=Hkv=4, D=128; S = window T/4, L = full context.
void VariantRun::sliding_window_attention() {
  const int64_t B = 1, T = o.quick ? 1024 : 2048, W = T / 4, H = 4, D = 128;
  Tensor q({B, T, H, D}, 1), k({B, T, H, D}, 2), v({B, T, H, D}, 3);
  auto att = [&](Precision p, int64_t w) {
    return [&, p, w] {
      return fwd_bwd(p, [&](Tape& t) {
        return std::vector<Var>{causal_attention(t, q.on(t), k.on(t), v.on(t), 0.f, w)};
      });
    };
  };
  const double pl = attention_pairs(T, 0), ps = attention_pairs(T, W);
  // FLOPs executed: 2 GEMMs forward, 5 backward (S recomputed), 2*D per visible pair and head each.
  auto gflop = [&](double pairs) { return 7 * 2.0 * B * H * D * pairs / 1e9; };
  const std::string shape = fmt("B=1 T=%lld H=4 D=128", static_cast<long long>(T));
  for (Precision p : precs) {
    auto [tl, ts] = best_pair(rep, att(p, 0), att(p, W));
    R.row("attention L (full causal)", p, shape, tl, gflop(pl));
    R.row(fmt("attention S (window %lld)", static_cast<long long>(W)), p, shape, ts, gflop(ps));
    R.headline(1, p,
               fmt("S/L attention fwd+bwd time, T=%lld W=%lld", static_cast<long long>(T),
                   static_cast<long long>(W)),
               ts / tl, true, 0.5, fmt("(FLOP ratio %.3f)", ps / pl));
  }
}

// Headlines 2 and 3: MLPs at equal (active) parameters. relu2: fc (4C, C), proj (C, 4C); swiglu: hidden
// Hs = 8/3 C rounded up to 32, fc (2 Hs, C), proj (C, Hs); MoE: 8 experts of Hd = 2C, top 2.
void VariantRun::mlps() {
  const int64_t Hr = 4 * C, Hs = (8 * C / 3 + 31) / 32 * 32, E = 8, K = 2, Hd = 2 * C;
  Tensor x({N, C}, 4), fc({Hr, C}, 5, 0.04f), proj({C, Hr}, 6, 0.02f), sfc({2 * Hs, C}, 7, 0.04f),
      sproj({C, Hs}, 8, 0.02f), router({E, C}, 9, 0.04f), efc({E, Hd, C}, 10, 0.04f),
      eproj({E, C, Hd}, 11, 0.02f);
  auto relu2_mlp = [&](Precision p) {
    return [&, p] {
      return fwd_bwd(p, [&](Tape& t) {
        return std::vector<Var>{linear(t, relu2(t, linear(t, x.on(t), fc.on(t))), proj.on(t))};
      });
    };
  };
  auto swiglu_mlp = [&](Precision p) {
    return [&, p] {
      return fwd_bwd(p, [&](Tape& t) {
        return std::vector<Var>{
            linear(t, gated_act(t, linear(t, x.on(t), sfc.on(t)), GatedAct::kSwiglu), sproj.on(t))};
      });
    };
  };
  auto moe = [&](Precision p) {
    return [&, p] {
      return fwd_bwd(p, [&](Tape& t) {
        return std::vector<Var>{
            moe_mlp(t, x.on(t), router.on(t), efc.on(t), eproj.on(t), K, 0.f, 0.01f, nullptr)};
      });
    };
  };
  const double gr = 6.0 * (2 * Hr * C) * N / 1e9, gs = 6.0 * (3 * Hs * C) * N / 1e9,
               gm = 6.0 * (K * 2 * Hd * C + E * C) * N / 1e9;  // active experts + router
  for (Precision p : precs) {
    auto [tr, ts] = best_pair(rep, relu2_mlp(p), swiglu_mlp(p));
    auto [tr2, tm] = best_pair(rep, relu2_mlp(p), moe(p));
    tr = std::min(tr, tr2);
    R.row("mlp relu2 (hidden 2048)", p, ntok(N) + " C=512", tr, gr);
    R.row(fmt("mlp swiglu (hidden %lld)", static_cast<long long>(Hs)), p, ntok(N) + " C=512", ts, gs);
    R.row("moe_mlp top-2 of 8 (Hd 1024)", p, ntok(N) + " C=512", tm, gm);
    R.headline(2, p, "swiglu / relu2 MLP GFLOP/s, equal params", (gs / ts) / (gr / tr), false, 0.9,
               fmt("(params %.2fM vs %.2fM)", 3.0 * Hs * C / 1e6, 2.0 * Hr * C / 1e6));
    R.headline(3, p, "moe top-2/8 / dense relu2 MLP time, equal active", tm / tr, true, 1.4,
               fmt("(FLOP ratio %.3f with the router)", gm / gr));
  }
}

// Headline 4: hashed n-gram tables (orders 2, 3) in a depth-4 step.
Status VariantRun::ngram_tables() {
  Config cfg = train_schema().defaults();
  cfg.set("model.depth", static_cast<int64_t>(4));
  cfg.set("model.seq_len", static_cast<int64_t>(512));
  cfg.set("model.vocab_size", V);
  cfg.set("model.ngram_orders", std::string("2,3"));
  ModelShape shape;
  FRONTIER_RETURN_IF_ERROR(derive_model_shape(cfg, &shape));
  const int B = o.quick ? 2 : 8, T = shape.seq_len;
  const int64_t Cm = shape.dim, nb = shape.arch.ngram_buckets;
  Gpt gpt(shape);
  gpt.init_nanochat(1);
  auto idx = rand_ids(B * T, V, 12), tgt = rand_ids(B * T, V, 13);
  Tensor t2({nb, Cm}, 14), t3({nb, Cm}, 15);
  auto ngram = [&] {
    return fwd_bwd(Precision::kFp32, [&](Tape& t) {
      return std::vector<Var>{ngram_embedding(t, idx.data(), B, T, 2, nb, t2.on(t)),
                              ngram_embedding(t, idx.data(), B, T, 3, nb, t3.on(t))};
    });
  };
  const std::string gshape = fmt("B=%d T=%d C=%lld V=8192", B, T, static_cast<long long>(Cm));
  const std::string nshape =
      fmt("B=%d T=%d C=%lld buckets=%lld", B, T, static_cast<long long>(Cm), static_cast<long long>(nb));
  double tn_best = 1e30;
  std::vector<double> tsteps;
  for (Precision p : precs) {
    auto step = wall([&, p] {
      Tape tape;
      tape.set_precision(p);
      Var loss = gpt.forward(tape, idx.data(), tgt.data(), B, T);
      tape.backward(loss);
    });
    auto [tn, tstep] = best_pair(rep, ngram, step);
    tn_best = std::min(tn_best, tn);
    tsteps.push_back(tstep);
    R.row("gpt depth-4 step, ngram 2,3", p, gshape, tstep, gpt.flops_per_token() * B * T / 1e9);
  }
  R.row("ngram tables 2+3", Precision::kFp32, nshape, tn_best, 0);
  for (size_t i = 0; i < precs.size(); i++)
    R.headline(4, precs[i], "ngram 2,3 fwd+bwd / depth-4 step fwd+bwd", tn_best / tsteps[i], true, 0.03,
               fmt("(%.2f%% of the step)", 100 * tn_best / tsteps[i]));
  return ok_status();
}

// MTP: softcap_ce_multi on shared (N, V) logits with 1 vs 3 targets, against one lm_head GEMM + softcap CE.
void VariantRun::mtp_cost() {
  Tensor z({N, V}, 16, 4.f), xh({N, C}, 17), wh({V, C}, 18, 0.04f);
  auto y1 = rand_ids(N, V, 19), y2 = rand_ids(N, V, 20), y3 = rand_ids(N, V, 21);
  auto mtp = [&](int K) {
    return [&, K] {
      std::vector<const int32_t*> ts = {y1.data(), y2.data(), y3.data()};
      ts.resize(K);
      std::vector<float> w(K, 1.f);
      return fwd_bwd(Precision::kFp32,
                     [&](Tape& t) { return std::vector<Var>{softcap_ce_multi(t, z.on(t), ts, w, 15.f)}; });
    };
  };
  auto [t1, t3m] = best_pair(rep, mtp(1), mtp(3));
  R.row("softcap_ce_multi K=1", Precision::kFp32, ntok(N) + " V=8192", t1, 0);
  R.row("softcap_ce_multi K=3", Precision::kFp32, ntok(N) + " V=8192", t3m, 0);
  for (Precision p : precs) {
    const double th = best_seconds(rep, [&] {
      return fwd_bwd(p, [&](Tape& t) {
        return std::vector<Var>{softcap_cross_entropy(t, linear(t, xh.on(t), wh.on(t)), y1.data(), 15.f)};
      });
    });
    R.row("lm_head GEMM + softcap CE", p, ntok(N) + " C=512 V=8192", th, 6.0 * N * V * C / 1e9);
    const double extra = (t3m - t1) / 2;
    J["mtp"].push_back({{"precision", precision_name(p)},
                        {"V", V},
                        {"ms_per_extra", 1e3 * extra},
                        {"lm_head_ms", 1e3 * th},
                        {"pct_of_lm_head", 100 * extra / th}});
  }
}

// Primitives, fast (autograd op) vs reference (src/reference/*.h in float, one thread), forward + backward.
void VariantRun::primitives() {
  const int64_t B = o.quick ? 2 : 8, T = 512, Hs = 1376;
  leaky_relu2_vs_ref();
  for (GatedAct kind : {GatedAct::kSwiglu, GatedAct::kGeglu}) gated_act_vs_ref(kind, Hs);
  smear_vs_ref(B, T);
  key_shift_vs_ref(B, T);
  ngram_embedding_vs_ref(B, T);
  softcap_ce_multi_vs_ref();
  window_attention_vs_ref();
  moe_vs_ref();
}

// leaky_relu2 over the MLP's hidden activations (N, 4C).
void VariantRun::leaky_relu2_vs_ref() {
  Tensor x({N, 4 * C}, 30);
  std::vector<float> y(N * 4 * C), dy(N * 4 * C, 1.f);
  const double tf = best_seconds(rep, [&] {
    return fwd_bwd(Precision::kFp32,
                   [&](Tape& t) { return std::vector<Var>{leaky_relu2(t, x.on(t), 0.01f)}; });
  });
  const double tr = best_seconds(ref_rep, wall([&] {
                                   ref::leaky_relu2_forward(y.data(), x.value.data(), N * 4 * C, 0.01f);
                                   ref::leaky_relu2_backward(x.grad.data(), dy.data(), x.value.data(),
                                                             N * 4 * C, 0.01f);
                                 }),
                                 false);
  R.row("leaky_relu2", Precision::kFp32, ntok(N) + " x 2048", tf, 0, tr);
}

// gated_act over swiglu's c_fc output (N, 2 Hs).
void VariantRun::gated_act_vs_ref(GatedAct kind, int64_t Hs) {
  Tensor x({N, 2 * Hs}, 31);
  std::vector<float> y(N * Hs), dy(N * Hs, 1.f);
  const double tf = best_seconds(rep, [&] {
    return fwd_bwd(Precision::kFp32,
                   [&](Tape& t) { return std::vector<Var>{gated_act(t, x.on(t), kind)}; });
  });
  const double tr =
      best_seconds(ref_rep, wall([&] {
                     ref::gated_act_forward(y.data(), x.value.data(), N, Hs, kind);
                     ref::gated_act_backward(x.grad.data(), dy.data(), x.value.data(), N, Hs, kind);
                   }),
                   false);
  R.row(kind == GatedAct::kSwiglu ? "gated_act swiglu" : "gated_act geglu", Precision::kFp32,
        ntok(N) + " H=1376", tf, 0, tr);
}

// smear on the embedding (B, T, C), gate over 24 channels.
void VariantRun::smear_vs_ref(int64_t B, int64_t T) {
  const int64_t G = kSmearChannels;
  Tensor x({B * T, C}, 32), w({1, G}, 33), lam({1}, 34);
  std::vector<float> y(B * T * C), dy(B * T * C, 1.f);
  const double tf = best_seconds(rep, [&] {
    return fwd_bwd(Precision::kFp32, [&](Tape& t) {
      return std::vector<Var>{smear(t, x.on(t), w.on(t), lam.on(t), B, T)};
    });
  });
  const double tr = best_seconds(
      ref_rep, wall([&] {
        ref::smear_forward(y.data(), x.value.data(), w.value.data(), lam.value[0], B, T, C, G);
        ref::smear_backward(x.grad.data(), w.grad.data(), lam.grad.data(), dy.data(), x.value.data(),
                            w.value.data(), lam.value[0], B, T, C, G);
      }),
      false);
  R.row("smear", Precision::kFp32, fmt("B=%lld T=512 C=512 G=24", static_cast<long long>(B)), tf, 0, tr);
}

// key_shift on the keys (B, T, 4, 128), half of each half un-rotated.
void VariantRun::key_shift_vs_ref(int64_t B, int64_t T) {
  const int64_t H = 4, D = 128, p0 = 32;
  Tensor k({B, T, H, D}, 35);
  std::vector<float> y(B * T * H * D), dy(B * T * H * D, 1.f);
  const double tf = best_seconds(rep, [&] {
    return fwd_bwd(Precision::kFp32,
                   [&](Tape& t) { return std::vector<Var>{key_shift(t, k.on(t), p0)}; });
  });
  const double tr = best_seconds(ref_rep, wall([&] {
                                   ref::key_shift_forward(y.data(), k.value.data(), B, T, H, D, p0);
                                   ref::key_shift_backward(k.grad.data(), dy.data(), B, T, H, D, p0);
                                 }),
                                 false);
  R.row("key_shift", Precision::kFp32, fmt("B=%lld T=512 H=4 D=128 p0=32", static_cast<long long>(B)), tf,
        0, tr);
}

// ngram_embedding, order 3, 4 x 8192 buckets of C = 256.
void VariantRun::ngram_embedding_vs_ref(int64_t B, int64_t T) {
  const int64_t Cn = 256, nb = 4 * V;
  Tensor table({nb, Cn}, 36);
  auto idx = rand_ids(B * T, V, 37);
  std::vector<float> y(B * T * Cn), dy(B * T * Cn, 1.f);
  const double tf = best_seconds(rep, [&] {
    return fwd_bwd(Precision::kFp32, [&](Tape& t) {
      return std::vector<Var>{ngram_embedding(t, idx.data(), B, T, 3, nb, table.on(t))};
    });
  });
  const double tr = best_seconds(
      ref_rep, wall([&] {
        ref::ngram_embedding_forward(y.data(), table.value.data(), idx.data(), B, T, 3, nb, Cn);
        ref::ngram_embedding_backward(table.grad.data(), dy.data(), idx.data(), B, T, 3, nb, Cn);
      }),
      false);
  R.row("ngram_embedding n=3", Precision::kFp32,
        fmt("B=%lld T=512 C=256 buckets=32768", static_cast<long long>(B)), tf, 0, tr);
}

// softcap_ce_multi, 3 targets: the reference is scalar tanh/exp over N x V twice, so a smaller N.
void VariantRun::softcap_ce_multi_vs_ref() {
  const int64_t Nc = o.quick ? 128 : 512;
  Tensor z({Nc, V}, 38, 4.f);
  auto y1 = rand_ids(Nc, V, 39), y2 = rand_ids(Nc, V, 40), y3 = rand_ids(Nc, V, 41);
  const std::vector<const int32_t*> ts = {y1.data(), y2.data(), y3.data()};
  const std::vector<float> w = {1.f, 0.5f, 0.25f};
  const double tf = best_seconds(rep, [&] {
    return fwd_bwd(Precision::kFp32,
                   [&](Tape& t) { return std::vector<Var>{softcap_ce_multi(t, z.on(t), ts, w, 15.f)}; });
  });
  const double tr =
      best_seconds(ref_rep, wall([&] {
                     ref::softcap_ce_multi_forward<float>(nullptr, z.value.data(), ts.data(), w.data(), 3,
                                                          Nc, V, 15.f);
                     ref::softcap_ce_multi_backward<float>(z.grad.data(), 1.f, z.value.data(), ts.data(),
                                                           w.data(), 3, Nc, V, 15.f);
                   }),
                   false);
  R.row("softcap_ce_multi K=3", Precision::kFp32, ntok(Nc) + " V=8192", tf, 0, tr);
}

// Windowed attention (the reference materialises T x T scores), each precision.
void VariantRun::window_attention_vs_ref() {
  const int64_t Ta = o.quick ? 256 : 512, W = Ta / 4, H = 4, D = 128, n = Ta * H * D;
  Tensor q({1, Ta, H, D}, 42), k({1, Ta, H, D}, 43), v({1, Ta, H, D}, 44);
  std::vector<float> y(n), dy(n, 1.f), att(H * Ta * Ta);
  const double tr =
      best_seconds(ref_rep, wall([&] {
                     ref::attention_forward<float>(y.data(), att.data(), q.value.data(), k.value.data(),
                                                   v.value.data(), 1, Ta, H, H, D, 0.f, W);
                     ref::attention_backward<float>(q.grad.data(), k.grad.data(), v.grad.data(),
                                                    dy.data(), att.data(), q.value.data(), k.value.data(),
                                                    v.value.data(), 1, Ta, H, H, D, 0.f, W);
                   }),
                   false);
  for (Precision p : precs) {
    const double tf = best_seconds(rep, [&] {
      return fwd_bwd(p, [&](Tape& t) {
        return std::vector<Var>{causal_attention(t, q.on(t), k.on(t), v.on(t), 0.f, W)};
      });
    });
    R.row(fmt("attention window %lld", static_cast<long long>(W)), p,
          fmt("B=1 T=%lld H=4 D=128", static_cast<long long>(Ta)), tf,
          7 * 2.0 * H * D * attention_pairs(Ta, W) / 1e9, tr);
  }
}

// The MoE at few tokens (the reference loops over every expert), each precision.
void VariantRun::moe_vs_ref() {
  const int64_t Nm = o.quick ? 128 : 512, E = 8, K = 2, Hd = 2 * C;
  Tensor x({Nm, C}, 45), router({E, C}, 46, 0.04f), fc({E, Hd, C}, 47, 0.04f),
      proj({E, C, Hd}, 48, 0.02f);
  std::vector<float> y(Nm * C), dy(Nm * C, 1.f);
  const double tr = best_seconds(
      ref_rep, wall([&] {
        ref::moe_forward<float>(y.data(), x.value.data(), router.value.data(), fc.value.data(),
                                proj.value.data(), Nm, C, E, Hd, K, 0.f);
        ref::moe_backward<float>(x.grad.data(), router.grad.data(), fc.grad.data(), proj.grad.data(),
                                 dy.data(), x.value.data(), router.value.data(), fc.value.data(),
                                 proj.value.data(), Nm, C, E, Hd, K, 0.f, 0.01f);
      }),
      false);
  for (Precision p : precs) {
    const double tf = best_seconds(rep, [&] {
      return fwd_bwd(p, [&](Tape& t) {
        return std::vector<Var>{
            moe_mlp(t, x.on(t), router.on(t), fc.on(t), proj.on(t), K, 0.f, 0.01f, nullptr)};
      });
    });
    R.row("moe_mlp top-2 of 8", p, ntok(Nm) + " C=512 Hd=1024", tf,
          6.0 * (K * 2 * Hd * C + E * C) * Nm / 1e9, tr);
  }
}

}  // namespace

Status run_variants_bench(const VariantBenchOptions& o, nlohmann::json* out, std::string* table) {
  const int threads = omp_get_max_threads(), rep = o.repeats;
  std::vector<Precision> precs = {Precision::kFp32};
  if (active_isa() >= Isa::kAvx512Bf16) precs.push_back(Precision::kBf16);
  const Ceilings c32 = machine_ceilings(threads, Precision::kFp32, o.peak_gflops);
  const Ceilings c16 = machine_ceilings(threads, Precision::kBf16, o.peak_gflops, c32.mem_gbs);
  nlohmann::json& J = *out;
  J = {{"machine",
        {{"cpu", cpu_features().cpu_name},
         {"isa", isa_name(active_isa())},
         {"threads", threads},
         {"peak_source", c32.source},
         {"peaks",
          {{"fp32", {{"unit", c32.unit}, {"gflops", c32.peak_gflops}}},
           {"bf16", {{"unit", c16.unit}, {"gflops", c16.peak_gflops}}}}}}},
       {"quick", o.quick},
       {"repeats", rep},
       {"rows", nlohmann::json::array()},
       {"headlines", nlohmann::json::array()},
       {"mtp", nlohmann::json::array()}};
  VariantRun run(o, precs, &J, c32.peak_gflops, c16.peak_gflops);
  run.sliding_window_attention();
  run.mlps();
  FRONTIER_RETURN_IF_ERROR(run.ngram_tables());
  run.mtp_cost();
  run.primitives();
  *table = make_table(J);
  return ok_status();
}

}  // namespace frontier
