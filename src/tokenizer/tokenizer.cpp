#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <nlohmann/json.hpp>
#include <queue>

#include "util/base64.h"
#include "util/file.h"
#include "util/sha256.h"

namespace frontier {

namespace {

inline uint64_t hash_bytes(const char* p, size_t n) {
  // 8 bytes at a time, multiply-xorshift mixing; keys are short (tokens), so this is a few cycles.
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ w ^ (static_cast<uint64_t>(n) << 56)) * 0xFF51AFD7ED558CCDull;
  h ^= h >> 32;
  return h;
}

}  // namespace

// Open-addressing map from token bytes to rank; load factor <= 0.5.
struct Tokenizer::RankTable {
  std::vector<uint32_t> slot_rank;  // UINT32_MAX = empty
  std::vector<uint32_t> slot_tag;   // high bits of the hash, to skip most string compares
  uint64_t mask = 0;

  void build(const std::vector<std::string>& r) {
    size_t cap = 16;
    while (cap < r.size() * 2 + 16) cap <<= 1;
    slot_rank.assign(cap, UINT32_MAX);
    slot_tag.assign(cap, 0);
    mask = cap - 1;
    for (uint32_t i = 0; i < r.size(); i++) {
      if (r[i].empty()) continue;
      uint64_t h = hash_bytes(r[i].data(), r[i].size());
      uint64_t s = h & mask;
      while (slot_rank[s] != UINT32_MAX) s = (s + 1) & mask;
      slot_rank[s] = i;
      slot_tag[s] = static_cast<uint32_t>(h >> 32);
    }
  }
  int64_t find(const std::vector<std::string>& ranks, std::string_view b) const {
    uint64_t h = hash_bytes(b.data(), b.size());
    uint32_t tag = static_cast<uint32_t>(h >> 32);
    for (uint64_t s = h & mask;; s = (s + 1) & mask) {
      uint32_t r = slot_rank[s];
      if (r == UINT32_MAX) return -1;
      if (slot_tag[s] == tag) {
        const std::string& t = ranks[r];
        if (t.size() == b.size() && std::memcmp(t.data(), b.data(), b.size()) == 0) return r;
      }
    }
  }
};

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Status Tokenizer::create(std::vector<std::string> ranks, const std::string& pattern,
                         const std::vector<std::pair<std::string, uint32_t>>& specials, Tokenizer* out) {
  Tokenizer t;
  t.ranks_ = std::move(ranks);
  t.table_ = std::make_unique<RankTable>();
  t.table_->build(t.ranks_);
  for (uint32_t i = 0; i < t.ranks_.size(); i++) {
    if (t.ranks_[i].empty()) continue;
    if (t.table_->find(t.ranks_, t.ranks_[i]) != static_cast<int64_t>(i))
      return Status::error("tokenizer has a duplicate token (ranks " + std::to_string(t.table_->find(t.ranks_, t.ranks_[i])) +
                           " and " + std::to_string(i) + " have the same bytes)");
  }
  for (int b = 0; b < 256; b++) {
    char c = static_cast<char>(b);
    if (t.table_->find(t.ranks_, std::string_view(&c, 1)) < 0)
      return Status::error("tokenizer lacks the single byte " + std::to_string(b) +
                           " (a byte-level BPE needs all 256)");
  }
  for (const auto& [name, id] : specials) {
    if (id < t.ranks_.size() && !t.ranks_[id].empty())
      return Status::error("special token " + name + " id " + std::to_string(id) + " collides with a rank");
    for (const auto& [n2, id2] : t.specials_)
      if (n2 == name || id2 == id) return Status::error("duplicate special token " + name);
    t.specials_.emplace_back(name, id);
  }
  t.splitter_ = std::make_unique<RegexSplitter>();
  FRONTIER_RETURN_IF_ERROR(t.splitter_->compile(pattern));
  *out = std::move(t);
  return ok_status();
}

Status Tokenizer::read_rank_file(const std::string& path, std::vector<std::string>* ranks) {
  std::string text;
  FRONTIER_RETURN_IF_ERROR(read_file(path, &text));
  ranks->clear();
  size_t pos = 0, line = 0;
  // Ranks count up from 0, one line each: a rank far past the line count would only allocate (up to 2^24 empty
  // entries for a one-line file), so it is an error.
  const size_t n_lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  std::string bytes;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string_view l(text.data() + pos, nl - pos);
    pos = nl + 1;
    line++;
    if (l.empty()) continue;
    size_t sp = l.find(' ');
    char* end = nullptr;
    std::string rank_str(sp == std::string_view::npos ? "" : l.substr(sp + 1));
    long long r = sp == std::string_view::npos ? -1 : std::strtoll(rank_str.c_str(), &end, 10);
    if (sp == std::string_view::npos || r < 0 || r >= (1 << 24) || (end && *end) ||
        !base64_decode(l.substr(0, sp), &bytes) || bytes.empty())
      return Status::error(path + ":" + std::to_string(line) +
                           ": not a tiktoken rank line (expected \"<base64> <rank>\")");
    if (static_cast<size_t>(r) >= n_lines + 65536)
      return Status::error(path + ":" + std::to_string(line) + ": rank " + rank_str + " in a file of " +
                           std::to_string(n_lines) + " lines (ranks count up from 0, one per line)");
    if (static_cast<size_t>(r) >= ranks->size()) ranks->resize(r + 1);
    if (!(*ranks)[r].empty()) return Status::error(path + ":" + std::to_string(line) + ": rank " + rank_str + " repeats");
    (*ranks)[r] = bytes;
  }
  if (ranks->empty()) return Status::error(path + ": empty rank file");
  return ok_status();
}

Status Tokenizer::load(const std::string& dir) {
  std::string meta_text;
  std::string meta_path = dir + "/tokenizer.json";
  if (!file_exists(meta_path))
    return Status::error("no tokenizer in " + dir + " (expected tokenizer.json and tokenizer.tiktoken; run "
                         "`frontier prepare` first)");
  FRONTIER_RETURN_IF_ERROR(read_file(meta_path, &meta_text));
  nlohmann::json j = nlohmann::json::parse(meta_text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("pattern") || !j.contains("special_tokens") ||
      !j["pattern"].is_string() || !j["special_tokens"].is_object())
    return Status::error(meta_path + ": malformed tokenizer metadata (needs \"pattern\" and \"special_tokens\")");
  std::vector<std::string> ranks;
  FRONTIER_RETURN_IF_ERROR(read_rank_file(dir + "/tokenizer.tiktoken", &ranks));
  std::vector<std::pair<std::string, uint32_t>> specials;
  for (auto& [k, v] : j["special_tokens"].items()) {
    if (!v.is_number_unsigned()) return Status::error(meta_path + ": special token " + k + " has no id");
    if (v.get<uint64_t>() >= (1u << 24))  // as ranks: a larger id would make the vocabulary (and model) that large
      return Status::error(meta_path + ": special token " + k + " has id " + v.dump() + ", over the 2^24 limit");
    specials.emplace_back(k, v.get<uint32_t>());
  }
  std::sort(specials.begin(), specials.end(), [](auto& a, auto& b) { return a.second < b.second; });
  Tokenizer t;
  if (Status s = create(std::move(ranks), j["pattern"].get<std::string>(), specials, &t); !s.ok())
    return Status::error(dir + ": " + s.message());
  if (j.contains("vocab_size") &&
      (!j["vocab_size"].is_number_unsigned() || j["vocab_size"].get<uint64_t>() != t.vocab_size()))
    return Status::error(meta_path + ": vocab_size " + j["vocab_size"].dump() +
                         " does not match the rank file + specials (" + std::to_string(t.vocab_size()) + ")");
  *this = std::move(t);
  return ok_status();
}

Status Tokenizer::save(const std::string& dir) const {
  FRONTIER_RETURN_IF_ERROR(make_dirs(dir));
  std::string ranks_text;
  for (uint32_t i = 0; i < ranks_.size(); i++) {
    if (ranks_[i].empty()) continue;
    ranks_text += base64_encode(ranks_[i]);
    ranks_text += ' ';
    ranks_text += std::to_string(i);
    ranks_text += '\n';
  }
  nlohmann::ordered_json j;
  j["format"] = "frontier-tokenizer";
  j["version"] = 1;
  j["pattern"] = pattern();
  j["vocab_size"] = vocab_size();
  j["n_ranks"] = n_ranks();
  nlohmann::ordered_json sp = nlohmann::ordered_json::object();
  for (const auto& [name, id] : specials_) sp[name] = id;
  j["special_tokens"] = sp;
  j["fingerprint"] = fingerprint();
  FRONTIER_RETURN_IF_ERROR(write_file_atomic(dir + "/tokenizer.tiktoken", ranks_text));
  return write_file_atomic(dir + "/tokenizer.json", j.dump(2) + "\n");
}

uint32_t Tokenizer::vocab_size() const {
  uint32_t v = n_ranks();
  for (const auto& s : specials_) v = std::max(v, s.second + 1);
  return v;
}

const std::string& Tokenizer::token(uint32_t id) const {
  if (id < ranks_.size() && !ranks_[id].empty()) return ranks_[id];
  for (const auto& s : specials_)
    if (s.second == id) return s.first;
  static const std::string empty;
  return empty;
}

bool Tokenizer::is_special(uint32_t id) const {
  for (const auto& s : specials_)
    if (s.second == id) return true;
  return false;
}

int64_t Tokenizer::special_id(const std::string& name) const {
  for (const auto& s : specials_)
    if (s.first == name) return s.second;
  return -1;
}

uint32_t Tokenizer::bos_id() const {
  int64_t id = special_id("<|bos|>");
  FRONTIER_CHECK(id >= 0);
  return static_cast<uint32_t>(id);
}

std::string Tokenizer::fingerprint() const {
  Sha256 h;
  for (uint32_t i = 0; i < ranks_.size(); i++) {
    uint32_t n = static_cast<uint32_t>(ranks_[i].size());
    h.update(&n, 4);
    h.update(ranks_[i]);
  }
  h.update(pattern());
  for (const auto& [name, id] : specials_) {
    h.update(name);
    h.update(&id, 4);
  }
  return h.hex_digest();
}

int64_t Tokenizer::rank_of(std::string_view b) const { return table_->find(ranks_, b); }

Status Tokenizer::encode_ordinary(std::string_view text, std::vector<uint32_t>* out) const {
  return splitter_->for_each(text, [&](std::string_view piece) { encode_piece(piece, out); });
}

void Tokenizer::encode_piece(std::string_view piece, std::vector<uint32_t>* out) const {
  int64_t whole = rank_of(piece);
  if (whole >= 0) {
    out->push_back(static_cast<uint32_t>(whole));
    return;
  }
  if (piece.size() >= heap_merge_min_) {
    merge_heap(piece, out);
  } else {
    merge_linear(piece, out);
  }
}

// tiktoken's _byte_pair_merge, transcribed: parts[i] = (start offset, rank of merging part i with part i+1).
void Tokenizer::merge_linear(std::string_view piece, std::vector<uint32_t>* out) const {
  constexpr uint32_t kMax = UINT32_MAX;
  struct Part {
    uint32_t start, rank;
  };
  Part stack_parts[kHeapMergeMin + 2];
  std::vector<Part> heap_parts;
  Part* parts = stack_parts;
  if (piece.size() + 1 > kHeapMergeMin + 2) {
    heap_parts.resize(piece.size() + 1);
    parts = heap_parts.data();
  }
  size_t n = 0;
  uint32_t min_rank = kMax;
  size_t min_i = 0;
  for (size_t i = 0; i + 1 < piece.size(); i++) {
    int64_t r = rank_of(piece.substr(i, 2));
    uint32_t rr = r < 0 ? kMax : static_cast<uint32_t>(r);
    if (rr < min_rank) {
      min_rank = rr;
      min_i = i;
    }
    parts[n++] = {static_cast<uint32_t>(i), rr};
  }
  parts[n++] = {static_cast<uint32_t>(piece.size() - 1), kMax};
  parts[n++] = {static_cast<uint32_t>(piece.size()), kMax};
  auto get_rank = [&](size_t i) -> uint32_t {
    if (i + 3 < n) {
      int64_t r = rank_of(piece.substr(parts[i].start, parts[i + 3].start - parts[i].start));
      return r < 0 ? kMax : static_cast<uint32_t>(r);
    }
    return kMax;
  };
  while (min_rank != kMax) {
    size_t i = min_i;
    if (i > 0) parts[i - 1].rank = get_rank(i - 1);
    parts[i].rank = get_rank(i);
    std::memmove(parts + i + 1, parts + i + 2, (n - i - 2) * sizeof(Part));
    n--;
    min_rank = kMax;
    for (size_t k = 0; k + 1 < n; k++) {
      if (parts[k].rank < min_rank) {
        min_rank = parts[k].rank;
        min_i = k;
      }
    }
  }
  for (size_t k = 0; k + 1 < n; k++) {
    int64_t r = rank_of(piece.substr(parts[k].start, parts[k + 1].start - parts[k].start));
    FRONTIER_CHECK(r >= 0);
    out->push_back(static_cast<uint32_t>(r));
  }
}

// Same result as merge_linear in O(n log n): a min-heap of (rank, start) over adjacent pairs with lazy deletion.
// Choosing the smallest (rank, start) is exactly tiktoken's "lowest rank, leftmost on ties".
void Tokenizer::merge_heap(std::string_view piece, std::vector<uint32_t>* out) const {
  size_t n = piece.size();
  std::vector<uint32_t> start(n + 1), next(n + 1), prev(n + 1), ver(n + 1, 0);
  for (size_t i = 0; i <= n; i++) {
    start[i] = static_cast<uint32_t>(i);
    next[i] = static_cast<uint32_t>(i + 1);
    prev[i] = static_cast<uint32_t>(i == 0 ? 0 : i - 1);
  }
  std::vector<bool> alive(n + 1, true);
  struct Item {
    uint32_t rank, pos, ver;
    bool operator>(const Item& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> pq;
  // Part i spans [i, next[i]); its pair with the following part spans [i, next[next[i]]).
  auto push_pair = [&](uint32_t i) {
    if (i >= n) return;
    uint32_t j = next[i];
    if (j >= n) return;
    uint32_t k = next[j];
    int64_t r = rank_of(piece.substr(i, k - i));
    if (r >= 0) pq.push({static_cast<uint32_t>(r), i, ver[i]});
  };
  for (uint32_t i = 0; i + 1 < n; i++) push_pair(i);
  while (!pq.empty()) {
    Item it = pq.top();
    pq.pop();
    if (!alive[it.pos] || it.ver != ver[it.pos]) continue;
    uint32_t i = it.pos, j = next[i];
    alive[j] = false;
    next[i] = next[j];
    if (next[i] <= n) prev[next[i]] = i;
    ver[i]++;
    push_pair(i);
    if (i > 0) {
      uint32_t p = prev[i];
      ver[p]++;
      push_pair(p);
    }
  }
  for (uint32_t i = 0; i < n; i = next[i]) {
    int64_t r = rank_of(piece.substr(i, next[i] - i));
    FRONTIER_CHECK(r >= 0);
    out->push_back(static_cast<uint32_t>(r));
  }
}

std::string Tokenizer::decode(std::span<const uint32_t> ids) const {
  std::string s;
  for (uint32_t id : ids) s += token(id);
  return s;
}

}  // namespace frontier
