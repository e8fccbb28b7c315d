#include "eval/core_prompts.h"

#include <algorithm>

namespace frontier {

namespace {

// Decodes the code point at s[i] (valid UTF-8 assumed); *len gets its byte length.
uint32_t code_point(const std::string& s, size_t i, int* len) {
  auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return *len = 1, c;
  if (c < 0xE0 && i + 1 < s.size()) return *len = 2, ((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
  if (c < 0xF0 && i + 2 < s.size())
    return *len = 3, ((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
  if (i + 3 < s.size())
    return *len = 4, ((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
  return *len = 1, c;
}

bool py_isspace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

size_t min_length(const std::vector<std::vector<uint32_t>>& seqs) {
  size_t min_len = SIZE_MAX;
  for (const auto& s : seqs) min_len = std::min(min_len, s.size());
  return min_len;
}

size_t common_length(const std::vector<std::vector<uint32_t>>& seqs, bool from_left) {
  const size_t min_len = min_length(seqs);
  for (size_t i = 0; i < min_len; i++) {
    auto at = [&](const std::vector<uint32_t>& s) { return from_left ? s[i] : s[s.size() - 1 - i]; };
    for (const auto& s : seqs)
      if (at(s) != at(seqs[0])) return i;
  }
  return min_len;
}

}  // namespace

std::string py_strip(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e) {
    int len;
    uint32_t c = code_point(s, b, &len);
    if (!py_isspace(c)) break;
    b += len;
  }
  while (e > b) {  // step back to the start of the last code point
    size_t p = e - 1;
    while (p > b && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) p--;
    int len;
    if (!py_isspace(code_point(s, p, &len))) break;
    e = p;
  }
  return s.substr(b, e - b);
}

std::vector<std::string> render_core_prompts(CoreTaskType type, const CoreItem& item, const std::string& delim,
                                             const std::vector<CoreItem>& fewshot) {
  std::string prefix;
  std::vector<std::string> out;
  switch (type) {
    case CoreTaskType::kMultipleChoice:
      for (const auto& ex : fewshot) prefix += ex.query + delim + ex.choices.at(ex.gold) + "\n\n";
      for (const auto& choice : item.choices) out.push_back(prefix + item.query + delim + choice);
      break;
    case CoreTaskType::kSchema:
      for (const auto& ex : fewshot) prefix += ex.context_options.at(ex.gold) + delim + ex.continuation + "\n\n";
      for (const auto& ctx : item.context_options) out.push_back(prefix + ctx + delim + item.continuation);
      break;
    case CoreTaskType::kLanguageModeling: {
      for (const auto& ex : fewshot) prefix += py_strip(ex.context) + delim + ex.continuation + "\n\n";
      std::string without = prefix + py_strip(item.context) + delim;
      out.push_back(py_strip(without));
      out.push_back(without + item.continuation);
      break;
    }
  }
  return out;
}

bool core_spans(CoreTaskType type, std::vector<std::vector<uint32_t>> tokens, int64_t max_len, CoreSequences* out) {
  out->tokens.clear();
  out->start.clear();
  out->end.clear();
  if (type == CoreTaskType::kLanguageModeling) {
    const auto &without = tokens.at(0), &with = tokens.at(1);
    if (without.size() >= with.size() || !std::equal(without.begin(), without.end(), with.begin())) return false;
    out->tokens.push_back(with);
    out->start.push_back(static_cast<int64_t>(without.size()));
    out->end.push_back(static_cast<int64_t>(with.size()));
  } else if (type == CoreTaskType::kMultipleChoice) {
    // Capped so that every option keeps at least its last token (see the header: options that are token prefixes
    // of another).
    int64_t start = static_cast<int64_t>(std::min(common_length(tokens, true), min_length(tokens) - 1));
    for (auto& t : tokens) {
      out->start.push_back(start);
      out->end.push_back(static_cast<int64_t>(t.size()));
    }
    out->tokens = std::move(tokens);
  } else {
    int64_t suffix = static_cast<int64_t>(std::min(common_length(tokens, false), min_length(tokens) - 1));
    for (auto& t : tokens) {
      out->end.push_back(static_cast<int64_t>(t.size()));
      out->start.push_back(static_cast<int64_t>(t.size()) - suffix);
    }
    out->tokens = std::move(tokens);
  }
  out->cropped = 0;
  out->answer_fits = true;
  if (max_len > 0)
    for (size_t i = 0; i < out->tokens.size(); i++) {
      auto& t = out->tokens[i];
      if (static_cast<int64_t>(t.size()) > max_len) {
        int64_t crop = static_cast<int64_t>(t.size()) - max_len;
        t.erase(t.begin(), t.begin() + crop);
        out->start[i] -= crop;
        out->end[i] -= crop;
        out->cropped = std::max(out->cropped, crop);
        if (out->start[i] < 1) out->answer_fits = false;  // the span lost its left end or its predecessor
      }
    }
  return true;
}

}  // namespace frontier
