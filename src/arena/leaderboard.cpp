#include "arena/leaderboard.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

namespace frontier {

namespace {

std::string fmt(double v, int decimals = 6) {
  if (!std::isfinite(v)) return "";
  char b[64];
  std::snprintf(b, sizeof(b), "%.*f", decimals, v);
  return b;
}

std::string esc(const std::string& s) {
  std::string o;
  for (char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += ch;
    }
  }
  return o;
}

bool better(const Phase& p, double a, double b) { return p.lower_is_better() ? a < b : a > b; }

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};

// Each team's best score so far after each run of the phase: one polyline per team, from its first ok run on.
std::string chart_svg(const PhaseBoard& b) {
  const auto& h = b.history;
  std::map<std::string, double> best;
  std::vector<std::string> teams;
  std::vector<std::map<std::string, double>> after;  // per run index
  for (const auto& r : h) {
    if (r.status == "ok" && std::isfinite(r.score)) {
      if (!best.count(r.team)) teams.push_back(r.team);
      if (!best.count(r.team) || better(b.phase, r.score, best[r.team])) best[r.team] = r.score;
    }
    after.push_back(best);
  }
  std::ostringstream o;
  // 480 units wide: on a 390-px phone a unit is ~0.75 px, so 15-unit type stays readable (11 px).
  const double W = 480, L = 58, R = 12, T = 12, B = 56;
  const double H = 280 + 18 * (teams.empty() ? 0.0 : double((teams.size() - 1) / 4));  // legend rows of 4
  o << "<svg id=\"chart-" << esc(b.phase.name) << "\" class=\"chart\" viewBox=\"0 0 " << W << " " << H
    << "\" role=\"img\" aria-label=\"best " << esc(b.phase.metric) << " over time, per team\">";
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& m : after)
    for (const auto& [t, v] : m) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) {
    o << "<text x=\"" << W / 2 << "\" y=\"" << H / 2 << "\" text-anchor=\"middle\">no scored run yet</text></svg>";
    return o.str();
  }
  if (hi - lo < 1e-9) lo -= 0.05, hi += 0.05;
  const double pad = (hi - lo) * 0.1;
  lo -= pad, hi += pad;
  const size_t n = h.size();
  auto X = [&](size_t i) { return L + (n > 1 ? (W - L - R) * i / double(n - 1) : (W - L - R) / 2); };
  auto Y = [&](double v) { return T + (H - T - B) * (b.phase.lower_is_better() ? (v - lo) : (hi - v)) / (hi - lo); };
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\"" << H - T - B
    << "\" fill=\"#fafafa\" stroke=\"#ccc\"/>";
  for (int k = 0; k <= 4; k++) {
    double v = lo + (hi - lo) * k / 4;
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << Y(v) << "\" y2=\"" << Y(v)
      << "\" stroke=\"#e5e5e5\"/><text x=\"" << L - 6 << "\" y=\"" << Y(v) + 4
      << "\" text-anchor=\"end\" font-size=\"14\">" << fmt(v, 3) << "</text>";
  }
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - B + 20 << "\" text-anchor=\"middle\" font-size=\"14\">"
    << "best so far after each of " << n << " runs" << (b.phase.lower_is_better() ? " (lower is better, up)" : "")
    << "</text>";
  for (size_t ti = 0; ti < teams.size(); ti++) {
    const std::string& t = teams[ti];
    const char* col = kColors[ti % (sizeof(kColors) / sizeof(kColors[0]))];
    std::string pts;
    for (size_t i = 0; i < n; i++) {
      auto it = after[i].find(t);
      if (it == after[i].end()) continue;
      pts += fmt(X(i), 1) + "," + fmt(Y(it->second), 1) + " ";
    }
    o << "<polyline class=\"series\" data-team=\"" << esc(t) << "\" fill=\"none\" stroke=\"" << col
      << "\" stroke-width=\"2.5\" points=\"" << pts << "\"><title>" << esc(t) << ": best " << fmt(best[t])
      << "</title></polyline>";
    for (size_t i = 0; i < n; i++)
      if (h[i].team == t && h[i].status == "ok")
        o << "<circle cx=\"" << fmt(X(i), 1) << "\" cy=\"" << fmt(Y(h[i].score), 1) << "\" r=\"4\" fill=\"" << col
          << "\"><title>" << esc(t) << " run " << h[i].seq << ": " << fmt(h[i].score) << "</title></circle>";
    o << "<text x=\"" << L + 105 * (ti % 4) << "\" y=\"" << H - B + 42 + 18 * (ti / 4) << "\" font-size=\"15\" fill=\""
      << col << "\">&#9632; " << esc(t) << "</text>";
  }
  o << "</svg>";
  return o.str();
}

}  // namespace

std::vector<PhaseBoard> build_leaderboard(const Competition& c, const std::vector<RecordRow>& rows) {
  std::vector<PhaseBoard> out;
  for (const Phase& p : c.phases) {
    PhaseBoard b;
    b.phase = p;
    std::map<std::string, Standing> best;
    std::map<std::string, int> runs;
    for (const auto& r : rows) {
      if (r.event != "run" || r.phase != p.name) continue;
      b.history.push_back(r);
      runs[r.team]++;
      if (r.status != "ok" || !std::isfinite(r.score)) continue;
      auto it = best.find(r.team);
      if (it == best.end() || better(p, r.score, it->second.score)) {
        Standing s;
        s.team = r.team, s.submission = r.submission, s.kind = r.kind, s.at = r.recorded_at, s.score = r.score, s.val_bpb = r.val_bpb, s.core = r.core;
        best[r.team] = s;
      }
    }
    for (auto& [t, s] : best) {
      s.runs = runs[t];
      b.standings.push_back(s);
    }
    // Equal at the displayed precision is a tie; the earlier run first (record time, then team name).
    auto key = [](double v) { return std::llround(v * 1e6); };
    std::stable_sort(b.standings.begin(), b.standings.end(), [&](const Standing& a, const Standing& z) {
      if (key(a.score) != key(z.score)) return p.lower_is_better() ? key(a.score) < key(z.score) : key(a.score) > key(z.score);
      return a.at != z.at ? a.at < z.at : a.team < z.team;
    });
    for (size_t i = 0; i < b.standings.size(); i++) {
      Standing& s = b.standings[i];
      const bool same_as_prev = i > 0 && key(b.standings[i - 1].score) == key(s.score);
      s.rank = same_as_prev ? b.standings[i - 1].rank : static_cast<int>(i) + 1;
      s.tie = same_as_prev || (i + 1 < b.standings.size() && key(b.standings[i + 1].score) == key(s.score));
    }
    out.push_back(std::move(b));
  }
  return out;
}

std::string leaderboard_text(const std::vector<PhaseBoard>& boards) {
  std::ostringstream o;
  for (const auto& b : boards) {
    o << b.phase.name << " (" << b.phase.metric << ", budget " << b.phase.budget_seconds << " s, "
      << (b.phase.lower_is_better() ? "lower" : "higher") << " is better)\n";
    char line[256];
    const bool parts = b.phase.metric == "composite";  // val_bpb and CORE beside the composite
    std::snprintf(line, sizeof(line), "  %-5s %-20s %-10s %-6s %-12s %s%s\n", "rank", "team", b.phase.metric.c_str(),
                  "kind", "submission", "runs", parts ? "  val_bpb    CORE" : "");
    o << line;
    for (const auto& s : b.standings) {
      std::snprintf(line, sizeof(line), "  %-5s %-20s %-10s %-6s %-12s %-4d%s\n",
                    (std::to_string(s.rank) + (s.tie ? "=" : "")).c_str(), s.team.c_str(), fmt(s.score).c_str(),
                    s.kind.c_str(), s.submission.substr(0, 12).c_str(), s.runs,
                    parts ? ("  " + fmt(s.val_bpb) + "   " + fmt(s.core)).c_str() : "");
      o << line;
    }
    if (b.standings.empty()) o << "  (no scored run yet)\n";
    o << "  history:\n";
    for (const auto& r : b.history) {
      std::snprintf(line, sizeof(line), "  #%-4lld %-20s %-12s %-10s ", static_cast<long long>(r.seq), r.team.c_str(),
                    r.status.c_str(), fmt(r.score).c_str());
      o << line << r.reason << "\n";
    }
  }
  return o.str();
}

std::string leaderboard_html(const Competition& c, const std::vector<PhaseBoard>& boards, const VerifyReport& v) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
       "<title>" << esc(c.name) << ": leaderboard</title><style>"
       "body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:0 auto;max-width:960px;"
       "padding:12px;color:#222;line-height:1.4}"
       "h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.2em 0 .4em;border-bottom:1px solid #ddd}"
       ".scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}"
       "table{border-collapse:collapse;width:100%;font-size:.95em}th,td{padding:6px 8px;text-align:left;"
       "border-bottom:1px solid #eee;white-space:nowrap}td.num{text-align:right;font-variant-numeric:tabular-nums}"
       "td.reason{white-space:normal;min-width:12em;color:#555;font-size:.9em}"
       "tr.rank-1 td{font-weight:600}.chart{width:100%;height:auto;max-height:340px}"
       ".st-ok{color:#1a7f37}.st-bad{color:#b42318}.meta{color:#666;font-size:.85em;overflow-wrap:anywhere}.meta code{overflow-wrap:anywhere;word-break:break-all}"
       "@media (max-width:600px){body{padding:8px}th,td{padding:4px 5px}table{font-size:.85em}}"
       "</style></head><body>\n";
  o << "<h1>" << esc(c.name) << "</h1>\n<p class=\"meta\">Scored by the organiser's frozen evaluator: val_bpb on "
       "hidden text, bits per UTF-8 byte (lower is better); composite = 0.5 (1 - val_bpb/8) + 0.5 CORE, with every "
       "CORE decision made by the organiser from the served distributions (higher is better). Record "
    << (v.ok ? "verified" : "<b class=\"st-bad\">FAILED verification</b>") << ": " << v.rows
    << " rows, chain head <code id=\"chain-head\">" << esc(v.head) << "</code>.</p>\n";
  for (const auto& b : boards) {
    const std::string id = esc(b.phase.name);
    const bool parts = b.phase.metric == "composite";
    o << "<section id=\"phase-" << id << "\"><h2>" << id << " &middot; " << esc(b.phase.metric) << " &middot; "
      << b.phase.budget_seconds << " s budget &middot; " << b.phase.ranks << " rank" << (b.phase.ranks > 1 ? "s" : "")
      << "</h2>\n<div class=\"scroll\"><table id=\"standings-" << id << "\"><thead><tr><th>Rank</th><th>Team</th>"
      << "<th>" << esc(b.phase.metric) << "</th>" << (parts ? "<th>val_bpb</th><th>CORE</th>" : "")
      << "<th>Kind</th><th>Submission</th><th>Runs</th><th>Scored</th></tr></thead><tbody>\n";
    for (const auto& s : b.standings)
      o << "<tr class=\"standing rank-" << s.rank << "\" data-rank=\"" << s.rank << "\" data-team=\"" << esc(s.team)
        << "\" data-score=\"" << fmt(s.score) << "\"><td>" << s.rank << (s.tie ? "=" : "") << "</td><td>"
        << esc(s.team) << "</td><td class=\"num\">" << fmt(s.score) << "</td>"
        << (parts ? "<td class=\"num\">" + fmt(s.val_bpb) + "</td><td class=\"num\">" + fmt(s.core) + "</td>" : "")
        << "<td>" << esc(s.kind) << "</td><td><code>"
        << esc(s.submission.substr(0, 12)) << "</code></td><td class=\"num\">" << s.runs << "</td><td>" << esc(s.at)
        << "</td></tr>\n";
    if (b.standings.empty())
      o << "<tr><td colspan=\"" << (parts ? 9 : 7) << "\">No scored run yet.</td></tr>\n";
    o << "</tbody></table></div>\n" << chart_svg(b) << "\n<h3>History</h3><div class=\"scroll\"><table id=\"history-"
      << id << "\"><thead><tr><th>#</th><th>Team</th><th>Status</th><th>" << esc(b.phase.metric)
      << "</th><th>Train s</th><th>Reason</th></tr></thead><tbody>\n";
    for (auto it = b.history.rbegin(); it != b.history.rend(); ++it) {
      const RecordRow& r = *it;
      o << "<tr class=\"run\" data-status=\"" << esc(r.status) << "\" data-team=\"" << esc(r.team) << "\"><td>"
        << r.seq << "</td><td>" << esc(r.team) << "</td><td class=\"" << (r.status == "ok" ? "st-ok" : "st-bad")
        << "\">" << esc(r.status) << "</td><td class=\"num\">" << fmt(r.score) << "</td><td class=\"num\">"
        << fmt(r.train_s, 1) << "</td><td class=\"reason\">" << esc(r.reason) << "</td></tr>\n";
    }
    o << "</tbody></table></div></section>\n";
  }
  o << "<p class=\"meta\">Competition definition SHA-256 " << esc(c.sha256) << ". Generated " << utc_now()
    << " by <code>frontier arena</code>.</p></body></html>\n";
  return o.str();
}

}  // namespace frontier
