#include "arena/causal.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "arena/protocol.h"
#include "util/file.h"

namespace frontier {

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A server process with a pipe each way, in its own process group (killed whole when the session ends).
class Coprocess {
 public:
  ~Coprocess() { finish(0); }

  Status start(const std::vector<std::string>& argv, const std::string& err_path) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
      return Status::error(std::string("causal check: pipe: ") + std::strerror(errno));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) return Status::error(std::string("causal check: fork: ") + std::strerror(errno));
    if (pid_ == 0) {  // async-signal-safe calls only until exec
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(in[0], 0);
      dup2(out[1], 1);
      if (e >= 0) dup2(e, 2);
      execvp(args[0], args.data());
      _exit(127);
    }
    setpgid(pid_, pid_);
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
    return ok_status();
  }

  // Writes all of s (a request is a few KiB: below the pipe's buffer, so this does not wait on the server).
  bool write_all(const std::string& s) {
    for (size_t off = 0; off < s.size();) {
      ssize_t n = ::write(to_, s.data() + off, s.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      off += n;
    }
    return true;
  }

  // Reads exactly n bytes before the deadline (steady-clock seconds since t0). "" on success, else why not.
  std::string read_exact(void* dst, size_t n, std::chrono::steady_clock::time_point t0, double deadline_s) {
    char* p = static_cast<char*>(dst);
    for (size_t got = 0; got < n;) {
      const double left = deadline_s - since(t0);
      if (left <= 0) return "did not answer in time";
      pollfd f{from_, POLLIN, 0};
      int r = poll(&f, 1, static_cast<int>(std::min(left, 60.0) * 1000) + 1);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) continue;
      ssize_t k = ::read(from_, p + got, n - got);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) return "closed its output (exited?) " + std::to_string(got) + " bytes into a " + std::to_string(n) +
                         "-byte read";
      got += k;
    }
    return "";
  }

  // Closes stdin (EOF: a server exits 0) and waits up to grace_s, then kills the group. The exit status, or -1.
  int finish(double grace_s) {
    if (pid_ <= 0) return -1;
    if (to_ >= 0) close(to_), to_ = -1;
    int st = 0, rc = -1;
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      pid_t w = waitpid(pid_, &st, WNOHANG);
      if (w == pid_) {
        rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        break;
      }
      if (since(t0) >= grace_s) {
        kill(-pid_, SIGKILL);
        waitpid(pid_, &st, 0);
        break;
      }
      usleep(2000);
    }
    kill(-pid_, SIGKILL);  // whatever it started
    if (from_ >= 0) close(from_), from_ = -1;
    pid_ = -1;
    return rc;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
};

}  // namespace

Status stream_causal(const std::vector<std::string>& argv, const std::string& work_dir, uint32_t V,
                     const std::vector<CausalProbe>& probes, double timeout_s,
                     std::vector<std::vector<std::vector<float>>>* rows, double* used_s) {
  rows->assign(probes.size(), {});
  FRONTIER_RETURN_IF_ERROR(make_dirs(work_dir));
  // A server that died mid-write would end the scorer with SIGPIPE: ignore it here (write returns EPIPE instead).
  struct sigaction ign{}, old{};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old);
  struct Restore {
    struct sigaction* old;
    ~Restore() { sigaction(SIGPIPE, old, nullptr); }
  } restore{&old};
  for (size_t k = 0; k < probes.size(); k++) {
    const CausalProbe& pr = probes[k];
    const std::string err = work_dir + "/causal_" + std::to_string(k) + ".err";
    const auto t0 = std::chrono::steady_clock::now();
    const double deadline = timeout_s - *used_s;
    Coprocess c;
    FRONTIER_RETURN_IF_ERROR(c.start(argv, err));
    auto fail = [&](const std::string& what) {
      c.finish(0);
      *used_s += since(t0);
      std::string why, log;
      if (read_file(err, &log).ok()) {
        while (!log.empty() && (log.back() == '\n' || log.back() == '\r')) log.pop_back();
        size_t nl = log.rfind('\n');
        why = nl == std::string::npos ? log : log.substr(nl + 1);
        if (why.size() > 200) why = why.substr(0, 200) + "...";
      }
      return Status::error("causal check (the server answers one position at a time; it must flush stdout after "
                           "each response): the team's server " + what + (why.empty() ? "" : ": " + why));
    };
    char head[16];
    std::string e = c.read_exact(head, 16, t0, deadline);
    if (!e.empty()) return fail(e + " (its header)");
    uint32_t hv = 0;
    std::memcpy(&hv, head + 8, 4);
    if (std::memcmp(head, kLogprobMagic, 8) != 0 || hv != V)
      return fail("sent a different header than in the batch calls");
    std::vector<float> buf;
    for (int64_t p : pr.positions) {
      std::vector<std::vector<uint32_t>> req = {{pr.tokens.begin(), pr.tokens.begin() + p + 1}};
      if (!c.write_all(encode_requests(req))) return fail("stopped reading its input");
      uint32_t n = 0;
      e = c.read_exact(&n, 4, t0, deadline);
      if (!e.empty()) return fail(e + " (request of " + std::to_string(p + 1) + " tokens)");
      if (n != static_cast<uint32_t>(p + 1))
        return fail("answered " + std::to_string(n) + " rows for a request of " + std::to_string(p + 1) + " tokens");
      buf.resize(size_t(n) * V);
      e = c.read_exact(buf.data(), buf.size() * 4, t0, deadline);
      if (!e.empty()) return fail(e + " (rows of a request of " + std::to_string(p + 1) + " tokens)");
      (*rows)[k].emplace_back(buf.end() - V, buf.end());  // row p: the last, served before token p+1 was sent
    }
    const int rc = c.finish(std::max(1.0, deadline - since(t0)));
    *used_s += since(t0);
    if (rc != 0) return fail("did not exit with status 0 after the end of its input");
  }
  return ok_status();
}

}  // namespace frontier
