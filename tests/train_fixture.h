// Shared by the train, eval and calibrate tests: a small prepared dataset (400-token vocabulary) built once per
// test process and removed at exit, and the command line of a tiny model that trains on it in well under a second.
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>

#include "data/prepare.h"
#include "test_util.h"

namespace frontier::testing {

inline std::string g_dataset_dir;  // removed when the test program exits

struct RemoveDataset : ::testing::Environment {
  void TearDown() override {
    if (!g_dataset_dir.empty()) std::filesystem::remove_all(g_dataset_dir);
  }
};
inline const auto* g_remove_dataset = ::testing::AddGlobalTestEnvironment(new RemoveDataset);

// DIR/c.jsonl <- jsonl, prepared into DIR/data with a 400-token vocabulary (a new tokenizer, or tokenizer_dir's).
inline void prepare_400(const std::string& dir, const std::string& jsonl, const std::string& tokenizer_dir = "") {
  write_text(dir + "/c.jsonl", jsonl);
  PrepareOptions o;
  o.train_inputs = {dir + "/c.jsonl"};
  o.out_dir = dir + "/data";
  o.vocab_size = 400;
  o.progress = false;
  o.tokenizer_dir = tokenizer_dir;
  PrepareResult r;
  Status s = prepare(o, &r);
  if (!s.ok()) ADD_FAILURE() << "preparing the test dataset in " << dir << " failed: " << s.message();
}

// The test corpora's random numbers and words: an LCG, and n lowercase words of 2-8 letters drawn from it.
inline uint32_t lcg_next(uint32_t* x) { return (*x = *x * 1103515245u + 12345u) >> 16; }
inline std::vector<std::string> random_words(uint32_t* x, int n) {
  std::vector<std::string> words;
  for (int i = 0; i < n; i++) {
    std::string w;
    for (int k = 0; k < 2 + static_cast<int>(lcg_next(x) % 7); k++) w.push_back(static_cast<char>('a' + lcg_next(x) % 26));
    words.push_back(w);
  }
  return words;
}

// A prepared dataset with a 400-token vocabulary, built once per test process.
inline std::string dataset() {
  static std::string dir = [] {
    std::string d = make_temp_dir("train_data");
    g_dataset_dir = d;
    std::string jsonl;
    uint32_t x = 7;
    auto rnd = [&x] { return lcg_next(&x); };
    std::vector<std::string> words = random_words(&x, 300);  // a 300-word vocabulary
    for (int i = 0; i < 300; i++) {
      std::string doc;
      for (int w = 0; w < 40 + i % 50; w++) doc += std::string(w ? " " : "") + words[rnd() % 300];
      jsonl += nlohmann::json({{"text", doc + "."}}).dump() + "\n";
    }
    prepare_400(d, jsonl);
    return d;
  }();
  return dir;
}

// The test model: depth 1, dim 64, 2 heads of 32, T = 32. --data and --budget are added unless extra has them;
// train.precision = fp32 unless extra sets it or names a config or a run to resume (tests compare runs bit for
// bit, and auto times the two units at every start: on a loaded machine two runs of one test resolved differently).
inline std::string train_cmd(const std::string& extra) {
  std::string data = extra.find("--data") == std::string::npos ? " --data " + dataset() + "/data" : "";
  std::string budget = extra.find("--budget") == std::string::npos ? " --budget 5" : "";
  if (extra.find("train.precision") == std::string::npos && extra.find("--config") == std::string::npos &&
      extra.find("--resume") == std::string::npos)
    budget += " --set train.precision=fp32";
  return frontier_bin() + " train" + data + budget + " --set model.vocab_size=400 --set model.depth=1 "
         "--set model.dim=64 --set model.head_dim=32 --set model.seq_len=32 --set train.micro_batch=4 "
         "--set eval.tokens=512 --set eval.batch=4 --set train.peak_gflops=100 " + extra;
}

// The same tiny model as an argv for two steps into run_dir (budget 30 s), extra arguments after.
inline std::vector<std::string> tiny_train_argv(const std::string& run_dir,
                                                const std::vector<std::string>& extra = {}) {
  std::vector<std::string> a = {frontier_bin(), "train", "--budget", "30", "--data", dataset() + "/data"};
  for (const char* kv : {"model.vocab_size=400", "model.depth=1", "model.dim=64", "model.head_dim=32",
                         "model.seq_len=32", "train.micro_batch=4", "eval.tokens=512", "eval.batch=4",
                         "train.max_steps=2", "train.peak_gflops=100"})
    a.insert(a.end(), {"--set", kv});
  a.insert(a.end(), {"--set", "train.run_dir=" + run_dir});
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

inline double summary_value(const std::string& out, const std::string& key) {
  size_t p = out.find("\n" + key + ":");
  if (p == std::string::npos) return NAN;
  return std::stod(out.substr(out.find(':', p) + 1));
}


}  // namespace frontier::testing
