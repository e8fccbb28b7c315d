// The CORE benchmark (DCLM's 22 low-variance tasks) as nanochat's base_eval computes it.
//
//   CoreBundle bundle;
//   FRONTIER_RETURN_IF_ERROR(load_core_bundle("../shared/data/eval_bundle", &bundle));
//   CoreReport rep;
//   FRONTIER_RETURN_IF_ERROR(evaluate_core(gpt, tokenizer, bundle, /*max_per_task=*/0, &rep));
//
// Per task: rows shuffled with random.Random(1337), cut to max_per_task (if > 0), few-shot examples per item drawn
// with random.Random(1234 + idx).sample(other indices, num_fewshot[0]). MC/schema: the option with the lowest
// mean loss over its continuation span wins; LM: correct when greedy argmax reproduces the continuation. Centered
// accuracy (acc - b/100) / (1 - b/100) with b the DCLM random baseline; CORE = mean over the tasks present.
//
// What is not trusted: the bundle is validated at load (each error names the file, the line and the value), a
// non-finite logit is an error naming the task and item, and an item longer than the model's context is cropped
// by the rule in core_prompts.h, counted per task (cropped: scored on its whole answer; too_long: its answer does
// not fit, scored incorrect) and reported in the table and JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/core_prompts.h"
#include "util/status.h"

namespace frontier {

class Gpt;
class Tokenizer;

struct CoreTask {
  std::string label, dataset_uri, delimiter = " ";
  CoreTaskType type = CoreTaskType::kMultipleChoice;
  int num_fewshot = 0;
  double random_baseline = 0;  // percent, in [0, 100)
  bool present = false;        // its data file exists
  std::vector<CoreItem> rows;  // in file order
};

struct CoreBundle {
  std::string dir;
  std::vector<CoreTask> tasks;  // core.yaml order
};

// Reads core.yaml, eval_meta_data.csv and each task's jsonl; a missing task file is recorded (present = false).
// Errors, each naming the file, the line and the bad value: a task entry without label / dataset_uri /
// num_fewshot / icl_task_type, or with a duplicate label; a task with no row in eval_meta_data.csv, or a
// "Random baseline" that is not a number in [0, 100); a row without the fields its task type needs (multiple
// choice: query, >= 2 choices, gold; schema: >= 2 context_options, continuation, gold; language modelling:
// context, continuation), of the wrong JSON type, or a gold outside the options; fewer rows than num_fewshot + 1.
Status load_core_bundle(const std::string& dir, CoreBundle* out);

struct CoreTaskResult {
  std::string label;
  bool present = false;
  int64_t n = 0, correct = 0;
  int64_t cropped = 0;   // items longer than the context, cropped on the left and scored on their whole answers
  int64_t too_long = 0;  // items whose answer does not fit the context: not scored, counted incorrect
  int fewshot = 0;       // few-shot examples per item (below num_fewshot only when max_per_task leaves too few)
  double accuracy = 0, centered = 0, seconds = 0;
};

struct CoreReport {
  std::vector<CoreTaskResult> tasks;
  double core = 0;  // mean centered accuracy over present tasks
  int n_present = 0, n_total = 0;
  int64_t seq_len = 0, cropped = 0, too_long = 0;  // the model's context; totals of the tasks' counts
  std::string table() const;   // per-task table, the crop totals, then "CORE (20/22 tasks): ..."
  nlohmann::json json() const;  // core, tasks_present, tasks_total, seq_len, items_cropped, items_too_long, tasks
};

Status evaluate_core(Gpt& gpt, const Tokenizer& tok, const CoreBundle& bundle, int64_t max_per_task,
                     CoreReport* out, bool progress = true);

// The scored sequences of one item: few-shot draw, render, tokenize (BOS first), spans, crop to max_len tokens
// (seq->cropped, seq->answer_fits). False if an LM prompt without its continuation does not tokenize to a prefix
// of the prompt with it.
bool core_item_sequences(const Tokenizer& tok, const CoreTask& task, const std::vector<CoreItem>& data, size_t idx,
                         int64_t max_len, CoreSequences* seq);
// The same, cropped to the model's context (gpt.shape().seq_len).
bool core_item_sequences(const Gpt& gpt, const Tokenizer& tok, const CoreTask& task, const std::vector<CoreItem>& data,
                         size_t idx, CoreSequences* seq);
// Per-position losses (nats; losses[t] predicts tokens[t+1]) and greedy predictions of one sequence. An error if a
// logit or loss is not finite (NaN/Inf weights), naming the position.
Status core_sequence_losses(Gpt& gpt, const std::vector<uint32_t>& tokens, std::vector<float>* losses,
                            std::vector<int>* argmax);
// The same for all sequences of an item in one forward pass (nanochat's batching of an item's choices): rows padded
// at the end to the longest (causal attention keeps padding from reaching earlier positions; padded targets are
// ignored), so each row's losses equal core_sequence_losses of that row alone.
Status core_batch_losses(Gpt& gpt, const std::vector<std::vector<uint32_t>>& seqs,
                         std::vector<std::vector<float>>* losses, std::vector<std::vector<int>>* argmax);

struct CoreItemResult {
  bool correct = false;
  bool cropped = false;   // longer than the context; scored on its whole answer
  bool too_long = false;  // its answer does not fit the context: not scored (correct = false)
};

// The one implementation of CORE's decisions, shared by `frontier eval core` (losses from the model in process,
// evaluate_core below) and the arena's frozen evaluator (losses from the distributions a team's server sends,
// arena/evaluator.cpp): plan a task, get each planned item's losses and greedy predictions from anywhere, decide
// each item, tally.
//
//   CoreTaskPlan plan;
//   FRONTIER_RETURN_IF_ERROR(plan_core_task(tok, task, max_per_task, max_len, &plan));
//   for (size_t i = 0; i < plan.items.size(); i++)   // plan.items[i].tokens: the sequences to score
//     ... losses[c][t], argmax[c][t] (predicting tokens[c][t+1]) ... decide_core_item(task, plan, i, ...)
//   CoreTaskResult r = tally_core_task(task, plan, results);
struct CoreTaskPlan {
  std::vector<CoreItem> data;        // the task's rows shuffled with random.Random(1337), cut to max_per_task
  std::vector<CoreSequences> items;  // per item of data: its scored sequences (answer_fits = false: too long)
  int fewshot = 0;                   // examples per item (below num_fewshot only when max_per_task leaves too few)
  bool scored(size_t i) const { return items[i].answer_fits; }  // too-long items are not scored (incorrect)
};

// Shuffles, cuts, draws few-shot examples, renders, tokenizes (BOS first) and crops every item of one task to
// max_len tokens. Errors name the task and the item's jsonl line: an LM prompt that does not tokenize to a prefix,
// an option with an empty answer span.
Status plan_core_task(const Tokenizer& tok, const CoreTask& task, int64_t max_per_task, int64_t max_len,
                      CoreTaskPlan* out);
// Decides item i of a plan from its sequences' per-position losses (nats) and greedy predictions: losses[c][t] and
// argmax[c][t] predict plan.items[i].tokens[c][t + 1] (at least the positions before each span's end). MC/schema:
// the option with the lowest mean loss over its span wins (the first on ties); LM: correct when every continuation
// token is the argmax. A too-long item is incorrect without looking at losses.
CoreItemResult decide_core_item(const CoreTask& task, const CoreTaskPlan& plan, size_t i,
                                const std::vector<std::vector<float>>& losses,
                                const std::vector<std::vector<int>>& argmax);
// Accuracy and centered accuracy of a task from its items' results (results[i] for plan.items[i]).
CoreTaskResult tally_core_task(const CoreTask& task, const CoreTaskPlan& plan,
                               const std::vector<CoreItemResult>& results);
// core = mean centered accuracy over present tasks; the crop totals. tasks must hold every task of the bundle.
void finish_core_report(CoreReport* rep);

// One item (exposed for tests): render, tokenize (BOS first), crop to the model's context, score. Errors name the
// task and the item's jsonl line: a non-finite logit, an LM prompt that does not tokenize to a prefix, an empty span.
Status evaluate_core_item(Gpt& gpt, const Tokenizer& tok, const CoreTask& task, const std::vector<CoreItem>& data,
                          size_t idx, CoreItemResult* out);

}  // namespace frontier
