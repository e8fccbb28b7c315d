// frontier tokenizer: encode / decode text with a prepared tokenizer (tokenizer/tokenizer.h).
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "tokenizer/tokenizer.h"
#include "util/utf8.h"

namespace frontier::cli {
namespace {

struct TokenizerArgs {
  std::string dir, text;
  bool decode = false;
};

// Every whitespace-separated word must be a token id: a stray word is an error naming it, not the end.
int decode_ids(const Tokenizer& tok, const std::string& text) {
  std::vector<uint32_t> ids;
  std::istringstream in(text);
  std::string word;
  for (size_t n = 1; in >> word; n++) {
    const bool digits = word.size() <= 10 && word.find_first_not_of("0123456789") == std::string::npos;
    const unsigned long long v = digits ? std::stoull(word) : 0;
    if (!digits || v >= tok.vocab_size())
      return fail(Status::error("--decode: word " + std::to_string(n) + " \"" + word.substr(0, 40) +
                                (word.size() > 40 ? "..." : "") + "\" is not a token id (0 to " +
                                std::to_string(tok.vocab_size() - 1) + ", separated by whitespace)"));
    ids.push_back(static_cast<uint32_t>(v));
  }
  std::string out = tok.decode(ids);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int encode_text(const Tokenizer& tok, const std::string& text) {
  size_t bad = utf8_first_invalid(text);
  if (bad != std::string::npos)
    return fail(Status::error("input is not valid UTF-8 (first bad byte at offset " + std::to_string(bad) + ")"));
  std::vector<uint32_t> ids;
  if (Status es = tok.encode_ordinary(text, &ids); !es.ok()) return fail(es);
  for (size_t i = 0; i < ids.size(); i++) std::printf("%s%u", i ? " " : "", ids[i]);
  std::printf("\n");
  return 0;
}

int run_tokenizer(TokenizerArgs& a) {
  Tokenizer tok;
  Status s = tok.load(a.dir);
  if (!s.ok()) return fail(s);
  if (a.text.empty()) {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    a.text = ss.str();
  }
  return a.decode ? decode_ids(tok, a.text) : encode_text(tok, a.text);
}

}  // namespace

void add_tokenizer_command(CLI::App& app, Commands& cmds) {
  auto a = std::make_shared<TokenizerArgs>();
  auto* tk = app.add_subcommand("tokenizer", "Encode or decode with a tokenizer directory");
  tk->add_option("--dir", a->dir, "Tokenizer directory (e.g. data/default/tokenizer)")->required();
  tk->add_option("--text", a->text, "Text to encode (default: read standard input)");
  tk->add_flag("--decode", a->decode, "Decode whitespace-separated token ids from --text or standard input");
  cmds.push_back({tk, [a] { return run_tokenizer(*a); }});
}

}  // namespace frontier::cli
