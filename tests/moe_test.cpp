// Mixture-of-experts MLP (reference/moe.h; kernels/moe.h through moe_mlp in autograd/tape.h): the reference against
// central finite differences (double), the fast op against the reference (fp32) and itself (bf16 vs fp32),
// the load-balance loss against a hand computation, bit-identical results across thread counts, and the
// PyTorch module python/frontier_moe.py against the reference. Loss L = sum(out * G) + aux_weight * aux
// throughout.
//
// Finite differences are only valid where L is smooth: top-k routing is piecewise constant in the inputs
// (f_e, the chosen set) and act(u) = (u >= 0 ? u : slope * u)^2, though C^1, has a jump in its second
// derivative at 0. So each token's row of x is drawn again until its k-th and (k+1)-th logits differ by >=
// 0.05 and its chosen experts' pre-activations satisfy |u| >= 0.05: a step h = 1e-5 moves a logit or a u by
// ~h * |weights| ~ 1e-5, far inside those margins, so no perturbation changes a routing decision or crosses a
// kink. The fp32, bf16 and PyTorch comparisons need only the same routing on both sides: a logit gap >= 1e-3,
// far above fp32 logit errors (~1e-6).
#include "reference/moe.h"

#include <omp.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "autograd/tape.h"
#include "test_util.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;
using Vec = std::vector<double>;
using FVec = std::vector<float>;

namespace {

struct Shape {
  int N, C, E, Hd, k;
  double slope, aux_weight;
};

struct Inputs {
  Vec x, router, fc, proj, G;  // (N, C), (E, C), (E, Hd, C), (E, C, Hd), (N, C)
};

Vec randn(size_t n, std::mt19937& rng, double scale) {
  std::normal_distribution<double> d(0.0, scale);
  Vec v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Token n's routing gap (its k-th minus (k+1)-th logit; infinite when k == E) and smallest |u| over its
// chosen experts' pre-activations.
std::pair<double, double> token_margins(const Shape& s, const Inputs& in, int n) {
  Vec logits(s.E), probs(s.E), gate(s.k), u(s.Hd), a(s.Hd), y(s.C);
  std::vector<int32_t> expert(s.k);
  const double* xn = in.x.data() + n * s.C;
  for (int e = 0; e < s.E; e++) {
    logits[e] = 0;
    for (int c = 0; c < s.C; c++) logits[e] += xn[c] * in.router[e * s.C + c];
  }
  ref::moe_gate_row(probs.data(), expert.data(), gate.data(), logits.data(), s.E, s.k);
  double umin = 1e300;
  for (int j = 0; j < s.k; j++) {
    const int e = expert[j];
    ref::moe_expert_row(u.data(), a.data(), y.data(), xn, in.fc.data() + e * s.Hd * s.C,
                        in.proj.data() + e * s.C * s.Hd, s.C, s.Hd, s.slope);
    for (double v : u) umin = std::min(umin, std::abs(v));
  }
  std::sort(logits.begin(), logits.end(), std::greater<>());
  return {s.k < s.E ? logits[s.k - 1] - logits[s.k] : 1e300, umin};
}

// Random inputs, each token's row of x drawn again until its routing gap >= gap_min and its |u| >= u_min (see
// the top of the file). Values are rounded to float, so the fp32 and bf16 tests see exactly the reference's
// inputs.
Inputs make_inputs(const Shape& s, uint32_t seed, double gap_min, double u_min) {
  std::mt19937 rng(seed);
  auto to_float = [](Vec v) {
    for (double& d : v) d = static_cast<float>(d);
    return v;
  };
  Inputs in{Vec(s.N * s.C), to_float(randn(s.E * s.C, rng, 0.5)), to_float(randn(s.E * s.Hd * s.C, rng, 0.5)),
            to_float(randn(s.E * s.C * s.Hd, rng, 0.5)), to_float(randn(s.N * s.C, rng, 1.0))};
  for (int n = 0; n < s.N; n++)
    for (int tries = 0;; tries++) {
      EXPECT_LT(tries, 1000) << "no row of x with the margins found";
      const Vec row = to_float(randn(s.C, rng, 1.0));
      std::copy(row.begin(), row.end(), in.x.begin() + n * s.C);
      auto [gap, umin] = token_margins(s, in, n);
      if ((gap >= gap_min && umin >= u_min) || tries >= 1000) break;
    }
  return in;
}

struct Grads {
  Vec out, dx, drouter, dfc, dproj;
  double aux = 0;
};

Grads reference(const Shape& s, const Inputs& in) {
  Grads r{Vec(s.N * s.C), Vec(in.x.size(), 0), Vec(in.router.size(), 0), Vec(in.fc.size(), 0),
          Vec(in.proj.size(), 0)};
  r.aux = ref::moe_forward(r.out.data(), in.x.data(), in.router.data(), in.fc.data(), in.proj.data(), s.N,
                           s.C, s.E, s.Hd, s.k, s.slope);
  ref::moe_backward(r.dx.data(), r.drouter.data(), r.dfc.data(), r.dproj.data(), in.G.data(), in.x.data(),
                    in.router.data(), in.fc.data(), in.proj.data(), s.N, s.C, s.E, s.Hd, s.k, s.slope,
                    s.aux_weight);
  return r;
}

// The autograd op (fast kernel) on a tape at precision p: out, gradients (backward seeded with dout = G
// directly, the gradient of sum(out * G)) and the stats.
Grads fast(const Shape& s, const Inputs& in, Precision p, MoeStats* stats = nullptr) {
  auto f = [](const Vec& v) { return FVec(v.begin(), v.end()); };
  FVec x = f(in.x), router = f(in.router), fc = f(in.fc), proj = f(in.proj), G = f(in.G);
  FVec dx(x.size(), 0.f), drouter(router.size(), 0.f), dfc(fc.size(), 0.f), dproj(proj.size(), 0.f);
  Tape t;
  t.set_precision(p);
  Var vx = t.param(x.data(), dx.data(), {s.N, s.C});
  Var vr = t.param(router.data(), drouter.data(), {s.E, s.C});
  Var vf = t.param(fc.data(), dfc.data(), {s.E, s.Hd, s.C});
  Var vp = t.param(proj.data(), dproj.data(), {s.E, s.C, s.Hd});
  MoeStats st;
  Var out =
      moe_mlp(t, vx, vr, vf, vp, s.k, static_cast<float>(s.slope), static_cast<float>(s.aux_weight), &st);
  std::copy(G.begin(), G.end(), t.grad(out));
  t.node(out).backward();
  if (stats) *stats = st;
  auto d = [](const float* p, size_t n) { return Vec(p, p + n); };
  return {d(t.value(out), s.N * s.C), d(dx.data(), dx.size()),       d(drouter.data(), drouter.size()),
          d(dfc.data(), dfc.size()),  d(dproj.data(), dproj.size()), st.aux_loss};
}

double max_abs(const Vec& v) {
  double m = 0;
  for (double d : v) m = std::max(m, std::abs(d));
  return m;
}

// max |got - want| <= tol * max |want| for each tensor; prints the relative error.
void expect_close(const Grads& got, const Grads& want, double tol, const char* what) {
  const std::pair<const char*, std::pair<const Vec*, const Vec*>> pairs[] = {
      {"out", {&got.out, &want.out}},
      {"dx", {&got.dx, &want.dx}},
      {"drouter", {&got.drouter, &want.drouter}},
      {"dfc", {&got.dfc, &want.dfc}},
      {"dproj", {&got.dproj, &want.dproj}}};
  for (const auto& [name, gw] : pairs) {
    const Vec &g = *gw.first, &w = *gw.second;
    ASSERT_EQ(g.size(), w.size());
    double err = 0;
    for (size_t i = 0; i < g.size(); i++) err = std::max(err, std::abs(g[i] - w[i]));
    const double rel = err / std::max(max_abs(w), 1e-30);
    EXPECT_LE(rel, tol) << what << " " << name << ": max abs error " << err << " (relative " << rel << ")";
    std::printf("[moe] %-28s %-8s max rel error %.3g\n", what, name, rel);
  }
  EXPECT_LE(std::abs(got.aux - want.aux), tol * std::abs(want.aux)) << what << " aux";
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); i++) s += a[i] * b[i];
  return s;
}

}  // namespace

// Step h = 1e-5, tolerance 1e-6 * max(1, max |numeric|), as tests/ops_test.cpp (FD truncation ~h^2, rounding
// ~1e-16 / h).
TEST(MoeReference, GradientsMatchFiniteDifferences) {
  for (int k : {1, 2})
    for (double slope : {0.0, 0.1}) {
      const Shape s{7, 6, 4, 5, k, slope, 0.3};
      Inputs in = make_inputs(s, 100 + 10 * k + static_cast<int>(slope * 10), 0.05, 0.05);
      const Grads g = reference(s, in);
      auto loss = [&] {
        Vec out(s.N * s.C);
        double aux = ref::moe_forward(out.data(), in.x.data(), in.router.data(), in.fc.data(), in.proj.data(),
                                      s.N, s.C, s.E, s.Hd, s.k, s.slope);
        return dot(out, in.G) + s.aux_weight * aux;
      };
      const std::vector<std::pair<Vec*, const Vec*>> checks = {
          {&in.x, &g.dx}, {&in.router, &g.drouter}, {&in.fc, &g.dfc}, {&in.proj, &g.dproj}};
      const double h = 1e-5;
      for (size_t a = 0; a < checks.size(); a++) {
        Vec& v = *checks[a].first;
        double max_err = 0, max_num = 0;
        for (size_t i = 0; i < v.size(); i++) {
          const double orig = v[i];
          v[i] = orig + h;
          const double lp = loss();
          v[i] = orig - h;
          const double lm = loss();
          v[i] = orig;
          const double num = (lp - lm) / (2 * h);
          max_err = std::max(max_err, std::abs(num - (*checks[a].second)[i]));
          max_num = std::max(max_num, std::abs(num));
        }
        EXPECT_LE(max_err, 1e-6 * std::max(1.0, max_num))
            << "top_k " << k << " slope " << slope << " input " << a << ": max abs error " << max_err;
      }
      // The router's gradient is not just the aux term: with k = 2 the gates carry the task loss to it.
      if (k == 2) {
        Grads no_aux = g;
        std::fill(no_aux.drouter.begin(), no_aux.drouter.end(), 0.0);
        ref::moe_backward<double>(nullptr, no_aux.drouter.data(), nullptr, nullptr, in.G.data(), in.x.data(),
                                  in.router.data(), in.fc.data(), in.proj.data(), s.N, s.C, s.E, s.Hd, s.k,
                                  s.slope, 0.0);
        EXPECT_GT(max_abs(no_aux.drouter), 1e-3);
      }
    }
}

// fp32 fast vs double reference on the same (float-valued) inputs. The fast kernel sums products in fp32 over
// depths <= max(C, Hd, N*k) <= 200 here: worst-case relative error ~ depth * 2^-24 ~ 1e-5 on a sum of
// like-signed terms, ~ sqrt(depth) * 2^-24 typically; 1e-5 of each tensor's largest magnitude leaves ~20x
// over the measured <= 5e-7 (printed). Routing is identical: the logit gaps (>= 1e-3) dwarf fp32 logit errors
// (~1e-6).
TEST(MoeFast, MatchesReferenceFp32) {
  const Shape shapes[] = {
      {37, 24, 6, 20, 2, 0.1, 0.5},  // odd sizes, top-2
      {5, 16, 8, 12, 1, 0.0, 0.2},   // top-1 of 8 with 5 tokens: some experts get none
      {50, 33, 4, 17, 4, 0.1, 1.0},  // top_k == E: every expert, gates = probs
      {100, 64, 8, 48, 2, 0.0, 0.01},
  };
  uint32_t seed = 200;
  for (const Shape& s : shapes) {
    const Inputs in = make_inputs(s, seed++, 1e-3, 0);
    MoeStats st;
    const Grads got = fast(s, in, Precision::kFp32, &st);
    const std::string what =
        "fp32 N" + std::to_string(s.N) + " E" + std::to_string(s.E) + " k" + std::to_string(s.k);
    expect_close(got, reference(s, in), 1e-5, what.c_str());
    int64_t total = 0;
    for (int64_t c : st.tokens_per_expert) total += c;
    EXPECT_EQ(total, static_cast<int64_t>(s.N) * s.k);
    EXPECT_EQ(st.dropped, 0);
  }
}

// bf16 expert GEMMs (router in fp32 either way, so the routing is the same) vs the fp32 op. Each GEMM input
// is rounded to bf16 (relative 2^-9 = 2e-3); the errors pass through two chained GEMMs and the squaring
// (doubling the relative error of u), so outputs and gradients differ by ~4 * 2e-3 relative in the worst
// element and less typically; 3e-2 of each tensor's largest magnitude leaves ~6x over the measured <= 5e-3
// (printed).
TEST(MoeFast, Bf16CloseToFp32) {
  const Shape s{128, 64, 8, 64, 2, 0.1, 0.1};
  const Inputs in = make_inputs(s, 300, 1e-3, 0);
  expect_close(fast(s, in, Precision::kBf16), fast(s, in, Precision::kFp32), 3e-2, "bf16 vs fp32");
}

// A hand-worked case: E = 2, C = 2, router = I, so logits = x. x0 = (ln 3, 0): probs (3/4, 1/4);
// x1 = (ln 2, 0): probs (2/3, 1/3). P = ((3/4 + 2/3) / 2, (1/4 + 1/3) / 2) = (17/24, 7/24).
//   top-1: both tokens go to expert 0, f = (1, 0): aux = 2 * 17/24 = 17/12.
//   top-2: every expert, f = (1/2, 1/2): aux = 2 * (17/24 + 7/24) / 2 = 1 (as for any uniform load).
TEST(MoeAux, MatchesHandComputation) {
  for (int k : {1, 2}) {
    const Shape s{2, 2, 2, 3, k, 0.0, 0.0};
    Inputs in;
    in.x = {std::log(3.0), 0.0, std::log(2.0), 0.0};
    in.router = {1, 0, 0, 1};
    std::mt19937 rng(5);
    in.fc = randn(2 * 3 * 2, rng, 1.0), in.proj = randn(2 * 2 * 3, rng, 1.0), in.G = randn(4, rng, 1.0);
    const double want = k == 1 ? 17.0 / 12.0 : 1.0;
    EXPECT_NEAR(reference(s, in).aux, want, 1e-15) << "top_k " << k;
    MoeStats st;
    fast(s, in, Precision::kFp32, &st);
    EXPECT_NEAR(st.aux_loss, want, 1e-6) << "top_k " << k;
    EXPECT_EQ(st.tokens_per_expert, (k == 1 ? std::vector<int64_t>{2, 0} : std::vector<int64_t>{2, 2}));
    EXPECT_EQ(st.dropped, 0);
  }
}

// Every GEMM accumulates in a fixed order and every row is written by one thread in slot order, so outputs
// and gradients are bit-identical for any thread count.
TEST(MoeFast, DeterministicAcrossThreadCounts) {
  const Shape s{300, 48, 8, 40, 2, 0.1, 0.1};
  const Inputs in = make_inputs(s, 400, 0, 0);
  const int saved = omp_get_max_threads();
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    omp_set_num_threads(1);
    const Grads one = fast(s, in, p);
    omp_set_num_threads(3);
    const Grads three = fast(s, in, p);
    omp_set_num_threads(saved);
    for (auto [a, b] : {std::pair{&one.out, &three.out},
                        {&one.dx, &three.dx},
                        {&one.drouter, &three.drouter},
                        {&one.dfc, &three.dfc},
                        {&one.dproj, &three.dproj}})
      EXPECT_EQ(*a, *b) << precision_name(p);  // doubles converted from floats: == is bitwise here
  }
}

// python/frontier_moe.py's MoE module (float64 autograd) against the reference: out, aux and the gradients of
// sum(out * G) + aux_weight * aux. Both in double, so anything beyond roundoff is a semantic difference
// (routing, tie order, renormalisation, aux definition).
// Tolerance: max |frontier - torch| <= 1e-10 * max(1, max |torch|).
TEST(MoeTorch, ModuleMatchesReference) {
  using json = nlohmann::json;
  const Shape shapes[] = {{7, 6, 4, 5, 1, 0.0, 0.3}, {7, 6, 4, 5, 2, 0.1, 0.3}, {23, 10, 8, 9, 2, 0.0, 0.05}};
  json cases = json::array();
  std::vector<Inputs> ins;
  uint32_t seed = 500;
  for (const Shape& s : shapes) {
    ins.push_back(make_inputs(s, seed++, 1e-3, 0));
    const Inputs& in = ins.back();
    cases.push_back({{"params",
                      {{"N", s.N},
                       {"C", s.C},
                       {"E", s.E},
                       {"Hd", s.Hd},
                       {"top_k", s.k},
                       {"slope", s.slope},
                       {"aux_weight", s.aux_weight}}},
                     {"x", in.x},
                     {"router", in.router},
                     {"fc", in.fc},
                     {"proj", in.proj},
                     {"G", in.G}});
  }
  const std::string dir = make_temp_dir("moe_torch");
  ASSERT_TRUE(write_file_atomic(dir + "/req.json", json({{"cases", cases}}).dump()).ok());
  auto r = run_cmd("/usr/bin/python3 " + source_dir() + "/python/frontier_moe.py " + dir + "/req.json " +
                   dir + "/resp.json");
  ASSERT_EQ(r.rc, 0) << "PyTorch peer failed (Debian python3-torch; run scripts/install_deps.sh): " << r.out;
  std::string text;
  ASSERT_TRUE(read_file(dir + "/resp.json", &text).ok());
  const json resp = json::parse(text);
  ASSERT_EQ(resp.size(), std::size(shapes));
  for (size_t c = 0; c < resp.size(); c++) {
    const Grads want = reference(shapes[c], ins[c]);
    const std::pair<const char*, const Vec*> tensors[] = {{"out", &want.out},
                                                          {"dx", &want.dx},
                                                          {"drouter", &want.drouter},
                                                          {"dfc", &want.dfc},
                                                          {"dproj", &want.dproj}};
    for (const auto& [name, v] : tensors) {
      const Vec torch = resp[c][name].get<Vec>();
      ASSERT_EQ(torch.size(), v->size()) << name;
      double err = 0;
      for (size_t i = 0; i < torch.size(); i++) err = std::max(err, std::abs(torch[i] - (*v)[i]));
      EXPECT_LE(err, 1e-10 * std::max(1.0, max_abs(torch))) << "case " << c << " " << name << ": " << err;
      std::printf("[torch] moe case %zu %-8s max |diff| %.3g\n", c, name, err);
    }
    EXPECT_NEAR(resp[c]["aux"].get<double>(), want.aux, 1e-10) << "case " << c;
  }
  std::filesystem::remove_all(dir);
}
