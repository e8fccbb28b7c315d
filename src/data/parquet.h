// Parquet reader for one text column, as `frontier prepare` streams documents out of Parquet shards.
//
//   ParquetReader r;
//   FRONTIER_RETURN_IF_ERROR(r.open("shard_00000.parquet", "text"));
//   std::string doc; bool eof;
//   while (true) { FRONTIER_RETURN_IF_ERROR(r.next(&doc, &eof)); if (eof) break; ... }   // r.nulls(): skipped
//
// Hand-written because Debian 12 packages no Arrow/Parquet C++ library, and a text corpus needs only a small,
// well-defined part of the format (the part pyarrow, Polars, DuckDB and the Rust crate write for a string column):
//   - a top-level BYTE_ARRAY column (UTF8/ENUM/JSON annotated or plain), REQUIRED or OPTIONAL (nulls skipped and
//     counted); nested and repeated columns are refused
//   - PLAIN and dictionary (PLAIN_DICTIONARY / RLE_DICTIONARY) values, RLE/bit-packed definition levels
//   - data pages v1 and v2, UNCOMPRESSED / SNAPPY / GZIP / ZSTD (data/codec.h), page CRCs when present
//   - any number of row groups, empty ones included
// Anything else (other encodings or codecs, encryption, column chunks in other files) is a one-line error naming
// the file and what was found. Memory is one page at a time (plus the column chunk's dictionary), whatever the
// file size; every size read from the file is checked against the file and the enclosing structure first.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

class ParquetReader {
 public:
  ParquetReader();
  ~ParquetReader();
  ParquetReader(const ParquetReader&) = delete;
  ParquetReader& operator=(const ParquetReader&) = delete;

  // Reads and checks the footer and finds `column`. A missing column is an error listing the columns there are.
  Status open(const std::string& path, const std::string& column);
  // The next non-null value of the column (raw bytes: the caller checks UTF-8); *eof after the last row.
  Status next(std::string* value, bool* eof);

  uint64_t nulls() const;       // null values skipped so far
  uint64_t row() const;         // 1-based row of the value last returned
  uint64_t num_rows() const;    // rows in the file, from the footer
  uint64_t bytes_read() const;  // file bytes read so far (the file's size once at the end)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace frontier
