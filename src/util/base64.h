// Standard base64 (RFC 4648, with padding), as used by tiktoken's rank files.
#pragma once

#include <string>
#include <string_view>

namespace frontier {

std::string base64_encode(std::string_view bytes);
bool base64_decode(std::string_view text, std::string* bytes);  // false on malformed input

}  // namespace frontier
