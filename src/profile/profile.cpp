#include "profile/profile.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <tuple>

#include "autograd/tape.h"
#include "calibrate/calibrate.h"
#include "kernels/gemm.h"
#include "model/gpt.h"
#include "model/model_config.h"
#include "optim/optim.h"
#include "train/recipe.h"
#include "train/schema.h"
#include "train/settings.h"
#include "util/file.h"

namespace frontier {

namespace {
bool is_leaf(const ProfEvent& e) { return e.phase == "fwd" || e.phase == "bwd" || e.phase == "optim"; }
}  // namespace

nlohmann::json aggregate_ops(const std::vector<ProfEvent>& events, int steps, double peak, double mem) {
  struct Acc {
    int64_t calls = 0, ns = 0;
    double flops = 0, bytes = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Acc> by;
  for (const auto& e : events) {
    if (!is_leaf(e)) continue;
    Acc& a = by[{e.phase, e.name, shape_string(e)}];
    a.calls++;
    a.ns += e.dur_ns;
    a.flops += e.flops;
    a.bytes += e.bytes;
  }
  const double ridge = peak / mem;  // FLOP per byte where the roofline turns
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [key, a] : by) {
    const double secs = a.ns * 1e-9, gflops = secs > 0 ? a.flops / secs / 1e9 : 0,
                 gbs = secs > 0 ? a.bytes / secs / 1e9 : 0, intensity = a.bytes > 0 ? a.flops / a.bytes : 0;
    const bool compute = intensity >= ridge;
    // % of the roofline at this intensity: GFLOP/s over min(peak, I * bandwidth), or GB/s over the bandwidth for an
    // op without FLOPs.
    const double roof = a.flops > 0 ? 100.0 * gflops / std::min(peak, intensity * mem) : 100.0 * gbs / mem;
    rows.push_back({{"phase", std::get<0>(key)}, {"op", std::get<1>(key)}, {"shape", std::get<2>(key)},
                    {"calls_per_step", static_cast<double>(a.calls) / steps}, {"ms_per_step", secs * 1e3 / steps},
                    {"gflop_per_step", a.flops / 1e9 / steps}, {"mb_per_step", a.bytes / 1e6 / steps},
                    {"gflops", gflops}, {"gbs", gbs}, {"intensity", intensity},
                    {"bound", compute ? "compute" : "memory"}, {"pct_roofline", roof}});
  }
  std::sort(rows.begin(), rows.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["ms_per_step"].get<double>() > b["ms_per_step"].get<double>();
  });
  return rows;
}

Status run_profile(const Config& cfg, const ProfileOptions& o, ProfileReport* out) {
  if (o.steps < 1) return Status::error("--steps must be >= 1");
  ModelShape shape;
  FRONTIER_RETURN_IF_ERROR(derive_model_shape(cfg, &shape));
  const TrainSettings set = train_settings(cfg);
  const int B = static_cast<int>(set.micro_batch), T = static_cast<int>(shape.seq_len);
  if (B < 1) return Status::error("train.micro_batch must be >= 1");
  if (set.threads > 0) omp_set_num_threads(static_cast<int>(set.threads));  // train.threads, as train runs it
  const int threads = omp_get_max_threads();
  Precision prec;
  FRONTIER_RETURN_IF_ERROR(resolve_precision(set.precision, &prec));
  const Ceilings ceil = machine_ceilings(threads, prec, o.peak_gflops, o.mem_gbs);

  Gpt gpt(shape);
  gpt.init_nanochat(1);
  OptimConfig oc;
  oc.matrix_lr = static_cast<float>(read_learning_rates(cfg).matrix);
  oc.ns_precision = prec;
  Optimizer opt(gpt, oc);
  std::mt19937 g(7);
  std::vector<int32_t> x(static_cast<size_t>(B) * T), y(x.size());
  for (auto& id : x) id = static_cast<int32_t>(g() % shape.vocab_size);
  for (auto& id : y) id = static_cast<int32_t>(g() % shape.vocab_size);

  auto step = [&] {
    ProfScope s("step", "step");
    {
      ProfScope z("zero_grad", "step");
      gpt.zero_grad();
    }
    Tape tape;
    tape.set_precision(prec);
    Var loss;
    {
      ProfScope f("forward", "step");
      gpt.set_timing_mtp_weights();
      loss = gpt.forward(tape, x.data(), y.data(), B, T);
    }
    {
      ProfScope b("backward", "step");
      tape.backward(loss);
    }
    {
      ProfScope p("optimizer", "step");
      opt.step(1.f, 0.9f, 0.f);
    }
    ProfScope c("tape.free", "step");
    tape.clear();
  };
  for (int i = 0; i < o.warmup; i++) step();
  Profiler prof;
  prof.start();
  for (int i = 0; i < o.steps; i++) step();
  prof.stop();
  out->events = prof.events();

  // Step-level totals from the container scopes; leaf time per phase from the ops.
  std::map<std::string, double> part_ms, leaf_ms;
  for (const auto& e : out->events) {
    if (e.phase == "step") part_ms[e.name] += e.dur_ns * 1e-6 / o.steps;
    if (is_leaf(e)) leaf_ms[e.phase] += e.dur_ns * 1e-6 / o.steps;
  }
  const double step_ms = part_ms["step"], tps = B * T / (step_ms * 1e-3);
  auto& J = out->json;
  J = nlohmann::json::object();
  J["machine"] = {{"threads", threads}, {"fma_peak_gflops", ceil.peak_gflops}, {"mem_gbs", ceil.mem_gbs},
                  {"ridge_flop_per_byte", ceil.peak_gflops / ceil.mem_gbs}, {"source", ceil.source},
                  {"peak_unit", ceil.unit}, {"precision", precision_name(prec)}, {"isa", isa_name(active_isa())},
                  {"gemm_kernel", gemm_kernel(prec).name}};
  J["config"] = {{"depth", shape.depth}, {"dim", shape.dim}, {"heads", shape.n_head}, {"kv_heads", shape.n_kv_head},
                 {"seq_len", T}, {"batch", B}, {"vocab", shape.vocab_size}, {"params_M", gpt.n_params() / 1e6},
                 {"steps", o.steps}, {"warmup", o.warmup}};
  J["summary"] = {{"step_ms", step_ms},
                  {"forward_ms", part_ms["forward"]},
                  {"backward_ms", part_ms["backward"]},
                  {"optimizer_ms", part_ms["optimizer"]},
                  {"zero_grad_ms", part_ms["zero_grad"]},
                  {"tape_free_ms", part_ms["tape.free"]},
                  {"untracked_forward_ms", part_ms["forward"] - leaf_ms["fwd"]},
                  {"untracked_backward_ms", part_ms["backward"] - leaf_ms["bwd"]},
                  {"untracked_optimizer_ms", part_ms["optimizer"] - leaf_ms["optim"]},
                  {"tokens_per_sec", tps},
                  {"model_flops_per_token", gpt.flops_per_token()},
                  {"mfu_pct", 100.0 * tps * gpt.flops_per_token() / (ceil.peak_gflops * 1e9)},
                  // every FLOP executed (attention's visible pairs with the recompute, Polar Express) per second
                  {"hfu_pct", 100.0 * (B * T * gpt.hardware_flops_per_token() + opt.muon_flops()) /
                                  (step_ms * 1e-3) / (ceil.peak_gflops * 1e9)}};
  J["ops"] = aggregate_ops(out->events, o.steps, ceil.peak_gflops, ceil.mem_gbs);
  double compute_ms = 0, memory_ms = 0, compute_gf = 0;
  for (const auto& r : J["ops"]) {
    if (r["bound"] == "compute") {
      compute_ms += r["ms_per_step"].get<double>();
      compute_gf += r["gflop_per_step"].get<double>();
    } else {
      memory_ms += r["ms_per_step"].get<double>();
    }
  }
  J["summary"]["compute_bound_ms"] = compute_ms;
  J["summary"]["memory_bound_ms"] = memory_ms;
  J["summary"]["compute_bound_gflops"] = compute_ms > 0 ? compute_gf / (compute_ms * 1e-3) : 0;
  return ok_status();
}

std::string ProfileReport::table() const {
  std::string s;
  char buf[512];
  const auto& m = json["machine"];
  const auto& c = json["config"];
  const auto& S = json["summary"];
  std::snprintf(buf, sizeof(buf),
                "config: depth %d, dim %d, heads %d/%d kv, seq %d, batch %d, vocab %d, %.1fM params; %d steps after "
                "%d warm-up\n",
                c["depth"].get<int>(), c["dim"].get<int>(), c["heads"].get<int>(), c["kv_heads"].get<int>(),
                c["seq_len"].get<int>(), c["batch"].get<int>(), c["vocab"].get<int>(), c["params_M"].get<double>(),
                c["steps"].get<int>(), c["warmup"].get<int>());
  s += buf;
  std::snprintf(buf, sizeof(buf),
                "machine: %d threads, peak %.1f GFLOP/s (%s), memory %.1f GB/s (%s); ridge %.1f FLOP/byte; %s\n\n",
                m["threads"].get<int>(), m["fma_peak_gflops"].get<double>(),
                m.value("peak_unit", std::string("?")).c_str(), m["mem_gbs"].get<double>(),
                m["source"].get<std::string>().c_str(), m["ridge_flop_per_byte"].get<double>(),
                m["gemm_kernel"].get<std::string>().c_str());
  s += buf;
  s += "phase op                  shape                      calls  ms/step   %step  GFLOP/s    GB/s  FLOP/B  "
       "bound    %roof\n";
  const double step_ms = S["step_ms"].get<double>();
  for (const auto& r : json["ops"]) {
    std::snprintf(buf, sizeof(buf), "%-5s %-19s %-25s %6.1f %8.2f %6.1f%% %8.1f %7.1f %7.1f  %-7s %5.1f%%\n",
                  r["phase"].get<std::string>().c_str(), r["op"].get<std::string>().c_str(),
                  r["shape"].get<std::string>().c_str(), r["calls_per_step"].get<double>(),
                  r["ms_per_step"].get<double>(), 100.0 * r["ms_per_step"].get<double>() / step_ms,
                  r["gflops"].get<double>(), r["gbs"].get<double>(), r["intensity"].get<double>(),
                  r["bound"].get<std::string>().c_str(), r["pct_roofline"].get<double>());
    s += buf;
  }
  std::snprintf(buf, sizeof(buf),
                "\nstep %.1f ms = forward %.1f + backward %.1f + optimizer %.1f + zero_grad %.1f + tape free %.1f\n"
                "outside op scopes (tape bookkeeping, allocation): forward %.1f ms, backward %.1f ms, optimizer %.1f "
                "ms\n"
                "compute-bound ops %.1f ms/step at %.1f GFLOP/s (%.1f%% of peak); memory-bound ops %.1f ms/step\n"
                "tokens/s %.0f, MFU %.1f%% (model FLOPs %.3g/token), HFU %.1f%% (every FLOP executed, Polar "
                "Express included)\n",
                step_ms, S["forward_ms"].get<double>(), S["backward_ms"].get<double>(),
                S["optimizer_ms"].get<double>(), S["zero_grad_ms"].get<double>(), S["tape_free_ms"].get<double>(),
                S["untracked_forward_ms"].get<double>(), S["untracked_backward_ms"].get<double>(),
                S["untracked_optimizer_ms"].get<double>(), S["compute_bound_ms"].get<double>(),
                S["compute_bound_gflops"].get<double>(),
                100.0 * S["compute_bound_gflops"].get<double>() / m["fma_peak_gflops"].get<double>(),
                S["memory_bound_ms"].get<double>(), S["tokens_per_sec"].get<double>(), S["mfu_pct"].get<double>(),
                S["model_flops_per_token"].get<double>(), S.value("hfu_pct", 0.0));
  s += buf;
  return s;
}

nlohmann::json chrome_trace(const std::vector<ProfEvent>& events) {
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "frontier profile"}}}});
  ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "ops"}}}});
  for (const auto& e : events) {
    nlohmann::json args = nlohmann::json::object();
    if (e.flops > 0) args["gflop"] = e.flops / 1e9;
    if (e.bytes > 0) args["mb"] = e.bytes / 1e6;
    if (e.dur_ns > 0 && e.flops > 0) args["gflops"] = e.flops / e.dur_ns;
    if (e.dur_ns > 0 && e.bytes > 0) args["gbs"] = e.bytes / e.dur_ns;
    if (e.mnk[0]) args["shape"] = shape_string(e);
    ev.push_back({{"name", e.name}, {"cat", e.phase}, {"ph", "X"}, {"ts", e.t0_ns / 1e3}, {"dur", e.dur_ns / 1e3},
                  {"pid", 1}, {"tid", 1}, {"args", args}});
  }
  return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}};
}

Status write_chrome_trace(const std::vector<ProfEvent>& events, const std::string& path) {
  return write_file_atomic(path, chrome_trace(events).dump() + "\n");
}

}  // namespace frontier
