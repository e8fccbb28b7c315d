// CORE prompt rendering and continuation spans, exactly as nanochat's core_eval.py (its Jinja templates, spelled
// out): few-shot examples each followed by a blank line, then the item; the continuation delimiter between context
// and continuation.
//   multiple_choice: one prompt per choice:  [q_i + delim + choices_i[gold_i] + "\n\n"]* + query + delim + choice
//   schema:          one prompt per context: [ctx_i[gold_i] + delim + cont_i + "\n\n"]* + context + delim + cont
//   language_modeling: [strip(ctx_i) + delim + cont_i + "\n\n"]* + strip(context) + delim (+ continuation);
//                      the prompt without the continuation is strip()ped (as nanochat: a clean token prefix)
// Spans (token positions [start, end) scored): after BOS is prepended, MC starts at the common prefix of all
// prompts, schema at end - common suffix, LM at the length of the prompt without continuation. A sequence longer
// than max_len is cropped from the left and its span shifted (nanochat).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace frontier {

struct CoreItem {  // the union of the three row formats
  std::string query, context, continuation;
  std::vector<std::string> choices, context_options;
  int gold = 0;
};

enum class CoreTaskType { kMultipleChoice, kSchema, kLanguageModeling };

std::vector<std::string> render_core_prompts(CoreTaskType type, const CoreItem& item, const std::string& delimiter,
                                             const std::vector<CoreItem>& fewshot);

// Python's str.strip() (Unicode whitespace, as str.isspace) on UTF-8 text; Jinja's `trim` filter is the same.
std::string py_strip(const std::string& s);

struct CoreSequences {
  std::vector<std::vector<uint32_t>> tokens;  // BOS-prefixed, possibly cropped
  std::vector<int64_t> start, end;            // scored span per sequence
};

// tokens: the prompts' encodings with BOS prepended. For LM, tokens = {without, with} and the result holds one
// sequence. Returns false if an LM prompt's encoding without the continuation is not a prefix of the one with it.
bool core_spans(CoreTaskType type, std::vector<std::vector<uint32_t>> tokens, int64_t max_len, CoreSequences* out);

}  // namespace frontier
