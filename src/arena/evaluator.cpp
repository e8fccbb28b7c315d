#include "arena/evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <random>

#include "arena/causal.h"
#include "arena/protocol.h"
#include "eval/score.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"
#include "util/subprocess.h"
#include "util/utf8.h"

namespace frontier {

Status load_hidden_text(const std::string& path, std::vector<std::string>* docs) {
  docs->clear();
  std::string text;
  FRONTIER_RETURN_IF_ERROR(read_file(path, &text));
  const bool jsonl = path.size() > 6 && path.substr(path.size() - 6) == ".jsonl";
  if (!jsonl) {
    if (utf8_first_invalid(text) != std::string::npos) return Status::error(path + ": not valid UTF-8");
    if (!text.empty()) docs->push_back(std::move(text));
  } else {
    size_t start = 0;
    for (int line = 1; start < text.size(); line++) {
      size_t nl = text.find('\n', start);
      std::string l = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      start = nl == std::string::npos ? text.size() : nl + 1;
      if (l.find_first_not_of(" \t\r") == std::string::npos) continue;
      nlohmann::json j = nlohmann::json::parse(l, nullptr, false);
      if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
        return Status::error(path + ":" + std::to_string(line) + ": not a JSON object with a \"text\" string");
      std::string d = j["text"].get<std::string>();
      if (utf8_first_invalid(d) != std::string::npos)
        return Status::error(path + ":" + std::to_string(line) + ": text is not valid UTF-8");
      if (!d.empty()) docs->push_back(std::move(d));
    }
  }
  if (docs->empty()) return Status::error(path + ": no hidden validation text (no non-empty document)");
  return ok_status();
}

nlohmann::json EvalOutcome::json() const {
  const bool ok = verdict == "ok";
  nlohmann::json j = {{"verdict", verdict},       {"reason", reason},
                      {"evidence", evidence},     {"val_bpb", ok ? nlohmann::json(val_bpb) : nlohmann::json()},
                      {"seconds", seconds},       {"docs", docs},
                      {"bytes", bytes},           {"targets", targets},
                      {"requests", requests},     {"probes", probes},
                      {"calls", calls},           {"vocab_size", vocab_size},
                      {"max_len", max_len},       {"worst_normalisation", worst_normalisation},
                      {"worst_probe_change", worst_probe_change}, {"seed", std::to_string(seed)},
                      {"causal_requests", causal_requests}, {"causal_positions", causal_positions},
                      {"worst_causal_change", worst_causal_change}};
  if (has_core) {
    j["core"] = ok ? nlohmann::json(core.core) : nlohmann::json();
    j["composite"] = ok ? nlohmann::json(composite) : nlohmann::json();
    j["core_requests"] = core_requests;
    if (ok) j["core_report"] = core.json();
  }
  return j;
}

namespace {

std::string last_line(const std::string& path) {
  std::string s;
  if (!read_file(path, &s).ok()) return "";
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  size_t nl = s.rfind('\n');
  s = nl == std::string::npos ? s : s.substr(nl + 1);
  if (s.size() > 300) s = s.substr(0, 300) + "...";
  return utf8_replace_invalid(s);
}

// One server process over a batch of requests: stdin and stdout are files in work_dir (no pipes to deadlock on,
// and the served bytes are mapped rather than copied).
struct ServerCall {
  const std::vector<std::string>& argv;
  const std::string& work_dir;
  double deadline_s;  // seconds left for the whole evaluation
  int index = 0;

  Status run(const std::vector<std::vector<uint32_t>>& reqs, MappedFile* served, ServedResponses* resp,
             double* used_s) {
    const std::string base = work_dir + "/serve_" + std::to_string(index++);
    FRONTIER_RETURN_IF_ERROR(write_file_atomic(base + ".in", encode_requests(reqs)));
    Subprocess p;
    p.argv = argv;
    p.stdin_path = base + ".in";
    p.stdout_path = base + ".out";
    p.stderr_path = base + ".err";
    p.timeout_s = std::max(1.0, deadline_s - *used_s);
    SubprocessResult r;
    FRONTIER_RETURN_IF_ERROR(run_subprocess(p, &r));
    *used_s += r.seconds;
    if (!r.ok()) {
      std::string why = last_line(base + ".err");
      return Status::error("the team's server failed (" + r.describe(p) + ")" + (why.empty() ? "" : ": " + why));
    }
    std::vector<size_t> lens;
    for (const auto& q : reqs) lens.push_back(q.size());
    *served = MappedFile();
    FRONTIER_RETURN_IF_ERROR(served->open(base + ".out"));
    Status s = parse_responses(served->data(), served->size(), lens, resp);
    if (!s.ok()) return Status::error("the team's server broke the protocol: " + s.message());
    std::remove((base + ".in").c_str());
    return ok_status();
  }
};

struct Request {
  std::vector<uint32_t> tokens;
  int64_t doc = -1, start = 0;     // a hidden window: document and position of tokens[0] in it (<|bos|> is 0)
  int core_item = -1, option = 0;  // a CORE sequence (less its last token): the item (CoreRef) and option
  int probe_of = -1;               // a probe: the original request's index
  int64_t probe_pos = 0;           // a probe: the last unchanged position
  int causal = -1;                 // an original streamed by the causal check: its index there
};

// A planned CORE item and what the batch served for it.
struct CoreRef {
  size_t task = 0, item = 0;               // plans[task].items[item]
  std::vector<std::vector<float>> losses;  // per option: -logp of each next token
  std::vector<std::vector<int>> argmax;    // per option: the first maximum of each row
};

// "hidden document 3, position 17" or "CORE task arc_easy, item world_knowledge/arc_easy.jsonl:12, option 2,
// position 40".
std::string where_of(const Request& r, const std::vector<CoreRef>& refs, const std::vector<CoreTask>& tasks,
                     const std::vector<CoreTaskPlan>& plans, int64_t pos) {
  if (r.doc >= 0) return "hidden document " + std::to_string(r.doc) + ", position " + std::to_string(r.start + pos);
  const CoreRef& c = refs[r.core_item];
  return "CORE task " + tasks[c.task].label + ", item " + tasks[c.task].dataset_uri + ":" +
         std::to_string(plans[c.task].data[c.item].line) + ", option " + std::to_string(r.option) + ", position " +
         std::to_string(pos);
}

nlohmann::json where_json(const Request& r, const std::vector<CoreRef>& refs, const std::vector<CoreTask>& tasks,
                          const std::vector<CoreTaskPlan>& plans, int64_t pos) {
  if (r.doc >= 0) return {{"document", r.doc}, {"position", r.start + pos}};
  const CoreRef& c = refs[r.core_item];
  return {{"core_task", tasks[c.task].label}, {"core_line", plans[c.task].data[c.item].line},
          {"option", r.option}, {"position", pos}};
}

// One evaluation through the team's server, in the phases evaluator.h lists: each phase below is one of them. A
// check that fails fills in the verdict ("disqualified"), its reason and evidence, and run() stops there; an error
// Status means no verdict could be given.
class ServedEvaluation {
 public:
  ServedEvaluation(const std::vector<std::string>& argv, const Tokenizer& tok, const EvalInputs& in,
                   const EvalChecks& checks, const std::string& work_dir, double timeout_s)
      : argv_(argv), tok_(tok), in_(in), checks_(checks), work_dir_(work_dir), timeout_s_(timeout_s),
        call_{argv, work_dir, timeout_s} {}
  Status run(EvalOutcome* out);

 private:
  bool disqualified() const { return o_.verdict == "disqualified"; }
  Status finish(EvalOutcome* out);
  Status tokenize_docs();       // 1
  Status ask_context_length();  // 2
  void plan_windows();          // 2
  Status plan_core();           // 2
  void plan_probes();           // 2
  Status causal_check();        // 3
  Status serve();               // 4 + 5
  bool check_normalised(const Request& r, const float* rows);
  void take_rows(size_t id, const float* rows);
  void check_probes();          // 4
  void check_causal();          // 4
  Status score();               // 5
  double compare(const std::vector<float>& a, const std::vector<float>& b, size_t* at) const;
  std::string where_text(const Request& r, int64_t pos) const {
    return where_of(r, refs_, core_tasks_, plans_, pos);
  }
  nlohmann::json where_evidence(const Request& r, int64_t pos) const {
    return where_json(r, refs_, core_tasks_, plans_, pos);
  }

  const std::vector<std::string>& argv_;
  const Tokenizer& tok_;
  const EvalInputs& in_;
  const EvalChecks& checks_;
  const std::string& work_dir_;
  const double timeout_s_;
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  EvalOutcome o_;
  std::mt19937_64 rng_;
  std::vector<std::vector<uint32_t>> doc_tokens_;  // per hidden document: <|bos|> and the team's tokens
  ServerCall call_;
  double used_s_ = 0;  // server seconds so far
  MappedFile served_;
  ServedResponses resp_;
  size_t V_ = 0;
  std::vector<Request> reqs_;  // the originals (n_orig_: windows, then CORE), then the probes
  std::vector<CoreTask> core_tasks_;
  std::vector<CoreTaskPlan> plans_;
  std::vector<CoreRef> refs_;
  size_t n_orig_ = 0;
  std::vector<size_t> probe_able_;  // originals of 2 tokens or more
  std::vector<CausalProbe> causal_;
  std::vector<size_t> causal_of_;  // causal probe -> request
  std::vector<std::vector<std::vector<float>>> streamed_, batch_at_causal_;  // per causal probe and position: a row
  std::vector<std::vector<float>> probe_row_, orig_row_;                     // by probe index
  std::vector<std::vector<int>> probes_of_;                                  // by original: its probes
  double nats_ = 0;  // -ln P summed over the hidden text's targets
};

Status ServedEvaluation::run(EvalOutcome* out) {
  FRONTIER_RETURN_IF_ERROR(make_dirs(work_dir_));
  FRONTIER_RETURN_IF_ERROR(tokenize_docs());
  if (disqualified()) return finish(out);
  FRONTIER_RETURN_IF_ERROR(ask_context_length());
  plan_windows();
  FRONTIER_RETURN_IF_ERROR(plan_core());
  plan_probes();
  FRONTIER_RETURN_IF_ERROR(causal_check());
  FRONTIER_RETURN_IF_ERROR(serve());
  if (disqualified()) return finish(out);
  check_probes();
  if (disqualified()) return finish(out);
  check_causal();
  if (disqualified()) return finish(out);
  FRONTIER_RETURN_IF_ERROR(score());
  o_.verdict = "ok";
  return finish(out);
}

Status ServedEvaluation::finish(EvalOutcome* out) {
  o_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  *out = std::move(o_);
  return ok_status();
}

// 1. The team's tokenization of the hidden text, which must be lossless.
Status ServedEvaluation::tokenize_docs() {
  const std::vector<std::string>& docs = in_.docs;
  const int64_t bos = tok_.special_id("<|bos|>");
  if (bos < 0) return Status::error("the team's tokenizer has no <|bos|> token");
  o_.seed = checks_.seed ? checks_.seed : (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  rng_.seed(o_.seed);
  o_.docs = static_cast<int64_t>(docs.size());
  doc_tokens_.resize(docs.size());
  for (size_t d = 0; d < docs.size(); d++) {
    std::vector<uint32_t>& ids = doc_tokens_[d];
    ids.push_back(static_cast<uint32_t>(bos));
    if (!tok_.encode_ordinary(docs[d], &ids).ok()) {  // the team's split pattern gave up on a hidden document
      o_.verdict = "disqualified";
      o_.reason = "tokenizer error: the tokenizer could not split hidden document " + std::to_string(d);
      return ok_status();
    }
    o_.bytes += static_cast<int64_t>(docs[d].size());
    if (tok_.decode(std::span<const uint32_t>(ids).subspan(1)) != docs[d]) {
      o_.verdict = "disqualified";
      o_.reason = "the tokenizer is not lossless: hidden document " + std::to_string(d) +
                  " does not decode back to its own bytes, so bits per byte would not count the same text";
      o_.evidence = {{"check", "tokenizer_roundtrip"}, {"document", d}};
      return ok_status();
    }
  }
  return ok_status();
}

// 2. The server's context length, from a call with no requests.
Status ServedEvaluation::ask_context_length() {
  FRONTIER_RETURN_IF_ERROR(call_.run({}, &served_, &resp_, &used_s_));
  o_.vocab_size = resp_.header.vocab_size;
  o_.max_len = resp_.header.max_len;
  if (o_.vocab_size != tok_.vocab_size())
    return Status::error("the team's server has a vocabulary of " + std::to_string(o_.vocab_size) +
                         " but its tokenizer has " + std::to_string(tok_.vocab_size()) + " ids");
  if (o_.max_len < 1) return Status::error("the team's server declares a context length of 0");
  V_ = o_.vocab_size;
  return ok_status();
}

// Windows of at most max_len input tokens: request rows predict tokens[start+1 .. start+m], each target once.
void ServedEvaluation::plan_windows() {
  for (size_t d = 0; d < doc_tokens_.size(); d++) {
    const auto& ids = doc_tokens_[d];
    for (int64_t s = 0; s + 1 < static_cast<int64_t>(ids.size());) {
      const int64_t m = std::min<int64_t>(o_.max_len, static_cast<int64_t>(ids.size()) - 1 - s);
      Request r;
      r.tokens.assign(ids.begin() + s, ids.begin() + s + m);
      r.doc = static_cast<int64_t>(d);
      r.start = s;
      reqs_.push_back(std::move(r));
      s += m;
    }
  }
}

// CORE: the same plans as `frontier eval core` (eval/core_eval.h), cropped to the served context. A sequence of n
// tokens is a request of its first n - 1: row t predicts token t + 1, as the model's forward in process.
Status ServedEvaluation::plan_core() {
  if (!in_.core) return ok_status();
  o_.has_core = true;
  for (const CoreTask& task : in_.core->tasks) {
    core_tasks_.push_back(task);
    plans_.emplace_back();
    if (!task.present) continue;
    if (!(task.random_baseline >= 0 && task.random_baseline < 100))
      return Status::error("CORE task " + task.label + ": random baseline outside [0, 100)");
    FRONTIER_RETURN_IF_ERROR(plan_core_task(tok_, task, in_.core_max_per_task, o_.max_len, &plans_.back()));
    const CoreTaskPlan& plan = plans_.back();
    for (size_t i = 0; i < plan.items.size(); i++) {
      if (!plan.scored(i)) continue;
      refs_.push_back({plans_.size() - 1, i, {}, {}});
      for (size_t c = 0; c < plan.items[i].tokens.size(); c++) {
        const auto& q = plan.items[i].tokens[c];
        Request r;
        r.tokens.assign(q.begin(), q.end() - 1);
        r.core_item = static_cast<int>(refs_.size() - 1);
        r.option = static_cast<int>(c);
        reqs_.push_back(std::move(r));
        o_.core_requests++;
      }
    }
  }
  for (CoreRef& c : refs_) {
    c.losses.resize(plans_[c.task].items[c.item].tokens.size());
    c.argmax.resize(c.losses.size());
  }
  return ok_status();
}

// The look-ahead probes: a copy of a request with every token after a random position replaced by random ordinary
// tokens (the first of them always different).
void ServedEvaluation::plan_probes() {
  n_orig_ = reqs_.size();
  for (size_t i = 0; i < n_orig_; i++)
    if (reqs_[i].tokens.size() >= 2) probe_able_.push_back(i);
  std::vector<uint32_t> ordinary;  // replacement tokens: any id that is not a special
  for (uint32_t v = 0; v < V_; v++)
    if (!tok_.is_special(v)) ordinary.push_back(v);
  for (int k = 0; k < checks_.probes && !probe_able_.empty() && ordinary.size() > 1; k++) {
    const size_t orig = probe_able_[rng_() % probe_able_.size()];
    Request p = reqs_[orig];
    p.probe_of = static_cast<int>(orig);
    p.probe_pos = static_cast<int64_t>(rng_() % (p.tokens.size() - 1));
    for (size_t j = p.probe_pos + 1; j < p.tokens.size(); j++) {
      uint32_t t = ordinary[rng_() % ordinary.size()];
      while (j == static_cast<size_t>(p.probe_pos) + 1 && t == reqs_[orig].tokens[j])
        t = ordinary[rng_() % ordinary.size()];
      p.tokens[j] = t;
    }
    reqs_.push_back(std::move(p));
  }
  o_.requests = static_cast<int64_t>(n_orig_);
  o_.probes = static_cast<int64_t>(reqs_.size() - n_orig_);
}

// 3. The causal spot check, before the server has seen any batch: distinct requests, positions that have a
// following token in the batch (the last row of a request has none to look at).
Status ServedEvaluation::causal_check() {
  std::vector<size_t> pool = probe_able_;
  std::shuffle(pool.begin(), pool.end(), rng_);
  for (size_t i = 0; i < pool.size() && static_cast<int>(causal_.size()) < checks_.causal_requests; i++) {
    Request& r = reqs_[pool[i]];
    std::vector<int64_t> pos(r.tokens.size() - 1);
    for (size_t j = 0; j < pos.size(); j++) pos[j] = static_cast<int64_t>(j);
    std::shuffle(pos.begin(), pos.end(), rng_);
    pos.resize(std::min<size_t>(pos.size(), std::max(0, checks_.causal_positions)));
    std::sort(pos.begin(), pos.end());
    if (pos.empty()) continue;
    r.causal = static_cast<int>(causal_.size());
    causal_.push_back({r.tokens, pos});
    causal_of_.push_back(pool[i]);
    o_.causal_positions += static_cast<int64_t>(pos.size());
  }
  o_.causal_requests = static_cast<int64_t>(causal_.size());
  if (!causal_.empty())
    FRONTIER_RETURN_IF_ERROR(
        stream_causal(argv_, work_dir_, o_.vocab_size, causal_, timeout_s_, &streamed_, &used_s_));
  batch_at_causal_.resize(causal_.size());
  return ok_status();
}

// 4 + 5. Serve in chunks; check every row; sum the targets' bits; CORE losses and predictions; keep each probe's
// row and its original's, and the batch rows of the streamed positions.
Status ServedEvaluation::serve() {
  std::vector<size_t> order(reqs_.size());  // the server sees probes and originals mixed
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng_);
  probe_row_.resize(reqs_.size());
  orig_row_.resize(reqs_.size());
  probes_of_.resize(n_orig_);
  for (size_t i = n_orig_; i < reqs_.size(); i++) probes_of_[reqs_[i].probe_of].push_back(static_cast<int>(i));
  for (size_t c = 0; c < order.size();) {
    std::vector<std::vector<uint32_t>> batch;
    std::vector<size_t> ids;
    size_t bytes = 0;
    while (c < order.size() &&
           (batch.empty() || bytes + reqs_[order[c]].tokens.size() * V_ * 4 <= checks_.max_call_bytes)) {
      bytes += reqs_[order[c]].tokens.size() * V_ * 4;
      batch.push_back(reqs_[order[c]].tokens);
      ids.push_back(order[c++]);
    }
    FRONTIER_RETURN_IF_ERROR(call_.run(batch, &served_, &resp_, &used_s_));
    o_.calls++;
    for (size_t b = 0; b < ids.size(); b++) {
      if (!check_normalised(reqs_[ids[b]], resp_.rows[b])) return ok_status();
      take_rows(ids[b], resp_.rows[b]);
    }
  }
  return ok_status();
}

// Every row of a served request: a distribution, |sum_v exp(logp_v) - 1| within the tolerance. False when not.
bool ServedEvaluation::check_normalised(const Request& r, const float* rows) {
  for (size_t i = 0; i < r.tokens.size(); i++) {
    const float* row = rows + i * V_;
    double sum = 0;
    for (size_t v = 0; v < V_; v++) sum += std::exp(static_cast<double>(row[v]));
    const double dev = std::fabs(sum - 1.0);
    if (!(dev <= checks_.normalisation_tolerance)) {  // NaN too
      o_.verdict = "disqualified";
      char buf[256];
      std::snprintf(buf, sizeof(buf), "served distributions are not normalised: sum of probabilities %.6g at "
                    "position %zu of a request (tolerance %g)", sum, i, checks_.normalisation_tolerance);
      o_.reason = buf;
      o_.evidence = where_evidence(r, static_cast<int64_t>(i));
      o_.evidence.update({{"check", "normalisation"},
                          {"sum", std::isfinite(sum) ? nlohmann::json(sum) : nlohmann::json("non-finite")},
                          {"tolerance", checks_.normalisation_tolerance}, {"probe", r.probe_of >= 0}});
      return false;
    }
    o_.worst_normalisation = std::max(o_.worst_normalisation, dev);
  }
  return true;
}

// What request id's served rows are kept for: a probe's row at its position; an original's targets (hidden text)
// or losses and predictions (CORE), the rows its probes compare with, and the rows the causal check streamed.
void ServedEvaluation::take_rows(size_t id, const float* rows) {
  const Request& r = reqs_[id];
  if (r.probe_of >= 0) {
    const float* row = rows + r.probe_pos * V_;
    probe_row_[id].assign(row, row + V_);
    return;
  }
  if (r.doc >= 0) {
    for (size_t i = 0; i < r.tokens.size(); i++) {
      const uint32_t target = doc_tokens_[r.doc][r.start + i + 1];
      nats_ -= rows[i * V_ + target];
      o_.targets++;
    }
  } else {
    CoreRef& ref = refs_[r.core_item];
    const auto& seq = plans_[ref.task].items[ref.item].tokens[r.option];
    auto& loss = ref.losses[r.option];
    auto& pred = ref.argmax[r.option];
    loss.resize(r.tokens.size());
    pred.resize(r.tokens.size());
    for (size_t i = 0; i < r.tokens.size(); i++) {
      const float* row = rows + i * V_;
      loss[i] = -row[seq[i + 1]];
      pred[i] = static_cast<int>(std::max_element(row, row + V_) - row);  // the first maximum, as in process
    }
  }
  for (int k : probes_of_[id]) {
    const float* row = rows + reqs_[k].probe_pos * V_;
    orig_row_[k].assign(row, row + V_);
  }
  if (r.causal >= 0)
    for (int64_t p : causal_[r.causal].positions)
      batch_at_causal_[r.causal].emplace_back(rows + p * V_, rows + (p + 1) * V_);
}

// The largest |a - b| over a row, and where.
double ServedEvaluation::compare(const std::vector<float>& a, const std::vector<float>& b, size_t* at) const {
  double worst = 0;
  for (size_t v = 0; v < V_; v++) {
    const double d = std::fabs(static_cast<double>(a[v]) - b[v]);
    if (!(d <= worst)) worst = d, *at = v;
  }
  return worst;
}

// 4. Each probe's row at its position must equal its original's: the tokens after it changed.
void ServedEvaluation::check_probes() {
  for (size_t k = n_orig_; k < reqs_.size(); k++) {
    size_t at = 0;
    const double worst = compare(probe_row_[k], orig_row_[k], &at);
    o_.worst_probe_change = std::max(o_.worst_probe_change, worst);
    if (!(worst <= checks_.lookahead_tolerance)) {
      const Request& r = reqs_[k];
      o_.verdict = "disqualified";
      char buf[400];
      std::snprintf(buf, sizeof(buf), "looks ahead: changing the tokens after %s changed the served "
                    "log-probability of token %zu there by %.4g (tolerance %g)",
                    where_text(r, r.probe_pos).c_str(), at, worst, checks_.lookahead_tolerance);
      o_.reason = buf;
      o_.evidence = where_evidence(r, r.probe_pos);
      o_.evidence.update({{"check", "lookahead"}, {"token", at}, {"logp_original", orig_row_[k][at]},
                          {"logp_changed_future", probe_row_[k][at]}, {"max_abs_change", worst},
                          {"tolerance", checks_.lookahead_tolerance},
                          {"next_token_original", reqs_[r.probe_of].tokens[r.probe_pos + 1]},
                          {"next_token_probe", r.tokens[r.probe_pos + 1]}});
      return;
    }
  }
}

// 4. Each streamed row must equal the batch's row at the same position.
void ServedEvaluation::check_causal() {
  for (size_t k = 0; k < causal_.size(); k++)
    for (size_t j = 0; j < causal_[k].positions.size(); j++) {
      size_t at = 0;
      const double worst = compare(streamed_[k][j], batch_at_causal_[k][j], &at);
      o_.worst_causal_change = std::max(o_.worst_causal_change, worst);
      if (!(worst <= checks_.lookahead_tolerance)) {
        const Request& r = reqs_[causal_of_[k]];
        const int64_t p = causal_[k].positions[j];
        const uint32_t next = r.tokens[p + 1];
        o_.verdict = "disqualified";
        char buf[480];
        // The reason is published: positions and numbers only, no hidden token id (the next token is in the
        // evidence, which the record keeps and the page does not show).
        std::snprintf(buf, sizeof(buf), "looks ahead: at %s the batch served a log-probability of token %zu that "
                      "differs by %.4g (tolerance %g) from the one it served when streamed, before the following "
                      "tokens were sent (the next token's: %.4g streamed, %.4g in the batch)",
                      where_text(r, p).c_str(), at, worst, checks_.lookahead_tolerance,
                      streamed_[k][j][next], batch_at_causal_[k][j][next]);
        o_.reason = buf;
        o_.evidence = where_evidence(r, p);
        o_.evidence.update({{"check", "causal"}, {"token", at}, {"logp_streamed", streamed_[k][j][at]},
                            {"logp_batch", batch_at_causal_[k][j][at]}, {"max_abs_change", worst},
                            {"tolerance", checks_.lookahead_tolerance}, {"next_token", next},
                            {"next_token_logp_streamed", streamed_[k][j][next]},
                            {"next_token_logp_batch", batch_at_causal_[k][j][next]}});
        return;
      }
    }
}

// 5. val_bpb, and CORE's decisions by the code `frontier eval core` uses (eval/core_eval.h).
Status ServedEvaluation::score() {
  if (o_.bytes == 0) return Status::error("the hidden text has no bytes");
  o_.val_bpb = nats_ / (std::log(2.0) * static_cast<double>(o_.bytes));
  if (!std::isfinite(o_.val_bpb))
    return Status::error("val_bpb is not finite (a served log-probability of a target is -inf)");
  if (!o_.has_core) return ok_status();
  std::vector<std::vector<CoreItemResult>> results(core_tasks_.size());
  for (size_t t = 0; t < core_tasks_.size(); t++) results[t].resize(plans_[t].items.size());
  for (size_t i = 0; i < refs_.size(); i++) {
    const CoreRef& c = refs_[i];
    for (const auto& l : c.losses)
      for (float x : l)
        if (!std::isfinite(x))
          return Status::error("a served log-probability of a CORE answer token is -inf (CORE task " +
                               core_tasks_[c.task].label + ")");
    results[c.task][c.item] = decide_core_item(core_tasks_[c.task], plans_[c.task], c.item, c.losses, c.argmax);
  }
  o_.core = CoreReport();
  o_.core.seq_len = o_.max_len;
  for (size_t t = 0; t < core_tasks_.size(); t++) {
    if (!core_tasks_[t].present) {
      CoreTaskResult r;
      r.label = core_tasks_[t].label;
      o_.core.tasks.push_back(r);
      continue;
    }
    for (size_t i = 0; i < plans_[t].items.size(); i++)
      if (!plans_[t].scored(i)) results[t][i] = decide_core_item(core_tasks_[t], plans_[t], i, {}, {});
    o_.core.tasks.push_back(tally_core_task(core_tasks_[t], plans_[t], results[t]));
  }
  finish_core_report(&o_.core);
  o_.composite = composite_score(o_.val_bpb, o_.core.core);
  return ok_status();
}

}  // namespace

Status evaluate_served(const std::vector<std::string>& argv, const Tokenizer& tok, const EvalInputs& in,
                       const EvalChecks& checks, const std::string& work_dir, double timeout_s, EvalOutcome* out) {
  return ServedEvaluation(argv, tok, in, checks, work_dir, timeout_s).run(out);
}

}  // namespace frontier
