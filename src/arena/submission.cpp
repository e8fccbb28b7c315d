#include "arena/submission.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "config/frozen_keys.h"
#include "config/tomlpp.h"
#include "train/schema.h"
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

namespace {

// One `arena submit`, phase by phase: the request (team, phase, kind, config file), the fork's clone, the config's
// keys, the files staged in a private incoming folder, the row appended. Every way out after the chain's check
// appends the row: an accepted submission, and each reason to refuse one (refuse()).
class Intake {
 public:
  Intake(const Competition& c, Record& rec, const SubmitRequest& q, RecordRow* row)
      : c_(c), rec_(rec), q_(q), row_(row) {}
  Status run(Submission* out);

 private:
  Status refuse(const std::string& status, const std::string& reason);
  Status refuse_clean(const std::string& status, const std::string& reason);  // also removes the incoming folder
  Status check_request();
  Status fetch_fork();
  Status check_config();
  Status stage_files();
  Status append_row();

  const Competition& c_;
  Record& rec_;
  const SubmitRequest& q_;
  RecordRow* row_;
  RecordRow r_;
  const Phase* ph_ = nullptr;
  std::string config_, commit_;
  std::string tmp_;  // the private incoming folder
  Submission sub_;
};

Status Intake::run(Submission* out) {
  r_.event = "submission";
  r_.team = q_.team;
  r_.phase = q_.phase;
  r_.kind = q_.repo.empty() && q_.commit.empty() ? "config" : "fork";
  r_.started_at = utc_now();
  // A broken chain takes no new row, not even a refusal: said before any work (a clone) is done.
  VerifyReport v;
  FRONTIER_RETURN_IF_ERROR(rec_.verify(&v));
  FRONTIER_RETURN_IF_ERROR(v.status(rec_.path()));
  ph_ = c_.phase(q_.phase);
  if (ph_) r_.metric = ph_->metric;
  FRONTIER_RETURN_IF_ERROR(check_request());
  FRONTIER_RETURN_IF_ERROR(fetch_fork());
  nlohmann::json content = {{"phase", q_.phase}, {"kind", r_.kind}, {"commit", commit_}, {"config", config_}};
  r_.submission = sha256_hex("frontier-arena-submission-1\n" + content.dump());
  FRONTIER_RETURN_IF_ERROR(check_config());
  FRONTIER_RETURN_IF_ERROR(stage_files());
  FRONTIER_RETURN_IF_ERROR(append_row());
  *row_ = r_;
  if (r_.status != "accepted") return Status::error(r_.reason);
  *out = sub_;
  return ok_status();
}

Status Intake::refuse(const std::string& status, const std::string& reason) {
  r_.status = status;
  r_.reason = reason;
  r_.finished_at = utc_now();
  Status s = rec_.append(&r_);
  *row_ = r_;
  if (!s.ok()) return Status::error(reason + " (and it could not be recorded: " + s.message() + ")");
  return Status::error(reason);
}

Status Intake::refuse_clean(const std::string& status, const std::string& reason) {
  std::error_code ec;
  fs::remove_all(tmp_, ec);
  return refuse(status, reason);
}

// The team's name, the phase, a fork's repository and commit, and the config file (readable, UTF-8).
Status Intake::check_request() {
  if (!valid_team(q_.team))
    return refuse("rejected", "team name '" + utf8_replace_invalid(q_.team) +
                                  "' must be 1-64 letters, digits, spaces, '-', '_' or '.'");
  if (!ph_) {
    std::string names;
    for (const auto& p : c_.phases) names += (names.empty() ? "" : ", ") + p.name;
    return refuse("rejected", "no phase '" + q_.phase + "' in " + c_.path + " (phases: " + names + ")");
  }
  if (r_.kind == "fork" && (q_.repo.empty() || q_.commit.empty()))
    return refuse("rejected", "a fork submission needs both --repo and --commit");
  Status s = read_file(q_.config_path, &config_);
  if (!s.ok()) return refuse("rejected", "config: " + s.message());
  if (utf8_first_invalid(config_) != std::string::npos)
    return refuse("rejected", q_.config_path + " is not valid UTF-8");
  return ok_status();
}

// A fork: clone it now (bare) and resolve the commit, so the submission holds exactly what will be built.
Status Intake::fetch_fork() {
  tmp_ = c_.submissions_dir + "/.incoming-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp_, ec);
  if (r_.kind != "fork") return ok_status();
  FRONTIER_RETURN_IF_ERROR(make_dirs(c_.submissions_dir));
  std::string why;
  if (!git({"clone", "--bare", "--quiet", "--no-hardlinks", q_.repo, tmp_ + "/repo.git"}, 600, nullptr, &why))
    return refuse_clean("rejected", "repository " + q_.repo + " cannot be cloned: " + why);
  if (!git({"-C", tmp_ + "/repo.git", "rev-parse", "--verify", "--quiet", q_.commit + "^{commit}"}, 60, &commit_,
           &why))
    return refuse_clean("rejected", "commit " + q_.commit + " does not exist in " + q_.repo);
  return ok_status();
}

// The config: frozen keys for every kind; unknown keys against the organiser's schema for its own build (a
// fork may add keys, and its own `train` refuses the ones it does not know).
Status Intake::check_config() {
  Status parse;
  std::string frozen = frozen_key_in(config_, q_.config_path, &parse);
  if (!parse.ok()) return refuse_clean("rejected", "config: " + parse.message());
  if (!frozen.empty())
    return refuse_clean("rejected", "config sets " + frozen + ", which the competition fixes (" +
                                        frozen_key(frozen)->why + "); remove it");
  if (r_.kind == "config") {
    ConfigSchema schema = train_schema();
    Config cfg = schema.defaults();
    Status v = schema.load_toml_string(config_, q_.config_path, &cfg);
    if (!v.ok()) return refuse_clean("rejected", "config: " + v.message());
  }
  return ok_status();
}

// The files go into the private incoming folder first; append_row() moves them into place.
Status Intake::stage_files() {
  sub_.hash = r_.submission;
  sub_.team = q_.team;
  sub_.kind = r_.kind;
  sub_.phase = q_.phase;
  sub_.repo = q_.repo;
  sub_.commit = commit_;
  sub_.config_text = config_;
  sub_.submitted_at = r_.started_at;
  sub_.dir = c_.submissions_dir + "/" + sub_.hash;
  Status w = make_dirs(tmp_);
  if (w.ok()) w = write_file_atomic(tmp_ + "/config.toml", config_);
  nlohmann::json j = {{"hash", sub_.hash},     {"team", sub_.team},     {"kind", sub_.kind},
                      {"phase", sub_.phase},   {"repo", sub_.repo},     {"commit", sub_.commit},
                      {"submitted_at", sub_.submitted_at}};
  if (w.ok()) w = write_file_atomic(tmp_ + "/submission.json", j.dump(2) + "\n");
  if (!w.ok()) return refuse_clean("rejected", "cannot write the submission: " + w.message());
  return ok_status();
}

// The files are moved into place, and the row appended, inside one write transaction of the record, so two
// submits of the same content cannot both be accepted (the second one in waits for the first's transaction, then
// finds its accepted row) and never overwrite each other's files.
Status Intake::append_row() {
  std::error_code ec;
  r_.status = "accepted";
  r_.details = nlohmann::json({{"repo", sub_.repo}, {"commit", sub_.commit}}).dump();
  Status s2 = rec_.append_checked(&r_, [&](const std::vector<RecordRow>& rows, RecordRow* row) {
    // Duplicates: the same content already accepted (by any team).
    for (const auto& e : rows)
      if (e.event == "submission" && e.status == "accepted" && e.submission == row->submission) {
        row->status = "duplicate";
        row->reason = "identical to submission " + row->submission.substr(0, 12) + " (team " + e.team + ", " +
                      e.recorded_at + "): same phase, commit and config";
        row->details.clear();
        row->finished_at = utc_now();
        fs::remove_all(tmp_, ec);
        return ok_status();
      }
    fs::remove_all(sub_.dir, ec);  // a leftover of an interrupted submit (no accepted row names it)
    fs::rename(tmp_, sub_.dir, ec);
    if (ec) return Status::error("cannot move the submission into " + sub_.dir + ": " + ec.message());
    row->finished_at = utc_now();
    return ok_status();
  });
  if (!s2.ok()) {
    fs::remove_all(tmp_, ec);
    return s2;
  }
  return ok_status();
}

}  // namespace

Status submit(const Competition& c, Record& rec, const SubmitRequest& q, Submission* out, RecordRow* row) {
  return Intake(c, rec, q, row).run(out);
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
