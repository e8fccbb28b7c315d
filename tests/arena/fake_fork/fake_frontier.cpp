// The fake fork's `frontier` (see CMakeLists.txt). `train` and `serve-logprobs` delegate to the real binary
// (STOCK), then misbehave as MODE says:
//   crash               train aborts (SIGABRT)
//   overstay            train never ends (the scorer must kill it past budget + grace)
//   no_checkpoint       train exits 0 without writing a checkpoint
//   corrupt_checkpoint  train runs, then overwrites model.ckpt with garbage
//   lookahead           serves real distributions moved halfway towards the *next* token of the request:
//                       normalised, and far better than honest, but changes when the future changes
//   unnormalised        serves real log-probabilities + 0.1 (each row sums to e^0.1)
//   build_fails         does not compile
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#ifdef BREAK_THE_BUILD
#error "this fork does not build (arena test: build_fails)"
#endif

extern char** environ;

static int run(std::vector<std::string> args, const char* in = nullptr, const char* out = nullptr) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (in) posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
  if (out) posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) return 127;
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int main(int argc, char** argv) {
  const std::string mode = MODE, cmd = argc > 1 ? argv[1] : "";
  std::vector<std::string> args = {STOCK};
  for (int i = 1; i < argc; i++) args.push_back(argv[i]);
  if (cmd == "train") {
    if (mode == "crash") std::abort();
    if (mode == "overstay")
      for (;;) sleep(1000);
    if (mode == "no_checkpoint") return 0;
    int rc = run(args);
    if (rc != 0 || mode != "corrupt_checkpoint") return rc;
    for (int i = 1; i < argc; i++)
      if (std::strncmp(argv[i], "train.run_dir=", 14) == 0) {
        std::ofstream(std::string(argv[i] + 14) + "/model.ckpt") << "not a checkpoint";
      }
    return 0;
  }
  if (cmd == "serve-logprobs" && (mode == "lookahead" || mode == "unnormalised")) {
    // Every request goes to the real server; its answer is altered on the way out.
    std::string in;
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), stdin)) > 0) in.append(buf, n);
    char in_path[] = "/tmp/fake_fork_in_XXXXXX", out_path[] = "/tmp/fake_fork_out_XXXXXX";
    close(mkstemp(in_path));
    close(mkstemp(out_path));
    std::ofstream(in_path, std::ios::binary) << in;
    int rc = run(args, in_path, out_path);
    std::ifstream f(out_path, std::ios::binary);
    std::string out((std::istreambuf_iterator<char>(f)), {});
    unlink(in_path);
    unlink(out_path);
    if (rc != 0 || out.size() < 16) return rc ? rc : 1;
    uint32_t V;
    std::memcpy(&V, out.data() + 8, 4);
    size_t ip = 0, op = 16;
    while (ip + 4 <= in.size()) {
      uint32_t len;
      std::memcpy(&len, in.data() + ip, 4);
      const uint32_t* tok = reinterpret_cast<const uint32_t*>(in.data() + ip + 4);
      float* rows = reinterpret_cast<float*>(out.data() + op + 4);
      for (uint32_t i = 0; i < len; i++) {
        float* row = rows + size_t(i) * V;
        if (mode == "unnormalised") {
          for (uint32_t v = 0; v < V; v++) row[v] += 0.1f;
        } else if (i + 1 < len) {  // p' = 0.5 p + 0.5 [v == next]: still a distribution
          for (uint32_t v = 0; v < V; v++)
            row[v] = static_cast<float>(std::log(0.5 * std::exp(double(row[v])) + (v == tok[i + 1] ? 0.5 : 0.0)));
        }
      }
      ip += 4 + size_t(len) * 4;
      op += 4 + size_t(len) * V * 4;
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  execv(STOCK, argv);
  return 127;
}
