// The co-design advisor: the loss model's fit (exact recovery of a known law, the A, B >= 0 constraint, too few
// points), and `frontier advise` end to end on a small prepared dataset: speeds, sweep, fit, advice, validation
// and comparison runs, the cache reused by a second invocation, the chart; and its bad-input errors (a budget
// shorter than a step, a dataset too small for the budget, no calibration).
#include <cmath>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "advise/advise.h"
#include "advise/budget_chart.h"
#include "advise/loss_model.h"
#include "train_fixture.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

namespace {

double law(double n, double d, int r) {
  const double e[] = {1.1, 0.95, 0.9};
  return e[r] + 40.0 / std::pow(n, 0.34) + 20.0 / std::pow(d, 0.28);  // exponents on the fit's 0.02 grid
}

// A prepared dataset large enough that a few seconds of a tiny model do not repeat it (the shared fixture's
// 300 documents would be seen many times over).
std::string big_dataset() {
  static std::string dir = [] {
    std::string d = make_temp_dir("advise_data");
    std::string jsonl;
    uint32_t x = 11;
    auto rnd = [&x] { return lcg_next(&x); };
    std::vector<std::string> words = random_words(&x, 400);
    for (int i = 0; i < 6000; i++) {
      std::string doc;
      for (int w = 0; w < 60 + i % 80; w++) doc += std::string(w ? " " : "") + words[(rnd() % 400) * (rnd() % 2) + rnd() % 40];
      jsonl += nlohmann::json({{"text", doc + "."}}).dump() + "\n";
    }
    prepare_400(d, jsonl);
    return d;
  }();
  return dir;
}

std::string base_toml(const std::string& dir, const std::string& data) {
  std::string p = dir + "/base.toml";
  write_text(p, "[model]\ndim = 64\nhead_dim = 32\nseq_len = 32\n[train]\ndata = \"" + data +
                    "\"\nmicro_batch = 4\npeak_gflops = 100.0\nthreads = 1\nprecision = \"fp32\"\n[eval]\ntokens = 2048\n");
  return p;
}

// `frontier advise` on the small dataset with its own cache in d: depths 1 and 2, three sequence lengths, the best of
// each validated, no learning-rate rescans; the advice goes to d/advice.toml. Options may follow.
std::string small_advise_cmd(const std::string& d, int budget) {
  const std::string base = base_toml(d, big_dataset() + "/data");
  return "FRONTIER_CACHE=" + d + "/cache " + frontier_bin() + " advise --budget " + std::to_string(budget) +
         " --base " + base + " --depths 1,2 --seq-lens 16,32,64 --validate 1 --lr-scales 1 --out " + d +
         "/advice.toml ";
}

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST(LossModel, RecoversAKnownLawExactly) {
  std::vector<LossPoint> pts;
  for (int r = 0; r < 3; r++)
    for (double n : {2e5, 1e6, 5e6})
      for (double d : {1e5, 4e5, 2e6})  // three of each: two would leave beta free (E_r absorbs the rest)
        if (r == 1 || n == 1e6) pts.push_back({n, d, r, law(n, d, r)});
  LossModel m;
  Status s = fit_loss_model(pts, 3, &m);
  ASSERT_TRUE(s.ok()) << s.message();
  // Noise-free points of a law on the grid: the fit is that law (to the solver's rounding), here and far away.
  EXPECT_NEAR(m.alpha, 0.34, 1e-9);
  EXPECT_NEAR(m.beta, 0.28, 1e-9);
  EXPECT_LT(m.rmse, 1e-9);
  for (int r = 0; r < 3; r++) EXPECT_NEAR(m.predict(3e7, 2e7, r), law(3e7, 2e7, r), 1e-8) << r;
  EXPECT_GT(m.loo_points, 0);
  EXPECT_LT(m.loo_max, 1e-8);
}

TEST(LossModel, ALossThatGrowsWithSizeIsNotFitted) {
  // Bigger models measured worse (too few steps to train them): the fit must not learn "bigger is worse", it holds
  // A at 0 and explains the points by the tokens alone.
  std::vector<LossPoint> pts;
  for (double n : {1e5, 1e6, 1e7})
    for (double d : {1e4, 1e5, 1e6}) pts.push_back({n, d, 0, 2.0 + 5.0 / std::pow(d, 0.3) + 0.01 * std::log10(n)});
  LossModel m;
  ASSERT_TRUE(fit_loss_model(pts, 1, &m).ok());
  EXPECT_EQ(m.a, 0.0);
  EXPECT_GT(m.b, 0.0);
  EXPECT_GT(m.rmse, 0.0);  // the rising part cannot be explained
  EXPECT_LT(m.rmse, 0.02);
}

TEST(LossModel, TooFewPointsSayHowManyMore) {
  std::vector<LossPoint> pts = {{1e5, 1e5, 0, 3.0}, {1e6, 1e5, 0, 2.9}, {1e5, 1e6, 1, 2.5}};
  LossModel m;
  Status s = fit_loss_model(pts, 2, &m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("needs 3 more"), std::string::npos) << s.message();
  pts.push_back({1e6, 1e6, 0, 2.4});
  s = fit_loss_model(pts, 3, &m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("recipe 2 has no measured point"), std::string::npos) << s.message();
  pts = {{1e5, 1e5, 0, NAN}};
  EXPECT_FALSE(fit_loss_model(pts, 1, &m).ok());
}

// The sweep's reuse rule on truncated step counts: the points a 900-s advice made at half its budget (2,254 steps at
// 0.1996 s/step) stand in for the 4,509 an 1800-s advice wants at half of its own (measured 2026-12-05: without the
// one-step allowance the 1800-s advice reran 30 minutes of sweep it already had, within 2x).
TEST(Advise, ASweepPointWithinTwiceTheStepsIsReused) {
  EXPECT_TRUE(sweep_point_reusable(2254, 4509));
  EXPECT_TRUE(sweep_point_reusable(4509, 2254));
  EXPECT_TRUE(sweep_point_reusable(884, 1769));
  EXPECT_TRUE(sweep_point_reusable(100, 100));
  EXPECT_FALSE(sweep_point_reusable(2253, 4509));  // more than a step short of half
  EXPECT_FALSE(sweep_point_reusable(9020, 4509));  // more than a step over twice
  EXPECT_FALSE(sweep_point_reusable(10, 100));
}

TEST(Advise, EndToEndThenFromTheCache) {
  std::string d = make_temp_dir("advise");
  std::string base = base_toml(d, big_dataset() + "/data");
  const std::string cmd = "FRONTIER_CACHE=" + d + "/cache " + frontier_bin() + " advise --budget 3 --base " + base +
                          " --depths 1,2 --seq-lens 16,32,64 --out " + d + "/advice.toml --levers none ";
  auto r = run_cmd(cmd + "--validate 1 --compare " + base);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("6 measured now"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loss model, fitted to"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("leave-one-out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("advice: depth"), std::string::npos) << r.out;
  // The advice is a config `frontier train` runs.
  auto t = run_cmd(frontier_bin() + " train --config " + d + "/advice.toml --set train.max_steps=2 --set "
                   "train.run_dir=" + d + "/run --budget 30");
  ASSERT_EQ(t.rc, 0) << t.out;
  EXPECT_NE(t.out.find("val_bpb:"), std::string::npos) << t.out;

  // Where it keeps what it measured: 6 speeds + the compared config's, the sweep's points, the two validations.
  std::string recipe_dir;
  for (const auto& e : std::filesystem::directory_iterator(d + "/cache/advise"))
    if (e.is_directory()) recipe_dir = e.path().string();
  ASSERT_FALSE(recipe_dir.empty());
  auto points = read_jsonl(recipe_dir + "/points.jsonl");
  EXPECT_GE(points.size(), 7u);  // middle length: 2 depths x 2 fractions; the other two: 2 depths x 1 (some merge)
  for (const auto& p : points) {
    EXPECT_GT(p["val_bpb"].get<double>(), 0.5) << p.dump();
    EXPECT_EQ(p["tokens"].get<int64_t>(), p["steps"].get<int64_t>() * 4 * p["seq_len"].get<int64_t>()) << p.dump();
  }
  // The best candidate of each sequence length (3 rows), the best of them at learning rates x 0.5 and x 2 (2 rows),
  // the advice (the best measured of the 5), the compared base.
  auto v = read_jsonl(recipe_dir + "/validations.jsonl");
  ASSERT_EQ(v.size(), 7u) << r.out;
  double best = 1e9, best_scale = 1;
  int advice = -1, scaled = 0;
  for (int i = 0; i < 7; i++) {
    if (v[i].value("advice", false)) advice = i;
    else if (v[i]["label"].get<std::string>().rfind("depth ", 0) == 0 && v[i]["val_bpb"].get<double>() < best)
      best = v[i]["val_bpb"].get<double>(), best_scale = v[i].value("lr_scale", 1.0);
    if (v[i].contains("lr_scale") && !v[i].value("advice", false)) {
      scaled++;
      EXPECT_EQ(v[i]["shape"], v[i > 0 ? i - 1 : 0]["shape"]) << "the scaled runs train one shape: " << v[i].dump();
    }
    // Probe mode with the advisor's step time: the run trains exactly budget / step time steps.
    if (v[i].contains("steps")) {
      EXPECT_EQ(v[i]["steps"].get<int64_t>(), static_cast<int64_t>(3.0 / v[i]["step_s"].get<double>())) << v[i].dump();
      // and its tokens come through from the run's summary (total_tokens_M: a key with a capital, once dropped).
      const std::string shape = v[i].value("shape", std::string());
      if (!shape.empty()) {
        const int64_t T = std::stoll(shape.substr(shape.rfind(' ') + 1));
        EXPECT_NEAR(v[i]["tokens_M"].get<double>(), v[i]["steps"].get<int64_t>() * 4 * T / 1e6, 0.0006) << v[i].dump();
      }
    }
  }
  EXPECT_EQ(scaled, 2) << r.out;
  EXPECT_NE(r.out.find("learning rates x 0.5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("learning rates x 2"), std::string::npos) << r.out;
  ASSERT_EQ(advice, 5) << r.out;
  EXPECT_EQ(v[5]["val_bpb"].get<double>(), best) << v[5].dump();
  EXPECT_EQ(v[5].value("lr_scale", 1.0), best_scale) << v[5].dump();
  EXPECT_EQ(v[5]["label"].get<std::string>().rfind("advised (depth", 0), 0u) << v[5].dump();
  EXPECT_NE(v[6]["label"].get<std::string>().find("base.toml"), std::string::npos) << v[6].dump();
  EXPECT_TRUE(v[6].contains("predicted")) << v[6].dump();  // the base is inside the model (T 32, same recipe)
  std::string advised;
  ASSERT_TRUE(read_file(d + "/advice.toml", &advised).ok());
  EXPECT_NE(advised.find("Measured here at the full budget: val_bpb"), std::string::npos) << advised;
  // A scaled winner writes its rates (the base's times the scale); the base's rates are the defaults' otherwise.
  EXPECT_EQ(advised.find("matrix_lr") != std::string::npos, best_scale != 1.0) << advised;
  if (best_scale != 1.0) {
    char want[64];
    std::snprintf(want, sizeof(want), "matrix_lr = %g", 0.02 * best_scale);
    EXPECT_NE(advised.find(want), std::string::npos) << advised;
  }

  // The same again: every full-budget run is found in the record, nothing is trained.
  r = run_cmd(cmd + "--validate 1 --compare " + base);
  ASSERT_EQ(r.rc, 0) << r.out;
  size_t reused = 0;
  for (size_t p = r.out.find("[recorded before"); p != std::string::npos; p = r.out.find("[recorded before", p + 1)) reused++;
  EXPECT_EQ(reused, 6u) << r.out;

  // Again, for another budget inside the same range: nothing is measured or trained again before the fit.
  r = run_cmd(cmd + "--validate 0");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("0 measured now, 6 from"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 0 to run"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("validate "), std::string::npos) << r.out;

  // A compared config of a candidate's shape with another recipe (learning rates) takes that shape's step time, so
  // it trains the same steps as the candidate: the comparison is of recipes, not of two probes.
  write_text(d + "/same_shape.toml", "[model]\ndepth = 1\ndim = 64\nhead_dim = 32\nseq_len = 32\n[train]\ndata = \"" +
                                         big_dataset() + "/data\"\nmicro_batch = 4\nthreads = 1\nprecision = \"fp32\"\n[optim]\n"
                                         "matrix_lr = 0.01\n[eval]\ntokens = 2048\n");
  r = run_cmd(cmd + "--validate 0 --compare " + d + "/same_shape.toml");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("0 measured now, 6 from"), std::string::npos) << r.out;
  std::string speed_text;
  ASSERT_TRUE(read_file(d + "/cache/advise/speed.json", &speed_text).ok());
  const nlohmann::json speeds = nlohmann::json::parse(speed_text);
  double cand_step = 0;
  for (const auto& [k, val] : speeds.items())
    if (k.find(" | depth 1 ") != std::string::npos && k.find(" T 32 B 4 ") != std::string::npos &&
        k.find("same_shape") == std::string::npos)
      cand_step = val["step_s"].get<double>();
  ASSERT_GT(cand_step, 0) << speeds.dump(1);
  v = read_jsonl(recipe_dir + "/validations.jsonl");
  ASSERT_NE(v.back()["config"].get<std::string>().find("same_shape.toml"), std::string::npos) << v.back().dump();
  EXPECT_EQ(v.back()["step_s"].get<double>(), cand_step) << v.back().dump();
  EXPECT_EQ(speeds.dump().find("same_shape"), std::string::npos) << "it was timed on its own: " << speeds.dump(1);

  r = run_cmd("FRONTIER_CACHE=" + d + "/cache " + frontier_bin() + " advise --chart " + d + "/chart.svg");
  ASSERT_EQ(r.rc, 0) << r.out;
  std::string svg;
  ASSERT_TRUE(read_file(d + "/chart.svg", &svg).ok());
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find(": advised</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("base.toml</text>"), std::string::npos) << svg;
  std::filesystem::remove_all(d);
}

TEST(Advise, BadInputIsOneLine) {
  std::string d = make_temp_dir("advise_bad");
  std::string base = base_toml(d, dataset() + "/data");
  const std::string env = "FRONTIER_CACHE=" + d + "/cache ";
  // Shorter than one step of the fastest candidate.
  auto r = run_cmd(env + frontier_bin() + " advise --budget 0.001 --base " + base + " --depths 2 --seq-lens 64");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("shorter than one step of the fastest candidate"), std::string::npos) << r.out;
  // The 300-document fixture is far too small for an hour of a tiny model: say so, do not repeat it.
  r = run_cmd(env + frontier_bin() + " advise --budget 3600 --base " + base + " --depths 1 --seq-lens 16");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("is too small for 3600 s: every candidate would repeat it"), std::string::npos) << r.out;
  // No calibration and no train.peak_gflops.
  write_text(d + "/nopeak.toml", "[model]\ndim = 64\nhead_dim = 32\n[train]\ndata = \"" + dataset() + "/data\"\n");
  r = run_cmd(env + frontier_bin() + " advise --budget 10 --base " + d + "/nopeak.toml --depths 1 --seq-lens 16");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("run `frontier calibrate` first"), std::string::npos) << r.out;
  // A candidate that cannot be built or timed (3 key/value heads do not divide 2): the error names the key.
  write_text(d + "/heads.toml", "[model]\ndim = 64\nhead_dim = 32\nn_kv_head = 3\n[train]\ndata = \"" + dataset() +
                                    "/data\"\npeak_gflops = 10.0\n");
  r = run_cmd(env + frontier_bin() + " advise --budget 10 --base " + d + "/heads.toml --depths 1 --seq-lens 16");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("n_kv_head"), std::string::npos) << r.out;
  // No dataset.
  write_text(d + "/nodata.toml", "[train]\ndata = \"" + d + "/missing\"\npeak_gflops = 10.0\n");
  r = run_cmd(env + frontier_bin() + " advise --budget 10 --base " + d + "/nodata.toml");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("advise needs a prepared dataset"), std::string::npos) << r.out;
  // No budget.
  r = run_cmd(env + frontier_bin() + " advise --base " + base);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("advise needs --budget"), std::string::npos) << r.out;
  std::filesystem::remove_all(d);
}

TEST(BudgetChart, OneLinePerConfigWithTheAdvisedShapesNoted) {
  std::vector<nlohmann::json> rows = {
      {{"label", "advised (depth 2 T 256)"}, {"data", "w"}, {"budget", 60}, {"val_bpb", 2.1}},
      {{"label", "advised (depth 4 T 256)"}, {"data", "w"}, {"budget", 300}, {"val_bpb", 1.8}},
      {{"label", "configs/tiny.toml"}, {"data", "w"}, {"budget", 60}, {"val_bpb", 2.4}},
      {{"label", "configs/tiny.toml"}, {"data", "w"}, {"budget", 300}, {"val_bpb", 2.3}},
      {{"label", "bad"}, {"budget", "x"}}};
  std::string svg = budget_chart_svg(rows);
  EXPECT_NE(svg.find("w: advised</text>"), std::string::npos);
  EXPECT_NE(svg.find("w: configs/tiny.toml</text>"), std::string::npos);
  EXPECT_NE(svg.find(">depth 4 T 256</text>"), std::string::npos);
  size_t paths = 0;
  for (size_t p = svg.find("<path"); p != std::string::npos; p = svg.find("<path", p + 1)) paths++;
  EXPECT_EQ(paths, 2u);
  EXPECT_NE(svg.find("1 min"), std::string::npos);
  EXPECT_NE(svg.find("5 min"), std::string::npos);
  // From 7 s to 30 min the 1-2-5 ticks crowd (10 and 15 min overlapped): each label keeps its distance.
  rows = {{{"label", "a"}, {"data", "w"}, {"budget", 7}, {"val_bpb", 2.5}},
          {{"label", "a"}, {"data", "w"}, {"budget", 1800}, {"val_bpb", 1.6}}};
  svg = budget_chart_svg(rows);
  std::vector<double> xs;
  for (size_t p = svg.find("text-anchor=\"middle\">"); p != std::string::npos;
       p = svg.find("text-anchor=\"middle\">", p + 1)) {
    size_t x = svg.rfind("<text x=\"", p);
    xs.push_back(std::stod(svg.substr(x + 9)));
  }
  ASSERT_GE(xs.size(), 5u) << svg;
  for (size_t i = 1; i + 1 < xs.size(); i++) EXPECT_GE(xs[i] - xs[i - 1], 40) << svg;  // the last is the axis title
  EXPECT_NE(svg.find(">30 min</text>"), std::string::npos);
}

// The architecture stage on the best shape: the base on 2 seeds, each lever alone on the first (its row in the
// table and in validations.jsonl, keyed by its keys), the levers that beat the base on the first seed combined on
// both seeds and taken only when the paired difference beats twice its standard error; the advice holds the keys
// exactly when it says "taken". Run again, everything comes from the cache. A bad lever name is a one-line error.
TEST(Advise, ArchitectureStageMeasuresEachLeverAndCombines) {
  std::string d = make_temp_dir("advise_levers");
  const std::string cmd = small_advise_cmd(d, 3) + "--seeds 2 --levers ";
  auto r = run_cmd(cmd + "windows,qk_scale,smear,normuon");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("architecture stage: depth"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("base: mean val_bpb"), std::string::npos) << r.out;
  for (const char* name : {"\nwindows ", "\nqk_scale ", "\nsmear ", "\nnormuon "})
    EXPECT_NE(r.out.find(name), std::string::npos) << name << r.out;
  std::string recipe_dir;
  for (const auto& e : std::filesystem::directory_iterator(d + "/cache/advise"))
    if (e.is_directory()) recipe_dir = e.path().string();
  auto v = read_jsonl(recipe_dir + "/validations.jsonl");
  // Rows on the first seed (no "seed" field) with one lever's keys; rows on seed 43: the base's and, when levers
  // were combined, the combination's (whose first-seed row is a lever's own when one lever alone was combined).
  std::set<std::string> single = {"model.window_pattern=SSSL", "model.qk_scale=1.2", "model.smear=true",
                                  "optim.muon_equilibrate=true optim.muon_renormalize=true optim.normuon_beta2=0.9"};
  std::set<std::string> first_seed;
  int seed_rows = 0;
  std::string combo;
  for (const auto& row : v) {
    const std::string lv = row.value("levers", std::string());
    if (!row.contains("seed") && !lv.empty()) first_seed.insert(lv);
    if (row.value("seed", 0) == 43) {
      seed_rows++;
      if (!lv.empty()) combo = lv;
    }
  }
  for (const auto& k : single) EXPECT_TRUE(first_seed.count(k)) << k << "\n" << r.out;
  const bool combined = r.out.find("\ncombining ") != std::string::npos;
  EXPECT_EQ(seed_rows, combined ? 2 : 1) << r.out;  // the base's second seed, and the combination's
  EXPECT_EQ(first_seed.size(), single.size() + (combined && !single.count(combo) ? 1 : 0)) << r.out;
  if (combined) {
    EXPECT_TRUE(first_seed.count(combo)) << combo;
  }
  // qk_scale's step is the base's by construction: it trains the base's step time (the seed-43 base row's).
  double base_step = 0, qk_step = -1;
  for (const auto& row : v) {
    if (row.value("seed", 0) == 43 && !row.contains("levers")) base_step = row["step_s"].get<double>();
    if (row.value("levers", std::string()) == "model.qk_scale=1.2") qk_step = row["step_s"].get<double>();
  }
  EXPECT_EQ(qk_step, base_step);
  std::string advice;
  ASSERT_TRUE(read_file(d + "/advice.toml", &advice).ok());
  EXPECT_NE(advice.find("# Architecture stage: "), std::string::npos) << advice;
  std::string keys;  // the TOML without its comment lines
  std::istringstream lines(advice);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("#", 0) != 0) keys += line + "\n";
  const bool taken = r.out.find(": taken") != std::string::npos;
  if (taken) {
    ASSERT_TRUE(combined);
    // Every key of the combination is in the advice.
    std::istringstream in(combo);
    for (std::string kv; in >> kv;) {
      const std::string key = kv.substr(kv.find('.') + 1, kv.find('=') - kv.find('.') - 1);
      EXPECT_NE(keys.find(key + " = "), std::string::npos) << kv << "\n" << advice;
    }
  } else {
    for (const char* key : {"window_pattern", "qk_scale", "smear", "normuon_beta2"})
      EXPECT_EQ(keys.find(key), std::string::npos) << key << "\n" << advice;
  }
  // Again: every run is the cache's.
  auto again = run_cmd(cmd + "windows,qk_scale,smear,normuon");
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_EQ(again.out.find("/validate/"), std::string::npos) << again.out;
  EXPECT_EQ(read_jsonl(recipe_dir + "/validations.jsonl").size(), v.size() + 1) << "one more advice row only";

  auto bad = run_cmd(cmd + "windows,wings");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find("--levers: unknown lever 'wings'; use default, all, none or names from: windows, swiglu"),
            std::string::npos) << bad.out;
}

// The shapes again with the chosen levers (--reshape-above 0: whenever levers are chosen; one seed, so a lever that
// beats the base on it is chosen): every shape's step is timed with the levers, and the best of each other sequence
// length is trained with them (a validations row with the levers' keys at a shape other than the pick's); the
// advice says which shape it kept, and the advice row names the levers. Run again, everything is the cache's.
TEST(Advise, ChosenLeversSendTheShapesBackThroughTheShapeStage) {
  std::string d = make_temp_dir("advise_reshape");
  const std::string cmd = small_advise_cmd(d, 3) + "--seeds 1 --reshape-above 0 --levers qk_scale,ngram,normuon";
  auto r = run_cmd(cmd);
  ASSERT_EQ(r.rc, 0) << r.out;
  std::string recipe_dir;
  for (const auto& e : std::filesystem::directory_iterator(d + "/cache/advise"))
    if (e.is_directory()) recipe_dir = e.path().string();
  auto v = read_jsonl(recipe_dir + "/validations.jsonl");
  std::string advice;
  ASSERT_TRUE(read_file(d + "/advice.toml", &advice).ok());
  const bool taken = r.out.find(": taken") != std::string::npos;
  const size_t again = r.out.find("\nthe shapes again with ");
  EXPECT_EQ(again != std::string::npos, taken) << r.out;
  std::string pick, levers;
  for (const auto& row : v)
    if (row.value("advice", false)) levers = row.value("levers", std::string());
  for (const auto& row : v)  // the pick: the shape the architecture stage tried each lever on
    if (row.value("levers", std::string()) == "model.qk_scale=1.2") pick = row.value("shape", std::string());
  ASSERT_FALSE(pick.empty()) << r.out;
  if (taken) {
    EXPECT_FALSE(levers.empty()) << "the advice row names the chosen levers";
    // Every shape timed with the levers: the table lists them all (2 depths x 3 lengths).
    for (const char* shape : {"depth 1 T 16", "depth 2 T 16", "depth 1 T 32", "depth 2 T 32", "depth 1 T 64",
                              "depth 2 T 64"})
      EXPECT_NE(r.out.find(std::string("\n  ") + shape, again), std::string::npos) << shape << r.out;
    int other = 0;
    for (const auto& row : v)
      if (!row.value("advice", false) && row.value("levers", std::string()) == levers &&
          row.value("shape", std::string()) != pick)
        other++;
    EXPECT_GE(other, 2) << "the best of each other sequence length, trained with the levers\n" << r.out;
    EXPECT_NE(advice.find("the shapes again with "), std::string::npos) << advice;
  } else {
    EXPECT_TRUE(levers.empty());
  }
  auto r2 = run_cmd(cmd);
  ASSERT_EQ(r2.rc, 0) << r2.out;
  // A bad threshold is a one-line error before any work.
  auto bad = run_cmd(small_advise_cmd(d, 3) + "--reshape-above -1");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find("--reshape-above: Value -1 not in range"), std::string::npos) << bad.out;
  EXPECT_EQ(r2.out.find("/validate/"), std::string::npos) << r2.out;
  EXPECT_EQ(read_jsonl(recipe_dir + "/validations.jsonl").size(), v.size() + 1) << "one more advice row only";
}

// The hardware profile is an input: a lower ISA tier, a thread count and a precision are what the advisor times and
// trains with (its machine line and its cache say so), and bad values are one-line errors before any work.
TEST(Advise, HardwareProfileIsAnInput) {
  std::string d = make_temp_dir("advise_profile");
  const std::string cmd = small_advise_cmd(d, 2) + "--levers none ";
  auto r = run_cmd(cmd + "--isa avx2 --threads 1 --precision fp32");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find(" | avx2 | 1 threads | fp32"), std::string::npos) << r.out;
  std::string advice;
  ASSERT_TRUE(read_file(d + "/advice.toml", &advice).ok());
  EXPECT_NE(advice.find("| avx2 | 1 threads | fp32"), std::string::npos) << advice;
  for (const auto& [flag, want] : std::vector<std::pair<std::string, std::string>>{
           {"--isa avx9", "FRONTIER_ISA=avx9 is not a tier"}, {"--precision fp64", "train.precision = 'fp64'"}}) {
    auto b = run_cmd(cmd + flag);
    EXPECT_NE(b.rc, 0) << flag;
    EXPECT_NE(b.out.find(want), std::string::npos) << flag << ": " << b.out;
  }
}
