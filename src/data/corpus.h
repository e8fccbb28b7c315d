// Corpus readers: stream documents from plain text, JSON Lines, zstd-compressed JSON Lines and Parquet.
//
//   std::vector<std::string> files;
//   FRONTIER_RETURN_IF_ERROR(expand_inputs({"corpus/", "extra/*.jsonl.zst"}, &files));
//   std::unique_ptr<DocumentSource> src;
//   FRONTIER_RETURN_IF_ERROR(open_files(files, Utf8Policy::kError, &src));
//   std::string doc; bool eof;
//   while (true) { FRONTIER_RETURN_IF_ERROR(src->next(&doc, &eof)); if (eof) break; ... }
//
// Formats: "*.txt" is one document per file; "*.jsonl" and "*.jsonl.zst" are one JSON object per line whose "text"
// field (a string) is the document, other fields ignored; "*.parquet" is one document per row of its "text"
// column (data/parquet.h: nulls are skipped and counted). The field/column name is open_files' text_column. Memory
// stays bounded by the largest single document (Parquet: one page): files are read in 1 MiB chunks and zstd is
// decompressed as a stream.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

enum class Utf8Policy { kError, kReplace };  // invalid UTF-8: stop with file:line, or substitute U+FFFD

class DocumentSource {
 public:
  virtual ~DocumentSource() = default;
  // Next non-empty document in *doc; *eof = true when there are no more.
  virtual Status next(std::string* doc, bool* eof) = 0;
  virtual uint64_t bytes_done() const = 0;   // input bytes consumed so far (compressed bytes for .zst)
  virtual uint64_t bytes_total() const = 0;  // input bytes in all
  virtual uint64_t docs_repaired() const { return 0; }  // documents with invalid UTF-8 replaced (kReplace)
  virtual uint64_t nulls_skipped() const { return 0; }  // null values of a Parquet text column, skipped
  // Where the document next() returned last came from, for messages: "FILE:LINE", "FILE: row N", "FILE"; "" when
  // the source cannot say.
  virtual std::string where() const { return ""; }
};

// Expands files, directories (recursively: *.txt, *.jsonl, *.jsonl.zst, *.parquet) and glob patterns into a sorted,
// de-duplicated file list. Errors if a spec matches nothing or names a file of an unknown format.
Status expand_inputs(const std::vector<std::string>& specs, std::vector<std::string>* files);

// text_column: the JSON field / Parquet column that holds each document.
Status open_files(const std::vector<std::string>& files, Utf8Policy policy, std::unique_ptr<DocumentSource>* out,
                  const std::string& text_column = "text");

}  // namespace frontier
