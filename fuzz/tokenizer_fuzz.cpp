// The tokenizer directory (tokenizer/tokenizer.h Tokenizer::load): the input after its first byte replaces
// tokenizer.json (first byte even) or tokenizer.tiktoken (odd) of a valid tokenizer that `frontier prepare` wrote;
// a tokenizer that loads then encodes a fixed text and the input itself (when it is UTF-8, as `frontier tokenizer`
// requires), each of which must decode back to its text, and decodes every id, since the split pattern and the
// ranks come from the files.
// Seeds: tokenizer.json and tokenizer.tiktoken of the fixture dataset and of ../shared/data-style runs, and edits.
// Dictionary: fuzz/dicts/json.dict (scripts/sanitize.sh passes it to libFuzzer).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"
#include "util/utf8.h"

using namespace frontier;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const std::string dir = [] {
    std::string d = fuzz::scratch_dir() + "/tokenizer";
    std::filesystem::copy(fuzz::make_dataset() + "/tokenizer", d);
    return d;
  }();
  static const std::string valid_json = fuzz::read(dir + "/tokenizer.json");
  static const std::string valid_ranks = fuzz::read(dir + "/tokenizer.tiktoken");
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const bool ranks = data[0] & 1;
  fuzz::write(dir + "/tokenizer.json", ranks ? std::string_view(valid_json) : rest);
  fuzz::write(dir + "/tokenizer.tiktoken", ranks ? rest : std::string_view(valid_ranks));
  Tokenizer tok;
  if (!tok.load(dir).ok()) return 0;
  // A tokenizer that loads splits every text into pieces that cover it (regex_split.h), so an encoding that
  // succeeds decodes back to its text byte for byte; one that fails is a Status (PCRE2 gave up), never an abort.
  const std::string_view fixed =
      "Hello world! It's 2024-12-03, ca\xc3\xa7\xc3\xa3o \xe6\x97\xa5\xe6\x9c\xac\n\n  x  \t\r\n";
  std::vector<uint32_t> ids;
  if (tok.encode_ordinary(fixed, &ids).ok()) FRONTIER_CHECK(tok.decode(ids) == fixed);
  ids.clear();
  if (rest.size() < 4096 && utf8_first_invalid(rest) == std::string::npos && tok.encode_ordinary(rest, &ids).ok())
    FRONTIER_CHECK(tok.decode(ids) == rest);
  std::vector<uint32_t> all;
  for (uint32_t i = 0; i < tok.vocab_size() && i < 4096; i++) all.push_back(i);
  (void)tok.decode(all);
  (void)tok.fingerprint();
  return 0;
}
