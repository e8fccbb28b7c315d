// The leaderboard's localhost server (arena/leaderboard.h: serve_leaderboard), on cpp-httplib: a thread pool and
// per-connection timeouts instead of a hand-written accept loop, where one client that connected and sent nothing
// held every honest request behind it.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "arena/leaderboard.h"
#include "util/stop_signal.h"

namespace frontier {

Status serve_leaderboard(int port, const std::function<Status(std::string*)>& page) {
  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(kServeThreads); };
  server.set_read_timeout(5, 0);   // a request's bytes: a silent or trickling client loses its thread after 5 s idle
  server.set_write_timeout(5, 0);  // a reader that stops reading
  server.set_keep_alive_max_count(1);  // one request per connection: nothing to hold open between pages
  server.set_payload_max_length(16384);
  std::mutex page_mu;  // page() reads the record through one SQLite handle: one at a time (it takes milliseconds)
  auto handler = [&](const httplib::Request&, httplib::Response& res) {
    std::string html;
    Status st;
    {
      std::lock_guard<std::mutex> lock(page_mu);
      st = page(&html);
    }
    res.set_header("Cache-Control", "no-store");
    if (st.ok()) {
      res.set_content(html, "text/html; charset=utf-8");
    } else {
      res.status = 503;
      res.set_content("error: " + st.message() + "\n", "text/plain; charset=utf-8");
    }
  };
  server.Get("/", handler);
  server.Get("/index.html", handler);
  if (!server.bind_to_port("127.0.0.1", port))
    return Status::error("cannot listen on 127.0.0.1:" + std::to_string(port) + " (in use? pick another --port)");
  StopSignals stop;
  std::fprintf(stderr, "[arena] serving the leaderboard on http://127.0.0.1:%d/ (Ctrl-C to stop)\n", port);
  std::atomic<bool> ended{false};
  std::thread listener([&] {
    server.listen_after_bind();
    ended = true;
  });
  while (!StopSignals::received() && !ended) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.stop();
  listener.join();
  return ok_status();
}

}  // namespace frontier
