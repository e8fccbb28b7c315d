// `frontier scale project`: what data-parallel training of a config would reach on R ranks over a given network,
// from this machine's measured step parts and a ring model of the collectives (docs/distributed.md).
//
//   StepParts p;  FRONTIER_RETURN_IF_ERROR(measure_step_parts(cfg, threads, steps, &p));  // train/step_parts.h
//   Link shm = link_from_comm_bench(comm_json);             // alpha, beta fitted to `frontier scale comm`
//   Projection x = project(p, /*ranks=*/8, /*ranks_per_node=*/8, shm, shm);
//
// The model, per optimizer step on R ranks (each rank: A micro-batches of B x T tokens, its own data):
//   t_step(R) = A t_fb + t_opt s(R) + t_rs + t_ag + t_sync
//   t_fb     forward + backward of one micro-batch (measured; ranks do not share cores)
//   t_opt    the whole optimizer (Muon's Polar Express + AdamW) on one rank (measured); s(R) the largest share of
//            its estimated cost any rank owns (dist/shard_plan.h), 1 for R = 1
//   t_rs, t_ag  reduce-scatter of the gradients (4 N bytes, 2 N with train.comm_dtype = bf16) and all-gather of the
//            fp32 weights (4 N bytes), ring:
//            (R - 1) alpha + (R - 1)/R x 4N / beta, beta the node's network link once R spans nodes (collectives
//            are hierarchical: reduced inside a node first, over links faster than the network), else the link
//            between ranks on one node (shared memory)
//   t_sync   the per-step liveness check, loss sum and stop decision: 3 small collectives, 3 (R - 1) alpha
// t_step puts the collectives after the backward; `overlap` gives the bound if the gradient reduce-scatter were
// fully hidden behind the last micro-batch's backward (2/3 of t_fb), which train.overlap_comm reaches only where
// the exchange's work is not done by the computing core: a NIC moving the bytes (RDMA), or a spare core progressing
// MPI. Over shared memory with one core per rank the copies and sums are that core's work (docs/distributed.md).
// tokens/s = R A B T / t_step; efficiency = tokens/s over R x the one-rank tokens/s.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace frontier {

// One training step on one rank, measured (train/step_parts.h fills it in: dist/ sits below train/).
struct StepParts {
  double t_fb = 0;   // s per micro-batch, forward + backward
  double t_opt = 0;  // s per optimizer step, the whole model on one rank
  int64_t n_params = 0, tokens_per_micro = 0, accum = 1;
  double grad_bytes = 4;  // per parameter on the wire: 4 (fp32) or 2 (train.comm_dtype = bf16)
  std::vector<double> shard_share;  // s(R) for R = 1..64 (index R - 1)
  int threads = 1;
  std::string describe;  // the model and precision measured
};

struct Link {
  double alpha = 0;  // s per message hop (latency)
  double beta = 0;   // bytes/s a link carries
  std::string name;
};

struct Projection {
  int ranks = 1, nodes = 1;
  std::string link;
  double t_comm = 0, t_opt = 0, t_step = 0, tokens_per_sec = 0, efficiency = 0, t_step_overlap = 0;
};

// alpha from the smallest reduce-scatter (per hop), beta from the largest one's bus bandwidth.
Status link_from_comm_bench(const nlohmann::json& comm, Link* out);
Projection project(const StepParts& p, int ranks, int ranks_per_node, const Link& intra, const Link& inter);
std::string projection_table(const StepParts& p, const std::vector<Projection>& rows);
// `frontier scale project`'s rows: 1, 2, 4 and 8 ranks on one node over shm, then 2 and 4 nodes of 8 ranks over
// each assumed network (25 Gb/s Ethernet, 100 Gb/s RoCE/IB, 400 Gb/s IB NDR: latency and 90% of the line rate,
// docs/distributed.md), and the same as JSON (scale project --json).
std::vector<Projection> standard_projections(const StepParts& p, const Link& shm);
nlohmann::json projections_json(const StepParts& p, const std::vector<Projection>& rows);

}  // namespace frontier
