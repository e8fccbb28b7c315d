// UTF-8 validation and repair.
//
// Frontier's contract: text entering the tokenizer is valid UTF-8 (the regex split runs on code points, like
// tiktoken, whose encode() takes a string). Invalid input is either an error naming where it is, or is repaired
// with utf8_replace_invalid, which substitutes U+FFFD for each maximal invalid subpart exactly as the WHATWG
// decoder does (JavaScript's TextDecoder, Python's bytes.decode(errors="replace")).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace frontier {

// Returns the byte offset of the first invalid sequence, or std::string_view::npos if s is valid UTF-8
// (no overlongs, no surrogates, nothing above U+10FFFF).
size_t utf8_first_invalid(std::string_view s);
std::string utf8_replace_invalid(std::string_view s);

}  // namespace frontier
