#include "util/cache_dir.h"

#include <cstdlib>

namespace frontier {

std::string frontier_cache_dir() {
  if (const char* c = std::getenv("FRONTIER_CACHE"); c && *c) return c;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/frontier";
}

}  // namespace frontier
