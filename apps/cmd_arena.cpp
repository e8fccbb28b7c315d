// The arena (docs/arena.md): frontier arena, the organiser's commands (submit, score, verify, leaderboard, serve;
// arena/), and frontier serve-logprobs, the one a team's binary must answer (arena/protocol.h).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "arena/leaderboard.h"
#include "arena/scorer.h"
#include "arena/serve.h"
#include "commands.h"
#include "util/file.h"

namespace frontier::cli {
namespace {

struct ArenaArgs {
  std::string comp, team, phase, config, repo, commit, sub, bin, html, work, eval_bin;
  uint64_t seed = 0;
  int port = 8080;
  CLI::App *submit = nullptr, *score = nullptr, *verify = nullptr, *lb = nullptr, *serve = nullptr,
           *evaluate = nullptr;
};

// The record of a competition, opened (its directories made) and verified for publishing.
struct Arena {
  Competition comp;
  Record rec;

  // The leaderboard as HTML and/or text; a tampered record is never published.
  Status page(std::string* html, std::string* text) {
    std::vector<RecordRow> rows;
    VerifyReport v;
    Status st = rec.rows(&rows);
    if (st.ok()) st = rec.verify(&v);
    if (st.ok()) st = v.status(rec.path());
    if (!st.ok()) return st;
    auto boards = build_leaderboard(comp, rows);
    if (html) *html = leaderboard_html(comp, boards, v);
    if (text) *text = leaderboard_text(boards);
    return st;
  }
};

int arena_submit(const ArenaArgs& a, Arena& ar) {
  SubmitRequest q{a.team, a.phase.empty() ? ar.comp.phases[0].name : a.phase, a.config, a.repo, a.commit};
  Submission sub;
  RecordRow row;
  if (Status s = submit(ar.comp, ar.rec, q, &sub, &row); !s.ok()) {
    if (row.seq == 0) return fail(s);  // nothing recorded (a record that fails verification)
    std::fprintf(stderr, "error: submission %s (recorded as row %lld): %s\n", row.status.c_str(),
                 static_cast<long long>(row.seq), s.message().c_str());
    return 1;
  }
  std::printf("submission: %s\nteam: %s\nphase: %s\nkind: %s%s\nrecorded: row %lld\n", sub.hash.c_str(),
              sub.team.c_str(), sub.phase.c_str(), sub.kind.c_str(),
              sub.kind == "fork" ? (" (commit " + sub.commit + ")").c_str() : "", static_cast<long long>(row.seq));
  return 0;
}

int arena_score(const ArenaArgs& a, Arena& ar) {
  ScoreOptions so;
  so.organiser_binary = a.bin;
  so.seed = a.seed;
  std::vector<RecordRow> done;
  Status s = score_pending(ar.comp, ar.rec, so, a.sub, &done);
  for (const auto& r : done)
    std::printf("row %lld: %s %s %s %s%s\n", static_cast<long long>(r.seq), r.team.c_str(),
                r.submission.substr(0, 12).c_str(), r.status.c_str(),
                std::isfinite(r.score) ? ("val_bpb " + std::to_string(r.score)).c_str() : "",
                r.reason.empty() ? "" : ("(" + r.reason + ")").c_str());
  if (done.empty() && s.ok()) std::printf("nothing to score\n");
  return s.ok() ? 0 : fail(s);
}

int arena_verify(Arena& ar) {
  VerifyReport v;
  if (Status s = ar.rec.verify(&v); !s.ok()) return fail(s);
  for (const auto& p : v.problems) std::printf("TAMPERED: %s\n", p.c_str());
  std::printf("%s: %lld rows, chain head %s\n", v.ok ? "ok" : "FAILED", static_cast<long long>(v.rows),
              v.head.c_str());
  return v.ok ? 0 : 2;
}

int arena_leaderboard(const ArenaArgs& a, Arena& ar) {
  std::string html, text;
  Status s;
  if (!(s = ar.page(a.html.empty() ? nullptr : &html, &text)).ok()) return fail(s);
  std::printf("%s", text.c_str());
  if (!a.html.empty() && !(s = write_file_atomic(a.html, html)).ok()) return fail(s);
  return 0;
}

int arena_serve(const ArenaArgs& a, Arena& ar) {
  std::string html;
  Status s;
  if (!(s = ar.page(&html, nullptr)).ok()) return fail(s);  // refused at start: nothing served from a broken record
  s = serve_leaderboard(a.port, [&](std::string* body) { return ar.page(body, nullptr); });
  return s.ok() ? 0 : fail(s);
}

int run_arena(const ArenaArgs& a) {
  Arena ar;
  Status s = load_competition(a.comp, &ar.comp);
  if (!s.ok()) return fail(s);
  if (a.evaluate->parsed()) {  // no record: the worker only writes WORK/eval_result.json
    s = evaluation_worker(ar.comp, a.phase, a.work, a.eval_bin, a.seed);
    return s.ok() ? 0 : fail(s);
  }
  const Competition& comp = ar.comp;
  if ((s = make_dirs(comp.work_dir)).ok()) s = make_dirs(std::filesystem::path(comp.record).parent_path().string());
  if (!s.ok() || !(s = ar.rec.open(comp.record)).ok()) return fail(s);
  if (a.submit->parsed()) return arena_submit(a, ar);
  if (a.score->parsed()) return arena_score(a, ar);
  if (a.verify->parsed()) return arena_verify(ar);
  if (a.lb->parsed()) return arena_leaderboard(a, ar);
  if (a.serve->parsed()) return arena_serve(a, ar);
  return 0;
}

int run_serve_logprobs(const std::string& checkpoint) {
  std::setvbuf(stdout, nullptr, _IOFBF, 1 << 20);
  Status s = serve_logprobs(checkpoint, stdin, stdout);
  return s.ok() ? 0 : fail(s);
}

}  // namespace

void add_serve_logprobs_command(CLI::App& app, Commands& cmds) {
  auto ckpt = std::make_shared<std::string>();
  auto* slp = app.add_subcommand("serve-logprobs", "Serve next-token log-probabilities of a checkpoint on stdin/stdout "
                                                   "(the arena's frozen-evaluator protocol, arena/protocol.h)");
  slp->add_option("--checkpoint", *ckpt, "Checkpoint to serve")->required();
  cmds.push_back({slp, [ckpt] { return run_serve_logprobs(*ckpt); }});
}

void add_arena_command(CLI::App& app, Commands& cmds) {
  auto a = std::make_shared<ArenaArgs>();
  auto* ar =
      app.add_subcommand("arena", "The competition: submissions, the sealed scorer, the record, the leaderboard");
  ar->require_subcommand(1);
  auto* ar_submit = ar->add_subcommand("submit", "Submit a config (organiser's build) or a fork (--repo --commit)");
  auto* ar_score = ar->add_subcommand("score", "Build, train and score every accepted, unscored submission");
  auto* ar_verify = ar->add_subcommand("verify", "Check the record's hash chain; name any changed or deleted row");
  auto* ar_lb = ar->add_subcommand("leaderboard", "Print the rankings; --html writes the static page");
  auto* ar_serve = ar->add_subcommand("serve", "Serve the leaderboard page on http://127.0.0.1:PORT/");
  a->submit = ar_submit, a->score = ar_score, a->verify = ar_verify, a->lb = ar_lb, a->serve = ar_serve;
  for (auto* sc : {ar_submit, ar_score, ar_verify, ar_lb, ar_serve})
    sc->add_option("--competition", a->comp, "The competition's definition (TOML, docs/arena.md)")->required();
  ar_submit->add_option("--team", a->team, "Team name")->required();
  ar_submit->add_option("--phase", a->phase, "Phase name (default: the first)");
  ar_submit->add_option("--config", a->config, "The training config (TOML)")->required();
  ar_submit->add_option("--repo", a->repo, "A fork: git repository (path or URL)");
  ar_submit->add_option("--commit", a->commit, "A fork: commit (id, tag or branch; resolved and recorded in full)");
  ar_score->add_option("--submission", a->sub, "Only this submission (a hash prefix)");
  ar_score->add_option("--organiser-binary", a->bin,
                       "The organiser's frontier for config submissions (default: this one)");
  ar_score->add_option("--seed", a->seed, "Seed of the evaluator's probes (default: random, recorded)");
  ar_lb->add_option("--html", a->html, "Also write the static leaderboard page here");
  ar_serve->add_option("--port", a->port, "Port on 127.0.0.1")->check(CLI::Range(1, 65535))->capture_default_str();
  // The scorer's evaluation worker (arena/scorer.h: evaluation_worker): run by `arena score`, not by people.
  auto* ar_eval = ar->add_subcommand("evaluate", "The scorer's evaluation worker")->group("");  // hidden
  a->evaluate = ar_eval;
  ar_eval->add_option("--competition", a->comp)->required();
  ar_eval->add_option("--phase", a->phase)->required();
  ar_eval->add_option("--work", a->work)->required();
  ar_eval->add_option("--binary", a->eval_bin)->required();
  ar_eval->add_option("--seed", a->seed);
  cmds.push_back({ar, [a] { return run_arena(*a); }});
}

}  // namespace frontier::cli
