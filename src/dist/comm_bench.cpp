#include "dist/comm_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "dist/comm.h"

namespace frontier {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

Status run_comm_bench(const CommBenchOptions& o, CommBenchReport* out) {
  Comm& c = Comm::world();
  const int R = c.size();
  out->ranks = R;
  std::vector<std::string> hosts;
  FRONTIER_RETURN_IF_ERROR(c.gather_strings(c.host(), &hosts, "the host names"));
  std::set<std::string> distinct(hosts.begin(), hosts.end());
  out->hosts = std::to_string(distinct.size()) + (distinct.size() == 1 ? " host" : " hosts");
  if (R == 1) return Status::error("frontier scale comm measures collectives between ranks: run it under mpirun, "
                                   "e.g. `mpirun -np 2 frontier scale comm`");
  const double frac = static_cast<double>(R - 1) / R;
  for (int64_t bytes = 4096; bytes <= static_cast<int64_t>(o.max_mb * 1e6); bytes *= 4) {
    const int64_t n = bytes / 4 / R * R;  // floats, a multiple of R so every rank's block is equal
    std::vector<float> buf(n, 1.0f);
    std::vector<int64_t> counts(R, n / R);
    for (const char* op : {"all_reduce", "reduce_scatter", "all_gather"}) {
      auto once = [&]() -> Status {
        const std::string what = std::string("the ") + op + " benchmark";
        if (op[4] == 'r') return c.allreduce_sum(buf.data(), n, what.c_str());
        if (op[0] == 'r') return c.reduce_scatter_sum(buf.data(), counts, what.c_str());
        return c.allgather(buf.data(), counts, what.c_str());
      };
      FRONTIER_RETURN_IF_ERROR(once());  // warm-up (connections, page faults)
      std::vector<double> times;
      auto t_all = Clock::now();
      // Everyone repeats until rank 0 says stop, so all ranks make the same number of calls.
      for (int64_t stop = 0; !stop;) {
        auto t0 = Clock::now();
        FRONTIER_RETURN_IF_ERROR(once());
        times.push_back(since(t0));
        stop = times.size() >= 3 && since(t_all) > o.seconds;
        FRONTIER_RETURN_IF_ERROR(c.bcast(&stop, sizeof(stop), "the benchmark's stop flag"));
      }
      std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
      CommBenchRow row;
      row.op = op;
      row.bytes = 4.0 * n;
      row.seconds = times[times.size() / 2];
      row.algbw = row.bytes / row.seconds / 1e9;
      row.busbw = row.algbw * (op[4] == 'r' ? 2 * frac : frac);
      out->rows.push_back(row);
    }
  }
  return ok_status();
}

std::string CommBenchReport::table() const {
  std::string s;
  char buf[200];
  std::snprintf(buf, sizeof(buf), "collectives between %d ranks on %s (fp32, median time; busbw as nccl-tests)\n",
                ranks, hosts.c_str());
  s += buf;
  std::snprintf(buf, sizeof(buf), "%-15s %12s %12s %12s %12s\n", "op", "bytes", "time_us", "algbw_GB/s",
                "busbw_GB/s");
  s += buf;
  for (const auto& r : rows) {
    std::snprintf(buf, sizeof(buf), "%-15s %12.0f %12.1f %12.3f %12.3f\n", r.op.c_str(), r.bytes, r.seconds * 1e6,
                  r.algbw, r.busbw);
    s += buf;
  }
  return s;
}

nlohmann::json CommBenchReport::json() const {
  nlohmann::json j = {{"ranks", ranks}, {"hosts", hosts}, {"rows", nlohmann::json::array()}};
  for (const auto& r : rows)
    j["rows"].push_back({{"op", r.op}, {"bytes", r.bytes}, {"seconds", r.seconds}, {"algbw_GBps", r.algbw},
                         {"busbw_GBps", r.busbw}});
  return j;
}

}  // namespace frontier
