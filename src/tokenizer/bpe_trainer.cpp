#include "tokenizer/bpe_trainer.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <queue>

#include "util/progress.h"

namespace frontier {

namespace {

using Pair = uint64_t;  // (a << 32) | b
inline Pair make_pair_id(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }

struct HeapItem {
  int64_t count;
  Pair pair;
  // Max-heap on count; on equal counts the smaller pair ranks higher.
  bool operator<(const HeapItem& o) const { return count != o.count ? count < o.count : pair > o.pair; }
};

struct PairHash {
  size_t operator()(Pair p) const {
    p ^= p >> 33;
    p *= 0xFF51AFD7ED558CCDull;
    p ^= p >> 33;
    return static_cast<size_t>(p);
  }
};

using PairCounts = std::unordered_map<Pair, int64_t, PairHash>;
using PairWords = std::unordered_map<Pair, std::vector<uint32_t>, PairHash>;  // pair -> the pieces that hold it

// The pieces as byte ids, in byte order so that the result does not depend on hash-table or thread order; wcount:
// each piece's count.
void pieces_in_byte_order(const PieceCounts& counts, std::vector<std::vector<uint32_t>>* words,
                          std::vector<int64_t>* wcount) {
  std::vector<std::pair<std::string_view, uint64_t>> sorted;
  sorted.reserve(counts.size());
  for (auto& [k, v] : counts) sorted.emplace_back(k, v);
  std::sort(sorted.begin(), sorted.end());
  words->resize(sorted.size());
  wcount->resize(sorted.size());
  for (size_t w = 0; w < sorted.size(); w++) {
    (*words)[w].assign(reinterpret_cast<const uint8_t*>(sorted[w].first.data()),
                       reinterpret_cast<const uint8_t*>(sorted[w].first.data()) + sorted[w].first.size());
    (*wcount)[w] = static_cast<int64_t>(sorted[w].second);
  }
}

// Each adjacent pair's count over the pieces, the pieces that hold it (in order, each once) and a heap of the counts.
void index_pairs(const std::vector<std::vector<uint32_t>>& words, const std::vector<int64_t>& wcount,
                 PairCounts* pair_count, PairWords* pair_words, std::priority_queue<HeapItem>* heap) {
  for (uint32_t w = 0; w < words.size(); w++) {
    const auto& ids = words[w];
    for (size_t i = 0; i + 1 < ids.size(); i++) {
      Pair p = make_pair_id(ids[i], ids[i + 1]);
      (*pair_count)[p] += wcount[w];
      auto& lst = (*pair_words)[p];
      if (lst.empty() || lst.back() != w) lst.push_back(w);
    }
  }
  for (auto& [p, c] : *pair_count)
    if (c > 0) heap->push({c, p});
}

// ids with every (a, b) replaced by new_id, into *merged, and the pair-count changes that makes (times c, the
// piece's count) into *deltas. False when ids holds no (a, b): a stale entry of the index.
bool merge_word(const std::vector<uint32_t>& ids, uint32_t a, uint32_t b, uint32_t new_id, int64_t c,
                std::vector<uint32_t>* merged, std::vector<std::pair<Pair, int64_t>>* deltas) {
  const Pair ab = make_pair_id(a, b);
  merged->clear();
  deltas->clear();
  bool changed = false;
  for (size_t i = 0; i < ids.size();) {
    if (i + 1 < ids.size() && ids[i] == a && ids[i + 1] == b) {
      if (!merged->empty()) {
        deltas->emplace_back(make_pair_id(merged->back(), a), -c);
        deltas->emplace_back(make_pair_id(merged->back(), new_id), c);
      }
      deltas->emplace_back(ab, -c);
      if (i + 2 < ids.size()) {
        deltas->emplace_back(make_pair_id(b, ids[i + 2]), -c);
        deltas->emplace_back(make_pair_id(new_id, ids[i + 2]), c);
      }
      merged->push_back(new_id);
      i += 2;
      changed = true;
    } else {
      merged->push_back(ids[i]);
      i++;
    }
  }
  return changed;
}

// One merge's summed count changes: a grown pair goes on the heap with its new count (the old entry is skipped
// when popped, its count stale); a pair whose count reaches zero leaves the counts.
void apply_deltas(const PairCounts& delta_sum, PairCounts* pair_count, std::priority_queue<HeapItem>* heap) {
  for (auto& [p, d] : delta_sum) {
    if (d == 0) continue;
    int64_t& pcnt = (*pair_count)[p];
    pcnt += d;
    if (d > 0) heap->push({pcnt, p});
    if (pcnt <= 0) pair_count->erase(p);
  }
}

}  // namespace

BpeTrainer::BpeTrainer(const std::string& pattern) : pattern_(pattern) { status_ = splitter_.compile(pattern); }

Status BpeTrainer::add_document(std::string_view text) {
  FRONTIER_CHECK(status_.ok());
  n_bytes_ += text.size();
  return splitter_.for_each(text, [&](std::string_view piece) {
    auto it = counts_.find(piece);
    if (it != counts_.end()) {
      it->second++;
    } else {
      counts_.emplace(std::string(piece), 1);
    }
  });
}

Status BpeTrainer::add_documents(const std::vector<std::string>& docs, size_t* failed) {
  FRONTIER_CHECK(status_.ok());
  // Counted apart and merged only when every document split, so that a failed batch counts nothing.
  const int nt = std::max(1, std::min(omp_get_max_threads(), static_cast<int>(docs.size())));
  std::vector<PieceCounts> local(nt);
  std::vector<Status> errors(docs.size());  // the split's error per document (empty unless it failed)
#pragma omp parallel num_threads(nt)
  {
    PieceCounts& mine = local[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 1)
    for (size_t i = 0; i < docs.size(); i++) {
      errors[i] = splitter_.for_each(docs[i], [&](std::string_view piece) {
        auto it = mine.find(piece);
        if (it != mine.end()) {
          it->second++;
        } else {
          mine.emplace(std::string(piece), 1);
        }
      });
    }
  }
  for (size_t i = 0; i < docs.size(); i++) {  // the first failure in document order, whatever the threads did
    if (!errors[i].ok()) {
      if (failed) *failed = i;
      return errors[i];
    }
  }
  for (const auto& d : docs) n_bytes_ += d.size();
  if (counts_.empty() && nt == 1) {  // the first batch on one thread: no merge needed
    counts_.swap(local[0]);
    return ok_status();
  }
  for (auto& m : local) {
    for (auto& [k, v] : m) {
      auto it = counts_.find(k);
      if (it != counts_.end()) {
        it->second += v;
      } else {
        counts_.emplace(k, v);
      }
    }
  }
  return ok_status();
}

Status BpeTrainer::train(uint32_t vocab_size, const std::vector<std::string>& specials, Tokenizer* out,
                         bool verbose) {
  FRONTIER_RETURN_IF_ERROR(status_);
  uint32_t n_special = static_cast<uint32_t>(specials.size());
  if (vocab_size < 256 + n_special)
    return Status::error("vocab_size " + std::to_string(vocab_size) + " is below 256 bytes + " +
                         std::to_string(n_special) + " special tokens (use at least " +
                         std::to_string(256 + n_special) + ")");
  if (counts_.empty()) return Status::error("no training text for the tokenizer (the corpus is empty)");
  const uint32_t n_ranks_target = vocab_size - n_special;
  auto t0 = std::chrono::steady_clock::now();

  std::vector<std::vector<uint32_t>> words;
  std::vector<int64_t> wcount;
  pieces_in_byte_order(counts_, &words, &wcount);
  PairCounts pair_count;
  PairWords pair_words;
  std::priority_queue<HeapItem> heap;
  index_pairs(words, wcount, &pair_count, &pair_words, &heap);

  std::vector<std::string> ranks(256);
  for (int b = 0; b < 256; b++) ranks[b] = std::string(1, static_cast<char>(b));
  std::unordered_map<std::string, uint32_t> by_bytes;
  for (uint32_t b = 0; b < 256; b++) by_bytes[ranks[b]] = b;

  std::vector<std::pair<Pair, int64_t>> deltas;  // per merge step
  PairCounts delta_sum;
  std::vector<uint32_t> merged;
  uint64_t merges_done = 0, reused = 0;
  auto last_report = t0;
  while (ranks.size() < n_ranks_target) {
    if (heap.empty()) break;
    HeapItem top = heap.top();
    heap.pop();
    auto pc = pair_count.find(top.pair);
    int64_t cur = pc == pair_count.end() ? 0 : pc->second;
    if (cur != top.count) {
      if (cur > 0) heap.push({cur, top.pair});
      continue;
    }
    if (cur <= 0) break;
    uint32_t a = static_cast<uint32_t>(top.pair >> 32), b = static_cast<uint32_t>(top.pair & 0xFFFFFFFFu);
    std::string bytes = ranks[a] + ranks[b];
    uint32_t new_id;
    auto existing = by_bytes.find(bytes);
    if (existing != by_bytes.end()) {  // two merge paths to the same bytes: reuse the token, keep ranks unique
      new_id = existing->second;
      reused++;
    } else {
      new_id = static_cast<uint32_t>(ranks.size());
      ranks.push_back(bytes);
      by_bytes.emplace(bytes, new_id);
    }
    merges_done++;

    std::vector<uint32_t> affected = std::move(pair_words[top.pair]);
    pair_words.erase(top.pair);
    std::sort(affected.begin(), affected.end());
    affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
    delta_sum.clear();
    for (uint32_t w : affected) {
      auto& ids = words[w];
      if (!merge_word(ids, a, b, new_id, wcount[w], &merged, &deltas)) continue;
      ids.swap(merged);
      for (auto& [p, d] : deltas) {
        delta_sum[p] += d;
        if (d > 0) {
          auto& lst = pair_words[p];
          if (lst.empty() || lst.back() != w) lst.push_back(w);
        }
      }
    }
    apply_deltas(delta_sum, &pair_count, &heap);
    if (verbose && merges_done % 256 == 0 && seconds_since(last_report) > 5.0) {
      last_report = std::chrono::steady_clock::now();
      std::fprintf(stderr, "  bpe: %llu/%u merges, %.1fs\n", static_cast<unsigned long long>(merges_done),
                   n_ranks_target - 256, seconds_since(t0));
    }
  }
  if (ranks.size() < n_ranks_target)
    return Status::error("the corpus is too small for vocab_size " + std::to_string(vocab_size) + ": only " +
                         std::to_string(ranks.size() + n_special) +
                         " tokens are possible (lower --vocab-size or add text)");
  if (verbose)
    std::fprintf(stderr, "  bpe: %llu merges in %.1fs (%llu unique pieces, %llu reused byte strings)\n",
                 static_cast<unsigned long long>(merges_done), seconds_since(t0),
                 static_cast<unsigned long long>(words.size()), static_cast<unsigned long long>(reused));
  std::vector<std::pair<std::string, uint32_t>> sp;
  for (uint32_t i = 0; i < n_special; i++) sp.emplace_back(specials[i], n_ranks_target + i);
  return Tokenizer::create(std::move(ranks), pattern_, sp, out);
}

}  // namespace frontier
