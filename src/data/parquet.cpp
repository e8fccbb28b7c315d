#include "data/parquet.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "data/codec.h"
#include "data/thrift_compact.h"

// Field ids below are those of parquet-format's parquet.thrift (FileMetaData, SchemaElement, RowGroup, ColumnChunk,
// ColumnMetaData, PageHeader and its page-type headers).

namespace frontier {

namespace {

constexpr int32_t kByteArray = 6;                                     // Type
constexpr int32_t kRequired = 0, kOptional = 1;                       // FieldRepetitionType
constexpr int32_t kPlain = 0, kPlainDict = 2, kRle = 3, kRleDict = 8;  // Encoding
constexpr int32_t kDataPage = 0, kDictPage = 2, kDataPageV2 = 3;      // PageType
constexpr int64_t kMaxPageBytes = 128ll << 20;    // a page holds one value at least; no document needs more
constexpr size_t kMaxHeaderBytes = 16u << 20;     // page headers carry statistics (min/max strings) at most

const char* type_name(int32_t t) {
  static const char* names[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY",
                                "FIXED_LEN_BYTE_ARRAY"};
  return t >= 0 && t < 8 ? names[t] : "an unknown type";
}

std::string encoding_name(int32_t e) {
  static const char* names[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED",
                                "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
                                "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
  return e >= 0 && e < 10 ? names[e] : "encoding " + std::to_string(e);
}

uint32_t load_u32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24; }

struct SchemaNode {
  std::string name;
  int32_t type = -1, repetition = kRequired, num_children = 0, converted = -1;
};

struct ChunkMeta {
  bool has_meta = false, external = false, encrypted = false;
  int32_t type = -1, codec = 0;
  int64_t num_values = 0, data_offset = -1, dict_offset = -1, size = 0;
};

struct RowGroupMeta {
  int64_t num_rows = 0;
  std::vector<ChunkMeta> columns;
};

struct PageHeader {
  int32_t type = -1, uncompressed = -1, compressed = -1, num_values = -1, encoding = -1, def_encoding = kRle;
  int32_t v2_def_bytes = 0, v2_rep_bytes = 0;
  bool has_crc = false, v2_compressed = true;
  uint32_t crc = 0;
};

// ---- Thrift structs: only the fields the reader uses; the rest are skipped.

void parse_schema_element(ThriftReader& r, SchemaNode* n) {
  r.begin_struct();
  int16_t id;
  for (uint8_t t; (t = r.next_field(&id)) != kThriftStop;) {
    if (id == 1) n->type = static_cast<int32_t>(r.read_int(t));
    else if (id == 3) n->repetition = static_cast<int32_t>(r.read_int(t));
    else if (id == 4) n->name = r.read_binary(t);
    else if (id == 5) n->num_children = static_cast<int32_t>(r.read_int(t));
    else if (id == 6) n->converted = static_cast<int32_t>(r.read_int(t));
    else r.skip(t);
  }
  r.end_struct();
}

void parse_column_meta(ThriftReader& r, ChunkMeta* c) {
  c->has_meta = true;
  r.begin_struct();
  int16_t id;
  for (uint8_t t; (t = r.next_field(&id)) != kThriftStop;) {
    if (id == 1) c->type = static_cast<int32_t>(r.read_int(t));
    else if (id == 4) c->codec = static_cast<int32_t>(r.read_int(t));
    else if (id == 5) c->num_values = r.read_int(t);
    else if (id == 7) c->size = r.read_int(t);
    else if (id == 9) c->data_offset = r.read_int(t);
    else if (id == 11) c->dict_offset = r.read_int(t);
    else r.skip(t);
  }
  r.end_struct();
}

void parse_row_group(ThriftReader& r, RowGroupMeta* g) {
  r.begin_struct();
  int16_t id;
  for (uint8_t t; (t = r.next_field(&id)) != kThriftStop;) {
    if (id == 1) {
      uint8_t et;
      uint32_t n = r.read_list(t, &et);
      for (uint32_t i = 0; i < n && r.ok(); i++) {
        ChunkMeta c;
        if (et != kThriftStruct) r.fail("column chunks are not structs");
        r.begin_struct();
        int16_t cid;
        for (uint8_t ct; (ct = r.next_field(&cid)) != kThriftStop;) {
          if (cid == 1) c.external = (r.skip(ct), true);
          else if (cid == 3) parse_column_meta(r, &c);
          else if (cid == 8 || cid == 9) c.encrypted = (r.skip(ct), true);
          else r.skip(ct);
        }
        r.end_struct();
        g->columns.push_back(c);
      }
    } else if (id == 3) {
      g->num_rows = r.read_int(t);
    } else {
      r.skip(t);
    }
  }
  r.end_struct();
}

void parse_page_header(ThriftReader& r, PageHeader* h) {
  r.begin_struct();
  int16_t id;
  for (uint8_t t; (t = r.next_field(&id)) != kThriftStop;) {
    if (id == 1) h->type = static_cast<int32_t>(r.read_int(t));
    else if (id == 2) h->uncompressed = static_cast<int32_t>(r.read_int(t));
    else if (id == 3) h->compressed = static_cast<int32_t>(r.read_int(t));
    else if (id == 4) h->has_crc = true, h->crc = static_cast<uint32_t>(r.read_int(t));
    else if (id == 5 || id == 7 || id == 8) {  // DataPageHeader, DictionaryPageHeader, DataPageHeaderV2
      if (t != kThriftStruct) {
        r.fail("a page-type header is not a struct");
        break;
      }
      r.begin_struct();
      int16_t sid;
      for (uint8_t st; (st = r.next_field(&sid)) != kThriftStop;) {
        if (sid == 1) h->num_values = static_cast<int32_t>(r.read_int(st));
        else if (id == 5 && sid == 2) h->encoding = static_cast<int32_t>(r.read_int(st));
        else if (id == 5 && sid == 3) h->def_encoding = static_cast<int32_t>(r.read_int(st));
        else if (id == 7 && sid == 2) h->encoding = static_cast<int32_t>(r.read_int(st));
        else if (id == 8 && sid == 4) h->encoding = static_cast<int32_t>(r.read_int(st));
        else if (id == 8 && sid == 5) h->v2_def_bytes = static_cast<int32_t>(r.read_int(st));
        else if (id == 8 && sid == 6) h->v2_rep_bytes = static_cast<int32_t>(r.read_int(st));
        else if (id == 8 && sid == 7) h->v2_compressed = r.read_bool(st);
        else r.skip(st);
      }
      r.end_struct();
    } else {
      r.skip(t);
    }
  }
  r.end_struct();
}

// The RLE / bit-packed hybrid (definition levels and dictionary indices): runs of one repeated value, or groups
// of 8 values packed LSB-first at bit_width bits each.
class RleDecoder {
 public:
  void init(const uint8_t* p, const uint8_t* end, int bit_width) {
    p_ = p, end_ = end, bw_ = bit_width, left_ = 0, packed_ = false;
  }
  bool next(uint32_t* v) {
    if (left_ == 0 && !next_run()) return false;
    left_--;
    if (!packed_) return *v = value_, true;
    uint64_t bit = static_cast<uint64_t>(index_++) * bw_;
    const uint8_t* q = bits_ + bit / 8;
    uint64_t acc = 0;
    for (int k = 0, nb = static_cast<int>((bit % 8 + bw_ + 7) / 8); k < nb; k++) acc |= uint64_t(q[k]) << (8 * k);
    *v = static_cast<uint32_t>((acc >> (bit % 8)) & ((uint64_t(1) << bw_) - 1));
    return true;
  }
  // The rest of the current run if it repeats one value (for skipping runs of nulls at once).
  uint32_t repeat_left() {
    if (left_ == 0 && !next_run()) return 0;
    return packed_ ? 0 : left_;
  }
  uint32_t repeat_value() const { return value_; }
  void skip_repeat(uint32_t n) { left_ -= n; }

 private:
  bool next_run() {
    while (left_ == 0) {  // runs of length 0 carry nothing: read on
      if (!read_run()) return false;
    }
    return true;
  }
  bool read_run() {
    uint64_t header = 0;
    for (int shift = 0;; shift += 7) {
      if (p_ >= end_ || shift > 28) return false;
      header |= uint64_t(*p_ & 0x7f) << shift;
      if (!(*p_++ & 0x80)) break;
    }
    if (header & 1) {  // bit-packed: (header >> 1) groups of 8; a last group cut short by the data's end is allowed
      uint64_t bytes = std::min<uint64_t>((header >> 1) * bw_, end_ - p_);
      uint64_t count = bw_ ? bytes * 8 / bw_ : (header >> 1) * 8;
      packed_ = true, bits_ = p_, index_ = 0, p_ += bytes;
      left_ = static_cast<uint32_t>(std::min<uint64_t>(count, 1u << 31));
    } else {
      int nb = (bw_ + 7) / 8;
      if (end_ - p_ < nb) return false;
      value_ = 0;
      for (int k = 0; k < nb; k++) value_ |= uint32_t(p_[k]) << (8 * k);
      p_ += nb, packed_ = false;
      left_ = static_cast<uint32_t>(std::min<uint64_t>(header >> 1, 1u << 31));
    }
    return true;
  }

  const uint8_t *p_ = nullptr, *end_ = nullptr, *bits_ = nullptr;
  int bw_ = 0;
  uint32_t left_ = 0, value_ = 0, index_ = 0;
  bool packed_ = false;
};

}  // namespace

struct ParquetReader::Impl {
  std::string path;
  int fd = -1;
  uint64_t file_size = 0, data_end = 0;  // data_end: where the footer starts
  uint64_t bytes_read = 0, nulls = 0, row = 0, num_rows = 0;  // bytes_read: footer and pages consumed (progress)
  std::vector<RowGroupMeta> groups;
  size_t leaf = 0;  // the column's index among the leaves
  std::string column;
  int max_def = 0;

  // The chunk being read (row group `group`): file range [pos, end), values left in it and in the current page.
  size_t group = 0;
  bool in_chunk = false;
  uint64_t pos = 0, end = 0;
  int64_t chunk_left = 0, page_left = 0;
  std::string raw, page, dict_buf;            // the page as read, decompressed; the dictionary page's values
  std::vector<std::pair<uint32_t, uint32_t>> dict;  // (offset, length) into dict_buf
  bool has_dict = false, dict_values = false;       // chunk has a dictionary; current page is dictionary-coded
  RleDecoder def, idx;
  const uint8_t *vp = nullptr, *vend = nullptr;  // PLAIN values cursor

  Status err(const std::string& what) const { return Status::error(path + ": " + what); }
  Status err_rg(const std::string& what) const {
    return err("row group " + std::to_string(group) + ", column '" + column + "': " + what);
  }

  Status read_at(uint64_t off, uint64_t n, std::string* out) {
    if (off > file_size || n > file_size - off) return err("truncated (a read past the end of the file)");
    out->resize(n);
    uint64_t done = 0;
    while (done < n) {
      ssize_t k = ::pread(fd, out->data() + done, n - done, static_cast<off_t>(off + done));
      if (k <= 0) return err(k == 0 ? "truncated (the file shrank while being read)" : "read error");
      done += static_cast<uint64_t>(k);
    }
    return ok_status();
  }

  Status open_footer();
  Status find_column(const std::vector<SchemaNode>& schema);
  Status start_chunk();
  Status next_page();
  Status decode_dictionary(const PageHeader& h);
};

Status ParquetReader::Impl::open_footer() {
  struct stat st;
  if (::fstat(fd, &st) != 0) return err("cannot stat");
  file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 12)
    return err("not a Parquet file (" + std::to_string(file_size) + " bytes; the smallest Parquet file is 12)");
  std::string head, tail;
  FRONTIER_RETURN_IF_ERROR(read_at(0, 4, &head));
  FRONTIER_RETURN_IF_ERROR(read_at(file_size - 8, 8, &tail));
  if (tail.compare(4, 4, "PARE") == 0)
    return err("encrypted Parquet file (PARE footer): encryption is not supported; decrypt it first");
  if (head != "PAR1") return err("not a Parquet file (no PAR1 magic at the start)");
  if (tail.compare(4, 4, "PAR1") != 0)
    return err("no PAR1 magic at the end of the file (the file is truncated or not Parquet; re-download it)");
  uint32_t footer = load_u32(reinterpret_cast<const uint8_t*>(tail.data()));
  if (footer == 0 || footer > file_size - 12)
    return err("footer length " + std::to_string(footer) + " is out of range for a file of " +
               std::to_string(file_size) + " bytes (the file is truncated or corrupt)");
  data_end = file_size - 8 - footer;
  std::string meta;
  FRONTIER_RETURN_IF_ERROR(read_at(data_end, footer, &meta));
  bytes_read = 12 + footer;

  ThriftReader r(reinterpret_cast<const uint8_t*>(meta.data()), meta.size());
  std::vector<SchemaNode> schema;
  bool encrypted = false;
  r.begin_struct();
  int16_t id;
  for (uint8_t t; (t = r.next_field(&id)) != kThriftStop;) {
    if (id == 2 || id == 4) {
      uint8_t et;
      uint32_t n = r.read_list(t, &et);
      if (n && et != kThriftStruct) r.fail("schema or row groups are not structs");
      for (uint32_t i = 0; i < n && r.ok(); i++) {
        if (id == 2) parse_schema_element(r, &schema.emplace_back());
        else parse_row_group(r, &groups.emplace_back());
      }
    } else if (id == 3) {
      int64_t n = r.read_int(t);
      num_rows = n > 0 ? static_cast<uint64_t>(n) : 0;
    } else if (id == 8) {
      encrypted = true;
      r.skip(t);
    } else {
      r.skip(t);
    }
  }
  r.end_struct();
  if (!r.ok()) return err("corrupt footer metadata (" + r.error() + ")");
  if (encrypted) return err("encrypted Parquet file (plaintext footer): encryption is not supported");
  return find_column(schema);
}

// The schema is a depth-first list: element 0 is the root, each group is followed by its num_children subtrees.
Status ParquetReader::Impl::find_column(const std::vector<SchemaNode>& schema) {
  if (schema.empty() || schema[0].num_children < 0) return err("corrupt footer (no schema root)");
  std::vector<std::string> names;
  size_t i = 1, leaves = 0;
  const SchemaNode* found = nullptr;
  for (int32_t c = 0; c < schema[0].num_children; c++) {
    if (i >= schema.size()) return err("corrupt footer (the schema has fewer elements than it declares)");
    size_t top = i, first_leaf = leaves;
    for (int64_t pending = 1; pending > 0; pending--, i++) {  // walk the subtree: each group adds its children
      if (i >= schema.size() || schema[i].num_children < 0)
        return err("corrupt footer (the schema has fewer elements than it declares)");
      pending += schema[i].num_children;
      if (schema[i].num_children == 0) leaves++;
    }
    names.push_back(schema[top].name);
    if (schema[top].name == column && !found) found = &schema[top], leaf = first_leaf;
  }
  if (!found) {
    std::string list;
    for (auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return err("no column '" + column + "' (the columns are: " + list + "); choose one with --text-column");
  }
  const SchemaNode& n = *found;
  std::string col = "column '" + column + "' ";
  if (n.num_children > 0)
    return err(col + "is nested (a list, map or struct: a group of " + std::to_string(n.num_children) +
               " field(s)): only flat string columns can be read");
  if (n.repetition != kRequired && n.repetition != kOptional)
    return err(col + "is repeated (a list): only flat string columns can be read");
  if (n.type != kByteArray)
    return err(col + "is " + type_name(n.type) + ", not a UTF-8 string (BYTE_ARRAY) column");
  if (n.converted != -1 && n.converted != 0 && n.converted != 4 && n.converted != 19)  // UTF8, ENUM, JSON
    return err(col + "is BYTE_ARRAY annotated as converted type " + std::to_string(n.converted) +
               " (binary data such as DECIMAL or BSON), not text");
  max_def = n.repetition == kOptional ? 1 : 0;
  for (size_t g = 0; g < groups.size(); g++)
    if (groups[g].columns.size() != leaves)
      return err("corrupt footer (row group " + std::to_string(g) + " has " +
                 std::to_string(groups[g].columns.size()) + " column chunks, the schema " + std::to_string(leaves) +
                 " columns)");
  return ok_status();
}

Status ParquetReader::Impl::start_chunk() {
  const RowGroupMeta& g = groups[group];
  const ChunkMeta& c = g.columns[leaf];
  if (c.encrypted) return err_rg("the column chunk is encrypted (not supported)");
  if (c.external) return err_rg("the column chunk is stored in another file (file_path): not supported");
  if (!c.has_meta) return err_rg("the column chunk has no metadata (corrupt footer)");
  if (c.type != kByteArray) return err_rg(std::string("the column chunk is ") + type_name(c.type) + ", not BYTE_ARRAY");
  if (!codec_supported(c.codec))
    return err_rg("compression " + codec_name(c.codec) + " is not supported (supported: UNCOMPRESSED, SNAPPY, GZIP, "
                  "ZSTD); rewrite the file with one of those");
  int64_t start = c.data_offset;
  if (c.dict_offset > 0 && c.dict_offset < start) start = c.dict_offset;  // some writers put 0 for "none"
  if (c.num_values < 0 || c.size < 0 || start < 4 || static_cast<uint64_t>(start) > data_end ||
      static_cast<uint64_t>(c.size) > data_end - static_cast<uint64_t>(start))
    return err_rg("the column chunk's offset " + std::to_string(start) + " and size " + std::to_string(c.size) +
                  " lie outside the file's " + std::to_string(data_end) + " bytes of data (truncated or corrupt)");
  pos = static_cast<uint64_t>(start);
  end = pos + static_cast<uint64_t>(c.size);
  chunk_left = c.num_values;
  page_left = 0;
  has_dict = false;
  dict.clear();
  in_chunk = true;
  return ok_status();
}

Status ParquetReader::Impl::decode_dictionary(const PageHeader& h) {
  if (has_dict) return err_rg("a second dictionary page in one column chunk (corrupt)");
  if (h.encoding != kPlain && h.encoding != kPlainDict)
    return err_rg("dictionary page encoding " + encoding_name(h.encoding) + " is not supported");
  if (h.num_values < 0 || static_cast<uint64_t>(h.num_values) > dict_buf.size() / 4)
    return err_rg("the dictionary page claims " + std::to_string(h.num_values) + " values in " +
                  std::to_string(dict_buf.size()) + " bytes (corrupt)");
  dict.clear();
  size_t p = 0;
  for (int32_t i = 0; i < h.num_values; i++) {
    if (dict_buf.size() - p < 4) return err_rg("the dictionary page ends inside a value (corrupt)");
    uint32_t n = load_u32(reinterpret_cast<const uint8_t*>(dict_buf.data() + p));
    p += 4;
    if (n > dict_buf.size() - p) return err_rg("a dictionary value runs past its page (corrupt)");
    dict.emplace_back(static_cast<uint32_t>(p), n);
    p += n;
  }
  has_dict = true;
  return ok_status();
}

Status ParquetReader::Impl::next_page() {
  if (pos >= end)
    return err_rg("the column chunk ends after " + std::to_string(groups[group].columns[leaf].num_values - chunk_left) +
                  " of its " + std::to_string(groups[group].columns[leaf].num_values) + " values (corrupt)");
  // The header's length is known only by parsing it: read a little, and more while it parses as truncated.
  PageHeader h;
  size_t hlen = 0;
  for (uint64_t want = std::min<uint64_t>(end - pos, 1 << 14);; want = std::min<uint64_t>(end - pos, 4 * want)) {
    FRONTIER_RETURN_IF_ERROR(read_at(pos, want, &raw));
    ThriftReader r(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
    h = PageHeader();
    parse_page_header(r, &h);
    if (r.ok()) {
      hlen = r.pos();
      break;
    }
    if (!r.truncated() || want == end - pos || want >= kMaxHeaderBytes)
      return err_rg("corrupt page header at byte " + std::to_string(pos) + " (" + r.error() + ")");
  }
  if (h.compressed < 0 || h.uncompressed < 0 || h.uncompressed > kMaxPageBytes ||
      static_cast<uint64_t>(h.compressed) > end - pos - hlen)
    return err_rg("page at byte " + std::to_string(pos) + " has sizes that do not fit (compressed " +
                  std::to_string(h.compressed) + ", uncompressed " + std::to_string(h.uncompressed) + ", " +
                  std::to_string(end - pos - hlen) + " bytes left in the column chunk)");
  if (hlen + static_cast<uint64_t>(h.compressed) <= raw.size()) {  // the probe read the whole page already
    raw.erase(0, hlen);
    raw.resize(static_cast<size_t>(h.compressed));
  } else {
    FRONTIER_RETURN_IF_ERROR(read_at(pos + hlen, static_cast<uint64_t>(h.compressed), &raw));
  }
  const uint64_t page_pos = pos;
  pos += hlen + static_cast<uint64_t>(h.compressed);
  bytes_read += hlen + static_cast<uint64_t>(h.compressed);
  const uint8_t* data = reinterpret_cast<const uint8_t*>(raw.data());
  if (h.has_crc && static_cast<uint32_t>(crc32(0, data, static_cast<uInt>(raw.size()))) != h.crc)
    return err_rg("page at byte " + std::to_string(page_pos) + " fails its CRC check (the file is corrupt)");
  const int32_t codec = groups[group].columns[leaf].codec;
  auto where = [&](const Status& s) { return err_rg("page at byte " + std::to_string(page_pos) + ": " + s.message()); };

  if (h.type == kDictPage) {
    Status s = decompress_page(codec, data, raw.size(), static_cast<size_t>(h.uncompressed), &dict_buf);
    if (!s.ok()) return where(s);
    return decode_dictionary(h);
  }
  if (h.type != kDataPage && h.type != kDataPageV2) return ok_status();  // index pages: nothing to read
  if (h.num_values < 0 || h.num_values > chunk_left)
    return err_rg("page at byte " + std::to_string(page_pos) + " claims " + std::to_string(h.num_values) +
                  " values, the column chunk has " + std::to_string(chunk_left) + " left (corrupt)");
  const uint8_t *levels = nullptr, *levels_end = nullptr;
  if (h.type == kDataPage) {
    Status s = decompress_page(codec, data, raw.size(), static_cast<size_t>(h.uncompressed), &page);
    if (!s.ok()) return where(s);
    const uint8_t* p = reinterpret_cast<const uint8_t*>(page.data());
    const uint8_t* pend = p + page.size();
    if (max_def > 0) {
      if (h.def_encoding != kRle)
        return err_rg("definition levels encoded " + encoding_name(h.def_encoding) + " are not supported (only RLE)");
      if (pend - p < 4 || load_u32(p) > static_cast<uint64_t>(pend - p - 4))
        return err_rg("page at byte " + std::to_string(page_pos) + ": definition levels run past the page");
      levels = p + 4;
      levels_end = levels + load_u32(p);
      p = levels_end;
    }
    vp = p, vend = pend;
  } else {  // v2: levels stay uncompressed in front of the (maybe compressed) values
    int64_t lv = int64_t(h.v2_def_bytes) + h.v2_rep_bytes;
    if (h.v2_def_bytes < 0 || h.v2_rep_bytes < 0 || lv > h.compressed || lv > h.uncompressed)
      return err_rg("page at byte " + std::to_string(page_pos) + " has level sizes that do not fit the page");
    if (h.v2_rep_bytes > 0) return err_rg("repetition levels in a flat column (corrupt)");
    size_t vsize = static_cast<size_t>(h.uncompressed - lv);
    Status s = h.v2_compressed ? decompress_page(codec, data + lv, raw.size() - lv, vsize, &page)
                               : decompress_page(kCodecNone, data + lv, raw.size() - lv, vsize, &page);
    if (!s.ok()) return where(s);
    levels = data + h.v2_rep_bytes;
    levels_end = levels + h.v2_def_bytes;
    vp = reinterpret_cast<const uint8_t*>(page.data());
    vend = vp + page.size();
  }
  if (max_def > 0) def.init(levels, levels_end, 1);
  dict_values = h.encoding == kPlainDict || h.encoding == kRleDict;
  if (dict_values) {
    if (!has_dict) return err_rg("a dictionary-encoded page without a dictionary page (corrupt)");
    int bw = vp < vend ? *vp : 0;  // an all-null page may hold no index data at all
    if (bw > 32) return err_rg("page at byte " + std::to_string(page_pos) + ": index bit width " + std::to_string(bw));
    idx.init(vp < vend ? vp + 1 : vend, vend, bw);
  } else if (h.encoding != kPlain) {
    return err_rg("page encoding " + encoding_name(h.encoding) + " is not supported (supported: PLAIN, "
                  "PLAIN_DICTIONARY, RLE_DICTIONARY); rewrite the file with those, e.g. pyarrow's defaults");
  }
  page_left = h.num_values;
  return ok_status();
}

ParquetReader::ParquetReader() : impl_(std::make_unique<Impl>()) {}
ParquetReader::~ParquetReader() {
  if (impl_->fd >= 0) ::close(impl_->fd);
}

Status ParquetReader::open(const std::string& path, const std::string& column) {
  impl_ = std::make_unique<Impl>();
  impl_->path = path;
  impl_->column = column;
  impl_->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (impl_->fd < 0) return Status::error("cannot open " + path);
  return impl_->open_footer();
}

Status ParquetReader::next(std::string* value, bool* eof) {
  Impl& m = *impl_;
  *eof = false;
  while (true) {
    if (!m.in_chunk) {
      if (m.group >= m.groups.size()) {
        m.bytes_read = m.file_size;  // the other columns' chunks, skipped, count as read
        *eof = true;
        return ok_status();
      }
      FRONTIER_RETURN_IF_ERROR(m.start_chunk());
    }
    if (m.page_left == 0) {
      if (m.chunk_left == 0) {  // the chunk is done (any pages past its values are ignored)
        m.in_chunk = false;
        m.group++;
        continue;
      }
      FRONTIER_RETURN_IF_ERROR(m.next_page());
      continue;
    }
    if (m.max_def > 0) {
      uint32_t run = m.def.repeat_left();
      if (run > 0 && m.def.repeat_value() < static_cast<uint32_t>(m.max_def)) {  // a run of nulls: skip it whole
        int64_t k = std::min<int64_t>(run, m.page_left);
        m.def.skip_repeat(static_cast<uint32_t>(k));
        m.nulls += k, m.row += k, m.page_left -= k, m.chunk_left -= k;
        continue;
      }
      uint32_t d;
      if (!m.def.next(&d) || d > static_cast<uint32_t>(m.max_def))
        return m.err_rg("the definition levels are shorter than the page or out of range (corrupt)");
      m.row++, m.page_left--, m.chunk_left--;
      if (d < static_cast<uint32_t>(m.max_def)) {
        m.nulls++;
        continue;
      }
    } else {
      m.row++, m.page_left--, m.chunk_left--;
    }
    if (m.dict_values) {
      uint32_t i;
      if (!m.idx.next(&i) || i >= m.dict.size())
        return m.err_rg("row " + std::to_string(m.row) + ": dictionary index missing or out of range (corrupt)");
      value->assign(m.dict_buf, m.dict[i].first, m.dict[i].second);
    } else {
      if (m.vend - m.vp < 4 || load_u32(m.vp) > static_cast<uint64_t>(m.vend - m.vp - 4))
        return m.err_rg("row " + std::to_string(m.row) + ": the value runs past the end of its page (corrupt)");
      uint32_t n = load_u32(m.vp);
      value->assign(reinterpret_cast<const char*>(m.vp + 4), n);
      m.vp += 4 + n;
    }
    return ok_status();
  }
}

uint64_t ParquetReader::nulls() const { return impl_->nulls; }
uint64_t ParquetReader::row() const { return impl_->row; }
uint64_t ParquetReader::num_rows() const { return impl_->num_rows; }
uint64_t ParquetReader::bytes_read() const { return impl_->bytes_read; }

}  // namespace frontier
