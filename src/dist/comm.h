// The ranks of a data-parallel job, over MPI (Debian's OpenMPI; docs/distributed.md). One process is a world of
// one and needs no MPI runtime: MPI_Init runs only when the process was started by mpirun (its environment says
// so), and a binary built without MPI refuses an mpirun launch with a one-line error.
//
//   FRONTIER_RETURN_IF_ERROR(Comm::init(&argc, &argv));   // main(), before anything else
//   Comm& c = Comm::world();
//   if (c.root()) write_the_log();
//   FRONTIER_RETURN_IF_ERROR(c.reduce_scatter_sum(grads, counts, "gradients"));   // every rank calls it
//
// No collective hangs: each is started nonblocking and polled against a timeout (set_timeout). A rank that stops
// answering is named by the liveness check that precedes the gradient exchange (arrive): rank 0 collects one small
// message per rank and names the ones missing; the others wait for rank 0's verdict with the same timeout. A timed
// out collective is an error naming the operation and the step; the caller ends the job (abort_job), which takes
// every rank down (mpirun reports the abort). Errors come back as Status; MPI's own error handler is replaced by
// MPI_ERRORS_RETURN so that a failed call is a message, not an abort inside the library.
//
// Time spent inside collectives (waiting included) is summed in stats(): the summary prints it per step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

struct CommStats {
  double seconds = 0;  // wall time inside collectives, waiting for other ranks included
  double bytes = 0;    // payload bytes this rank sent into collectives
  int64_t calls = 0;
};

// A collective in flight (Comm::start_*): test() it while computing, then wait() for it. Empty = none.
struct CommRequest {
  std::shared_ptr<void> mpi;  // the MPI_Request (mpi.h stays out of this header)
  std::vector<int> args;      // MPI's count and displacement arrays, read by MPI until the request completes
  const char* what = nullptr;
  bool active() const { return mpi != nullptr; }
};

class Comm {
 public:
  // MPI_Init when launched by mpirun (OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_SIZE in the environment), else a world
  // of one. Idempotent. An error when mpirun started a binary built without MPI.
  static Status init(int* argc, char*** argv);
  static void finalize();                 // MPI_Finalize if initialised (main's normal exit)
  [[noreturn]] static void abort_job(int code);  // MPI_Abort: every rank ends (a hang or a one-rank failure)
  static Comm& world();
  static bool launched_by_mpirun();
  static bool built_with_mpi();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }
  bool distributed() const { return size_ > 1; }
  const std::string& host() const { return host_; }
  std::string describe() const;  // "rank 1 of 2 on host h (pid 123)"

  void set_timeout(double seconds) { timeout_ = seconds; }
  double timeout() const { return timeout_; }
  const CommStats& stats() const { return stats_; }
  void reset_stats() { stats_ = CommStats(); }

  // Collectives (every rank calls each, in the same order). `what` names the operation in a timeout error.
  Status allreduce_sum(double* x, int n, const char* what);
  Status allreduce_sum(float* x, int64_t n, const char* what);
  Status allreduce_max(int64_t* x, int n, const char* what);
  // In place over one buffer split into size() consecutive blocks of counts[r] floats: rank r's block becomes the
  // sum over ranks of that block (reduce-scatter), or every block becomes its owner's (all-gather).
  Status reduce_scatter_sum(float* buf, const std::vector<int64_t>& counts, const char* what);
  Status allgather(float* buf, const std::vector<int64_t>& counts, const char* what);
  // Root's rank-r block of `all` (counts[r] floats, consecutive) from rank r's `mine`; `all` is used on root only.
  Status gather(const float* mine, float* all, const std::vector<int64_t>& counts, const char* what);
  Status bcast(void* data, int64_t bytes, const char* what);  // from root

  // Nonblocking forms, for overlapping communication with computation (dist/grad_exchange.h): start_* returns at
  // once; test() drives MPI's progress (OpenMPI advances a collective only inside MPI calls: without them nothing
  // moves) and says whether it is done; wait() polls it to the end against the timeout. Time inside each call goes
  // to stats(); the buffers must stay untouched until the request is done. With one rank they complete at once.
  Status start_reduce_scatter_sum(float* buf, const std::vector<int64_t>& counts, const char* what, CommRequest* r);
  Status start_allreduce_sum(float* buf, int64_t n, const char* what, CommRequest* r);
  Status start_allgather(float* buf, const std::vector<int64_t>& counts, const char* what, CommRequest* r);
  // Rank r gets send[block r] (send_counts[r] 16-bit words, consecutive) of every rank q into recv[q * recv_each],
  // recv_each = send_counts[rank()] on every rank: the exchange of a bf16 reduce-scatter, summed by the caller.
  Status start_alltoall_u16(const uint16_t* send, const std::vector<int64_t>& send_counts, uint16_t* recv,
                            const char* what, CommRequest* r);
  Status test(CommRequest* r, bool* done);
  Status wait(CommRequest* r);
  Status bcast(std::string* s, const char* what);
  // Root gets every rank's string (in rank order); others get an empty vector.
  Status gather_strings(const std::string& mine, std::vector<std::string>* all, const char* what);

  // Liveness check before a step's gradient exchange: every rank reports that it reached `step`; rank 0 names the
  // ranks that do not within the timeout ("rank 1 (host h, pid p) has not finished step 12 within 60 s").
  Status arrive(int64_t step, const char* phase);

  // Every rank passes its own status; all get the same verdict: ok only if every rank was ok, else the first
  // failing rank's message (prefixed with its rank when the ranks disagree). Non-root ranks then stay quiet
  // (quiet_errors()): root prints the one line.
  Status agree(const Status& mine);
  // An error returned now is the same on every rank (agreed, or reached in step): rank 0 prints it and the ranks
  // end normally. Any other error ends the job with abort_job (its rank may be the only one that knows).
  bool agreed() const { return agreed_; }
  Status share(const Status& root_verdict);  // rank 0's status, on every rank (agreed)
  bool quiet_errors() const { return agreed_ && !root(); }
  void mark_agreed() { agreed_ = true; }

 private:
  Comm() = default;
  Status wait(void* request, const char* what);  // MPI_Request*, polled against the timeout
  Status collective(double bytes_sent, const char* what, const std::function<int(void*)>& start);
  Status start(double bytes_sent, const char* what, const std::function<int(void*)>& start, CommRequest* r);
  Status fail(int mpi_code, const char* what) const;
  int rank_ = 0, size_ = 1;
  std::string host_;
  double timeout_ = 600;
  CommStats stats_;
  bool agreed_ = false;
  int64_t step_ = -1;  // the step the last arrive() named: timeout errors say where the job was
};

}  // namespace frontier
