// `frontier eval score` (the composite, docs/scoring.md) and `frontier sample` end to end on a tiny trained
// checkpoint: the composite equals 0.5 (1 - val_bpb/8) + 0.5 CORE of the same run's numbers; sampling is
// deterministic for a seed; bad input is a one-line error.
#include <nlohmann/json.hpp>

#include "eval/score.h"
#include "train_fixture.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

TEST(EvalScore, CompositeFormula) {
  EXPECT_DOUBLE_EQ(composite_score(2.0, 0.1), 0.5 * 0.75 + 0.05);
  EXPECT_DOUBLE_EQ(bpb_score(9.0), 0.0);  // worse than uniform bytes clamps at 0
  EXPECT_DOUBLE_EQ(bpb_score(0.0), 1.0);
}

TEST(EvalScore, CheckpointCompositeAndSample) {
  REQUIRE_SHARED_DATA();
  std::string run = dataset() + "/score_run";
  auto r = run_cmd(train_cmd("--budget 1000 --set train.max_steps=3 --set train.run_dir=" + run));
  ASSERT_EQ(r.rc, 0) << r.out;
  const double train_bpb = summary_value(r.out, "val_bpb");
  r = run_cmd(frontier_bin() + " eval score --checkpoint " + run + "/model.ckpt --max-per-task 2 --bundle " +
              shared_data() + "/eval_bundle --json " + run + "/score.json");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("composite: "), std::string::npos) << r.out;
  std::string text;
  ASSERT_TRUE(read_file(run + "/score.json", &text).ok());
  auto j = nlohmann::json::parse(text);
  EXPECT_NEAR(j["val_bpb"].get<double>(), train_bpb, 1e-6);  // the summary prints 6 decimals
  EXPECT_DOUBLE_EQ(j["composite"].get<double>(), composite_score(j["val_bpb"].get<double>(), j["core"].get<double>()));
  EXPECT_EQ(j["tasks_present"].get<int>(), 20);

  const std::string sample = frontier_bin() + " sample --checkpoint " + run + "/model.ckpt --tokens 12 ";
  auto a = run_cmd(sample + "--prompt 'hello' --seed 3"), b = run_cmd(sample + "--prompt 'hello' --seed 3");
  ASSERT_EQ(a.rc, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out.rfind("hello", 0), 0u) << a.out;  // the prompt, then the continuation
  EXPECT_NE(a.out.find("[sample] 12 tokens"), std::string::npos) << a.out;
  auto u = run_cmd(sample + "--temperature 0");  // unconditioned, greedy
  EXPECT_EQ(u.rc, 0) << u.out;
  std::string many;
  for (int i = 0; i < 60; i++) many += "w" + std::to_string(i) + " ";
  auto over = run_cmd(sample + "--prompt '" + many + "'");
  EXPECT_EQ(over.rc, 1) << over.out;
  EXPECT_NE(over.out.find("error: the prompt has"), std::string::npos) << over.out;
  auto missing = run_cmd(frontier_bin() + " sample --checkpoint /nonexistent/model.ckpt");
  EXPECT_EQ(missing.rc, 1);
  EXPECT_EQ(missing.out.rfind("error: ", 0), 0u) << missing.out;
}
