// Splits long documents into pieces of at most max_bytes, at the best boundary that fits: a paragraph break
// ("\n\n"), else a line break, else a sentence end (". ", "! ", "? ", also before a closing quote), else a space,
// else the last UTF-8 character boundary. Each separator ends the piece before it, so the pieces concatenated give
// the document back byte for byte (a piece is never empty; whitespace-only pieces are dropped by the caller if it
// wants).
//
// Why prepare needs it: the best-fit loader (data/loader.h, as nanochat's) starts every row at a document's BOS and,
// when no buffered document fits the rest of a row, crops one and discards its tail. A corpus whose documents are
// several rows long (the built-in Brown + nlp-corpus: 2,500 tokens on average) then trains on only their first
// T tokens: at T = 512 the loader used 20% of the default corpus and repeated it 5 times by 300 s. Splitting at
// prepare time keeps each piece a real span of text with its own BOS, which is what the loader's packing assumes.
//
//   std::vector<std::string_view> pieces;
//   split_document(text, 2048, &pieces);  // pieces of <= 2048 bytes, concatenation == text
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace frontier {

// Appends the pieces of doc to *out (views into doc). max_bytes == 0 or doc.size() <= max_bytes: doc whole.
void split_document(std::string_view doc, size_t max_bytes, std::vector<std::string_view>* out);

}  // namespace frontier
