// frontier scale (dist/, docs/distributed.md): comm, the collective speeds between ranks (under mpirun), and
// project, a config's tokens/s and efficiency projected to more ranks and networks.
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "dist/comm.h"
#include "dist/comm_bench.h"
#include "dist/scale_model.h"
#include "train/step_parts.h"
#include "util/file.h"

namespace frontier::cli {
namespace {

struct CommArgs {
  CommBenchOptions cbo;
  std::string json;
};

struct ProjectArgs {
  std::string config, comm, json;
  std::vector<std::string> sets;
  int threads = 1, steps = 3;
};

int run_comm(const CommArgs& a) {
  CommBenchReport rep;
  Status s = run_comm_bench(a.cbo, &rep);
  if (!s.ok()) return fail(s);
  if (Comm::world().root()) {
    std::printf("%s", rep.table().c_str());
    if (!a.json.empty() && !(s = write_file_atomic(a.json, rep.json().dump(2) + "\n")).ok()) return fail(s);
  }
  return 0;
}

int run_project(const ProjectArgs& a) {
  Config cfg;
  Status s = load_train_config(a.config, a.sets, &cfg);
  if (!s.ok()) return fail(s);
  Link shm{1e-6, 10e9, "assumed: shared memory, 10 GB/s, 1 us"};
  if (!a.comm.empty()) {
    std::string text;
    if (!(s = read_file(a.comm, &text)).ok()) return fail(s);
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!(s = link_from_comm_bench(j, &shm)).ok()) return fail(Status::error(a.comm + ": " + s.message()));
  }
  StepParts parts;
  if (!(s = measure_step_parts(cfg, a.threads, a.steps, &parts)).ok()) return fail(s);
  const std::vector<Projection> rows = standard_projections(parts, shm);
  std::printf("%s", projection_table(parts, rows).c_str());
  if (!a.json.empty()) {
    const nlohmann::json j = projections_json(parts, rows);
    if (!(s = write_file_atomic(a.json, j.dump(2) + "\n")).ok()) return fail(s);
  }
  return 0;
}

}  // namespace

void add_scale_commands(CLI::App& app, Commands& cmds) {
  auto* sc = app.add_subcommand("scale", "Data-parallel scaling: `mpirun -np R frontier scale comm` times the "
                                         "collectives between ranks; `frontier scale project` projects tokens/s "
                                         "and efficiency of a config on R ranks and networks from measured parts");
  sc->require_subcommand(1);
  auto ca = std::make_shared<CommArgs>();
  auto* sc_comm = sc->add_subcommand("comm", "All-reduce / reduce-scatter / all-gather bandwidth and latency by "
                                             "size between the ranks it runs on (run under mpirun)");
  sc_comm->add_option("--max-mb", ca->cbo.max_mb, "Largest message, MB")->check(CLI::Range(0.01, 4096.0))
      ->capture_default_str();
  sc_comm->add_option("--json", ca->json, "Also write the results here (input of `scale project --comm`)");
  cmds.push_back({sc_comm, [ca] { return run_comm(*ca); }, /*under_mpirun=*/true});

  auto pa = std::make_shared<ProjectArgs>();
  auto* sc_proj = sc->add_subcommand("project", "Measure a config's forward+backward and optimizer time here, then "
                                                "project R ranks over shared memory and networks (ring model)");
  sc_proj->add_option("--config", pa->config, "Config (TOML)");
  sc_proj->add_option("--set", pa->sets, "key=value override, repeatable");
  sc_proj->add_option("--comm", pa->comm, "`scale comm --json` file: the measured link for ranks on one node "
                                          "(default: an assumed 10 GB/s, 1 us)");
  sc_proj->add_option("--threads", pa->threads, "Threads per rank")->check(CLI::Range(1, 4096))->capture_default_str();
  sc_proj->add_option("--steps", pa->steps, "Timed steps")->check(CLI::Range(1, 1000))->capture_default_str();
  sc_proj->add_option("--json", pa->json, "Also write the projection here");
  cmds.push_back({sc_proj, [pa] { return run_project(*pa); }});
}

}  // namespace frontier::cli
