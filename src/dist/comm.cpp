#include "dist/comm.h"

#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <thread>

#include "util/stop_signal.h"

#ifdef FRONTIER_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only: OpenMPI's deprecated C++ bindings need libmpi_cxx
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace frontier {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool g_initialised = false;   // MPI_Init ran (and MPI_Finalize has not)
std::vector<std::string> g_who;  // per rank: "host h, pid p" (every rank holds all)

}  // namespace

bool Comm::built_with_mpi() {
#ifdef FRONTIER_HAVE_MPI
  return true;
#else
  return false;
#endif
}

// OpenMPI's mpirun sets OMPI_COMM_WORLD_SIZE (and PMIx's PMIX_RANK); MPICH's and Slurm's PMI launchers set PMI_SIZE.
bool Comm::launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_SIZE");
}

Comm& Comm::world() {
  static Comm c;
  return c;
}

std::string Comm::describe() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " (" +
         (rank_ < static_cast<int>(g_who.size()) ? g_who[rank_] : "pid " + std::to_string(getpid())) + ")";
}

Status Comm::init(int* argc, char*** argv) {
  Comm& c = world();
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  c.host_ = host;
  if (!launched_by_mpirun() || g_initialised) return ok_status();
#ifndef FRONTIER_HAVE_MPI
  (void)argc;
  (void)argv;
  return Status::error("this process was started by mpirun, but this frontier was built without MPI; install "
                       "libopenmpi-dev (scripts/install_deps.sh) and rebuild (scripts/build.sh)");
#else
  int provided = 0;
  // FUNNELED: only the main thread calls MPI; OpenMP workers never do.
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    return Status::error("MPI_Init failed (is this mpirun OpenMPI's, from the same installation as libmpi?)");
  g_initialised = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &c.size_);
  // Who is who, for errors that name a rank.
  char me[128];
  std::snprintf(me, sizeof(me), "host %.64s, pid %d", host, static_cast<int>(getpid()));
  std::vector<char> all(static_cast<size_t>(c.size_) * sizeof(me));
  if (MPI_Allgather(me, sizeof(me), MPI_CHAR, all.data(), sizeof(me), MPI_CHAR, MPI_COMM_WORLD) != MPI_SUCCESS)
    return Status::error("MPI_Allgather of the ranks' host names failed at start-up");
  g_who.clear();
  for (int r = 0; r < c.size_; r++) g_who.emplace_back(all.data() + r * sizeof(me));
  return ok_status();
#endif
}

void Comm::finalize() {
#ifdef FRONTIER_HAVE_MPI
  if (g_initialised) MPI_Finalize();
#endif
  g_initialised = false;
}

void Comm::abort_job(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
#ifdef FRONTIER_HAVE_MPI
  if (g_initialised) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

Status Comm::fail(int mpi_code, const char* what) const {
  std::string msg = "rank " + std::to_string(rank_) + ": MPI failed in " + what;
#ifdef FRONTIER_HAVE_MPI
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(mpi_code, text, &len) == MPI_SUCCESS) msg += ": " + std::string(text, len);
#else
  (void)mpi_code;
#endif
  return Status::error(msg);
}

// Polls one request: spinning for the first 10 ms (a collective between busy ranks usually completes in that time
// and each MPI_Test drives OpenMPI's progress), then with 50 us sleeps so that a rank waiting on a slow peer does
// not take a core from it when ranks share cores.
Status Comm::wait(void* request, const char* what) {
#ifdef FRONTIER_HAVE_MPI
  MPI_Request* req = static_cast<MPI_Request*>(request);
  const auto t0 = Clock::now();
  int done = 0;
  for (int64_t i = 0;; i++) {
    int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return fail(rc, what);
    if (done) break;
    double t = since(t0);
    if (t > timeout_) {
      char buf[256];
      std::snprintf(buf, sizeof(buf), " did not complete within %.0f s", timeout_);
      return Status::error("rank " + std::to_string(rank_) + ": " + what + (step_ >= 0 ? " at step " +
                           std::to_string(step_) : std::string()) + buf + ": another rank is dead or hung (raise "
                           "train.comm_timeout_seconds if a step legitimately takes longer)");
    }
    if (t > 0.01) sched_yield();
  }
  return ok_status();
#else
  (void)request;
  (void)what;
  return ok_status();
#endif
}

#ifdef FRONTIER_HAVE_MPI
namespace {
// MPI counts are ints: a buffer past 2^31 elements is refused rather than truncated.
Status check_count(int64_t n, const char* what) {
  if (n < 0 || n > INT_MAX)
    return Status::error(std::string(what) + ": " + std::to_string(n) + " elements is more than one MPI call takes");
  return ok_status();
}
// A buffer split into consecutive blocks of counts[r] floats: MPI's int counts and displacements, the total checked.
Status blocks(const std::vector<int64_t>& counts, const char* what, std::vector<int>* c, std::vector<int>* d) {
  int64_t total = 0;
  for (int64_t n : counts) total += n;
  FRONTIER_RETURN_IF_ERROR(check_count(total, what));
  c->assign(counts.begin(), counts.end());
  d->assign(counts.size(), 0);
  for (size_t r = 1; r < counts.size(); r++) (*d)[r] = (*d)[r - 1] + (*c)[r - 1];
  return ok_status();
}
}  // namespace
#endif

// Starts one nonblocking collective (start() fills the MPI_Request and returns MPI's code), then polls it against the
// timeout; the time inside, waiting included, and the bytes sent go into stats().
Status Comm::collective(double bytes_sent, const char* what, const std::function<int(void*)>& start_fn) {
  CommRequest r;
  FRONTIER_RETURN_IF_ERROR(start(bytes_sent, what, start_fn, &r));
  return wait(&r);
}

Status Comm::start(double bytes_sent, const char* what, const std::function<int(void*)>& start_fn, CommRequest* r) {
#ifdef FRONTIER_HAVE_MPI
  const auto t0 = Clock::now();
  auto req = std::make_shared<MPI_Request>(MPI_REQUEST_NULL);
  const int rc = start_fn(req.get());
  stats_.seconds += since(t0);
  stats_.bytes += bytes_sent;
  stats_.calls++;
  if (rc != MPI_SUCCESS) return fail(rc, what);
  r->mpi = req;
  r->what = what;
  return ok_status();
#else
  (void)bytes_sent;
  (void)what;
  (void)start_fn;
  (void)r;
  return ok_status();
#endif
}

Status Comm::test(CommRequest* r, bool* done) {
  *done = true;
  if (!r->active()) return ok_status();
#ifdef FRONTIER_HAVE_MPI
  const auto t0 = Clock::now();
  int flag = 0;
  const int rc = MPI_Test(static_cast<MPI_Request*>(r->mpi.get()), &flag, MPI_STATUS_IGNORE);
  stats_.seconds += since(t0);
  if (rc != MPI_SUCCESS) return fail(rc, r->what);
  *done = flag != 0;
  if (*done) *r = CommRequest();
#endif
  return ok_status();
}

Status Comm::wait(CommRequest* r) {
  if (!r->active()) return ok_status();
  const auto t0 = Clock::now();
  Status s = wait(r->mpi.get(), r->what);
  stats_.seconds += since(t0);
  *r = CommRequest();
  return s;
}

#ifdef FRONTIER_HAVE_MPI
#define FRONTIER_REQ static_cast<MPI_Request*>(req)
#endif

Status Comm::allreduce_sum(double* x, int n, const char* what) {
  if (size_ == 1) return ok_status();
#ifdef FRONTIER_HAVE_MPI
  return collective(8.0 * n, what, [&](void* req) {
    return MPI_Iallreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, FRONTIER_REQ);
  });
#else
  return ok_status();
#endif
}

Status Comm::allreduce_sum(float* x, int64_t n, const char* what) {
  CommRequest r;
  FRONTIER_RETURN_IF_ERROR(start_allreduce_sum(x, n, what, &r));
  return wait(&r);
}

Status Comm::start_allreduce_sum(float* x, int64_t n, const char* what, CommRequest* r) {
  if (size_ == 1) return ok_status();
#ifdef FRONTIER_HAVE_MPI
  FRONTIER_RETURN_IF_ERROR(check_count(n, what));
  return start(4.0 * n, what, [&](void* req) {
    return MPI_Iallreduce(MPI_IN_PLACE, x, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, FRONTIER_REQ);
  }, r);
#else
  return ok_status();
#endif
}

Status Comm::allreduce_max(int64_t* x, int n, const char* what) {
  if (size_ == 1) return ok_status();
#ifdef FRONTIER_HAVE_MPI
  return collective(8.0 * n, what, [&](void* req) {
    return MPI_Iallreduce(MPI_IN_PLACE, x, n, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD, FRONTIER_REQ);
  });
#else
  return ok_status();
#endif
}

// MPI_IN_PLACE reduce-scatter reads the whole buffer and leaves rank r's result at its *start*: it is moved to the
// block's own offset (the rest of the buffer holds partial sums nobody reads).
Status Comm::reduce_scatter_sum(float* buf, const std::vector<int64_t>& counts, const char* what) {
  CommRequest r;
  FRONTIER_RETURN_IF_ERROR(start_reduce_scatter_sum(buf, counts, what, &r));
  FRONTIER_RETURN_IF_ERROR(wait(&r));
  int64_t at = 0;
  for (int q = 0; q < rank_; q++) at += counts[q];
  if (size_ > 1 && at != 0) std::memmove(buf + at, buf, sizeof(float) * counts[rank_]);
  return ok_status();
}

// In place as above, but the caller moves its block (rank r's result lands at buf[0, counts[r])).
Status Comm::start_reduce_scatter_sum(float* buf, const std::vector<int64_t>& counts, const char* what,
                                      CommRequest* r) {
  if (size_ == 1) return ok_status();
#ifdef FRONTIER_HAVE_MPI
  std::vector<int> c, d;
  FRONTIER_RETURN_IF_ERROR(blocks(counts, what, &c, &d));
  r->args = c;
  return start(4.0 * (d.back() + c.back()), what, [&](void* req) {
    return MPI_Ireduce_scatter(MPI_IN_PLACE, buf, r->args.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, FRONTIER_REQ);
  }, r);
#else
  return ok_status();
#endif
}

Status Comm::allgather(float* buf, const std::vector<int64_t>& counts, const char* what) {
  CommRequest r;
  FRONTIER_RETURN_IF_ERROR(start_allgather(buf, counts, what, &r));
  return wait(&r);
}

Status Comm::start_allgather(float* buf, const std::vector<int64_t>& counts, const char* what, CommRequest* r) {
  if (size_ == 1) return ok_status();
#ifdef FRONTIER_HAVE_MPI
  std::vector<int> c, d;
  FRONTIER_RETURN_IF_ERROR(blocks(counts, what, &c, &d));
  r->args = c;
  r->args.insert(r->args.end(), d.begin(), d.end());
  const int R = size_;
  return start(4.0 * counts[rank_], what, [&](void* req) {
    return MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, r->args.data(), r->args.data() + R, MPI_FLOAT,
                           MPI_COMM_WORLD, FRONTIER_REQ);
  }, r);
#else
  return ok_status();
#endif
}

Status Comm::start_alltoall_u16(const uint16_t* send, const std::vector<int64_t>& send_counts, uint16_t* recv,
                                const char* what, CommRequest* r) {
  if (size_ == 1) {
    std::memcpy(recv, send, sizeof(uint16_t) * send_counts[0]);
    return ok_status();
  }
#ifdef FRONTIER_HAVE_MPI
  std::vector<int> c, d;
  FRONTIER_RETURN_IF_ERROR(blocks(send_counts, what, &c, &d));
  const int R = size_, mine = c[rank_];
  FRONTIER_RETURN_IF_ERROR(check_count(int64_t(mine) * R, what));
  r->args = c;  // send counts | send displacements | receive counts | receive displacements
  r->args.insert(r->args.end(), d.begin(), d.end());
  for (int q = 0; q < R; q++) r->args.push_back(mine);
  for (int q = 0; q < R; q++) r->args.push_back(q * mine);
  return start(2.0 * (d.back() + c.back() - mine), what, [&](void* req) {
    const int* a = r->args.data();
    return MPI_Ialltoallv(send, a, a + R, MPI_UINT16_T, recv, a + 2 * R, a + 3 * R, MPI_UINT16_T, MPI_COMM_WORLD,
                          FRONTIER_REQ);
  }, r);
#else
  return ok_status();
#endif
}

Status Comm::gather(const float* mine, float* all, const std::vector<int64_t>& counts, const char* what) {
  if (size_ == 1) {
    if (all != mine) std::memcpy(all, mine, sizeof(float) * counts[0]);
    return ok_status();
  }
#ifdef FRONTIER_HAVE_MPI
  std::vector<int> c, d;
  FRONTIER_RETURN_IF_ERROR(blocks(counts, what, &c, &d));
  return collective(4.0 * counts[rank_], what, [&](void* req) {
    return MPI_Igatherv(mine, c[rank_], MPI_FLOAT, all, c.data(), d.data(), MPI_FLOAT, 0, MPI_COMM_WORLD,
                        FRONTIER_REQ);
  });
#else
  return ok_status();
#endif
}

Status Comm::bcast(void* data, int64_t bytes, const char* what) {
  if (size_ == 1) return ok_status();
#ifdef FRONTIER_HAVE_MPI
  FRONTIER_RETURN_IF_ERROR(check_count(bytes, what));
  return collective(root() ? static_cast<double>(bytes) : 0.0, what, [&](void* req) {
    return MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD, FRONTIER_REQ);
  });
#else
  return ok_status();
#endif
}

Status Comm::bcast(std::string* s, const char* what) {
  if (size_ == 1) return ok_status();
  int64_t n = static_cast<int64_t>(s->size());
  FRONTIER_RETURN_IF_ERROR(bcast(&n, sizeof(n), what));
  s->resize(static_cast<size_t>(n));
  return n > 0 ? bcast(s->data(), n, what) : ok_status();
}

Status Comm::gather_strings(const std::string& mine, std::vector<std::string>* all, const char* what) {
  all->clear();
  if (size_ == 1) {
    all->push_back(mine);
    return ok_status();
  }
#ifdef FRONTIER_HAVE_MPI
  int64_t n = static_cast<int64_t>(mine.size());
  std::vector<int64_t> lens(size_);  // filled on root only
  FRONTIER_RETURN_IF_ERROR(collective(8.0, what, [&](void* req) {
    return MPI_Igather(&n, 1, MPI_INT64_T, lens.data(), 1, MPI_INT64_T, 0, MPI_COMM_WORLD, FRONTIER_REQ);
  }));
  std::vector<int> c, d;
  FRONTIER_RETURN_IF_ERROR(blocks(lens, what, &c, &d));
  std::string joined(root() ? static_cast<size_t>(d.back() + c.back()) : 0, '\0');
  FRONTIER_RETURN_IF_ERROR(collective(static_cast<double>(n), what, [&](void* req) {
    return MPI_Igatherv(mine.data(), static_cast<int>(n), MPI_CHAR, joined.data(), c.data(), d.data(), MPI_CHAR, 0,
                        MPI_COMM_WORLD, FRONTIER_REQ);
  }));
  if (root())
    for (int r = 0; r < size_; r++) all->push_back(joined.substr(d[r], lens[r]));
  return ok_status();
#else
  return ok_status();
#endif
}

Status Comm::arrive(int64_t step, const char* phase) {
  step_ = step;
  if (size_ == 1) return ok_status();
#ifdef FRONTIER_HAVE_MPI
  constexpr int kTag = 7301;
  const auto t0 = Clock::now();
  int64_t verdict = 0;  // 0 = everyone arrived
  Status s;
  if (root()) {
    std::vector<int64_t> got(size_, -1);
    std::vector<MPI_Request> reqs(size_ - 1);
    for (int r = 1; r < size_; r++)
      MPI_Irecv(&got[r], 1, MPI_INT64_T, r, kTag, MPI_COMM_WORLD, &reqs[r - 1]);
    int all_done = 0;
    while (!all_done) {
      int rc = MPI_Testall(size_ - 1, reqs.data(), &all_done, MPI_STATUSES_IGNORE);
      if (rc != MPI_SUCCESS) return fail(rc, "the liveness check");
      if (all_done) break;
      // mpirun ends a job whose rank died by sending SIGTERM to the others: say whom rank 0 was waiting for.
      const bool stopped = StopSignals::received() != 0;
      if (stopped || since(t0) > timeout_) {
        std::string missing;
        for (int r = 1; r < size_; r++) {
          int done = 0;
          MPI_Test(&reqs[r - 1], &done, MPI_STATUS_IGNORE);
          if (!done) missing += (missing.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " (" +
                                g_who[r] + ")";
        }
        if (stopped)
          return Status::error("stopped by a signal while waiting for " + missing + " to finish " + phase +
                               " of step " + std::to_string(step) + " (mpirun ends the job this way when a rank "
                               "dies: see its message)");
        char buf[128];
        std::snprintf(buf, sizeof(buf), " within %.0f s", timeout_);
        return Status::error(missing + " has not finished " + phase + " of step " + std::to_string(step) + buf +
                             ": it is hung or dead; ending the job (raise train.comm_timeout_seconds if a step "
                             "legitimately takes longer)");
      }
      if (since(t0) > 0.01) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    for (int r = 1; r < size_; r++)
      if (got[r] != step)
        return Status::error("rank " + std::to_string(r) + " (" + g_who[r] + ") reports step " +
                             std::to_string(got[r]) + " while rank 0 is at step " + std::to_string(step) +
                             ": the ranks are out of step (mismatched binaries?)");
  } else {
    MPI_Request req;
    MPI_Isend(&step, 1, MPI_INT64_T, 0, kTag, MPI_COMM_WORLD, &req);
    s = wait(&req, "the liveness check");
    if (!s.ok()) return s;
  }
  // Everyone waits for rank 0's verdict with the same timeout: a hung rank 0 is named by the others.
  MPI_Request req;
  MPI_Ibcast(&verdict, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, &req);
  s = wait(&req, "the liveness check");
  if (!s.ok() && !root())
    return Status::error("rank 0 (" + g_who[0] + ") has not finished " + phase + " of step " + std::to_string(step) +
                         " within " + std::to_string(static_cast<int>(timeout_)) + " s: it is hung or dead; ending "
                         "the job (raise train.comm_timeout_seconds if a step legitimately takes longer)");
  stats_.seconds += since(t0);
  return s;
#else
  return ok_status();
#endif
}

Status Comm::share(const Status& root_verdict) {
  if (size_ == 1) return root_verdict;
  std::string verdict = root() && !root_verdict.ok() ? root_verdict.message() : std::string();
  FRONTIER_RETURN_IF_ERROR(bcast(&verdict, "sharing a verdict"));
  if (verdict.empty()) return ok_status();
  agreed_ = true;
  return Status::error(verdict);
}

Status Comm::agree(const Status& mine) {
  if (size_ == 1) return mine;
  std::vector<std::string> all;
  FRONTIER_RETURN_IF_ERROR(gather_strings(mine.ok() ? std::string() : "E" + mine.message(), &all, "agreeing on "
                                          "errors"));
  std::string verdict;
  if (root()) {
    int first = -1, n_failed = 0;
    bool same = true;
    for (int r = 0; r < size_; r++) {
      if (all[r].empty()) continue;
      n_failed++;
      if (first < 0) first = r;
      else if (all[r] != all[first]) same = false;
    }
    if (first >= 0) {
      const bool everyone = n_failed == size_ && same;
      verdict = everyone ? all[first].substr(1)
                         : "rank " + std::to_string(first) + " (" + g_who[first] + "): " + all[first].substr(1) +
                               (n_failed > 1 ? " (and " + std::to_string(n_failed - 1) + " more ranks)" : "");
    }
  }
  FRONTIER_RETURN_IF_ERROR(bcast(&verdict, "agreeing on errors"));
  if (verdict.empty()) return ok_status();
  agreed_ = true;
  return Status::error(verdict);
}

}  // namespace frontier
