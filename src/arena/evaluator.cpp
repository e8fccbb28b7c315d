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

}  // namespace

Status evaluate_served(const std::vector<std::string>& argv, const Tokenizer& tok, const EvalInputs& in,
                       const EvalChecks& checks, const std::string& work_dir, double timeout_s, EvalOutcome* out) {
  EvalOutcome o;
  const auto t0 = std::chrono::steady_clock::now();
  auto finish = [&](EvalOutcome& r) {
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    *out = std::move(r);
    return ok_status();
  };
  const std::vector<std::string>& docs = in.docs;
  FRONTIER_RETURN_IF_ERROR(make_dirs(work_dir));
  const int64_t bos = tok.special_id("<|bos|>");
  if (bos < 0) return Status::error("the team's tokenizer has no <|bos|> token");
  o.seed = checks.seed ? checks.seed : (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  std::mt19937_64 rng(o.seed);
  o.docs = static_cast<int64_t>(docs.size());

  // 1. The team's tokenization of the hidden text, which must be lossless.
  std::vector<std::vector<uint32_t>> doc_tokens(docs.size());
  for (size_t d = 0; d < docs.size(); d++) {
    std::vector<uint32_t>& ids = doc_tokens[d];
    ids.push_back(static_cast<uint32_t>(bos));
    if (!tok.encode_ordinary(docs[d], &ids).ok()) {  // the team's split pattern gave up on a hidden document
      o.verdict = "disqualified";
      o.reason = "tokenizer error: the tokenizer could not split hidden document " + std::to_string(d);
      return finish(o);
    }
    o.bytes += static_cast<int64_t>(docs[d].size());
    if (tok.decode(std::span<const uint32_t>(ids).subspan(1)) != docs[d]) {
      o.verdict = "disqualified";
      o.reason = "the tokenizer is not lossless: hidden document " + std::to_string(d) +
                 " does not decode back to its own bytes, so bits per byte would not count the same text";
      o.evidence = {{"check", "tokenizer_roundtrip"}, {"document", d}};
      return finish(o);
    }
  }

  // 2. The server's context length, from a call with no requests.
  ServerCall call{argv, work_dir, timeout_s};
  double used_s = 0;
  MappedFile served;
  ServedResponses resp;
  FRONTIER_RETURN_IF_ERROR(call.run({}, &served, &resp, &used_s));
  o.vocab_size = resp.header.vocab_size;
  o.max_len = resp.header.max_len;
  if (o.vocab_size != tok.vocab_size())
    return Status::error("the team's server has a vocabulary of " + std::to_string(o.vocab_size) +
                         " but its tokenizer has " + std::to_string(tok.vocab_size()) + " ids");
  if (o.max_len < 1) return Status::error("the team's server declares a context length of 0");
  const size_t V = o.vocab_size;

  // Windows of at most max_len input tokens: request rows predict tokens[start+1 .. start+m], each target once.
  std::vector<Request> reqs;
  for (size_t d = 0; d < doc_tokens.size(); d++) {
    const auto& ids = doc_tokens[d];
    for (int64_t s = 0; s + 1 < static_cast<int64_t>(ids.size());) {
      const int64_t m = std::min<int64_t>(o.max_len, static_cast<int64_t>(ids.size()) - 1 - s);
      Request r;
      r.tokens.assign(ids.begin() + s, ids.begin() + s + m);
      r.doc = static_cast<int64_t>(d);
      r.start = s;
      reqs.push_back(std::move(r));
      s += m;
    }
  }
  // CORE: the same plans as `frontier eval core` (eval/core_eval.h), cropped to the served context. A sequence of n
  // tokens is a request of its first n - 1: row t predicts token t + 1, as the model's forward in process.
  std::vector<CoreTask> core_tasks;
  std::vector<CoreTaskPlan> plans;
  std::vector<CoreRef> refs;
  if (in.core) {
    o.has_core = true;
    for (const CoreTask& task : in.core->tasks) {
      core_tasks.push_back(task);
      plans.emplace_back();
      if (!task.present) continue;
      if (!(task.random_baseline >= 0 && task.random_baseline < 100))
        return Status::error("CORE task " + task.label + ": random baseline outside [0, 100)");
      FRONTIER_RETURN_IF_ERROR(plan_core_task(tok, task, in.core_max_per_task, o.max_len, &plans.back()));
      const CoreTaskPlan& plan = plans.back();
      for (size_t i = 0; i < plan.items.size(); i++) {
        if (!plan.scored(i)) continue;
        refs.push_back({plans.size() - 1, i, {}, {}});
        for (size_t c = 0; c < plan.items[i].tokens.size(); c++) {
          const auto& q = plan.items[i].tokens[c];
          Request r;
          r.tokens.assign(q.begin(), q.end() - 1);
          r.core_item = static_cast<int>(refs.size() - 1);
          r.option = static_cast<int>(c);
          reqs.push_back(std::move(r));
          o.core_requests++;
        }
      }
    }
    for (CoreRef& c : refs) {
      c.losses.resize(plans[c.task].items[c.item].tokens.size());
      c.argmax.resize(c.losses.size());
    }
  }
  const size_t n_orig = reqs.size();
  std::vector<size_t> probe_able;
  for (size_t i = 0; i < n_orig; i++)
    if (reqs[i].tokens.size() >= 2) probe_able.push_back(i);
  std::vector<uint32_t> ordinary;  // replacement tokens: any id that is not a special
  for (uint32_t v = 0; v < V; v++)
    if (!tok.is_special(v)) ordinary.push_back(v);
  for (int k = 0; k < checks.probes && !probe_able.empty() && ordinary.size() > 1; k++) {
    const size_t orig = probe_able[rng() % probe_able.size()];
    Request p = reqs[orig];
    p.probe_of = static_cast<int>(orig);
    p.probe_pos = static_cast<int64_t>(rng() % (p.tokens.size() - 1));
    for (size_t j = p.probe_pos + 1; j < p.tokens.size(); j++) {
      uint32_t t = ordinary[rng() % ordinary.size()];
      while (j == static_cast<size_t>(p.probe_pos) + 1 && t == reqs[orig].tokens[j]) t = ordinary[rng() % ordinary.size()];
      p.tokens[j] = t;
    }
    reqs.push_back(std::move(p));
  }
  o.requests = static_cast<int64_t>(n_orig);
  o.probes = static_cast<int64_t>(reqs.size() - n_orig);

  // 3. The causal spot check, before the server has seen any batch: distinct requests, positions that have a
  // following token in the batch (the last row of a request has none to look at).
  std::vector<CausalProbe> causal;
  std::vector<size_t> causal_of;  // causal probe -> request
  {
    std::vector<size_t> pool = probe_able;
    std::shuffle(pool.begin(), pool.end(), rng);
    for (size_t i = 0; i < pool.size() && static_cast<int>(causal.size()) < checks.causal_requests; i++) {
      Request& r = reqs[pool[i]];
      std::vector<int64_t> pos(r.tokens.size() - 1);
      for (size_t j = 0; j < pos.size(); j++) pos[j] = static_cast<int64_t>(j);
      std::shuffle(pos.begin(), pos.end(), rng);
      pos.resize(std::min<size_t>(pos.size(), std::max(0, checks.causal_positions)));
      std::sort(pos.begin(), pos.end());
      if (pos.empty()) continue;
      r.causal = static_cast<int>(causal.size());
      causal.push_back({r.tokens, pos});
      causal_of.push_back(pool[i]);
      o.causal_positions += static_cast<int64_t>(pos.size());
    }
  }
  o.causal_requests = static_cast<int64_t>(causal.size());
  std::vector<std::vector<std::vector<float>>> streamed;
  if (!causal.empty())
    FRONTIER_RETURN_IF_ERROR(stream_causal(argv, work_dir, o.vocab_size, causal, timeout_s, &streamed, &used_s));
  std::vector<std::vector<std::vector<float>>> batch_at_causal(causal.size());

  std::vector<size_t> order(reqs.size());  // the server sees probes and originals mixed
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);

  // 4 + 5. Serve in chunks; check every row; sum the targets' bits; CORE losses and predictions; keep each probe's
  // row and its original's, and the batch rows of the streamed positions.
  std::vector<std::vector<float>> probe_row(reqs.size()), orig_row(reqs.size());  // by probe index
  std::vector<std::vector<int>> probes_of(n_orig);
  for (size_t i = n_orig; i < reqs.size(); i++) probes_of[reqs[i].probe_of].push_back(static_cast<int>(i));
  double nats = 0;
  for (size_t c = 0; c < order.size();) {
    std::vector<std::vector<uint32_t>> batch;
    std::vector<size_t> ids;
    size_t bytes = 0;
    while (c < order.size() && (batch.empty() || bytes + reqs[order[c]].tokens.size() * V * 4 <= checks.max_call_bytes)) {
      bytes += reqs[order[c]].tokens.size() * V * 4;
      batch.push_back(reqs[order[c]].tokens);
      ids.push_back(order[c++]);
    }
    FRONTIER_RETURN_IF_ERROR(call.run(batch, &served, &resp, &used_s));
    o.calls++;
    for (size_t b = 0; b < ids.size(); b++) {
      const Request& r = reqs[ids[b]];
      const float* rows = resp.rows[b];
      for (size_t i = 0; i < r.tokens.size(); i++) {
        const float* row = rows + i * V;
        double sum = 0;
        for (size_t v = 0; v < V; v++) sum += std::exp(static_cast<double>(row[v]));
        const double dev = std::fabs(sum - 1.0);
        if (!(dev <= checks.normalisation_tolerance)) {  // NaN too
          o.verdict = "disqualified";
          char buf[256];
          std::snprintf(buf, sizeof(buf), "served distributions are not normalised: sum of probabilities %.6g at "
                        "position %zu of a request (tolerance %g)", sum, i, checks.normalisation_tolerance);
          o.reason = buf;
          o.evidence = where_json(r, refs, core_tasks, plans, static_cast<int64_t>(i));
          o.evidence.update({{"check", "normalisation"},
                             {"sum", std::isfinite(sum) ? nlohmann::json(sum) : nlohmann::json("non-finite")},
                             {"tolerance", checks.normalisation_tolerance}, {"probe", r.probe_of >= 0}});
          return finish(o);
        }
        o.worst_normalisation = std::max(o.worst_normalisation, dev);
      }
      if (r.probe_of >= 0) {
        const float* row = rows + r.probe_pos * V;
        probe_row[ids[b]].assign(row, row + V);
        continue;
      }
      if (r.doc >= 0) {
        for (size_t i = 0; i < r.tokens.size(); i++) {
          const uint32_t target = doc_tokens[r.doc][r.start + i + 1];
          nats -= rows[i * V + target];
          o.targets++;
        }
      } else {
        CoreRef& ref = refs[r.core_item];
        const auto& seq = plans[ref.task].items[ref.item].tokens[r.option];
        auto& loss = ref.losses[r.option];
        auto& pred = ref.argmax[r.option];
        loss.resize(r.tokens.size());
        pred.resize(r.tokens.size());
        for (size_t i = 0; i < r.tokens.size(); i++) {
          const float* row = rows + i * V;
          loss[i] = -row[seq[i + 1]];
          pred[i] = static_cast<int>(std::max_element(row, row + V) - row);  // the first maximum, as in process
        }
      }
      for (int k : probes_of[ids[b]]) {
        const float* row = rows + reqs[k].probe_pos * V;
        orig_row[k].assign(row, row + V);
      }
      if (r.causal >= 0)
        for (int64_t p : causal[r.causal].positions) batch_at_causal[r.causal].emplace_back(rows + p * V, rows + (p + 1) * V);
    }
  }
  // The largest |a - b| over a row, and where.
  auto compare = [&](const std::vector<float>& a, const std::vector<float>& b, size_t* at) {
    double worst = 0;
    for (size_t v = 0; v < V; v++) {
      const double d = std::fabs(static_cast<double>(a[v]) - b[v]);
      if (!(d <= worst)) worst = d, *at = v;
    }
    return worst;
  };
  for (size_t k = n_orig; k < reqs.size(); k++) {
    size_t at = 0;
    const double worst = compare(probe_row[k], orig_row[k], &at);
    o.worst_probe_change = std::max(o.worst_probe_change, worst);
    if (!(worst <= checks.lookahead_tolerance)) {
      const Request& r = reqs[k];
      o.verdict = "disqualified";
      char buf[400];
      std::snprintf(buf, sizeof(buf), "looks ahead: changing the tokens after %s changed the served "
                    "log-probability of token %zu there by %.4g (tolerance %g)",
                    where_of(r, refs, core_tasks, plans, r.probe_pos).c_str(), at, worst, checks.lookahead_tolerance);
      o.reason = buf;
      o.evidence = where_json(r, refs, core_tasks, plans, r.probe_pos);
      o.evidence.update({{"check", "lookahead"}, {"token", at}, {"logp_original", orig_row[k][at]},
                         {"logp_changed_future", probe_row[k][at]}, {"max_abs_change", worst},
                         {"tolerance", checks.lookahead_tolerance},
                         {"next_token_original", reqs[r.probe_of].tokens[r.probe_pos + 1]},
                         {"next_token_probe", r.tokens[r.probe_pos + 1]}});
      return finish(o);
    }
  }
  for (size_t k = 0; k < causal.size(); k++)
    for (size_t j = 0; j < causal[k].positions.size(); j++) {
      size_t at = 0;
      const double worst = compare(streamed[k][j], batch_at_causal[k][j], &at);
      o.worst_causal_change = std::max(o.worst_causal_change, worst);
      if (!(worst <= checks.lookahead_tolerance)) {
        const Request& r = reqs[causal_of[k]];
        const int64_t p = causal[k].positions[j];
        const uint32_t next = r.tokens[p + 1];
        o.verdict = "disqualified";
        char buf[480];
        // The reason is published: positions and numbers only, no hidden token id (the next token is in the
        // evidence, which the record keeps and the page does not show).
        std::snprintf(buf, sizeof(buf), "looks ahead: at %s the batch served a log-probability of token %zu that "
                      "differs by %.4g (tolerance %g) from the one it served when streamed, before the following "
                      "tokens were sent (the next token's: %.4g streamed, %.4g in the batch)",
                      where_of(r, refs, core_tasks, plans, p).c_str(), at, worst, checks.lookahead_tolerance,
                      streamed[k][j][next], batch_at_causal[k][j][next]);
        o.reason = buf;
        o.evidence = where_json(r, refs, core_tasks, plans, p);
        o.evidence.update({{"check", "causal"}, {"token", at}, {"logp_streamed", streamed[k][j][at]},
                           {"logp_batch", batch_at_causal[k][j][at]}, {"max_abs_change", worst},
                           {"tolerance", checks.lookahead_tolerance}, {"next_token", next},
                           {"next_token_logp_streamed", streamed[k][j][next]},
                           {"next_token_logp_batch", batch_at_causal[k][j][next]}});
        return finish(o);
      }
    }
  if (o.bytes == 0) return Status::error("the hidden text has no bytes");
  o.val_bpb = nats / (std::log(2.0) * static_cast<double>(o.bytes));
  if (!std::isfinite(o.val_bpb)) return Status::error("val_bpb is not finite (a served log-probability of a target is -inf)");
  if (o.has_core) {
    // The decisions, by the code `frontier eval core` uses (eval/core_eval.h).
    std::vector<std::vector<CoreItemResult>> results(core_tasks.size());
    for (size_t t = 0; t < core_tasks.size(); t++) results[t].resize(plans[t].items.size());
    for (size_t i = 0; i < refs.size(); i++) {
      const CoreRef& c = refs[i];
      for (const auto& l : c.losses)
        for (float x : l)
          if (!std::isfinite(x))
            return Status::error("a served log-probability of a CORE answer token is -inf (CORE task " +
                                 core_tasks[c.task].label + ")");
      results[c.task][c.item] = decide_core_item(core_tasks[c.task], plans[c.task], c.item, c.losses, c.argmax);
    }
    o.core = CoreReport();
    o.core.seq_len = o.max_len;
    for (size_t t = 0; t < core_tasks.size(); t++) {
      if (!core_tasks[t].present) {
        CoreTaskResult r;
        r.label = core_tasks[t].label;
        o.core.tasks.push_back(r);
        continue;
      }
      for (size_t i = 0; i < plans[t].items.size(); i++)
        if (!plans[t].scored(i)) results[t][i] = decide_core_item(core_tasks[t], plans[t], i, {}, {});
      o.core.tasks.push_back(tally_core_task(core_tasks[t], plans[t], results[t]));
    }
    finish_core_report(&o.core);
    o.composite = composite_score(o.val_bpb, o.core.core);
  }
  o.verdict = "ok";
  return finish(o);
}

}  // namespace frontier
