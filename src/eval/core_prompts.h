// CORE prompt rendering and continuation spans, exactly as nanochat's core_eval.py (its Jinja templates, spelled
// out): few-shot examples each followed by a blank line, then the item; the continuation delimiter between context
// and continuation.
//   multiple_choice: one prompt per choice:  [q_i + delim + choices_i[gold_i] + "\n\n"]* + query + delim + choice
//   schema:          one prompt per context: [ctx_i[gold_i] + delim + cont_i + "\n\n"]* + context + delim + cont
//   language_modeling: [strip(ctx_i) + delim + cont_i + "\n\n"]* + strip(context) + delim (+ continuation);
//                      the prompt without the continuation is strip()ped (as nanochat: a clean token prefix)
// Spans (token positions [start, end) scored): after BOS is prepended, MC starts at the common prefix of all
// prompts, schema at end - common suffix, LM at the length of the prompt without continuation. One deviation:
// the common prefix (suffix) is capped at the shortest sequence's length - 1, so that every option keeps at least
// its last token. It only acts when an option's tokens are a prefix of another's (3-4 piqa items, depending on the
// tokenizer, e.g. "... + c" and "... + c x b1"): nanochat then averages an empty span (NaN, and its min()/index()
// pick an option by list position, not by loss); an uncapped mean over max(1, 0) tokens made the empty option win
// with loss 0, always.
// Crop rule, the same for all three types: a sequence longer than max_len keeps its LAST max_len tokens and its span
// shifts down by the tokens dropped (nanochat core_eval.py, evaluate_example: t[-max_tokens:], s - num_to_crop,
// for models with a max_seq_len; it asserts the shifted start is >= 0). nanochat's own GPT has no max_seq_len and
// is fed whole items (its rotary cache is 10x sequence_len); Frontier's Gpt runs at most seq_len positions, so
// items are cropped as nanochat crops its HF models (at seq_len 512, the few-shot prompts of most 10-shot tasks
// lose their left end; evaluate_core counts them). We require >= 1: the first answer token is
// predicted from the position before it, which must still be in the window (nanochat's slice losses[si-1:ei-1]
// with si = 0 would start at -1, the last column). A crop that only drops few-shot examples or the left of the
// question keeps the answer whole and is scored; one that reaches into a span leaves the item unscorable
// (answer_fits = false): it is never scored on a shortened span.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace frontier {

struct CoreItem {  // the union of the three row formats
  std::string query, context, continuation;
  std::vector<std::string> choices, context_options;
  int gold = 0;
  int64_t line = 0;  // 1-based line in the task's jsonl, for messages
};

enum class CoreTaskType { kMultipleChoice, kSchema, kLanguageModeling };

std::vector<std::string> render_core_prompts(CoreTaskType type, const CoreItem& item, const std::string& delimiter,
                                             const std::vector<CoreItem>& fewshot);

// Python's str.strip() (Unicode whitespace, as str.isspace) on UTF-8 text; Jinja's `trim` filter is the same.
std::string py_strip(const std::string& s);

struct CoreSequences {
  std::vector<std::vector<uint32_t>> tokens;  // BOS-prefixed, possibly cropped
  std::vector<int64_t> start, end;            // scored span per sequence
  int64_t cropped = 0;                        // most tokens any sequence lost from its left (0: all fit whole)
  bool answer_fits = true;                    // every span kept whole with a token before it (else: unscorable)
  std::string error;                          // core_item_sequences: why a prompt did not tokenize ("" if it did)
};

// tokens: the prompts' encodings with BOS prepended. For LM, tokens = {without, with} and the result holds one
// sequence. Returns false if an LM prompt's encoding without the continuation is not a prefix of the one with it.
bool core_spans(CoreTaskType type, std::vector<std::vector<uint32_t>> tokens, int64_t max_len, CoreSequences* out);

}  // namespace frontier
