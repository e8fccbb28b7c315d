#include "eval/core_eval.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autograd/tape.h"
#include "eval/py_random.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"

namespace frontier {

namespace {

// RFC 4180 fields of one CSV record (quotes, doubled quotes, commas inside quotes; no embedded newlines here).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); i++) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back().push_back('"');
        i++;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back().push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back().push_back(c);
    }
  }
  return out;
}

Status parse_row(const nlohmann::json& j, CoreTaskType type, const std::string& where, CoreItem* it) {
  auto need_str = [&](const char* k, std::string* dst) -> Status {
    if (!j.contains(k) || !j[k].is_string()) return Status::error(where + ": missing string field \"" + k + "\"");
    *dst = j[k].get<std::string>();
    return ok_status();
  };
  auto need_list = [&](const char* k, std::vector<std::string>* dst) -> Status {
    if (!j.contains(k) || !j[k].is_array() || j[k].empty())
      return Status::error(where + ": missing list field \"" + k + "\"");
    for (const auto& v : j[k]) {
      if (!v.is_string()) return Status::error(where + ": \"" + k + "\" holds a non-string");
      dst->push_back(v.get<std::string>());
    }
    return ok_status();
  };
  auto need_gold = [&](size_t n) -> Status {
    if (!j.contains("gold") || !j["gold"].is_number_integer() || j["gold"].get<int64_t>() < 0 ||
        j["gold"].get<size_t>() >= n)
      return Status::error(where + ": \"gold\" must index the options");
    it->gold = j["gold"].get<int>();
    return ok_status();
  };
  switch (type) {
    case CoreTaskType::kMultipleChoice:
      FRONTIER_RETURN_IF_ERROR(need_str("query", &it->query));
      FRONTIER_RETURN_IF_ERROR(need_list("choices", &it->choices));
      return need_gold(it->choices.size());
    case CoreTaskType::kSchema:
      FRONTIER_RETURN_IF_ERROR(need_list("context_options", &it->context_options));
      FRONTIER_RETURN_IF_ERROR(need_str("continuation", &it->continuation));
      return need_gold(it->context_options.size());
    case CoreTaskType::kLanguageModeling:
      FRONTIER_RETURN_IF_ERROR(need_str("context", &it->context));
      return need_str("continuation", &it->continuation);
  }
  return ok_status();
}

}  // namespace

void core_batch_losses(Gpt& gpt, const std::vector<std::vector<uint32_t>>& seqs,
                       std::vector<std::vector<float>>* losses, std::vector<std::vector<int>>* argmax) {
  const int B = static_cast<int>(seqs.size());
  int T = 0;
  for (const auto& q : seqs) T = std::max(T, static_cast<int>(q.size()) - 1);
  std::vector<int32_t> x(int64_t(B) * T, 0), y(int64_t(B) * T, -1);  // pad: token 0 in, target ignored
  for (int b = 0; b < B; b++)
    for (size_t t = 0; t + 1 < seqs[b].size(); t++) {
      x[int64_t(b) * T + t] = static_cast<int32_t>(seqs[b][t]);
      y[int64_t(b) * T + t] = static_cast<int32_t>(seqs[b][t + 1]);
    }
  const int V = gpt.shape().vocab_size;
  std::vector<float> rows(int64_t(B) * T);
  Tape tape;
  Var logits;
  gpt.forward(tape, x.data(), y.data(), B, T, &logits, rows.data());
  const float* z = tape.value(logits);
  losses->assign(B, {});
  argmax->assign(B, {});
  for (int b = 0; b < B; b++) {
    const int n = static_cast<int>(seqs[b].size()) - 1;
    (*losses)[b].assign(rows.begin() + int64_t(b) * T, rows.begin() + int64_t(b) * T + n);
    (*argmax)[b].resize(n);
    for (int t = 0; t < n; t++) {
      const float* zt = z + (int64_t(b) * T + t) * V;
      (*argmax)[b][t] = static_cast<int>(std::max_element(zt, zt + V) - zt);
    }
  }
}

void core_sequence_losses(Gpt& gpt, const std::vector<uint32_t>& tok, std::vector<float>* losses, std::vector<int>* argmax) {
  std::vector<std::vector<float>> l;
  std::vector<std::vector<int>> a;
  core_batch_losses(gpt, {tok}, &l, &a);
  *losses = std::move(l[0]);
  *argmax = std::move(a[0]);
}

Status load_core_bundle(const std::string& dir, CoreBundle* out) {
  out->dir = dir;
  out->tasks.clear();
  const std::string ypath = dir + "/core.yaml", cpath = dir + "/eval_meta_data.csv";
  if (!file_exists(ypath)) return Status::error("no CORE bundle at " + dir + " (core.yaml missing)");
  YAML::Node root;
  try {
    root = YAML::LoadFile(ypath);
  } catch (const YAML::Exception& e) {
    return Status::error(ypath + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root["icl_tasks"] || !root["icl_tasks"].IsSequence())
    return Status::error(ypath + ": no icl_tasks list");
  for (const auto& n : root["icl_tasks"]) {
    std::string where = ypath + ":" + std::to_string(n.Mark().line + 1);
    CoreTask t;
    try {
      t.label = n["label"].as<std::string>();
      t.dataset_uri = n["dataset_uri"].as<std::string>();
      t.num_fewshot = n["num_fewshot"][0].as<int>();
      std::string type = n["icl_task_type"].as<std::string>();
      if (type == "multiple_choice") t.type = CoreTaskType::kMultipleChoice;
      else if (type == "schema") t.type = CoreTaskType::kSchema;
      else if (type == "language_modeling") t.type = CoreTaskType::kLanguageModeling;
      else return Status::error(where + ": unknown icl_task_type '" + type + "' (expected multiple_choice, schema "
                                "or language_modeling)");
      if (n["continuation_delimiter"]) t.delimiter = n["continuation_delimiter"].as<std::string>();
    } catch (const YAML::Exception& e) {
      return Status::error(where + ": task entry needs label, dataset_uri, num_fewshot and icl_task_type (" + e.msg +
                           ")");
    }
    out->tasks.push_back(std::move(t));
  }
  // Random baselines.
  std::string csv;
  FRONTIER_RETURN_IF_ERROR(read_file(cpath, &csv));
  std::istringstream in(csv);
  std::string line;
  int task_col = -1, base_col = -1, lineno = 0;
  while (std::getline(in, line)) {
    lineno++;
    auto f = csv_fields(line);
    if (lineno == 1) {
      for (size_t i = 0; i < f.size(); i++) {
        if (f[i] == "Eval Task") task_col = static_cast<int>(i);
        if (f[i] == "Random baseline") base_col = static_cast<int>(i);
      }
      if (task_col < 0 || base_col < 0)
        return Status::error(cpath + ":1: needs columns \"Eval Task\" and \"Random baseline\"");
      continue;
    }
    if (static_cast<int>(f.size()) <= std::max(task_col, base_col)) continue;
    for (auto& t : out->tasks)
      if (t.label == f[task_col]) {
        char* end = nullptr;
        t.random_baseline = std::strtod(f[base_col].c_str(), &end);
        if (end == f[base_col].c_str())
          return Status::error(cpath + ":" + std::to_string(lineno) + ": Random baseline is not a number");
      }
  }
  // Task data.
  for (auto& t : out->tasks) {
    std::string path = dir + "/eval_data/" + t.dataset_uri;
    if (!file_exists(path)) continue;
    t.present = true;
    std::string text;
    FRONTIER_RETURN_IF_ERROR(read_file(path, &text));
    std::istringstream rows(text);
    int ln = 0;
    while (std::getline(rows, line)) {
      ln++;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      std::string where = path + ":" + std::to_string(ln);
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) return Status::error(where + ": not a JSON object");
      CoreItem it;
      FRONTIER_RETURN_IF_ERROR(parse_row(j, t.type, where, &it));
      t.rows.push_back(std::move(it));
    }
    if (t.rows.empty()) return Status::error(path + ": no rows");
  }
  return ok_status();
}

bool core_item_sequences(const Gpt& gpt, const Tokenizer& tok, const CoreTask& task, const std::vector<CoreItem>& data,
                         size_t idx, CoreSequences* seq) {
  const CoreItem& item = data[idx];
  std::vector<CoreItem> fewshot;
  if (task.num_fewshot > 0) {
    std::vector<size_t> avail;
    for (size_t i = 0; i < data.size(); i++)
      if (i != idx) avail.push_back(i);
    size_t k = std::min<size_t>(task.num_fewshot, avail.size());
    for (size_t i : PyRandom(1234 + idx).sample(avail, k)) fewshot.push_back(data[i]);
  }
  auto prompts = render_core_prompts(task.type, item, task.delimiter, fewshot);
  std::vector<std::vector<uint32_t>> tokens;
  for (const auto& p : prompts) {
    std::vector<uint32_t> ids = {tok.bos_id()};
    tok.encode_ordinary(p, &ids);
    tokens.push_back(std::move(ids));
  }
  // nanochat crops each sequence to the model's context (max_seq_len tokens), scoring predictions within it.
  if (!core_spans(task.type, std::move(tokens), gpt.shape().seq_len, seq)) return false;
  for (auto& st : seq->start) st = std::max<int64_t>(st, 1);  // a span cropped to position 0 has no prediction
  return true;
}

bool evaluate_core_item(Gpt& gpt, const Tokenizer& tok, const CoreTask& task, const std::vector<CoreItem>& data,
                        size_t idx) {
  const CoreItem& item = data[idx];
  CoreSequences seq;
  if (!core_item_sequences(gpt, tok, task, data, idx, &seq)) return false;
  std::vector<float> losses;
  std::vector<int> pred;
  if (task.type == CoreTaskType::kLanguageModeling) {
    core_sequence_losses(gpt, seq.tokens[0], &losses, &pred);
    for (int64_t t = seq.start[0]; t < seq.end[0]; t++)
      if (pred[t - 1] != static_cast<int>(seq.tokens[0][t])) return false;
    return true;
  }
  size_t best = 0;
  double best_loss = INFINITY;
  std::vector<std::vector<float>> all;
  std::vector<std::vector<int>> preds;
  core_batch_losses(gpt, seq.tokens, &all, &preds);  // every choice in one forward
  for (size_t c = 0; c < seq.tokens.size(); c++) {
    double sum = 0;
    for (int64_t t = seq.start[c]; t < seq.end[c]; t++) sum += all[c][t - 1];
    double mean = sum / std::max<int64_t>(1, seq.end[c] - seq.start[c]);
    if (mean < best_loss) {
      best_loss = mean;
      best = c;
    }
  }
  return static_cast<int>(best) == item.gold;
}

Status evaluate_core(Gpt& gpt, const Tokenizer& tok, const CoreBundle& bundle, int64_t max_per_task, CoreReport* out,
                     bool progress) {
  out->tasks.clear();
  double sum = 0;
  out->n_present = 0;
  out->n_total = static_cast<int>(bundle.tasks.size());
  for (const auto& task : bundle.tasks) {
    CoreTaskResult r;
    r.label = task.label;
    r.present = task.present;
    if (!task.present) {
      out->tasks.push_back(r);
      continue;
    }
    auto t0 = std::chrono::steady_clock::now();
    std::vector<CoreItem> data = task.rows;
    PyRandom(1337).shuffle(data);
    if (max_per_task > 0 && static_cast<int64_t>(data.size()) > max_per_task) data.resize(max_per_task);
    for (size_t i = 0; i < data.size(); i++) r.correct += evaluate_core_item(gpt, tok, task, data, i);
    r.n = static_cast<int64_t>(data.size());
    r.accuracy = static_cast<double>(r.correct) / r.n;
    r.centered = (r.accuracy - 0.01 * task.random_baseline) / (1.0 - 0.01 * task.random_baseline);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (progress)
      std::fprintf(stderr, "  %-32s acc %.4f  centered %+.4f  (%lld items, %.1fs)\n", task.label.c_str(), r.accuracy,
                   r.centered, static_cast<long long>(r.n), r.seconds);
    sum += r.centered;
    out->n_present++;
    out->tasks.push_back(r);
  }
  out->core = out->n_present ? sum / out->n_present : 0.0;
  return ok_status();
}

std::string CoreReport::table() const {
  std::string s;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%-32s %8s %8s %9s %8s\n", "task", "items", "accuracy", "centered", "seconds");
  s += buf;
  for (const auto& t : tasks) {
    if (!t.present) {
      std::snprintf(buf, sizeof(buf), "%-32s %8s\n", t.label.c_str(), "missing");
    } else {
      std::snprintf(buf, sizeof(buf), "%-32s %8lld %8.4f %+9.4f %8.1f\n", t.label.c_str(),
                    static_cast<long long>(t.n), t.accuracy, t.centered == 0 ? 0.0 : t.centered, t.seconds);
    }
    s += buf;
  }
  std::snprintf(buf, sizeof(buf), "CORE (%d/%d tasks): %.6f\n", n_present, n_total, core);
  s += buf;
  return s;
}

}  // namespace frontier
