// The Parquet reader (data/parquet.h) against files from real writers:
//   - the fixtures in ../shared/data/parquet (parquet-cpp-arrow: SNAPPY + dictionaries; Polars: ZSTD, no `text`
//     column), each value checked against hyparquet, an independent JavaScript reader (tests/parquet/write.mjs
//     --read);
//   - files written here by parquet-wasm (the Rust parquet crate) and hyparquet-writer (tests/parquet/write.mjs):
//     nanochat's layout (PLAIN + ZSTD, 1,024-row groups), nulls, multi-byte UTF-8, an empty row group, dictionary,
//     SNAPPY / GZIP / none, data page v2, a REQUIRED column: every row's SHA-256 must equal what the writer wrote;
//   - bad input made by mutating good files, and input outside the supported subset: one-line errors naming the file;
//   - end to end: `frontier prepare` on Parquet, then `frontier train`.
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>

#include "data/corpus.h"
#include "data/parquet.h"
#include "data/thrift_compact.h"
#include "test_util.h"
#include "train_fixture.h"
#include "util/file.h"
#include "util/sha256.h"
#include "util/utf8.h"

using namespace frontier;
using namespace frontier::testing;
using json = nlohmann::json;

namespace {

std::string fixtures() { return shared_data() + "/parquet"; }
#define REQUIRE_PARQUET_FIXTURES()                                                                         \
  ASSERT_TRUE(std::filesystem::exists(fixtures() + "/danish_tweets_text_label_test.parquet"))             \
      << "shared data missing at " << fixtures() << " (this test needs ../shared/data)"

// The files tests/parquet/write.mjs writes, once per test process (removed at exit).
struct Written {
  std::string dir, error;
  json expected;
};
inline std::string g_written_dir;
struct RemoveWritten : ::testing::Environment {
  void TearDown() override {
    if (!g_written_dir.empty()) std::filesystem::remove_all(g_written_dir);
  }
};
const auto* g_remove_written = ::testing::AddGlobalTestEnvironment(new RemoveWritten);

const Written& written() {
  static Written w = [] {
    Written w;
    w.dir = g_written_dir = make_temp_dir("parquet");
    auto r = run_cmd("node " + source_dir() + "/tests/parquet/write.mjs " + w.dir);
    std::string text;
    if (r.rc != 0 || !read_file(w.dir + "/expected.json", &text).ok())
      w.error = "node tests/parquet/write.mjs failed (run scripts/install_deps.sh for its npm writers): " + r.out;
    else
      w.expected = json::parse(text);
    return w;
  }();
  return w;
}
#define REQUIRE_WRITTEN() ASSERT_TRUE(written().error.empty()) << written().error

// Every row of a column: the value, or nullopt for a null. Rows come from the reader's row numbers.
Status read_rows(const std::string& path, const std::string& column, std::vector<std::optional<std::string>>* rows,
                 uint64_t* nulls = nullptr) {
  ParquetReader r;
  FRONTIER_RETURN_IF_ERROR(r.open(path, column));
  rows->clear();
  std::string v;
  bool eof = false;
  while (true) {
    FRONTIER_RETURN_IF_ERROR(r.next(&v, &eof));
    if (eof) break;
    while (rows->size() + 1 < r.row()) rows->push_back(std::nullopt);
    rows->push_back(v);
  }
  while (rows->size() < r.num_rows()) rows->push_back(std::nullopt);
  if (nulls) *nulls = r.nulls();
  return ok_status();
}

Status read_error(const std::string& path, const std::string& column = "text") {
  std::vector<std::optional<std::string>> rows;
  return read_rows(path, column, &rows);
}

// rows against a record of write.mjs: {"rows": n, "values": [sha256 | null]}; returns the number of nulls.
size_t expect_rows_match(const std::vector<std::optional<std::string>>& rows, const json& want,
                         const std::string& what) {
  EXPECT_EQ(rows.size(), want["rows"].get<size_t>()) << what;
  size_t nulls = 0, bad = 0;
  for (size_t i = 0; i < rows.size() && i < want["values"].size(); i++) {
    const json& w = want["values"][i];
    nulls += w.is_null();
    bool same = w.is_null() ? !rows[i] : rows[i] && sha256_hex(*rows[i]) == w.get<std::string>();
    if (!same && bad++ < 3) ADD_FAILURE() << what << ": row " << i + 1 << " differs from what was written";
  }
  EXPECT_EQ(bad, 0u) << what;
  return nulls;
}

// A column of a real fixture as hyparquet reads it.
json reference(const std::string& path, const std::string& column) {
  std::string out = written().dir + "/ref_" + column + "_" + std::filesystem::path(path).filename().string() + ".json";
  auto r = run_cmd("node " + source_dir() + "/tests/parquet/write.mjs --read " + path + " " + column + " " + out);
  std::string text;
  if (r.rc != 0 || !read_file(out, &text).ok()) {
    ADD_FAILURE() << "hyparquet could not read " << path << ": " << r.out;
    return json::object();
  }
  return json::parse(text);
}

uint32_t load_le32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::string bytes_of(const std::string& path) {
  std::string s;
  EXPECT_TRUE(read_file(path, &s).ok()) << path;
  return s;
}

// Offset and length of the first data page header (v1, or v2) whose sizes are (U, C) with U >= min_u, found by its
// Thrift prefix (the page type, then two i32 sizes) and measured with the decoder; npos if none.
struct PageAt {
  size_t at = std::string::npos, header = 0, u_at = 0, u_len = 0;
  int64_t u = 0, c = 0;
};
PageAt find_data_page(const std::string& f, int64_t min_u, bool v2 = false) {
  auto varint = [&](size_t* p, int64_t* v) {
    uint64_t x = 0;
    for (int s = 0; *p < f.size() && s < 35; s += 7) {
      uint8_t b = static_cast<uint8_t>(f[(*p)++]);
      x |= uint64_t(b & 0x7f) << s;
      if (!(b & 0x80)) return *v = static_cast<int64_t>(x >> 1) ^ -static_cast<int64_t>(x & 1), true;
    }
    return false;
  };
  for (size_t i = 4; i + 8 < f.size(); i++) {
    if (f[i] != 0x15 || f[i + 1] != (v2 ? 0x06 : 0x00) || f[i + 2] != 0x15) continue;
    PageAt pg;
    size_t p = i + 3;
    pg.u_at = p;
    if (!varint(&p, &pg.u) || pg.u < min_u) continue;
    pg.u_len = p - pg.u_at;
    if (p >= f.size() || f[p++] != 0x15 || !varint(&p, &pg.c) || pg.c <= 0) continue;
    ThriftReader r(reinterpret_cast<const uint8_t*>(f.data() + i), f.size() - i);
    r.skip(kThriftStruct);
    if (!r.ok()) continue;
    pg.at = i;
    pg.header = r.pos();
    return pg;
  }
  return PageAt();
}

void expect_error(const Status& s, const std::vector<std::string>& parts) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << "not one line: " << s.message();
  for (const auto& p : parts)
    EXPECT_NE(s.message().find(p), std::string::npos) << "no '" << p << "' in: " << s.message();
}

}  // namespace

// ---- Real fixtures (../shared/data/parquet), checked value by value against hyparquet.

TEST(ParquetFixtures, ArrowSnappyDictionaryMatchesAnIndependentReader) {
  REQUIRE_PARQUET_FIXTURES();
  REQUIRE_WRITTEN();
  for (const char* name : {"danish_tweets_text_label_test.parquet", "danish_tweets_text_label_train.parquet"}) {
    const std::string path = fixtures() + "/" + name;
    std::vector<std::optional<std::string>> rows;
    uint64_t nulls = 0;
    Status s = read_rows(path, "text", &rows, &nulls);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(rows.size(), std::string(name).find("test") != std::string::npos ? 1047u : 2411u);
    EXPECT_EQ(expect_rows_match(rows, reference(path, "text"), name), nulls);
    size_t multibyte = 0;
    for (auto& r : rows) {
      if (!r) continue;
      EXPECT_EQ(utf8_first_invalid(*r), std::string::npos);
      multibyte += std::any_of(r->begin(), r->end(), [](char c) { return static_cast<unsigned char>(c) >= 0xF0; });
    }
    EXPECT_GT(multibyte, 0u) << "the fixture's emoji (4-byte UTF-8) should be there";
  }
}

TEST(ParquetFixtures, PolarsZstdHasNoTextColumnAndReadsAnother) {
  REQUIRE_PARQUET_FIXTURES();
  REQUIRE_WRITTEN();
  const std::string path = fixtures() + "/polars_zstd_smollm2_logs_train-00002-of-00003.parquet";
  expect_error(read_error(path), {path, "no column 'text'", "prompt, system_prompt, adi_score", "--text-column"});
  for (const char* column : {"response", "prompt", "model"}) {
    std::vector<std::optional<std::string>> rows;
    uint64_t nulls = 0;
    Status s = read_rows(path, column, &rows, &nulls);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(rows.size(), 63u);
    EXPECT_EQ(expect_rows_match(rows, reference(path, column), column), nulls);
  }
  expect_error(read_error(path, "adi_score"), {path, "column 'adi_score' is DOUBLE, not a UTF-8 string"});
}

// ---- Files written here by independent writers.

TEST(ParquetWritten, EveryRowEqualsWhatTheWriterWrote) {
  REQUIRE_WRITTEN();
  ASSERT_GE(written().expected.size(), 8u);
  for (auto& [name, want] : written().expected.items()) {
    std::vector<std::optional<std::string>> rows;
    uint64_t nulls = 0;
    Status s = read_rows(written().dir + "/" + name, want["column"], &rows, &nulls);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(expect_rows_match(rows, want, name), nulls) << name;
    if (name.find("required") == std::string::npos) {
      EXPECT_EQ(nulls, 429u) << name;  // every 7th of 3,000 rows
    }
  }
}

TEST(ParquetWritten, DocumentSourceSkipsNullsAndEmptiesAcrossFiles) {
  REQUIRE_WRITTEN();
  std::vector<std::string> files;
  ASSERT_TRUE(expand_inputs({written().dir + "/rust_plain_zstd.parquet", written().dir + "/hyparquet_*.parquet"},
                            &files).ok());
  ASSERT_EQ(files.size(), 3u);
  std::vector<std::string> want;  // non-null, non-empty values' hashes, file after file
  uint64_t want_nulls = 0;
  for (auto& f : files) {
    for (auto& v : written().expected[std::filesystem::path(f).filename().string()]["values"]) {
      if (v.is_null()) want_nulls++;
      else if (v != sha256_hex("")) want.push_back(v);
    }
  }
  std::unique_ptr<DocumentSource> src;
  ASSERT_TRUE(open_files(files, Utf8Policy::kError, &src).ok());
  std::string doc;
  bool eof = false;
  size_t i = 0, bad = 0;
  while (true) {
    Status s = src->next(&doc, &eof);
    ASSERT_TRUE(s.ok()) << s.message();
    if (eof) break;
    bad += i >= want.size() || sha256_hex(doc) != want[i];
    i++;
  }
  EXPECT_EQ(i, want.size());
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(src->nulls_skipped(), want_nulls);
  EXPECT_EQ(src->bytes_done(), src->bytes_total());
}

TEST(ParquetWritten, InvalidUtf8IsAnErrorOrACountedRepair) {
  REQUIRE_WRITTEN();
  const std::string path = written().dir + "/rust_latin1.parquet";  // row 9 holds Latin-1 bytes
  for (Utf8Policy policy : {Utf8Policy::kError, Utf8Policy::kReplace}) {
    std::unique_ptr<DocumentSource> src;
    ASSERT_TRUE(open_files({path}, policy, &src).ok());
    std::string doc;
    bool eof = false;
    Status s;
    size_t docs = 0;
    while ((s = src->next(&doc, &eof)).ok() && !eof) docs++;
    if (policy == Utf8Policy::kError) {
      expect_error(s, {path, "row 9 of column 'text': invalid UTF-8 at byte 3", "--invalid-utf8=replace"});
    } else {
      ASSERT_TRUE(s.ok()) << s.message();
      EXPECT_EQ(src->docs_repaired(), 1u);
      EXPECT_GT(docs, 10u);
    }
  }
}

TEST(ParquetWritten, OutsideTheSubsetIsAOneLineError) {
  REQUIRE_WRITTEN();
  const std::string nested = written().dir + "/rust_nested_lz4.parquet", delta = written().dir + "/rust_delta.parquet";
  expect_error(read_error(nested, "tags"), {nested, "column 'tags' is nested"});
  expect_error(read_error(nested), {nested, "compression LZ4_RAW is not supported"});
  expect_error(read_error(delta), {delta, "page encoding DELTA_LENGTH_BYTE_ARRAY is not supported"});
  expect_error(read_error(delta, "id"), {delta, "column 'id' is INT32, not a UTF-8 string"});
  expect_error(read_error(delta, "nope"), {delta, "no column 'nope' (the columns are: id, text)"});
}

// ---- Bad input: mutations of good files.

TEST(ParquetBadInput, TruncatedWrongMagicAndFooterLength) {
  REQUIRE_WRITTEN();
  const std::string good = bytes_of(written().dir + "/rust_plain_zstd.parquet"), d = written().dir;
  write_text(d + "/bad_truncated.parquet", good.substr(0, good.size() / 2));
  expect_error(read_error(d + "/bad_truncated.parquet"),
               {"bad_truncated.parquet", "no PAR1 magic at the end", "truncated"});
  write_text(d + "/bad_tiny.parquet", "PAR1");
  expect_error(read_error(d + "/bad_tiny.parquet"), {"bad_tiny.parquet", "not a Parquet file (4 bytes"});
  write_text(d + "/bad_magic.parquet", "JUNK" + good.substr(4));
  expect_error(read_error(d + "/bad_magic.parquet"), {"bad_magic.parquet", "no PAR1 magic at the start"});
  std::string f = good;
  f[f.size() - 6] = '\x7f';  // footer length (u32 LE before the final magic) now over 8 MB
  write_text(d + "/bad_footer_len.parquet", f);
  expect_error(read_error(d + "/bad_footer_len.parquet"), {"bad_footer_len.parquet", "footer length", "out of range"});
  f = good;
  const size_t footer = f.size() - 8 - load_le32(f.data() + f.size() - 8);
  f.replace(footer, 4, "\xff\xff\xff\xff");  // the footer's first field header: an unknown type
  write_text(d + "/bad_footer.parquet", f);
  expect_error(read_error(d + "/bad_footer.parquet"), {"bad_footer.parquet", "corrupt footer metadata"});
}

TEST(ParquetBadInput, CorruptPagesAndSizesThatLie) {
  REQUIRE_WRITTEN();
  const std::string d = written().dir;
  for (const char* name : {"rust_plain_zstd.parquet", "rust_plain_gzip_v2.parquet"}) {
    std::string f = bytes_of(d + "/" + name);
    const bool v2 = std::string(name).find("v2") != std::string::npos;
    PageAt pg = find_data_page(f, 10000, v2);  // a text page (the id column's pages are 4,096 bytes)
    ASSERT_NE(pg.at, std::string::npos) << name;
    // Break the compressed values' magic: zstd's frame magic (v1: right after the header), gzip's member header
    // (v2: after the uncompressed definition levels).
    size_t at = v2 ? f.find("\x1f\x8b\x08", pg.at + pg.header) : pg.at + pg.header;
    ASSERT_LT(at, f.size());
    f.replace(at, 2, "XX");
    const std::string bad = d + "/bad_page_" + name;
    write_text(bad, f);
    expect_error(read_error(bad), {bad, "row group 0, column 'text': page at byte", "corrupt"});
  }
  // An uncompressed page whose header claims one byte more than it holds.
  std::string f = bytes_of(d + "/rust_plain_none.parquet");
  PageAt pg = find_data_page(f, 10000);
  ASSERT_NE(pg.at, std::string::npos);
  ASSERT_EQ(pg.u, pg.c);
  uint64_t zz = static_cast<uint64_t>(pg.u + 1) << 1;
  std::string v;
  for (; zz >= 0x80; zz >>= 7) v.push_back(static_cast<char>(zz | 0x80));
  v.push_back(static_cast<char>(zz));
  ASSERT_EQ(v.size(), pg.u_len);
  f.replace(pg.u_at, pg.u_len, v);
  write_text(d + "/bad_size.parquet", f);
  expect_error(read_error(d + "/bad_size.parquet"),
               {"bad_size.parquet", "corrupt UNCOMPRESSED page", "header says " + std::to_string(pg.u + 1)});
  // 1,000 bytes cut out of the data: every offset in the footer now lies.
  f = bytes_of(d + "/rust_plain_none.parquet");
  f.erase(pg.at + pg.header + 100, 1000);
  write_text(d + "/bad_offsets.parquet", f);
  expect_error(read_error(d + "/bad_offsets.parquet"), {"bad_offsets.parquet", "row group"});
}

// ---- End to end: the CLI prepares Parquet and trains on it.

TEST(ParquetEndToEnd, PrepareThenTrain) {
  REQUIRE_WRITTEN();
  const std::string d = written().dir, out = d + "/e2e";
  auto r = run_cmd(frontier_bin() + " prepare --quiet --train " + d + "/rust_plain_zstd.parquet --val " + d +
                   "/hyparquet_empty_group_gzip.parquet --vocab-size 400 --out " + out + "/data");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("train  docs: 2545"), std::string::npos) << r.out;  // 3,000 - 429 nulls - 26 empty
  EXPECT_NE(r.out.find("val    docs: 2545"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nulls: 858 null 'text' values skipped"), std::string::npos) << r.out;
  r = run_cmd(train_cmd("--data " + out + "/data --budget 1000 --set train.max_steps=3 --set train.run_dir=" + out +
                        "/run"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(summary_value(r.out, "num_steps"), 3) << r.out;
  EXPECT_TRUE(std::isfinite(summary_value(r.out, "val_bpb"))) << r.out;
}

TEST(ParquetEndToEnd, TextColumnOptionAndMissingColumnError) {
  REQUIRE_PARQUET_FIXTURES();
  REQUIRE_WRITTEN();
  std::string glob = fixtures() + "/polars_zstd_*.parquet";
  glob = "'" + glob + "'";  // quoted: prepare expands it
  const std::string out = written().dir + "/e2e_polars";
  auto r = run_cmd(frontier_bin() + " prepare --quiet --train " + glob + " --vocab-size 300 --out " + out);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("error: " + fixtures() + "/polars_zstd_smollm2_logs_train-00000-of-00001.parquet: no column "
                       "'text' (the columns are: prompt, system_prompt, adi_score, adi_decision, adi_metrics, "
                       "response, routed_to, model, timestamp); choose one with --text-column"),
            std::string::npos) << r.out;
  size_t docs = 0;  // non-null, non-empty responses, as hyparquet reads them
  for (const char* f : {"00000-of-00001", "00001-of-00002", "00002-of-00003"}) {
    const json ref = reference(fixtures() + "/polars_zstd_smollm2_logs_train-" + f + ".parquet", "response");
    for (auto& v : ref["values"]) docs += !v.is_null() && v != sha256_hex("");
  }
  EXPECT_EQ(docs, 139u);
  r = run_cmd(frontier_bin() + " prepare --quiet --train " + glob + " --text-column response --val-every 4 "
              "--vocab-size 300 --out " + out);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("train  docs: " + std::to_string(docs - docs / 4) + " "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("val    docs: " + std::to_string(docs / 4) + " "), std::string::npos) << r.out;
}
