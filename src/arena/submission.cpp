#include "arena/submission.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "config/frozen_keys.h"
#include "config/tomlpp.h"
#include "train/train.h"
#include "util/file.h"
#include "util/sha256.h"
#include "util/subprocess.h"
#include "util/utf8.h"

namespace frontier {

namespace fs = std::filesystem;

namespace {

// The one list (config/frozen_keys.h), shared with research.
bool frozen_for_arena(const std::string& k) {
  const FrozenKey* f = frozen_key(k);
  return f && f->arena;
}

void flatten(const toml::table& t, const std::string& prefix, std::vector<std::string>* keys) {
  for (auto& [k, v] : t) {
    std::string name = prefix + std::string(k.str());
    if (const toml::table* sub = v.as_table()) flatten(*sub, name + ".", keys);
    else keys->push_back(name);
  }
}

// git ARGS with a timeout, output captured; *why: its last output line when it failed.
bool git(const std::vector<std::string>& args, double timeout_s, std::string* out, std::string* why) {
  Subprocess p;
  p.argv = {"git"};
  p.argv.insert(p.argv.end(), args.begin(), args.end());
  p.env = {"GIT_TERMINAL_PROMPT=0"};  // a private repository fails instead of waiting for a password
  p.stderr_to_stdout = true;
  p.max_output = 64 << 10;
  p.timeout_s = timeout_s;
  SubprocessResult r;
  Status s = run_subprocess(p, &r);
  if (!s.ok()) {
    *why = s.message();
    return false;
  }
  std::string o = r.out;
  while (!o.empty() && (o.back() == '\n' || o.back() == '\r')) o.pop_back();
  if (out) *out = o;
  if (r.ok()) return true;
  size_t nl = o.rfind('\n');
  *why = utf8_replace_invalid(nl == std::string::npos ? o : o.substr(nl + 1)) + " (" + r.describe(p) + ")";
  return false;
}

bool valid_team(const std::string& t) {
  if (t.empty() || t.size() > 64) return false;
  for (char ch : t)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.' || ch == ' ')) return false;
  return true;
}

}  // namespace

std::string frozen_key_in(const std::string& text, const std::string& origin, Status* parse) {
  *parse = ok_status();
  toml::table t;
  try {
    t = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    *parse = Status::error(origin + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
    return "";
  }
  std::vector<std::string> keys;
  flatten(t, "", &keys);
  for (const auto& k : keys)
    if (frozen_for_arena(k)) return k;
  return "";
}

Status submit(const Competition& c, Record& rec, const SubmitRequest& q, Submission* out, RecordRow* row) {
  RecordRow r;
  r.event = "submission";
  r.team = q.team;
  r.phase = q.phase;
  r.kind = q.repo.empty() && q.commit.empty() ? "config" : "fork";
  r.started_at = utc_now();
  // A broken chain takes no new row, not even a refusal: said before any work (a clone) is done.
  VerifyReport v;
  FRONTIER_RETURN_IF_ERROR(rec.verify(&v));
  FRONTIER_RETURN_IF_ERROR(v.status(rec.path()));
  const Phase* ph = c.phase(q.phase);
  if (ph) r.metric = ph->metric;
  // Every way out appends the row: an accepted submission, and each reason to refuse one.
  auto refuse = [&](const std::string& status, const std::string& reason) {
    r.status = status;
    r.reason = reason;
    r.finished_at = utc_now();
    Status s = rec.append(&r);
    *row = r;
    if (!s.ok()) return Status::error(reason + " (and it could not be recorded: " + s.message() + ")");
    return Status::error(reason);
  };
  if (!valid_team(q.team))
    return refuse("rejected", "team name '" + utf8_replace_invalid(q.team) +
                                  "' must be 1-64 letters, digits, spaces, '-', '_' or '.'");
  if (!ph) {
    std::string names;
    for (const auto& p : c.phases) names += (names.empty() ? "" : ", ") + p.name;
    return refuse("rejected", "no phase '" + q.phase + "' in " + c.path + " (phases: " + names + ")");
  }
  if (r.kind == "fork" && (q.repo.empty() || q.commit.empty()))
    return refuse("rejected", "a fork submission needs both --repo and --commit");
  std::string config;
  Status s = read_file(q.config_path, &config);
  if (!s.ok()) return refuse("rejected", "config: " + s.message());
  if (utf8_first_invalid(config) != std::string::npos) return refuse("rejected", q.config_path + " is not valid UTF-8");

  // A fork: clone it now (bare) and resolve the commit, so the submission holds exactly what will be built.
  const std::string tmp = c.submissions_dir + "/.incoming-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  std::string commit;
  if (r.kind == "fork") {
    FRONTIER_RETURN_IF_ERROR(make_dirs(c.submissions_dir));
    std::string why;
    if (!git({"clone", "--bare", "--quiet", "--no-hardlinks", q.repo, tmp + "/repo.git"}, 600, nullptr, &why)) {
      fs::remove_all(tmp, ec);
      return refuse("rejected", "repository " + q.repo + " cannot be cloned: " + why);
    }
    if (!git({"-C", tmp + "/repo.git", "rev-parse", "--verify", "--quiet", q.commit + "^{commit}"}, 60, &commit, &why)) {
      fs::remove_all(tmp, ec);
      return refuse("rejected", "commit " + q.commit + " does not exist in " + q.repo);
    }
  }
  nlohmann::json content = {{"phase", q.phase}, {"kind", r.kind}, {"commit", commit}, {"config", config}};
  r.submission = sha256_hex("frontier-arena-submission-1\n" + content.dump());
  auto refuse_clean = [&](const std::string& status, const std::string& reason) {
    fs::remove_all(tmp, ec);
    return refuse(status, reason);
  };

  // The config: frozen keys for every kind; unknown keys against the organiser's schema for its own build (a
  // fork may add keys, and its own `train` refuses the ones it does not know).
  Status parse;
  std::string frozen = frozen_key_in(config, q.config_path, &parse);
  if (!parse.ok()) return refuse_clean("rejected", "config: " + parse.message());
  if (!frozen.empty())
    return refuse_clean("rejected", "config sets " + frozen + ", which the competition fixes (" +
                                        frozen_key(frozen)->why + "); remove it");
  if (r.kind == "config") {
    ConfigSchema schema = train_schema();
    Config cfg = schema.defaults();
    Status v = schema.load_toml_string(config, q.config_path, &cfg);
    if (!v.ok()) return refuse_clean("rejected", "config: " + v.message());
  }

  Submission sub;
  sub.hash = r.submission;
  sub.team = q.team;
  sub.kind = r.kind;
  sub.phase = q.phase;
  sub.repo = q.repo;
  sub.commit = commit;
  sub.config_text = config;
  sub.submitted_at = r.started_at;
  sub.dir = c.submissions_dir + "/" + sub.hash;
  // The files go into the private incoming folder first; they are moved into place, and the row appended, inside
  // one write transaction of the record, so two submits of the same content cannot both be accepted (the second
  // one in waits for the first's transaction, then finds its accepted row) and never overwrite each other's files.
  Status w = make_dirs(tmp);
  if (w.ok()) w = write_file_atomic(tmp + "/config.toml", config);
  nlohmann::json j = {{"hash", sub.hash},     {"team", sub.team},     {"kind", sub.kind},
                      {"phase", sub.phase},   {"repo", sub.repo},     {"commit", sub.commit},
                      {"submitted_at", sub.submitted_at}};
  if (w.ok()) w = write_file_atomic(tmp + "/submission.json", j.dump(2) + "\n");
  if (!w.ok()) return refuse_clean("rejected", "cannot write the submission: " + w.message());
  r.status = "accepted";
  r.details = nlohmann::json({{"repo", sub.repo}, {"commit", sub.commit}}).dump();
  Status s2 = rec.append_checked(&r, [&](const std::vector<RecordRow>& rows, RecordRow* row) {
    // Duplicates: the same content already accepted (by any team).
    for (const auto& e : rows)
      if (e.event == "submission" && e.status == "accepted" && e.submission == row->submission) {
        row->status = "duplicate";
        row->reason = "identical to submission " + row->submission.substr(0, 12) + " (team " + e.team + ", " +
                      e.recorded_at + "): same phase, commit and config";
        row->details.clear();
        row->finished_at = utc_now();
        fs::remove_all(tmp, ec);
        return ok_status();
      }
    fs::remove_all(sub.dir, ec);  // a leftover of an interrupted submit (no accepted row names it)
    fs::rename(tmp, sub.dir, ec);
    if (ec) return Status::error("cannot move the submission into " + sub.dir + ": " + ec.message());
    row->finished_at = utc_now();
    return ok_status();
  });
  if (!s2.ok()) {
    fs::remove_all(tmp, ec);
    return s2;
  }
  *row = r;
  if (r.status != "accepted") return Status::error(r.reason);
  *out = sub;
  return ok_status();
}

Status load_submission(const Competition& c, const std::string& hash, Submission* out) {
  Submission s;
  s.dir = c.submissions_dir + "/" + hash;
  std::string text;
  FRONTIER_RETURN_IF_ERROR(read_file(s.dir + "/submission.json", &text));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.value("hash", std::string()).size())
    return Status::error(s.dir + "/submission.json is corrupt");
  s.hash = j.value("hash", "");
  s.team = j.value("team", "");
  s.kind = j.value("kind", "");
  s.phase = j.value("phase", "");
  s.repo = j.value("repo", "");
  s.commit = j.value("commit", "");
  s.submitted_at = j.value("submitted_at", "");
  if (s.hash != hash) return Status::error(s.dir + "/submission.json names another submission (" + s.hash + ")");
  FRONTIER_RETURN_IF_ERROR(read_file(s.dir + "/config.toml", &s.config_text));
  nlohmann::json content = {{"phase", s.phase}, {"kind", s.kind}, {"commit", s.commit}, {"config", s.config_text}};
  if (sha256_hex("frontier-arena-submission-1\n" + content.dump()) != hash)
    return Status::error("submission " + hash.substr(0, 12) + " was altered on disk: its content no longer matches "
                         "its hash");
  *out = s;
  return ok_status();
}

}  // namespace frontier
