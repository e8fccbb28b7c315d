// Rankings from the record, the leaderboard page (static HTML) and a localhost server for it.
//
//   std::vector<RecordRow> rows;  rec.rows(&rows);
//   std::vector<PhaseBoard> boards = build_leaderboard(competition, rows);
//   std::string html = leaderboard_html(competition, boards, verify_report);
//   FRONTIER_RETURN_IF_ERROR(serve_leaderboard(8080, [&](std::string* html) { return page(html); }));  // to SIGINT
//
// Ranking, per phase: each team's best "ok" run (lowest val_bpb); teams whose best scores are equal at the
// displayed precision (6 decimals) share a rank (1, 1, 3), and within a tie the earlier run is listed first. The
// history lists every run of the phase with its status and reason; the chart plots each team's best score so far
// after each of the phase's runs, as an inline SVG.
//
// The page is one self-contained file (no scripts, fonts or requests elsewhere), with a viewport meta tag and
// tables that scroll sideways on a narrow screen. What a person sees is tagged for the browser test:
// table#standings-<phase> rows carry data-rank / data-team / data-score, svg#chart-<phase> is the chart.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "arena/competition.h"
#include "arena/record.h"

namespace frontier {

struct Standing {
  int rank = 0;
  bool tie = false;
  std::string team, submission, kind, at;
  double score = 0;
  double val_bpb = 0, core = 0;  // the best run's parts (a composite phase shows them beside the score)
  int runs = 0;  // the team's runs in this phase, every status
};

struct PhaseBoard {
  Phase phase;
  std::vector<Standing> standings;
  std::vector<RecordRow> history;  // every run of the phase, in record order
};

std::vector<PhaseBoard> build_leaderboard(const Competition& c, const std::vector<RecordRow>& rows);
std::string leaderboard_text(const std::vector<PhaseBoard>& boards);  // for the terminal
std::string leaderboard_html(const Competition& c, const std::vector<PhaseBoard>& boards, const VerifyReport& v);

// Serves page() on http://127.0.0.1:port/ (GET / and /index.html; anything else 404) until SIGINT or SIGTERM.
// Only the loopback interface: publishing is copying the static file. cpp-httplib (Debian's libcpp-httplib-dev)
// with a pool of kServeThreads threads and 5-s read and write timeouts per connection, so a client that connects and
// sends nothing (or trickles bytes) holds one thread, never an honest request. page() runs one call at a time; an
// error from it (a record that no longer verifies) is a 503 with that one line, never a page.
constexpr int kServeThreads = 8;
Status serve_leaderboard(int port, const std::function<Status(std::string* html)>& page);

}  // namespace frontier
