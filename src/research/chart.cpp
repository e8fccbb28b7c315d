#include "research/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace frontier {

namespace {
std::string xml_escape(const std::string& in) {
  std::string o;
  for (char c : in) o += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  return o;
}
}  // namespace

std::string progress_svg(const std::vector<nlohmann::json>& ledger) {
  const double W = 760, H = 400, L = 70, R = 20, T = 30, B = 50;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& e : ledger)
    if (e.value("val_bpb", 0.0) > 0 && e["status"] != "crash" && e["status"] != "rejected") {
      lo = std::min(lo, e["val_bpb"].get<double>());
      hi = std::max(hi, e["val_bpb"].get<double>());
    }
  if (!(lo < INFINITY)) lo = 0, hi = 1;
  if (hi - lo < 1e-6) lo -= 0.01, hi += 0.01;
  const double pad = 0.05 * (hi - lo);
  lo -= pad, hi += pad;
  const size_t n = std::max<size_t>(ledger.size(), 2);
  auto X = [&](double i) { return L + (W - L - R) * i / (n - 1); };
  auto Y = [&](double v) { return T + (H - T - B) * (hi - v) / (hi - lo); };
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
                "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                "<text x=\"%.0f\" y=\"18\" font-size=\"14\">frontier research: val_bpb per trial (lower is better)</text>\n",
                W, H, L);
  s += buf;
  for (int k = 0; k <= 4; k++) {  // y grid
    double v = lo + (hi - lo) * k / 4;
    std::snprintf(buf, sizeof(buf),
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
                  "text-anchor=\"end\">%.4f</text>\n", L, Y(v), W - R, Y(v), L - 6, Y(v) + 4, v);
    s += buf;
  }
  std::snprintf(buf, sizeof(buf), "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">trial</text>\n", (L + W - R) / 2, H - 12);
  s += buf;
  // Running best line over kept trials (baseline mean first).
  std::string path;
  double best = INFINITY, base_sum = 0;
  int base_n = 0;
  for (size_t i = 0; i < ledger.size(); i++) {
    const auto& e = ledger[i];
    if (e.value("phase", "") == "baseline" && e["status"] == "keep") {
      base_sum += e["val_bpb"].get<double>();
      best = base_sum / ++base_n;
    } else if (e["status"] == "keep") {
      best = e["val_bpb"].get<double>();
    }
    if (best < INFINITY) {
      std::snprintf(buf, sizeof(buf), "%s%.1f,%.1f", path.empty() ? "M" : " L", X(i), Y(best));
      path += buf;
    }
  }
  if (!path.empty()) s += "<path d=\"" + path + "\" fill=\"none\" stroke=\"#2a7\" stroke-width=\"2\"/>\n";
  for (size_t i = 0; i < ledger.size(); i++) {
    const auto& e = ledger[i];
    const std::string st = e["status"];
    std::snprintf(buf, sizeof(buf), "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#666\">%zu</text>\n", X(i),
                  H - B + 16, i);
    s += buf;
    if (st == "crash" || st == "rejected" || st == "interrupted" || st == "running") {  // no val_bpb
      double y = H - B - 8;
      std::snprintf(buf, sizeof(buf), "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#c33\" "
                    "font-size=\"16\">x</text>\n", X(i), y);
    } else {
      const bool base = e.value("phase", "") == "baseline";
      const char* fill = base ? "#36c" : st == "keep" ? "#2a7" : st == "screen" ? "none" : "#999";
      std::snprintf(buf, sizeof(buf), "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\" stroke=\"%s\"><title>%s"
                    "</title></circle>\n", X(i), Y(e["val_bpb"].get<double>()), st == "keep" && !base ? 6 : 4, fill,
                    st == "screen" ? "#999" : fill, xml_escape(e.value("description", "")).c_str());
    }
    s += buf;
  }
  s += "<text x=\"480\" y=\"18\" fill=\"#36c\">&#9679; baseline</text><text x=\"560\" y=\"18\" fill=\"#2a7\">&#9679; "
       "kept</text><text x=\"620\" y=\"18\" fill=\"#999\">&#9679; discarded</text><text x=\"700\" y=\"18\" "
       "fill=\"#c33\">x crash</text>\n</svg>\n";
  return s;
}

}  // namespace frontier
