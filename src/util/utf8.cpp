#include "util/utf8.h"

#include <cstdint>

namespace frontier {

// Length of the valid sequence starting at s[i] (1..4), or 0 if invalid. On invalid, *subpart gets the length of
// the maximal subpart (the bytes the WHATWG decoder consumes before emitting one U+FFFD), at least 1.
static int utf8_seq(std::string_view s, size_t i, int* subpart) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t n = s.size();
  uint8_t c = p[i];
  *subpart = 1;
  if (c < 0x80) return 1;
  int need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (int k = 1; k <= need; k++) {
    if (i + k >= n) return 0;
    uint8_t b = p[i + k];
    uint8_t l = (k == 1) ? lo : 0x80, h = (k == 1) ? hi : 0xBF;
    if (b < l || b > h) return 0;
    *subpart = k + 1;
  }
  return need + 1;
}

size_t utf8_first_invalid(std::string_view s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    int sub;
    int len = utf8_seq(s, i, &sub);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string utf8_replace_invalid(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0, n = s.size();
  while (i < n) {
    int sub;
    int len = utf8_seq(s, i, &sub);
    if (len > 0) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      i += sub;
    }
  }
  return out;
}

}  // namespace frontier
