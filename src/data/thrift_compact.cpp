#include "data/thrift_compact.h"

namespace frontier {

namespace {
constexpr size_t kMaxDepth = 64;  // Parquet's structs nest 5 deep; deeper is a corrupt or hostile footer
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }
}  // namespace

void ThriftReader::fail(const char* why, bool truncated) {
  if (failed_) return;
  failed_ = true;
  truncated_ = truncated;
  error_ = std::string(why) + " at byte " + std::to_string(pos());
  p_ = end_;
}

uint64_t ThriftReader::varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (p_ >= end_) {
      fail("truncated varint", true);
      return 0;
    }
    uint8_t b = *p_++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  fail("varint longer than 10 bytes");
  return 0;
}

void ThriftReader::begin_struct() {
  if (last_id_.size() >= kMaxDepth) return fail("structs nested too deep");
  last_id_.push_back(0);
}

void ThriftReader::end_struct() {
  if (!last_id_.empty()) last_id_.pop_back();
}

uint8_t ThriftReader::next_field(int16_t* id) {
  *id = 0;
  if (failed_ || last_id_.empty()) return kThriftStop;
  if (p_ >= end_) {
    fail("struct ends without a stop byte", true);
    return kThriftStop;
  }
  uint8_t b = *p_++;
  if (b == 0) return kThriftStop;
  uint8_t type = b & 0x0f, delta = b >> 4;
  if (type > kThriftStruct) {
    fail("unknown field type");
    return kThriftStop;
  }
  *id = delta ? static_cast<int16_t>(last_id_.back() + delta) : static_cast<int16_t>(unzigzag(varint()));
  last_id_.back() = *id;
  return failed_ ? static_cast<uint8_t>(kThriftStop) : type;
}

int64_t ThriftReader::read_int(uint8_t type) {
  if (type == kThriftByte) {
    if (p_ >= end_) return fail("truncated byte", true), 0;
    return static_cast<int8_t>(*p_++);
  }
  if (type != kThriftI16 && type != kThriftI32 && type != kThriftI64) return fail("expected an integer"), 0;
  return unzigzag(varint());
}

bool ThriftReader::read_bool(uint8_t type) {
  if (type == kThriftTrue || type == kThriftFalse) return type == kThriftTrue;
  fail("expected a bool");
  return false;
}

std::string ThriftReader::read_binary(uint8_t type) {
  if (type != kThriftBinary) return fail("expected a binary"), std::string();
  uint64_t n = varint();
  if (n > static_cast<uint64_t>(end_ - p_)) return fail("binary runs past the end", true), std::string();
  std::string s(reinterpret_cast<const char*>(p_), n);
  p_ += n;
  return s;
}

uint32_t ThriftReader::read_list(uint8_t type, uint8_t* elem_type) {
  *elem_type = kThriftStop;
  if (type != kThriftList && type != kThriftSet) return fail("expected a list"), 0;
  if (p_ >= end_) return fail("truncated list header", true), 0;
  uint8_t b = *p_++;
  uint64_t n = b >> 4;
  if (n == 15) n = varint();
  *elem_type = b & 0x0f;
  if (*elem_type == kThriftStop || *elem_type > kThriftStruct) return fail("unknown list element type"), 0;
  if (n > static_cast<uint64_t>(end_ - p_))  // every element takes at least one byte
    return fail("list longer than the bytes left", true), 0;
  return static_cast<uint32_t>(n);
}

void ThriftReader::skip_value(uint8_t type, bool in_list) {
  if (failed_) return;
  switch (type) {
    case kThriftTrue:
    case kThriftFalse:
      if (in_list) {  // a bool list element is a byte; a bool field's value is in its header
        if (p_ >= end_) return fail("truncated bool", true);
        p_++;
      }
      return;
    case kThriftByte:
    case kThriftI16:
    case kThriftI32:
    case kThriftI64:
      read_int(type);
      return;
    case kThriftDouble:
      if (end_ - p_ < 8) return fail("truncated double", true);
      p_ += 8;
      return;
    case kThriftBinary: {
      uint64_t n = varint();
      if (n > static_cast<uint64_t>(end_ - p_)) return fail("binary runs past the end", true);
      p_ += n;
      return;
    }
    case kThriftList:
    case kThriftSet: {
      uint8_t elem;
      uint32_t n = read_list(type, &elem);
      if (last_id_.size() >= kMaxDepth) return fail("values nested too deep");
      last_id_.push_back(0);  // depth accounting only
      for (uint32_t i = 0; i < n && !failed_; i++) skip_value(elem, true);
      last_id_.pop_back();
      return;
    }
    case kThriftMap: {
      uint64_t n = varint();
      if (n == 0) return;
      if (p_ >= end_) return fail("truncated map header", true);
      uint8_t kv = *p_++;
      if (n > static_cast<uint64_t>(end_ - p_)) return fail("map longer than the bytes left", true);
      if (last_id_.size() >= kMaxDepth) return fail("values nested too deep");
      last_id_.push_back(0);
      for (uint64_t i = 0; i < n && !failed_; i++) {
        skip_value(kv >> 4, true);
        skip_value(kv & 0x0f, true);
      }
      last_id_.pop_back();
      return;
    }
    case kThriftStruct: {
      begin_struct();
      int16_t id;
      for (uint8_t t; (t = next_field(&id)) != kThriftStop;) skip_value(t, false);
      end_struct();
      return;
    }
    default:
      fail("unknown value type");
  }
}

}  // namespace frontier
