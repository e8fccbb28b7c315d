#include "data/doc_split.h"

namespace frontier {

namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The largest cut in (0, limit] after which the next piece starts: a cut at i means piece = doc[0, i).
// Tries boundaries from the strongest to the weakest; each must leave a non-empty piece.
size_t best_cut(std::string_view doc, size_t limit) {
  std::string_view head = doc.substr(0, limit);
  // A paragraph break: cut after "\n\n" (and after any further newlines of the same run that fit).
  size_t p = head.rfind("\n\n");
  if (p != std::string_view::npos && p > 0) {
    size_t cut = p + 2;
    while (cut < head.size() && head[cut] == '\n') cut++;
    return cut;
  }
  p = head.rfind('\n');
  if (p != std::string_view::npos && p > 0) return p + 1;
  // A sentence end: '.', '!' or '?', optionally followed by closing quotes / brackets, then a space.
  for (size_t i = head.size(); i-- > 1;) {
    if (head[i] != ' ') continue;
    size_t j = i;
    while (j > 0 && (head[j - 1] == '"' || head[j - 1] == '\'' || head[j - 1] == ')')) j--;
    if (j > 0 && (head[j - 1] == '.' || head[j - 1] == '!' || head[j - 1] == '?')) return i + 1;
  }
  p = head.rfind(' ');
  if (p != std::string_view::npos && p > 0) return p + 1;
  // No boundary at all: the last UTF-8 character start at or before limit (a character is never split).
  size_t cut = limit;
  while (cut > 0 && cut < doc.size() && is_continuation(static_cast<unsigned char>(doc[cut]))) cut--;
  if (cut == 0) {  // a malformed run of continuation bytes longer than limit: cut at the limit
    cut = limit;
  }
  return cut;
}

}  // namespace

void split_document(std::string_view doc, size_t max_bytes, std::vector<std::string_view>* out) {
  if (max_bytes == 0) {
    out->push_back(doc);
    return;
  }
  while (doc.size() > max_bytes) {
    size_t cut = best_cut(doc, max_bytes);
    out->push_back(doc.substr(0, cut));
    doc.remove_prefix(cut);
  }
  if (!doc.empty()) out->push_back(doc);
}

}  // namespace frontier
