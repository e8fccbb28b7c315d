// Thrift compact-protocol decoder: the serialization of Parquet's footer (FileMetaData) and page headers. Just
// what a reader of those structs needs: field headers, integers, binaries, lists, and a generic skip for the fields
// it does not use. Every read is bounds-checked against the buffer; the first failure sticks (later reads return
// zero) and is reported once by ok()/truncated(), so a parser can read a whole struct and check at the end.
//
//   ThriftReader r(buf, n);
//   r.begin_struct();
//   int16_t id;
//   for (uint8_t t; (t = r.next_field(&id)) != kThriftStop;) {
//     if (id == 1) x = r.read_int(t);   // a field of another type than expected is an error, not a guess
//     else r.skip(t);
//   }
//   r.end_struct();
//   if (!r.ok()) ...   // r.truncated(): the buffer ended inside the struct (read more and retry)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace frontier {

// Compact-protocol type ids (field headers and list element types).
enum : uint8_t {
  kThriftStop = 0, kThriftTrue = 1, kThriftFalse = 2, kThriftByte = 3, kThriftI16 = 4, kThriftI32 = 5,
  kThriftI64 = 6, kThriftDouble = 7, kThriftBinary = 8, kThriftList = 9, kThriftSet = 10, kThriftMap = 11,
  kThriftStruct = 12,
};

class ThriftReader {
 public:
  ThriftReader(const uint8_t* data, size_t size) : p_(data), end_(data + size), begin_(data) {}

  // Struct framing: field ids are deltas from the previous field of the same struct.
  void begin_struct();
  void end_struct();  // after next_field() returned kThriftStop
  // The next field's type (kThriftStop at the struct's end, or on error) and id.
  uint8_t next_field(int16_t* id);

  // Each takes the field's type (from next_field or a list header) and fails if it is not the expected kind.
  int64_t read_int(uint8_t type);       // byte, i16, i32 or i64 (zigzag varint)
  bool read_bool(uint8_t type);         // a bool field: the value is in its type id
  std::string read_binary(uint8_t type);  // binary or string
  uint32_t read_list(uint8_t type, uint8_t* elem_type);  // list/set header: element count, bounded by bytes left
  void skip(uint8_t type) { skip_value(type, false); }  // any value, nested ones included (depth-limited)

  void fail(const char* why, bool truncated = false);  // for the caller's own checks (e.g. wrong element type)
  bool ok() const { return !failed_; }
  bool truncated() const { return truncated_; }
  const std::string& error() const { return error_; }
  size_t pos() const { return static_cast<size_t>(p_ - begin_); }

 private:
  uint64_t varint();
  void skip_value(uint8_t type, bool in_list);

  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* begin_;
  std::vector<int16_t> last_id_;  // field-id base per open struct
  bool failed_ = false, truncated_ = false;
  std::string error_;
};

}  // namespace frontier
