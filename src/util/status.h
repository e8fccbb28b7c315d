// Two error channels (see shared STYLE.md):
//  - Status: user-facing I/O, data and config errors. The message is one line that names the problem and the fix;
//    the CLI prints it as "error: <message>" and exits non-zero.
//  - FRONTIER_CHECK: programmer errors (broken invariants). Prints file:line and aborts.
//
//   Status s = read_shard(path, &shard);
//   if (!s.ok()) return s;               // or: FRONTIER_RETURN_IF_ERROR(read_shard(path, &shard));
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace frontier {

class Status {
 public:
  Status() = default;
  static Status error(std::string msg) { return Status(std::move(msg)); }
  bool ok() const { return !failed_; }
  const std::string& message() const { return msg_; }

 private:
  explicit Status(std::string msg) : failed_(true), msg_(std::move(msg)) {}
  bool failed_ = false;
  std::string msg_;
};

inline Status ok_status() { return Status(); }

}  // namespace frontier

#define FRONTIER_RETURN_IF_ERROR(expr)       \
  do {                                       \
    ::frontier::Status _st = (expr);         \
    if (!_st.ok()) return _st;               \
  } while (0)

#define FRONTIER_CHECK(cond)                                                           \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "FRONTIER_CHECK failed: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)
