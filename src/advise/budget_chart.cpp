#include "advise/budget_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace frontier {

namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

}  // namespace

std::string budget_chart_svg(const std::vector<nlohmann::json>& rows) {
  struct Pt {
    double budget, bpb;
    std::string note;
  };
  // series "data: label" -> budget -> latest point
  std::map<std::string, std::map<double, Pt>> series;
  for (const auto& r : rows) {
    if (!r.is_object() || !r.contains("budget") || !r.contains("val_bpb")) continue;
    if (!r["budget"].is_number() || !r["val_bpb"].is_number()) continue;
    std::string label = r.value("label", std::string("?")), note;
    if (label.rfind("depth ", 0) == 0) continue;  // a candidate trained to choose the advice: its own row says
    size_t p = label.find(" (");
    if (p != std::string::npos && label.back() == ')') {
      note = label.substr(p + 2, label.size() - p - 3);
      label = label.substr(0, p);
    }
    const double b = r["budget"].get<double>(), v = r["val_bpb"].get<double>();
    if (!(b > 0) || !std::isfinite(v)) continue;
    series[r.value("data", std::string("?")) + ": " + label][b] = {b, v, note};
  }
  double bmin = INFINITY, bmax = -INFINITY, vmin = INFINITY, vmax = -INFINITY;
  for (const auto& [name, pts] : series)
    for (const auto& [b, p] : pts) {
      bmin = std::min(bmin, b), bmax = std::max(bmax, b);
      vmin = std::min(vmin, p.bpb), vmax = std::max(vmax, p.bpb);
    }
  const int W = 760, H = 440, L = 70, R = 250, T = 40, B = 50;
  if (series.empty()) {
    bmin = 1, bmax = 10, vmin = 0, vmax = 1;
  }
  const double lb0 = std::log10(bmin) - 0.08, lb1 = std::log10(std::max(bmax, bmin * 1.5)) + 0.08;
  const double pad = std::max(0.02, 0.08 * (vmax - vmin));
  const double v0 = vmin - pad, v1 = vmax + pad;
  auto X = [&](double b) { return L + (std::log10(b) - lb0) / (lb1 - lb0) * (W - L - R); };
  auto Y = [&](double v) { return T + (v1 - v) / (v1 - v0) * (H - T - B); };
  char buf[512];
  std::string s;
  std::snprintf(buf, sizeof(buf),
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                "<text x=\"%d\" y=\"22\" font-size=\"15\">val_bpb against the training budget (lower is better)</text>\n",
                W, H, W, H, L);
  s += buf;
  // axes and ticks: budgets at 1-2-5 steps, val_bpb at round steps
  std::snprintf(buf, sizeof(buf), "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", L, H - B,
                W - R, H - B);
  s += buf;
  std::snprintf(buf, sizeof(buf), "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", L, T, L, H - B);
  s += buf;
  double last_x = -1e9;
  for (double b : {1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
                   14400.0, 28800.0, 86400.0}) {
    double lb = std::log10(b);
    if (lb < lb0 || lb > lb1 || X(b) - last_x < 42) continue;  // labels closer than ~6 characters would overlap
    last_x = X(b);
    std::string txt = b >= 3600 ? std::to_string(int(b / 3600)) + " h"
                      : b >= 60 ? std::to_string(int(b / 60)) + " min"
                                : std::to_string(int(b)) + " s";
    std::snprintf(buf, sizeof(buf),
                  "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/><text x=\"%.1f\" y=\"%d\" "
                  "text-anchor=\"middle\">%s</text>\n",
                  X(b), T, X(b), H - B, X(b), H - B + 16, txt.c_str());
    s += buf;
  }
  const double span = v1 - v0, step = span > 1 ? 0.2 : span > 0.4 ? 0.1 : span > 0.2 ? 0.05 : 0.02;
  for (double v = std::ceil(v0 / step) * step; v <= v1; v += step) {
    std::snprintf(buf, sizeof(buf),
                  "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/><text x=\"%d\" y=\"%.1f\" "
                  "text-anchor=\"end\">%.2f</text>\n",
                  L, Y(v), W - R, Y(v), L - 6, Y(v) + 4, v);
    s += buf;
  }
  std::snprintf(buf, sizeof(buf), "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">training budget (log scale)</text>\n",
                (L + W - R) / 2, H - 12);
  s += buf;
  static const char* colors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"};
  int i = 0;
  for (const auto& [name, pts] : series) {
    const char* c = colors[i % 7];
    std::string path;
    for (const auto& [b, p] : pts) {
      std::snprintf(buf, sizeof(buf), "%s%.1f,%.1f", path.empty() ? "M" : " L", X(b), Y(p.bpb));
      path += buf;
    }
    std::snprintf(buf, sizeof(buf), "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                  path.c_str(), c);
    s += buf;
    for (const auto& [b, p] : pts) {
      std::snprintf(buf, sizeof(buf), "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%s at %.0f s: "
                    "%.4f</title></circle>\n", X(b), Y(p.bpb), c, esc(name).c_str(), b, p.bpb);
      s += buf;
      if (!p.note.empty()) {
        std::snprintf(buf, sizeof(buf), "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"%s\">%s</text>\n",
                      X(b) + 5, Y(p.bpb) - 6, c, esc(p.note).c_str());
        s += buf;
      }
    }
    std::snprintf(buf, sizeof(buf),
                  "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/><text x=\"%d\" "
                  "y=\"%d\">%s</text>\n",
                  W - R + 12, T + 10 + 18 * i, W - R + 32, T + 10 + 18 * i, c, W - R + 38, T + 14 + 18 * i,
                  esc(name).c_str());
    s += buf;
    i++;
  }
  s += "</svg>\n";
  return s;
}

}  // namespace frontier
