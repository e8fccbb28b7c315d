// `frontier scale comm`: the collectives training uses (all-reduce, reduce-scatter, all-gather of fp32 buffers),
// timed between the ranks it runs on, by message size, as nccl-tests reports them: algorithm bandwidth = bytes /
// time, bus bandwidth = algbw x 2(R-1)/R (all-reduce) or (R-1)/R (reduce-scatter, all-gather), the rate each link
// must carry, comparable across rank counts. The smallest size's time is the latency. Run it under mpirun:
//
//   mpirun -np 2 frontier scale comm --json comm.json     # rank 0 prints the table
//
// The JSON feeds `frontier scale project --comm comm.json` (dist/scale_model.h), which fits alpha (latency) and
// beta (bandwidth) of the ring model to it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace frontier {

struct CommBenchOptions {
  double max_mb = 256;     // largest message, MB (4 KB up, x4 per size)
  double seconds = 0.3;    // time per (operation, size), at least 3 timed repetitions
};

struct CommBenchRow {
  std::string op;
  double bytes = 0, seconds = 0, algbw = 0, busbw = 0;  // median time; GB/s as bytes / 1e9
};

struct CommBenchReport {
  int ranks = 1;
  std::string hosts;  // "1 host" or "2 hosts"
  std::vector<CommBenchRow> rows;
  std::string table() const;
  nlohmann::json json() const;
};

Status run_comm_bench(const CommBenchOptions& o, CommBenchReport* out);  // every rank calls it

}  // namespace frontier
