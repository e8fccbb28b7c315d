// Reference kernels against PyTorch (Debian python3-torch 1.13, float64 autograd): forward outputs and every input
// gradient, for ops written the way nanochat writes them. Both sides in double, so any difference beyond roundoff
// is a semantic mismatch (rotation direction, softcap, GQA head mapping, ignore_index, mean reduction).
// Tolerance: max |frontier - torch| <= 1e-10 * max(1, max |torch|).
#include <nlohmann/json.hpp>
#include <random>

#include "reference/attention.h"
#include "reference/axpy.h"
#include "reference/cross_entropy.h"
#include "reference/gated_act.h"
#include "reference/key_shift.h"
#include "reference/leaky_relu2.h"
#include "reference/matmul.h"
#include "reference/relu2.h"
#include "reference/rmsnorm.h"
#include "reference/rope.h"
#include "reference/smear.h"
#include "test_util.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;
using json = nlohmann::json;
using Vec = std::vector<double>;

namespace {

Vec randn(size_t n, std::mt19937& rng, double s = 1.0) {
  std::normal_distribution<double> d(0, s);
  Vec v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

void expect_close(const Vec& got, const json& want, const std::string& what) {
  Vec w = want.get<Vec>();
  ASSERT_EQ(got.size(), w.size()) << what;
  double err = 0, mx = 0;
  for (size_t i = 0; i < w.size(); i++) {
    err = std::max(err, std::abs(got[i] - w[i]));
    mx = std::max(mx, std::abs(w[i]));
  }
  EXPECT_LE(err, 1e-10 * std::max(1.0, mx)) << what << ": max abs difference " << err;
  std::printf("[torch] %-18s max |diff| %.3g\n", what.c_str(), err);
}

}  // namespace

TEST(OpsTorch, ForwardAndGradientsMatchPyTorch) {
  std::mt19937 rng(42);
  json cases = json::array();
  std::vector<std::function<void(const json&)>> checks;

  {  // matmul
    int M = 7, K = 5, N = 6;
    Vec x = randn(M * K, rng), W = randn(N * K, rng), G = randn(M * N, rng);
    cases.push_back({{"op", "matmul"}, {"params", {{"M", M}, {"K", K}, {"N", N}}}, {"x", x}, {"W", W}, {"G", G}});
    checks.push_back([=](const json& r) {
      Vec out(M * N), dx(M * K, 0), dW(N * K, 0);
      ref::matmul_forward(out.data(), x.data(), W.data(), M, K, N);
      ref::matmul_backward(dx.data(), dW.data(), G.data(), x.data(), W.data(), M, K, N);
      expect_close(out, r["out"], "matmul out");
      expect_close(dx, r["dx"], "matmul dx");
      expect_close(dW, r["dW"], "matmul dW");
    });
  }
  {  // rmsnorm
    int N = 4, C = 16;
    double eps = 1e-6;
    Vec x = randn(N * C, rng), G = randn(N * C, rng);
    cases.push_back({{"op", "rmsnorm"}, {"params", {{"N", N}, {"C", C}, {"eps", eps}}}, {"x", x}, {"G", G}});
    checks.push_back([=](const json& r) {
      Vec out(N * C), rs(N), dx(N * C, 0);
      ref::rmsnorm_forward(out.data(), rs.data(), x.data(), N, C, eps);
      ref::rmsnorm_backward(dx.data(), G.data(), x.data(), rs.data(), N, C);
      expect_close(out, r["out"], "rmsnorm out");
      expect_close(dx, r["dx"], "rmsnorm dx");
    });
  }
  {  // rope
    int B = 2, T = 6, H = 2, D = 8;
    Vec x = randn(B * T * H * D, rng), G = randn(x.size(), rng);
    cases.push_back({{"op", "rope"},
                     {"params", {{"B", B}, {"T", T}, {"H", H}, {"D", D}, {"base", 100000.0}}},
                     {"x", x},
                     {"G", G}});
    checks.push_back([=](const json& r) {
      Vec cs(T * D / 2), sn(T * D / 2), out(x.size()), dx(x.size(), 0);
      ref::rope_tables(cs.data(), sn.data(), T, D, 100000.0);
      ref::rope_forward(out.data(), x.data(), cs.data(), sn.data(), B, T, H, D);
      ref::rope_backward(dx.data(), G.data(), cs.data(), sn.data(), B, T, H, D);
      expect_close(out, r["out"], "rope out");
      expect_close(dx, r["dx"], "rope dx");
    });
  }
  {  // relu2
    Vec x = randn(40, rng), G = randn(40, rng);
    cases.push_back({{"op", "relu2"}, {"params", json::object()}, {"x", x}, {"G", G}});
    checks.push_back([=](const json& r) {
      Vec out(40), dx(40, 0);
      ref::relu2_forward(out.data(), x.data(), 40);
      ref::relu2_backward(dx.data(), G.data(), x.data(), 40);
      expect_close(out, r["out"], "relu2 out");
      expect_close(dx, r["dx"], "relu2 dx");
    });
  }
  {  // softcap + cross-entropy
    int N = 8, V = 13;
    double cap = 15.0;
    Vec z = randn(N * V, rng, 12.0);
    std::vector<int32_t> tgt = {0, 12, -1, 5, 5, -1, 7, 1};
    cases.push_back({{"op", "softcap_ce"},
                     {"params", {{"N", N}, {"V", V}, {"cap", cap}}},
                     {"z", z},
                     {"targets", tgt},
                     {"G", Vec{1.0}}});
    checks.push_back([=](const json& r) {
      Vec dz(N * V, 0);
      double l = ref::softcap_ce_forward<double>(nullptr, z.data(), tgt.data(), N, V, cap);
      ref::softcap_ce_backward<double>(dz.data(), 1.0, z.data(), tgt.data(), N, V, cap);
      expect_close(Vec{l}, r["out"], "softcap_ce loss");
      expect_close(dz, r["dz"], "softcap_ce dz");
    });
  }
  {  // causal attention with GQA
    int B = 2, T = 7, H = 4, Hkv = 2, D = 8;
    Vec q = randn(B * T * H * D, rng), k = randn(B * T * Hkv * D, rng), v = randn(B * T * Hkv * D, rng);
    Vec G = randn(q.size(), rng);
    cases.push_back({{"op", "attention"},
                     {"params", {{"B", B}, {"T", T}, {"H", H}, {"Hkv", Hkv}, {"D", D}}},
                     {"q", q},
                     {"k", k},
                     {"v", v},
                     {"G", G}});
    checks.push_back([=](const json& r) {
      Vec out(q.size()), att(B * H * T * T), dq(q.size(), 0), dk(k.size(), 0), dv(v.size(), 0);
      ref::attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D);
      ref::attention_backward(dq.data(), dk.data(), dv.data(), G.data(), att.data(), q.data(), k.data(), v.data(), B,
                              T, H, Hkv, D);
      expect_close(out, r["out"], "attention out");
      expect_close(dq, r["dq"], "attention dq");
      expect_close(dk, r["dk"], "attention dk");
      expect_close(dv, r["dv"], "attention dv");
    });
  }
  {  // sliding-window attention with GQA and a scale: the mask is built explicitly on the torch side
    int B = 2, T = 9, H = 4, Hkv = 2, D = 8, window = 3;
    double scale = 0.3;
    Vec q = randn(B * T * H * D, rng), k = randn(B * T * Hkv * D, rng), v = randn(B * T * Hkv * D, rng);
    Vec G = randn(q.size(), rng);
    cases.push_back({{"op", "attention"},
                     {"params",
                      {{"B", B}, {"T", T}, {"H", H}, {"Hkv", Hkv}, {"D", D}, {"scale", scale}, {"window", window}}},
                     {"q", q},
                     {"k", k},
                     {"v", v},
                     {"G", G}});
    checks.push_back([=](const json& r) {
      Vec out(q.size()), att(B * H * T * T), dq(q.size(), 0), dk(k.size(), 0), dv(v.size(), 0);
      ref::attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D, scale, window);
      ref::attention_backward(dq.data(), dk.data(), dv.data(), G.data(), att.data(), q.data(), k.data(), v.data(), B,
                              T, H, Hkv, D, scale, window);
      expect_close(out, r["out"], "window attn out");
      expect_close(dq, r["dq"], "window attn dq");
      expect_close(dk, r["dk"], "window attn dk");
      expect_close(dv, r["dv"], "window attn dv");
    });
  }

  {  // leaky ReLU squared
    double slope = 0.1;
    Vec x = randn(40, rng), G = randn(40, rng);
    cases.push_back({{"op", "leaky_relu2"}, {"params", {{"slope", slope}}}, {"x", x}, {"G", G}});
    checks.push_back([=](const json& r) {
      Vec out(40), dx(40, 0);
      ref::leaky_relu2_forward(out.data(), x.data(), 40, slope);
      ref::leaky_relu2_backward(dx.data(), G.data(), x.data(), 40, slope);
      expect_close(out, r["out"], "leaky_relu2 out");
      expect_close(dx, r["dx"], "leaky_relu2 dx");
    });
  }
  for (GatedAct kind : {GatedAct::kSwiglu, GatedAct::kGeglu}) {  // SwiGLU, GeGLU (tanh gelu)
    int N = 5, H = 6;
    const std::string name = kind == GatedAct::kSwiglu ? "swiglu" : "geglu";
    Vec x = randn(N * 2 * H, rng, 2.0), G = randn(N * H, rng);
    cases.push_back({{"op", "gated_act"}, {"params", {{"N", N}, {"H", H}, {"kind", name}}}, {"x", x}, {"G", G}});
    checks.push_back([=](const json& r) {
      Vec out(N * H), dx(x.size(), 0);
      ref::gated_act_forward(out.data(), x.data(), N, H, kind);
      ref::gated_act_backward(dx.data(), G.data(), x.data(), N, H, kind);
      expect_close(out, r["out"], name + " out");
      expect_close(dx, r["dx"], name + " dx");
    });
  }
  {  // nanochat's smear
    int B = 2, T = 5, C = 8, G_ = 3;
    Vec x = randn(B * T * C, rng), w = randn(G_, rng), lam = {0.7}, G = randn(x.size(), rng);
    cases.push_back({{"op", "smear"},
                     {"params", {{"B", B}, {"T", T}, {"C", C}, {"G", G_}}},
                     {"x", x},
                     {"w", w},
                     {"lam", lam},
                     {"G", G}});
    checks.push_back([=](const json& r) {
      Vec out(x.size()), dx(x.size(), 0), dw(G_, 0), dl(1, 0);
      ref::smear_forward(out.data(), x.data(), w.data(), lam[0], B, T, C, G_);
      ref::smear_backward(dx.data(), dw.data(), dl.data(), G.data(), x.data(), w.data(), lam[0], B, T, C, G_);
      expect_close(out, r["out"], "smear out");
      expect_close(dx, r["dx"], "smear dx");
      expect_close(dw, r["dw"], "smear dw");
      expect_close(dl, r["dlam"], "smear dlam");
    });
  }
  {  // axpy (nanochat's backout: a - s[i] * b)
    int n = 20, i = 2;
    double alpha = -1.0;
    Vec a = randn(n, rng), b = randn(n, rng), s = randn(3, rng), G = randn(n, rng);
    cases.push_back({{"op", "axpy"},
                     {"params", {{"n", n}, {"i", i}, {"alpha", alpha}}},
                     {"a", a},
                     {"b", b},
                     {"s", s},
                     {"G", G}});
    checks.push_back([=](const json& r) {
      Vec out(n), da(n, 0), db(n, 0), ds(3, 0);
      ref::axpy_forward(out.data(), a.data(), b.data(), alpha, s[i], n);
      ref::axpy_backward(da.data(), db.data(), &ds[i], G.data(), b.data(), alpha, s[i], n);
      expect_close(out, r["out"], "axpy out");
      expect_close(da, r["da"], "axpy da");
      expect_close(db, r["db"], "axpy db");
      expect_close(ds, r["ds"], "axpy ds");
    });
  }
  {  // partial key offset
    int B = 2, T = 5, H = 2, D = 8, p0 = 2;
    Vec k = randn(B * T * H * D, rng), G = randn(k.size(), rng);
    cases.push_back({{"op", "key_shift"},
                     {"params", {{"B", B}, {"T", T}, {"H", H}, {"D", D}, {"p0", p0}}},
                     {"k", k},
                     {"G", G}});
    checks.push_back([=](const json& r) {
      Vec out(k.size()), dk(k.size(), 0);
      ref::key_shift_forward(out.data(), k.data(), B, T, H, D, p0);
      ref::key_shift_backward(dk.data(), G.data(), B, T, H, D, p0);
      expect_close(out, r["out"], "key_shift out");
      expect_close(dk, r["dk"], "key_shift dk");
    });
  }

  std::string dir = make_temp_dir("ops_torch");
  ASSERT_TRUE(write_file_atomic(dir + "/req.json", json({{"cases", cases}}).dump()).ok());
  auto r = run_cmd("/usr/bin/python3 " + source_dir() + "/tests/torch/ops_ref.py " + dir + "/req.json " + dir +
                   "/resp.json");
  ASSERT_EQ(r.rc, 0) << "PyTorch peer failed (Debian python3-torch; run scripts/install_deps.sh): " << r.out;
  std::string text;
  ASSERT_TRUE(read_file(dir + "/resp.json", &text).ok());
  json resp = json::parse(text);
  ASSERT_EQ(resp.size(), checks.size());
  for (size_t i = 0; i < checks.size(); i++) checks[i](resp[i]);
  std::filesystem::remove_all(dir);
}
