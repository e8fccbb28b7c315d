// The fake fork's `frontier` (see CMakeLists.txt). `train` and `serve-logprobs` delegate to the real binary
// (STOCK), then misbehave as MODE says:
//   crash               train aborts (SIGABRT)
//   overstay            train never ends (the scorer must kill it past budget + grace)
//   no_checkpoint       train exits 0 without writing a checkpoint
//   corrupt_checkpoint  train runs, then overwrites model.ckpt with garbage
//   lookahead           serves real distributions moved halfway towards the *next* token of the request:
//                       normalised, and far better than honest, but changes when the future changes
//   prefix_cache        the same look-ahead, but remembers every prefix it has answered and replays that row when
//                       the prefix comes again: consistent under the look-ahead probes (a probe shares its prefix
//                       with its original), caught only by the causal check (streamed in a fresh process)
//   unnormalised        serves real log-probabilities + 0.1 (each row sums to e^0.1)
//   build_fails         does not compile
// Hostile forks (the scorer must record each as failed and go on with the next submission):
//   kill_parent         serve-logprobs sends SIGSEGV to the process that started it (the organiser's evaluator)
//   tokenizer_fifo      train runs, then leaves run/tokenizer/tokenizer.json as a FIFO: its loader blocks forever
//   tokenizer_endless   train runs, then leaves run/tokenizer/tokenizer.json as a link to /dev/zero: a file that
//                       never ends, read into memory until the memory runs out
//   echo_hidden         train runs and saves the data's tokenizer in run/tokenizer; serve-logprobs answers the
//                       header, then decodes the first request (the hidden text) and prints it as its error
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
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
#include <map>
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
  auto arg_after = [&](const std::string& flag) {
    for (int i = 1; i + 1 < argc; i++)
      if (flag == argv[i]) return std::string(argv[i + 1]);
    return std::string();
  };
  std::string run_dir;
  for (int i = 1; i < argc; i++)
    if (std::strncmp(argv[i], "train.run_dir=", 14) == 0) run_dir = argv[i] + 14;
  if (cmd == "train") {
    if (mode == "crash") std::abort();
    if (mode == "overstay")
      for (;;) sleep(1000);
    if (mode == "no_checkpoint") return 0;
    int rc = run(args);
    if (rc != 0) return rc;
    const std::string tok = run_dir + "/tokenizer";
    if (mode == "tokenizer_fifo" || mode == "tokenizer_endless") {
      mkdir(tok.c_str(), 0755);
      std::ofstream(tok + "/tokenizer.tiktoken") << "";
      if (mode == "tokenizer_fifo") return mkfifo((tok + "/tokenizer.json").c_str(), 0644) == 0 ? 0 : 1;
      return symlink("/dev/zero", (tok + "/tokenizer.json").c_str()) == 0 ? 0 : 1;
    }
    if (mode == "echo_hidden") {
      mkdir(tok.c_str(), 0755);
      const std::string data = arg_after("--data") + "/tokenizer";
      for (const char* f : {"/tokenizer.json", "/tokenizer.tiktoken"}) {
        std::ifstream in(data + f, std::ios::binary);
        std::ofstream(tok + f, std::ios::binary) << in.rdbuf();
      }
      return 0;
    }
    if (mode != "corrupt_checkpoint") return rc;
    for (int i = 1; i < argc; i++)
      if (std::strncmp(argv[i], "train.run_dir=", 14) == 0) {
        std::ofstream(std::string(argv[i] + 14) + "/model.ckpt") << "not a checkpoint";
      }
    return 0;
  }
  if (cmd == "serve-logprobs" && mode == "kill_parent") {
    kill(getppid(), SIGSEGV);
    return 1;
  }
  if (cmd == "serve-logprobs" && mode == "echo_hidden") {
    // The real header (V, context length), then the first request's tokens as text on stderr.
    const std::string ckpt = arg_after("--checkpoint"), head = ckpt + ".header";
    if (run({STOCK, "serve-logprobs", "--checkpoint", ckpt}, "/dev/null", head.c_str()) != 0) return 1;
    std::ifstream h(head, std::ios::binary);
    std::string header((std::istreambuf_iterator<char>(h)), std::istreambuf_iterator<char>());
    std::fwrite(header.data(), 1, header.size(), stdout);
    std::fflush(stdout);
    const std::string dir = ckpt.substr(0, ckpt.rfind('/')) + "/tokenizer", text = ckpt + ".text";
    std::ifstream tj(dir + "/tokenizer.json");
    std::string meta((std::istreambuf_iterator<char>(tj)), std::istreambuf_iterator<char>());
    const size_t at = meta.find("\"<|bos|>\":");
    const uint32_t tok_bos = at == std::string::npos ? ~0u : static_cast<uint32_t>(std::atoi(meta.c_str() + at + 10));
    std::string ids;  // every request of the call (a batch call reads a file: EOF ends it), less <|bos|>
    for (uint32_t n; std::fread(&n, 4, 1, stdin) == 1;) {
      std::vector<uint32_t> tok(n);
      if (std::fread(tok.data(), 4, n, stdin) != n) return 1;
      for (size_t i = 0; i < tok.size(); i++)
        if (i > 0 || tok[0] != tok_bos) ids += std::to_string(tok[i]) + " ";
    }
    if (ids.empty()) return 0;  // the call that only asks for the header
    run({STOCK, "tokenizer", "--dir", dir, "--decode", "--text", ids}, "/dev/null", text.c_str());
    std::ifstream t(text);
    std::string hidden((std::istreambuf_iterator<char>(t)), std::istreambuf_iterator<char>());
    while (!hidden.empty() && hidden.back() == '\n') hidden.pop_back();
    std::fprintf(stderr, "error: cannot serve the request %s\n", hidden.c_str());
    return 1;
  }
  if (cmd == "serve-logprobs" && (mode == "lookahead" || mode == "prefix_cache" || mode == "unnormalised")) {
    // The real server as a coprocess: each request is forwarded as it arrives and its answer altered on the way
    // out, then flushed before the next request is read (the organiser's causal check streams one at a time).
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0) return 1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 1);
    posix_spawn_file_actions_addclose(&fa, to[1]);
    posix_spawn_file_actions_addclose(&fa, from[0]);
    std::vector<char*> av;
    for (auto& a : args) av.push_back(a.data());
    av.push_back(nullptr);
    pid_t pid;
    if (posix_spawn(&pid, av[0], &fa, nullptr, av.data(), environ) != 0) return 127;
    close(to[0]);
    close(from[1]);
    FILE* child_in = fdopen(to[1], "wb");
    FILE* child_out = fdopen(from[0], "rb");
    char head[16];
    if (std::fread(head, 1, 16, child_out) != 16) return 1;
    uint32_t V;
    std::memcpy(&V, head + 8, 4);
    std::fwrite(head, 1, 16, stdout);
    std::fflush(stdout);
    std::map<std::string, std::vector<float>> cache;  // prefix (token bytes) -> the row first served for it
    std::vector<uint32_t> tok;
    std::vector<float> rows;
    for (uint32_t n; std::fread(&n, 4, 1, stdin) == 1;) {
      tok.resize(n);
      if (std::fread(tok.data(), 4, n, stdin) != n) return 1;
      std::fwrite(&n, 4, 1, child_in);
      std::fwrite(tok.data(), 4, n, child_in);
      std::fflush(child_in);
      uint32_t m;
      rows.resize(size_t(n) * V);
      if (std::fread(&m, 4, 1, child_out) != 1 || m != n || std::fread(rows.data(), 4, rows.size(), child_out) != rows.size())
        return 1;
      for (uint32_t i = 0; i < n; i++) {
        float* row = rows.data() + size_t(i) * V;
        if (mode == "unnormalised") {
          for (uint32_t v = 0; v < V; v++) row[v] += 0.1f;
          continue;
        }
        std::string key(reinterpret_cast<const char*>(tok.data()), size_t(i + 1) * 4);
        if (mode == "prefix_cache") {
          auto it = cache.find(key);
          if (it != cache.end()) {
            std::memcpy(row, it->second.data(), size_t(V) * 4);
            continue;
          }
        }
        if (i + 1 < n)  // p' = 0.5 p + 0.5 [v == next]: still a distribution
          for (uint32_t v = 0; v < V; v++)
            row[v] = static_cast<float>(std::log(0.5 * std::exp(double(row[v])) + (v == tok[i + 1] ? 0.5 : 0.0)));
        if (mode == "prefix_cache") cache[key].assign(row, row + V);
      }
      std::fwrite(&n, 4, 1, stdout);
      std::fwrite(rows.data(), 4, rows.size(), stdout);
      std::fflush(stdout);
    }
    std::fclose(child_in);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  }
  execv(STOCK, argv);
  return 127;
}
