// CORE prompt rendering against nanochat's own Jinja templates rendered by Jinja2 (Debian python3-jinja2), on real
// rows of the shared eval bundle with few-shot examples; and span detection on hand-made token sequences.
#include <nlohmann/json.hpp>

#include "eval/core_prompts.h"
#include "test_util.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;
using json = nlohmann::json;

namespace {

std::vector<json> read_rows(const std::string& path, size_t n) {
  std::string text;
  EXPECT_TRUE(read_file(path, &text).ok()) << path;
  std::vector<json> rows;
  std::istringstream in(text);
  std::string line;
  while (rows.size() < n && std::getline(in, line)) rows.push_back(json::parse(line));
  return rows;
}

CoreItem to_item(const json& j) {
  CoreItem it;
  it.query = j.value("query", "");
  it.context = j.value("context", "");
  it.continuation = j.value("continuation", "");
  it.choices = j.value("choices", std::vector<std::string>{});
  it.context_options = j.value("context_options", std::vector<std::string>{});
  it.gold = j.value("gold", 0);
  return it;
}

}  // namespace

TEST(CorePrompts, MatchNanochatTemplatesOnRealRows) {
  REQUIRE_SHARED_DATA();
  std::string eval = shared_data() + "/eval_bundle/eval_data/";
  struct Task {
    const char* file;
    const char* type;
    CoreTaskType t;
    const char* delim;
    int shots;
  };
  std::vector<Task> tasks = {
      {"world_knowledge/arc_easy.jsonl", "multiple_choice", CoreTaskType::kMultipleChoice, "\nAnswer: ", 3},
      {"language_understanding/hellaswag.jsonl", "multiple_choice", CoreTaskType::kMultipleChoice, " ", 0},
      {"language_understanding/winogrande.jsonl", "schema", CoreTaskType::kSchema, " ", 2},
      {"world_knowledge/jeopardy_all.jsonl", "language_modeling", CoreTaskType::kLanguageModeling, "\nAnswer: ", 3},
      {"language_understanding/lambada_openai.jsonl", "language_modeling", CoreTaskType::kLanguageModeling, " ", 0},
      {"symbolic_problem_solving/bigbench_dyck_languages.jsonl", "language_modeling",
       CoreTaskType::kLanguageModeling, " ", 2},
  };
  json req = json::array();
  std::vector<std::vector<std::string>> ours;
  for (const auto& t : tasks) {
    auto rows = read_rows(eval + t.file, 12);
    ASSERT_GE(rows.size(), 12u) << t.file;
    for (int i = 0; i < 6; i++) {
      std::vector<CoreItem> shots;
      json shots_j = json::array();
      for (int k = 0; k < t.shots; k++) {
        shots.push_back(to_item(rows[6 + (i + k) % 6]));
        shots_j.push_back(rows[6 + (i + k) % 6]);
      }
      req.push_back({{"type", t.type}, {"delimiter", t.delim}, {"item", rows[i]}, {"fewshot", shots_j}});
      ours.push_back(render_core_prompts(t.t, to_item(rows[i]), t.delim, shots));
    }
  }
  std::string dir = make_temp_dir("core_render");
  ASSERT_TRUE(write_file_atomic(dir + "/req.json", req.dump()).ok());
  auto r = run_cmd("/usr/bin/python3 " + source_dir() + "/tests/core/render_ref.py " + dir + "/req.json " + dir +
                   "/resp.json");
  ASSERT_EQ(r.rc, 0) << "Jinja2 peer failed (Debian python3-jinja2; run scripts/install_deps.sh): " << r.out;
  std::string text;
  ASSERT_TRUE(read_file(dir + "/resp.json", &text).ok());
  auto want = json::parse(text);
  ASSERT_EQ(want.size(), ours.size());
  for (size_t i = 0; i < ours.size(); i++) EXPECT_EQ(ours[i], want[i].get<std::vector<std::string>>()) << "case " << i;
  std::filesystem::remove_all(dir);
}

TEST(CorePrompts, PyStripIsUnicodeAware) {
  EXPECT_EQ(py_strip("  \t\nabc \xC2\xA0\xE3\x80\x80"), "abc");  // NBSP and ideographic space are whitespace
  EXPECT_EQ(py_strip("\xE2\x80\x8B" "x"), "\xE2\x80\x8B" "x");     // zero-width space is not
  EXPECT_EQ(py_strip(""), "");
  EXPECT_EQ(py_strip("   "), "");
}

TEST(CoreSpans, PrefixSuffixLmAndCropping) {
  CoreSequences s;
  // MC: shared prefix [1 5 6], choices differ after it.
  ASSERT_TRUE(core_spans(CoreTaskType::kMultipleChoice, {{1, 5, 6, 7}, {1, 5, 6, 8, 9}}, 0, &s));
  EXPECT_EQ(s.start, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(s.end, (std::vector<int64_t>{4, 5}));
  // Schema: shared suffix [8 9], contexts differ before it.
  ASSERT_TRUE(core_spans(CoreTaskType::kSchema, {{1, 2, 8, 9}, {1, 3, 4, 8, 9}}, 0, &s));
  EXPECT_EQ(s.start, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s.end, (std::vector<int64_t>{4, 5}));
  // LM: the prompt without the continuation must be a token prefix of the one with it.
  ASSERT_TRUE(core_spans(CoreTaskType::kLanguageModeling, {{1, 2, 3}, {1, 2, 3, 4, 5}}, 0, &s));
  EXPECT_EQ(s.tokens.size(), 1u);
  EXPECT_EQ(s.start[0], 3);
  EXPECT_EQ(s.end[0], 5);
  EXPECT_FALSE(core_spans(CoreTaskType::kLanguageModeling, {{1, 2, 3}, {1, 2, 7, 4}}, 0, &s));
  // Cropping from the left keeps the span on the same tokens.
  ASSERT_TRUE(core_spans(CoreTaskType::kLanguageModeling, {{1, 2, 3, 4}, {1, 2, 3, 4, 5, 6}}, 4, &s));
  EXPECT_EQ(s.tokens[0], (std::vector<uint32_t>{3, 4, 5, 6}));
  EXPECT_EQ(s.start[0], 2);
  EXPECT_EQ(s.end[0], 4);
}
