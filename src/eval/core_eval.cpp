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

// One CSV record (RFC 4180: quotes, doubled quotes, commas and newlines inside quotes) and the line it starts on.
struct CsvRecord {
  int64_t line = 0;
  std::vector<std::string> fields;
};

Status csv_records(const std::string& text, const std::string& path, std::vector<CsvRecord>* out) {
  out->clear();
  CsvRecord rec{1, {""}};
  bool quoted = false, any = false;  // any: the record has a field separator, a quote or a character
  int64_t line = 1;
  for (size_t i = 0; i < text.size(); i++) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        rec.fields.back().push_back('"');
        i++;
      } else if (c == '"') {
        quoted = false;
      } else {
        line += c == '\n';
        rec.fields.back().push_back(c);
      }
    } else if (c == '"') {
      quoted = any = true;
    } else if (c == ',') {
      rec.fields.emplace_back();
      any = true;
    } else if (c == '\n') {
      if (any) out->push_back(std::move(rec));  // blank lines are skipped
      rec = CsvRecord{++line, {""}};
      any = false;
    } else if (c != '\r') {
      rec.fields.back().push_back(c);
      any = true;
    }
  }
  if (quoted) return Status::error(path + ":" + std::to_string(rec.line) + ": a quoted field is never closed");
  if (any) out->push_back(std::move(rec));
  return ok_status();
}

// A JSON value as a message shows it: its text, shortened, and what kind of value it is.
std::string shown(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  std::string t = v.dump();
  if (t.size() > 60) t = t.substr(0, 57) + "...";
  const char* kind = v.is_string() ? "a string" : v.is_boolean() ? "a boolean" : v.is_number() ? "a number"
                     : v.is_array() ? "a list" : "an object";
  return t + " (" + kind + ")";
}

Status parse_row(const nlohmann::json& j, CoreTaskType type, const std::string& where, CoreItem* it) {
  auto need_str = [&](const char* k, std::string* dst) -> Status {
    if (!j.contains(k)) return Status::error(where + ": missing string field \"" + k + "\"");
    if (!j[k].is_string()) return Status::error(where + ": \"" + k + "\" is " + shown(j[k]) + "; must be a string");
    *dst = j[k].get<std::string>();
    return ok_status();
  };
  // The options of an item: a list of at least 2 strings (one option would be "correct" by construction).
  auto need_list = [&](const char* k, std::vector<std::string>* dst) -> Status {
    if (!j.contains(k)) return Status::error(where + ": missing list field \"" + k + "\"");
    const auto& v = j[k];
    if (!v.is_array()) return Status::error(where + ": \"" + k + "\" is " + shown(v) + "; must be a list of strings");
    if (v.size() < 2)
      return Status::error(where + ": \"" + k + "\" is " + shown(v) + "; an item needs at least 2 options");
    for (size_t i = 0; i < v.size(); i++) {
      if (!v[i].is_string())
        return Status::error(where + ": \"" + k + "\"[" + std::to_string(i) + "] is " + shown(v[i]) +
                             "; must be a string");
      dst->push_back(v[i].get<std::string>());
    }
    return ok_status();
  };
  auto need_gold = [&](size_t n) -> Status {
    if (!j.contains("gold")) return Status::error(where + ": missing integer field \"gold\"");
    const auto& g = j["gold"];
    if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() >= static_cast<int64_t>(n))
      return Status::error(where + ": \"gold\" is " + shown(g) + "; must be an integer index of the " +
                           std::to_string(n) + " options (0.." + std::to_string(n - 1) + ")");
    it->gold = g.get<int>();
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

// One task entry of core.yaml; `where` is its file:line.
Status parse_task(const YAML::Node& n, const std::string& where, CoreTask* t) {
  auto scalar = [&](const char* k, std::string* dst) -> Status {
    if (!n[k] || !n[k].IsScalar() || n[k].Scalar().empty())
      return Status::error(where + ": task entry needs a non-empty " + k);
    *dst = n[k].Scalar();
    return ok_status();
  };
  if (!n.IsMap()) return Status::error(where + ": a task entry must be a mapping (label, dataset_uri, ...)");
  FRONTIER_RETURN_IF_ERROR(scalar("label", &t->label));
  FRONTIER_RETURN_IF_ERROR(scalar("dataset_uri", &t->dataset_uri));
  std::string type;
  FRONTIER_RETURN_IF_ERROR(scalar("icl_task_type", &type));
  if (type == "multiple_choice") t->type = CoreTaskType::kMultipleChoice;
  else if (type == "schema") t->type = CoreTaskType::kSchema;
  else if (type == "language_modeling") t->type = CoreTaskType::kLanguageModeling;
  else return Status::error(where + ": unknown icl_task_type '" + type + "' (expected multiple_choice, schema "
                            "or language_modeling)");
  const YAML::Node f = n["num_fewshot"];  // nanochat reads num_fewshot[0]
  if (!f || !f.IsSequence() || f.size() == 0 || !f[0].IsScalar() ||
      !YAML::convert<int>::decode(f[0], t->num_fewshot) || t->num_fewshot < 0)
    return Status::error(where + ": num_fewshot of task '" + t->label + "' must be a list whose first entry is an "
                         "integer >= 0, like [10]");
  if (n["continuation_delimiter"]) {
    if (!n["continuation_delimiter"].IsScalar())
      return Status::error(where + ": continuation_delimiter of task '" + t->label + "' must be a string");
    t->delimiter = n["continuation_delimiter"].Scalar();
  }
  return ok_status();
}

// "NaN", "inf" or the number, for messages.
std::string number_text(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

}  // namespace

Status core_batch_losses(Gpt& gpt, const std::vector<std::vector<uint32_t>>& seqs,
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
  // Every logit of every real position is checked (one pass, with the argmax): a softcapped head maps +-Inf to a
  // finite loss, so the losses alone would not show Inf weights.
  for (int b = 0; b < B; b++) {
    const int n = static_cast<int>(seqs[b].size()) - 1;
    (*losses)[b].assign(rows.begin() + int64_t(b) * T, rows.begin() + int64_t(b) * T + n);
    (*argmax)[b].resize(n);
    for (int t = 0; t < n; t++) {
      const float* zt = z + (int64_t(b) * T + t) * V;
      int best = 0;
      bool finite = std::isfinite((*losses)[b][t]);
      for (int v = 0; v < V; v++) {
        finite &= std::isfinite(zt[v]);
        if (zt[v] > zt[best]) best = v;
      }
      if (!finite) {
        const float* bad = std::find_if(zt, zt + V, [](float f) { return !std::isfinite(f); });
        return Status::error("non-finite " +
                             (bad != zt + V ? "logit (" + number_text(*bad) + ")"
                                            : "loss (" + number_text((*losses)[b][t]) + ")") +
                             " at position " + std::to_string(t) + " of option " + std::to_string(b) +
                             ": the model's weights are not finite, or so large that they overflow; use an earlier "
                             "checkpoint");
      }
      (*argmax)[b][t] = best;  // the first maximum, as std::max_element and torch.argmax
    }
  }
  return ok_status();
}

Status core_sequence_losses(Gpt& gpt, const std::vector<uint32_t>& tok, std::vector<float>* losses,
                            std::vector<int>* argmax) {
  std::vector<std::vector<float>> l;
  std::vector<std::vector<int>> a;
  FRONTIER_RETURN_IF_ERROR(core_batch_losses(gpt, {tok}, &l, &a));
  *losses = std::move(l[0]);
  *argmax = std::move(a[0]);
  return ok_status();
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
  if (!root.IsMap() || !root["icl_tasks"] || !root["icl_tasks"].IsSequence() || root["icl_tasks"].size() == 0)
    return Status::error(ypath + ": no icl_tasks list");
  std::vector<int> yaml_line;  // each task's line in core.yaml
  for (const auto& n : root["icl_tasks"]) {
    const int line = n.Mark().line + 1;
    const std::string where = ypath + ":" + std::to_string(line);
    CoreTask t;
    FRONTIER_RETURN_IF_ERROR(parse_task(n, where, &t));
    for (size_t i = 0; i < out->tasks.size(); i++)
      if (out->tasks[i].label == t.label)
        return Status::error(where + ": duplicate label '" + t.label + "' (also at line " +
                             std::to_string(yaml_line[i]) + ")");
    out->tasks.push_back(std::move(t));
    yaml_line.push_back(line);
  }
  // Random baselines (percent). Rows for tasks not in core.yaml are allowed (DCLM's file lists 53 tasks), but every
  // row must hold a number in [0, 100): a task missing here, or a baseline of 100, would otherwise make a CORE
  // that looks like a number (centered with b = 0, or a division by zero).
  std::string csv;
  FRONTIER_RETURN_IF_ERROR(read_file(cpath, &csv));
  std::vector<CsvRecord> records;
  FRONTIER_RETURN_IF_ERROR(csv_records(csv, cpath, &records));
  if (records.empty()) return Status::error(cpath + ": empty (needs a header and a row per task)");
  int task_col = -1, base_col = -1;
  for (size_t i = 0; i < records[0].fields.size(); i++) {
    if (records[0].fields[i] == "Eval Task") task_col = static_cast<int>(i);
    if (records[0].fields[i] == "Random baseline") base_col = static_cast<int>(i);
  }
  if (task_col < 0 || base_col < 0)
    return Status::error(cpath + ":" + std::to_string(records[0].line) +
                         ": needs columns \"Eval Task\" and \"Random baseline\"");
  std::vector<int64_t> base_line(out->tasks.size(), 0);  // the csv line that set each task's baseline
  for (size_t r = 1; r < records.size(); r++) {
    const auto& f = records[r].fields;
    const std::string where = cpath + ":" + std::to_string(records[r].line);
    if (static_cast<int>(f.size()) <= std::max(task_col, base_col))
      return Status::error(where + ": " + std::to_string(f.size()) + " fields; the header names " +
                           std::to_string(std::max(task_col, base_col) + 1) + " or more");
    const std::string& text = f[base_col];
    char* end = nullptr;
    const double b = std::strtod(text.c_str(), &end);
    while (end && *end == ' ') end++;
    if (text.empty() || end != text.c_str() + text.size() || !(b >= 0 && b < 100))
      return Status::error(where + ": \"Random baseline\" of task '" + f[task_col] + "' is '" + text +
                           "'; must be a number in [0, 100) (percent right by chance; 100 leaves nothing to "
                           "center on)");
    for (size_t i = 0; i < out->tasks.size(); i++) {
      auto& t = out->tasks[i];
      if (t.label != f[task_col]) continue;
      if (base_line[i] && t.random_baseline != b)
        return Status::error(where + ": task '" + t.label + "' again, with baseline " + text + " (line " +
                             std::to_string(base_line[i]) + " has " + number_text(t.random_baseline) + ")");
      t.random_baseline = b;
      base_line[i] = records[r].line;
    }
  }
  for (size_t i = 0; i < out->tasks.size(); i++)
    if (!base_line[i])
      return Status::error(cpath + ": no row for task '" + out->tasks[i].label + "' (" + ypath + ":" +
                           std::to_string(yaml_line[i]) + "); every task needs its \"Random baseline\"");
  // Task data.
  for (size_t ti = 0; ti < out->tasks.size(); ti++) {
    auto& t = out->tasks[ti];
    std::string path = dir + "/eval_data/" + t.dataset_uri;
    if (!file_exists(path)) continue;
    t.present = true;
    std::string text, line;
    FRONTIER_RETURN_IF_ERROR(read_file(path, &text));
    std::istringstream rows(text);
    int64_t ln = 0;
    while (std::getline(rows, line)) {
      ln++;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      std::string where = path + ":" + std::to_string(ln);
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) return Status::error(where + ": not a JSON object");
      CoreItem it;
      it.line = ln;
      FRONTIER_RETURN_IF_ERROR(parse_row(j, t.type, where, &it));
      t.rows.push_back(std::move(it));
    }
    if (t.rows.empty()) return Status::error(path + ": no rows");
    // nanochat draws each item's examples from the other rows (random.sample raises when there are too few).
    if (static_cast<int64_t>(t.rows.size()) <= t.num_fewshot)
      return Status::error(path + ": " + std::to_string(t.rows.size()) + " rows, but task '" + t.label + "' is " +
                           std::to_string(t.num_fewshot) + "-shot (" + ypath + ":" + std::to_string(yaml_line[ti]) +
                           "): needs at least " + std::to_string(t.num_fewshot + 1));
  }
  return ok_status();
}

bool core_item_sequences(const Tokenizer& tok, const CoreTask& task, const std::vector<CoreItem>& data, size_t idx,
                         int64_t max_len, CoreSequences* seq) {
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
    if (Status es = tok.encode_ordinary(p, &ids); !es.ok()) {
      seq->error = es.message();  // the split pattern gave up on this prompt (tokenizer/regex_split.h)
      return false;
    }
    tokens.push_back(std::move(ids));
  }
  return core_spans(task.type, std::move(tokens), max_len, seq);
}

bool core_item_sequences(const Gpt& gpt, const Tokenizer& tok, const CoreTask& task, const std::vector<CoreItem>& data,
                         size_t idx, CoreSequences* seq) {
  return core_item_sequences(tok, task, data, idx, gpt.shape().seq_len, seq);
}

Status plan_core_task(const Tokenizer& tok, const CoreTask& task, int64_t max_per_task, int64_t max_len,
                      CoreTaskPlan* out) {
  *out = CoreTaskPlan();
  out->data = task.rows;
  PyRandom(1337).shuffle(out->data);
  if (max_per_task > 0 && static_cast<int64_t>(out->data.size()) > max_per_task) out->data.resize(max_per_task);
  out->fewshot = static_cast<int>(std::min<int64_t>(task.num_fewshot, static_cast<int64_t>(out->data.size()) - 1));
  out->items.resize(out->data.size());
  for (size_t i = 0; i < out->data.size(); i++) {
    const std::string where =
        "CORE task " + task.label + ", item " + task.dataset_uri + ":" + std::to_string(out->data[i].line);
    CoreSequences& seq = out->items[i];
    if (!core_item_sequences(tok, task, out->data, i, max_len, &seq))
      return Status::error(where + ": " + (!seq.error.empty() ? seq.error : "the prompt without its continuation "
                           "does not tokenize to a prefix of the prompt with it (nanochat asserts the same)"));
    if (!seq.answer_fits) continue;  // never scored on a shortened span: counted, and incorrect
    for (size_t c = 0; c < seq.tokens.size(); c++)
      if (seq.start[c] < 1 || seq.start[c] >= seq.end[c])
        return Status::error(where + ": option " + std::to_string(c) + " has no answer tokens to score (empty, or "
                             "the same tokens as the part the options share)");
  }
  return ok_status();
}

CoreItemResult decide_core_item(const CoreTask& task, const CoreTaskPlan& plan, size_t i,
                                const std::vector<std::vector<float>>& losses,
                                const std::vector<std::vector<int>>& argmax) {
  const CoreSequences& seq = plan.items[i];
  CoreItemResult out;
  if (!seq.answer_fits) {
    out.too_long = true;
    return out;
  }
  out.cropped = seq.cropped > 0;
  if (task.type == CoreTaskType::kLanguageModeling) {
    out.correct = true;
    for (int64_t t = seq.start[0]; t < seq.end[0]; t++)
      out.correct &= argmax[0][t - 1] == static_cast<int>(seq.tokens[0][t]);
    return out;
  }
  size_t best = 0;
  double best_loss = INFINITY;
  for (size_t c = 0; c < seq.tokens.size(); c++) {
    double sum = 0;
    for (int64_t t = seq.start[c]; t < seq.end[c]; t++) sum += losses[c][t - 1];
    const double mean = sum / static_cast<double>(seq.end[c] - seq.start[c]);
    if (mean < best_loss) {
      best_loss = mean;
      best = c;
    }
  }
  out.correct = static_cast<int>(best) == plan.data[i].gold;
  return out;
}

CoreTaskResult tally_core_task(const CoreTask& task, const CoreTaskPlan& plan,
                               const std::vector<CoreItemResult>& results) {
  CoreTaskResult r;
  r.label = task.label;
  r.present = task.present;
  r.fewshot = plan.fewshot;
  for (const auto& ir : results) {
    r.correct += ir.correct;
    r.cropped += ir.cropped;
    r.too_long += ir.too_long;
  }
  r.n = static_cast<int64_t>(results.size());
  r.accuracy = r.n ? static_cast<double>(r.correct) / r.n : 0.0;
  r.centered = (r.accuracy - 0.01 * task.random_baseline) / (1.0 - 0.01 * task.random_baseline);
  return r;
}

void finish_core_report(CoreReport* rep) {
  double sum = 0;
  rep->n_present = 0;
  rep->n_total = static_cast<int>(rep->tasks.size());
  rep->cropped = rep->too_long = 0;
  for (const auto& t : rep->tasks) {
    if (!t.present) continue;
    sum += t.centered;
    rep->n_present++;
    rep->cropped += t.cropped;
    rep->too_long += t.too_long;
  }
  rep->core = rep->n_present ? sum / rep->n_present : 0.0;
}

Status evaluate_core_item(Gpt& gpt, const Tokenizer& tok, const CoreTask& task, const std::vector<CoreItem>& data,
                          size_t idx, CoreItemResult* out) {
  // A plan of this one item, so that the checks and the decision are plan_core_task's and decide_core_item's.
  CoreTaskPlan plan;
  plan.data = data;
  plan.items.resize(data.size());
  const std::string where = "CORE task " + task.label + ", item " + task.dataset_uri + ":" + std::to_string(data[idx].line);
  CoreSequences& seq = plan.items[idx];
  if (!core_item_sequences(gpt, tok, task, data, idx, &seq))
    return Status::error(where + ": " + (!seq.error.empty() ? seq.error : "the prompt without its continuation "
                         "does not tokenize to a prefix of the prompt with it (nanochat asserts the same)"));
  std::vector<std::vector<float>> losses;
  std::vector<std::vector<int>> pred;
  if (seq.answer_fits) {
    for (size_t c = 0; c < seq.tokens.size(); c++)
      if (seq.start[c] < 1 || seq.start[c] >= seq.end[c])
        return Status::error(where + ": option " + std::to_string(c) + " has no answer tokens to score (empty, or "
                             "the same tokens as the part the options share)");
    Status s = core_batch_losses(gpt, seq.tokens, &losses, &pred);  // every option in one forward
    if (!s.ok()) return Status::error(where + ": " + s.message());
  }
  *out = decide_core_item(task, plan, idx, losses, pred);
  return ok_status();
}

Status evaluate_core(Gpt& gpt, const Tokenizer& tok, const CoreBundle& bundle, int64_t max_per_task, CoreReport* out,
                     bool progress) {
  if (max_per_task < 0)
    return Status::error("--max-per-task is " + std::to_string(max_per_task) + "; must be >= 0 (0 = every item)");
  *out = CoreReport();
  out->seq_len = gpt.shape().seq_len;
  std::string fewer_shots;  // tasks whose few-shot count max_per_task cut
  for (const auto& task : bundle.tasks) {
    if (!task.present) {
      CoreTaskResult r;
      r.label = task.label;
      out->tasks.push_back(r);
      continue;
    }
    if (!(task.random_baseline >= 0 && task.random_baseline < 100))
      return Status::error("CORE task " + task.label + ": random baseline " + number_text(task.random_baseline) +
                           " is outside [0, 100)");
    auto t0 = std::chrono::steady_clock::now();
    CoreTaskPlan plan;
    FRONTIER_RETURN_IF_ERROR(plan_core_task(tok, task, max_per_task, out->seq_len, &plan));
    if (plan.fewshot < task.num_fewshot)
      fewer_shots += (fewer_shots.empty() ? "" : ", ") + task.label + " " + std::to_string(plan.fewshot) + "/" +
                     std::to_string(task.num_fewshot);
    std::vector<CoreItemResult> results(plan.items.size());
    for (size_t i = 0; i < plan.items.size(); i++) {
      std::vector<std::vector<float>> losses;
      std::vector<std::vector<int>> pred;
      if (plan.scored(i)) {
        Status s = core_batch_losses(gpt, plan.items[i].tokens, &losses, &pred);  // every option in one forward
        if (!s.ok())
          return Status::error("CORE task " + task.label + ", item " + task.dataset_uri + ":" +
                               std::to_string(plan.data[i].line) + ": " + s.message());
      }
      results[i] = decide_core_item(task, plan, i, losses, pred);
    }
    CoreTaskResult r = tally_core_task(task, plan, results);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (progress) {
      std::string crop;
      if (r.cropped) crop += ", " + std::to_string(r.cropped) + " cropped";
      if (r.too_long) crop += ", " + std::to_string(r.too_long) + " too long";
      std::fprintf(stderr, "  %-32s acc %.4f  centered %+.4f  (%lld items%s, %.1fs)\n", task.label.c_str(),
                   r.accuracy, r.centered, static_cast<long long>(r.n), crop.c_str(), r.seconds);
    }
    out->tasks.push_back(r);
  }
  finish_core_report(out);
  // nanochat stops here (random.sample of more examples than there are other items); the numbers are still
  // Frontier's, on fewer examples, so they are labelled rather than refused (small max_per_task is for smoke tests).
  if (progress && !fewer_shots.empty())
    std::fprintf(stderr, "note: --max-per-task %lld leaves too few items for the full few-shot count "
                 "(used/configured): %s\n", static_cast<long long>(max_per_task), fewer_shots.c_str());
  return ok_status();
}

std::string CoreReport::table() const {
  std::string s;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%-32s %8s %8s %9s %8s %8s %8s\n", "task", "items", "accuracy", "centered",
                "seconds", "cropped", "too_long");
  s += buf;
  for (const auto& t : tasks) {
    if (!t.present) {
      std::snprintf(buf, sizeof(buf), "%-32s %8s\n", t.label.c_str(), "missing");
    } else {
      std::snprintf(buf, sizeof(buf), "%-32s %8lld %8.4f %+9.4f %8.1f %8lld %8lld\n", t.label.c_str(),
                    static_cast<long long>(t.n), t.accuracy, t.centered == 0 ? 0.0 : t.centered, t.seconds,
                    static_cast<long long>(t.cropped), static_cast<long long>(t.too_long));
    }
    s += buf;
  }
  std::snprintf(buf, sizeof(buf),
                "context %lld tokens: %lld items cropped on the left and scored on their whole answers; %lld items "
                "whose answers do not fit, scored incorrect\n",
                static_cast<long long>(seq_len), static_cast<long long>(cropped), static_cast<long long>(too_long));
  s += buf;
  std::snprintf(buf, sizeof(buf), "CORE (%d/%d tasks): %.6f\n", n_present, n_total, core);
  s += buf;
  return s;
}

nlohmann::json CoreReport::json() const {
  nlohmann::json j = {{"core", core},         {"tasks_present", n_present}, {"tasks_total", n_total},
                      {"seq_len", seq_len},   {"items_cropped", cropped},   {"items_too_long", too_long},
                      {"tasks", nlohmann::json::array()}};
  for (const auto& t : tasks)
    j["tasks"].push_back({{"label", t.label},       {"present", t.present},   {"items", t.n},
                          {"correct", t.correct},   {"accuracy", t.accuracy}, {"centered", t.centered},
                          {"cropped", t.cropped},   {"too_long", t.too_long}, {"fewshot", t.fewshot}});
  return j;
}

}  // namespace frontier
