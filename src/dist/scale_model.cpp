#include "dist/scale_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace frontier {

Status link_from_comm_bench(const nlohmann::json& comm, Link* out) {
  if (!comm.is_object() || !comm.contains("rows") || !comm["rows"].is_array() || !comm.contains("ranks"))
    return Status::error("not a `frontier scale comm --json` file (no ranks/rows)");
  const int R = comm["ranks"].get<int>();
  double small_t = 0, small_b = 1e300, big_bw = 0, big_b = 0;
  for (const auto& r : comm["rows"]) {
    if (r.value("op", "") != "reduce_scatter") continue;
    const double b = r.value("bytes", 0.0), t = r.value("seconds", 0.0), bw = r.value("busbw_GBps", 0.0);
    if (b < small_b) small_b = b, small_t = t;
    if (b > big_b) big_b = b, big_bw = bw;
  }
  if (big_b == 0 || R < 2) return Status::error("the comm benchmark file has no reduce_scatter rows for >= 2 ranks");
  out->alpha = small_t / (R - 1);
  out->beta = big_bw * 1e9;
  char buf[128];
  std::snprintf(buf, sizeof(buf), "measured: %s, %d ranks (alpha %.1f us, beta %.3g GB/s)",
                comm.value("hosts", std::string("?")).c_str(), R, out->alpha * 1e6, out->beta / 1e9);
  out->name = buf;
  return ok_status();
}

Projection project(const StepParts& p, int ranks, int ranks_per_node, const Link& intra, const Link& inter) {
  Projection x;
  x.ranks = ranks;
  x.nodes = (ranks + ranks_per_node - 1) / ranks_per_node;
  // Across nodes the network link is the bottleneck: collectives are hierarchical (reduced inside a node first,
  // over links much faster than the network on a real server), so the inter-node ring sets the time.
  const Link& l = x.nodes > 1 ? inter : intra;
  x.link = ranks == 1 ? "-" : (x.nodes > 1 ? inter.name : intra.name);
  const double R = ranks;
  auto ring = [&](double S) { return (R - 1) * l.alpha + (R - 1) / R * S / l.beta; };
  const double t_rs = ranks > 1 ? ring(p.grad_bytes * p.n_params) : 0, t_ag = ranks > 1 ? ring(4.0 * p.n_params) : 0;
  const double t_sync = ranks > 1 ? 3 * (R - 1) * l.alpha : 0;
  x.t_comm = t_rs + t_ag + t_sync;
  x.t_opt = p.t_opt * p.shard_share[std::min(ranks, 64) - 1];
  const double compute = p.accum * p.t_fb;
  x.t_step = compute + x.t_opt + x.t_comm;
  x.t_step_overlap = compute + x.t_opt + std::max(0.0, t_rs - 2.0 / 3.0 * p.t_fb) + t_ag + t_sync;
  x.tokens_per_sec = R * p.accum * p.tokens_per_micro / x.t_step;
  const double one = p.accum * p.tokens_per_micro / (compute + p.t_opt);
  x.efficiency = x.tokens_per_sec / (R * one);
  return x;
}

std::string projection_table(const StepParts& p, const std::vector<Projection>& rows) {
  std::string s;
  char buf[400];
  std::snprintf(buf, sizeof(buf), "measured here: %s\n  forward+backward %.1f ms per micro-batch, optimizer %.1f ms "
                "per step (one rank, whole model), %.2fM params = %.1f MB of gradients\n",
                p.describe.c_str(), 1e3 * p.t_fb, 1e3 * p.t_opt, p.n_params / 1e6, 1e-6 * p.grad_bytes * p.n_params);
  s += buf;
  std::snprintf(buf, sizeof(buf), "%6s %6s %9s %9s %9s %11s %11s %8s %12s  %s\n", "ranks", "nodes", "comm_ms",
                "optim_ms", "step_ms", "tokens/s", "efficiency", "overlap", "(tokens/s)", "link");
  s += buf;
  for (const auto& x : rows) {
    const double tps_ov = x.ranks * p.accum * p.tokens_per_micro / x.t_step_overlap;
    std::snprintf(buf, sizeof(buf), "%6d %6d %9.1f %9.1f %9.1f %11.0f %10.1f%% %8s %12.0f  %s\n", x.ranks, x.nodes,
                  1e3 * x.t_comm, 1e3 * x.t_opt, 1e3 * x.t_step, x.tokens_per_sec, 100 * x.efficiency, "",
                  tps_ov, x.link.c_str());
    s += buf;
  }
  return s;
}

std::vector<Projection> standard_projections(const StepParts& p, const Link& shm) {
  const Link nets[3] = {{15e-6, 0.9 * 25e9 / 8, "assumed: 25 Gb/s Ethernet (TCP), 15 us"},
                        {5e-6, 0.9 * 100e9 / 8, "assumed: 100 Gb/s (RoCE/IB), 5 us"},
                        {3e-6, 0.9 * 400e9 / 8, "assumed: 400 Gb/s (IB NDR), 3 us"}};
  std::vector<Projection> rows;
  for (int r : {1, 2, 4, 8}) rows.push_back(project(p, r, 8, shm, shm));
  for (const Link& n : nets)
    for (int nodes : {2, 4}) rows.push_back(project(p, 8 * nodes, 8, shm, n));
  return rows;
}

nlohmann::json projections_json(const StepParts& p, const std::vector<Projection>& rows) {
  nlohmann::json j = {{"measured", p.describe}, {"t_fb", p.t_fb}, {"t_opt", p.t_opt},
                      {"n_params", p.n_params}, {"rows", nlohmann::json::array()}};
  for (const auto& x : rows)
    j["rows"].push_back({{"ranks", x.ranks}, {"nodes", x.nodes}, {"link", x.link}, {"t_comm", x.t_comm},
                         {"t_opt", x.t_opt}, {"t_step", x.t_step}, {"tokens_per_sec", x.tokens_per_sec},
                         {"efficiency", x.efficiency}, {"t_step_overlap", x.t_step_overlap}});
  return j;
}

}  // namespace frontier
