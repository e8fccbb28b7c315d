#include "arena/competition.h"

#include <cmath>
#include <filesystem>
#include <set>

#include "config/tomlpp.h"
#include "util/file.h"
#include "util/sha256.h"

namespace frontier {

namespace fs = std::filesystem;

const Phase* Competition::phase(const std::string& name) const {
  for (const auto& p : phases)
    if (p.name == name) return &p;
  return nullptr;
}

namespace {

// Typed reads that name the key and the file; every key read is remembered, and what is left is unknown.
struct Reader {
  Reader(const std::string& p, std::string w = "") : path(p), where(std::move(w)) {}
  const std::string& path;
  std::string where;  // "", "[build].", "[[phase]] 1: "
  std::set<std::string> seen;

  Status unknown_keys(const toml::table& t) {
    for (auto& [k, v] : t)
      if (!seen.count(std::string(k.str())))
        return Status::error(path + ": unknown key " + where + std::string(k.str()) +
                             " (docs/arena.md lists the definition's keys)");
    return ok_status();
  }
  Status str(const toml::table& t, const char* key, std::string* out, bool required) {
    seen.insert(key);
    const toml::node* n = t.get(key);
    if (!n) return required ? Status::error(path + ": missing " + where + key) : ok_status();
    if (!n->is_string()) return Status::error(path + ": " + where + key + " must be a string");
    *out = n->as_string()->get();
    return ok_status();
  }
  Status num(const toml::table& t, const char* key, double lo, double hi, double* out, bool required = false) {
    seen.insert(key);
    const toml::node* n = t.get(key);
    if (!n) return required ? Status::error(path + ": missing " + where + key) : ok_status();
    double v = 0;
    if (n->is_integer()) v = static_cast<double>(n->as_integer()->get());
    else if (n->is_floating_point()) v = n->as_floating_point()->get();
    else return Status::error(path + ": " + where + key + " must be a number");
    if (!std::isfinite(v) || v < lo || v > hi)
      return Status::error(path + ": " + where + key + " = " + std::to_string(v) + " is outside [" +
                           std::to_string(lo) + ", " + std::to_string(hi) + "]");
    *out = v;
    return ok_status();
  }
  Status integer(const toml::table& t, const char* key, int lo, int hi, int* out) {
    double v = *out;
    FRONTIER_RETURN_IF_ERROR(num(t, key, lo, hi, &v));
    if (v != std::floor(v)) return Status::error(path + ": " + where + key + " must be an integer");
    *out = static_cast<int>(v);
    return ok_status();
  }
};

std::string absolute_in(const std::string& dir, const std::string& p) {
  if (p.empty()) return p;
  return fs::path(p).is_absolute() ? p : (fs::path(dir) / p).lexically_normal().string();
}

}  // namespace

Status load_competition(const std::string& path, Competition* out) {
  Competition c;
  std::string text;
  FRONTIER_RETURN_IF_ERROR(read_file(path, &text));
  c.path = fs::absolute(path).lexically_normal().string();
  c.dir = fs::path(c.path).parent_path().string();
  c.sha256 = sha256_hex(text);
  toml::table t;
  try {
    t = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return Status::error(path + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
  Reader r{path};
  FRONTIER_RETURN_IF_ERROR(r.str(t, "name", &c.name, true));
  std::string rel;
  FRONTIER_RETURN_IF_ERROR(r.str(t, "train_data", &rel, true));
  c.train_data = absolute_in(c.dir, rel);
  FRONTIER_RETURN_IF_ERROR(r.str(t, "hidden_val", &rel, true));
  c.hidden_val = absolute_in(c.dir, rel);
  rel.clear();
  FRONTIER_RETURN_IF_ERROR(r.str(t, "core_bundle", &rel, false));
  c.core_bundle = absolute_in(c.dir, rel);
  rel = "record.sqlite";
  FRONTIER_RETURN_IF_ERROR(r.str(t, "record", &rel, false));
  c.record = absolute_in(c.dir, rel);
  rel = "submissions";
  FRONTIER_RETURN_IF_ERROR(r.str(t, "submissions_dir", &rel, false));
  c.submissions_dir = absolute_in(c.dir, rel);
  rel = "work";
  FRONTIER_RETURN_IF_ERROR(r.str(t, "work_dir", &rel, false));
  c.work_dir = absolute_in(c.dir, rel);
  rel.clear();
  FRONTIER_RETURN_IF_ERROR(r.str(t, "calibration", &rel, false));
  c.calibration = absolute_in(c.dir, rel);
  FRONTIER_RETURN_IF_ERROR(r.num(t, "grace_seconds", 0, 86400, &c.grace_seconds));
  FRONTIER_RETURN_IF_ERROR(r.num(t, "eval_timeout_seconds", 1, 7 * 86400, &c.eval_timeout_seconds));
  FRONTIER_RETURN_IF_ERROR(r.num(t, "eval_memory_mb", 0, 1 << 30, &c.eval_memory_mb));
  FRONTIER_RETURN_IF_ERROR(r.num(t, "eval_file_mb", 1, 1 << 30, &c.eval_file_mb));
  r.seen.insert("build");
  r.seen.insert("checks");
  r.seen.insert("phase");
  FRONTIER_RETURN_IF_ERROR(r.unknown_keys(t));

  if (const toml::node* b = t.get("build")) {
    if (!b->is_table()) return Status::error(path + ": [build] must be a table");
    const toml::table& bt = *b->as_table();
    Reader rb{path, "[build]."};
    rb.seen.insert("cmake_args");
    if (const toml::node* a = bt.get("cmake_args")) {
      if (!a->is_array()) return Status::error(path + ": [build].cmake_args must be an array of strings");
      c.cmake_args.clear();
      for (const auto& e : *a->as_array()) {
        if (!e.is_string()) return Status::error(path + ": [build].cmake_args must be an array of strings");
        c.cmake_args.push_back(e.as_string()->get());
      }
    }
    FRONTIER_RETURN_IF_ERROR(rb.integer(bt, "jobs", 1, 1024, &c.build_jobs));
    FRONTIER_RETURN_IF_ERROR(rb.num(bt, "timeout_seconds", 1, 7 * 86400, &c.build_timeout_seconds));
    FRONTIER_RETURN_IF_ERROR(rb.unknown_keys(bt));
  }
  if (const toml::node* k = t.get("checks")) {
    if (!k->is_table()) return Status::error(path + ": [checks] must be a table");
    const toml::table& kt = *k->as_table();
    Reader rk{path, "[checks]."};
    FRONTIER_RETURN_IF_ERROR(rk.num(kt, "normalisation_tolerance", 1e-9, 0.5, &c.normalisation_tolerance));
    FRONTIER_RETURN_IF_ERROR(rk.integer(kt, "lookahead_probes", 0, 1 << 20, &c.lookahead_probes));
    FRONTIER_RETURN_IF_ERROR(rk.num(kt, "lookahead_tolerance", 0, 10, &c.lookahead_tolerance));
    FRONTIER_RETURN_IF_ERROR(rk.integer(kt, "causal_requests", 0, 1 << 20, &c.causal_requests));
    FRONTIER_RETURN_IF_ERROR(rk.integer(kt, "causal_positions", 1, 1 << 20, &c.causal_positions));
    FRONTIER_RETURN_IF_ERROR(rk.unknown_keys(kt));
  }
  const toml::node* ph = t.get("phase");
  if (!ph || !ph->is_array_of_tables() || ph->as_array()->empty())
    return Status::error(path + ": no [[phase]] (a competition needs at least one phase)");
  int i = 0;
  for (const auto& e : *ph->as_array()) {
    const toml::table& pt = *e.as_table();
    Reader rp{path, "[[phase]] " + std::to_string(++i) + " "};
    Phase p;
    FRONTIER_RETURN_IF_ERROR(rp.str(pt, "name", &p.name, true));
    rp.where = "[[phase]] " + p.name + ": ";
    FRONTIER_RETURN_IF_ERROR(rp.num(pt, "budget_seconds", 0.001, 30 * 86400, &p.budget_seconds, true));
    FRONTIER_RETURN_IF_ERROR(rp.integer(pt, "ranks", 1, 4096, &p.ranks));
    FRONTIER_RETURN_IF_ERROR(rp.integer(pt, "threads", 0, 4096, &p.threads));
    p.metric = "val_bpb";
    FRONTIER_RETURN_IF_ERROR(rp.str(pt, "metric", &p.metric, false));
    if (p.metric != "val_bpb" && p.metric != "composite")
      return Status::error(path + ": " + rp.where + "metric must be \"val_bpb\" or \"composite\" (got \"" + p.metric +
                           "\")");
    FRONTIER_RETURN_IF_ERROR(rp.integer(pt, "core_max_per_task", 0, 1 << 30, &p.core_max_per_task));
    p.grace_seconds = c.grace_seconds;
    FRONTIER_RETURN_IF_ERROR(rp.num(pt, "grace_seconds", 0, 86400, &p.grace_seconds));
    FRONTIER_RETURN_IF_ERROR(rp.unknown_keys(pt));
    if (c.phase(p.name)) return Status::error(path + ": two phases are named " + p.name);
    if (p.metric == "composite" && c.core_bundle.empty())
      return Status::error(path + ": " + rp.where + "metric \"composite\" needs the definition's core_bundle (the "
                           "CORE bundle the organiser scores with, e.g. \"eval_bundle\")");
    c.phases.push_back(p);
  }
  *out = std::move(c);
  return ok_status();
}

}  // namespace frontier
