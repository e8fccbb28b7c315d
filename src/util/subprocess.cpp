#include "util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace frontier {

namespace {

using Clock = std::chrono::steady_clock;

// PATH lookup happens here, before fork: between fork and exec only async-signal-safe calls are allowed, and
// execvp may allocate.
std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* env = std::getenv("PATH");
  std::string path = env ? env : "/usr/local/bin:/usr/bin:/bin";
  size_t a = 0;
  while (a <= path.size()) {
    size_t b = path.find(':', a);
    if (b == std::string::npos) b = path.size();
    std::string dir = b > a ? path.substr(a, b - a) : ".";
    std::string cand = dir + "/" + name;
    struct stat st;
    if (stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(cand.c_str(), X_OK) == 0) return cand;
    a = b + 1;
  }
  return "";
}

// The caller's environment with `extra` ("KEY=VALUE") added, replacing entries of the same key.
std::vector<std::string> merged_env(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; e++) {
    std::string s = *e;
    std::string key = s.substr(0, s.find('=') + 1);
    bool replaced = false;
    for (const auto& x : extra) replaced |= x.rfind(key, 0) == 0;
    if (!replaced) out.push_back(s);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

struct Fd {  // closes on scope exit
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

Status open_fd(const std::string& path, int flags, Fd* fd) {
  fd->fd = open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd->fd < 0) return Status::error("cannot open " + path + ": " + std::strerror(errno));
  return ok_status();
}

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

std::string SubprocessResult::describe(const Subprocess& p) const {
  char buf[128];
  if (timed_out) {
    std::snprintf(buf, sizeof(buf), "timed out after %g s (its process group was killed)", p.timeout_s);
  } else if (stopped) {
    std::snprintf(buf, sizeof(buf), "stopped");
  } else if (output_truncated) {
    std::snprintf(buf, sizeof(buf), "printed more than %zu bytes on stdout (the limit)", p.max_output);
  } else if (signal != 0) {
    std::snprintf(buf, sizeof(buf), "killed by signal %d (%s)", signal, strsignal(signal));
  } else {
    std::snprintf(buf, sizeof(buf), "exit code %d", exit_code);
  }
  return buf;
}

namespace {

// The child's descriptors, opened in the parent: stdin, stdout (a file, or a pipe whose read end is out_r), stderr,
// and the pipe through which a failed exec reports its errno (closed by a successful exec).
struct ChildFds {
  Fd in, out, err, out_r, report_r, report_w;
};

Status open_child_fds(const Subprocess& p, ChildFds* f) {
  FRONTIER_RETURN_IF_ERROR(open_fd(p.stdin_path.empty() ? "/dev/null" : p.stdin_path, O_RDONLY, &f->in));
  if (!p.stdout_path.empty()) {
    FRONTIER_RETURN_IF_ERROR(open_fd(p.stdout_path, O_WRONLY | O_CREAT | O_TRUNC, &f->out));
  } else {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return Status::error(std::string("pipe: ") + std::strerror(errno));
    f->out_r.fd = fds[0];
    f->out.fd = fds[1];
  }
  if (!p.stderr_path.empty() && !p.stderr_to_stdout)
    FRONTIER_RETURN_IF_ERROR(open_fd(p.stderr_path, O_WRONLY | O_CREAT | O_TRUNC, &f->err));
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::error(std::string("pipe: ") + std::strerror(errno));
  f->report_r.fd = fds[0];
  f->report_w.fd = fds[1];
  return ok_status();
}

// The child, between fork and exec: async-signal-safe calls only. Its own process group, killed when the parent
// dies, default signal dispositions and mask, its descriptors, then exec; a failed exec reports its errno.
[[noreturn]] void exec_child(const Subprocess& p, const ChildFds& f, const std::string& program, char* const* argv,
                             char* const* envp, const char* cwd, pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(126);  // the parent died before prctl: its death signal was never armed
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaction(s, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(f.in.fd, 0);
  dup2(f.out.fd, 1);
  if (p.stderr_to_stdout) dup2(f.out.fd, 2);
  else if (f.err.fd >= 0) dup2(f.err.fd, 2);
  if (cwd == nullptr || chdir(cwd) == 0) execve(program.c_str(), argv, envp);
  int e = errno;
  if (write(f.report_w.fd, &e, sizeof(e)) < 0) {
  }
  _exit(127);
}

// One poll + read of the captured stdout into r->out; at its end, or past p.max_output, *out_r is closed.
void read_some(const Subprocess& p, Fd* out_r, SubprocessResult* r, int timeout_ms) {
  pollfd f = {out_r->fd, POLLIN, 0};
  if (poll(&f, 1, timeout_ms) <= 0) return;
  char buf[65536];
  ssize_t k = read(out_r->fd, buf, sizeof(buf));
  if (k < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (k <= 0) {
    out_r->reset();
    return;
  }
  if (r->out.size() + k > p.max_output) {  // over the limit: stop reading; the child's next write gets SIGPIPE
    r->out.append(buf, p.max_output - r->out.size());
    r->output_truncated = true;
    out_r->reset();
    return;
  }
  r->out.append(buf, k);
}

// Until the child exits: reads its stdout; past p.timeout_s kills its group; on *p.stop sends SIGTERM to the group,
// then SIGKILL after p.stop_grace_s. Then kills what it left behind, drains the pipe and reaps it.
void wait_child(const Subprocess& p, pid_t pid, Clock::time_point t0, Fd* out_r, SubprocessResult* r) {
  Clock::time_point term_at;
  bool killed = false;
  while (true) {
    if (out_r->fd >= 0) read_some(p, out_r, r, 50);
    else poll(nullptr, 0, 50);
    siginfo_t si = {};
    if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) break;  // exited, unreaped
    if (p.timeout_s > 0 && !r->timed_out && since(t0) > p.timeout_s) {
      r->timed_out = true;
      kill(-pid, SIGKILL);
    }
    if (p.stop && *p.stop && !r->stopped && !r->timed_out) {
      r->stopped = true;
      term_at = Clock::now();
      kill(-pid, SIGTERM);
    }
    if (r->stopped && !killed && since(term_at) > p.stop_grace_s) {
      killed = true;
      kill(-pid, SIGKILL);
    }
  }
  // The child exited but is not reaped yet, so its process-group id cannot be reused: kill what it left behind,
  // then read what is left in the pipe (bounded: a grandchild that left the group may hold it open).
  kill(-pid, SIGKILL);
  const auto drain_t0 = Clock::now();
  while (out_r->fd >= 0 && since(drain_t0) < 1.0) read_some(p, out_r, r, 50);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r->seconds = since(t0);
  if (WIFEXITED(st)) r->exit_code = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) r->signal = WTERMSIG(st);
}

}  // namespace

Status run_subprocess(const Subprocess& p, SubprocessResult* r) {
  *r = SubprocessResult();
  if (p.argv.empty() || p.argv[0].empty()) return Status::error("run_subprocess: empty argument vector");
  if (p.stop && *p.stop) {  // asked to stop before it started: nothing runs
    r->stopped = true;
    return ok_status();
  }
  // Everything the child needs is built here, in the parent (see resolve_program).
  const std::string program = resolve_program(p.argv[0]);
  if (program.empty()) return Status::error("cannot run " + p.argv[0] + ": not found in PATH");
  std::vector<std::string> env = merged_env(p.env);
  std::vector<char*> argv, envp;
  for (const auto& a : p.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  ChildFds f;
  FRONTIER_RETURN_IF_ERROR(open_child_fds(p, &f));
  const char* cwd = p.cwd.empty() ? nullptr : p.cwd.c_str();
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid < 0) return Status::error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) exec_child(p, f, program, argv.data(), envp.data(), cwd, parent);
  setpgid(pid, pid);  // also here, so the group exists before any kill(-pid) below (EACCES after exec is fine)
  const auto t0 = Clock::now();
  f.report_w.reset();
  f.out.reset();
  f.err.reset();
  f.in.reset();
  int exec_errno = 0;
  ssize_t n;
  while ((n = read(f.report_r.fd, &exec_errno, sizeof(exec_errno))) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof(exec_errno))) {
    waitpid(pid, nullptr, 0);
    return Status::error("cannot run " + program + (cwd ? " in " + p.cwd : "") + ": " + std::strerror(exec_errno));
  }
  wait_child(p, pid, t0, &f.out_r, r);
  return ok_status();
}

}  // namespace frontier
