// The architecture and recipe levers `frontier advise` tries on its best shape (its architecture stage,
// advise/advise.h): each a name, a line saying what it is, and the config keys it sets. Every key is an ordinary
// `frontier train` key (model.*, optim.*, train.*), so a lever's run is a config any user can rerun.
//
//   std::vector<Lever> ls;
//   FRONTIER_RETURN_IF_ERROR(parse_levers("windows,normuon", &ls));   // or "default", "all", "none"
#pragma once

#include <map>
#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

struct Lever {
  std::string name, what;
  std::map<std::string, std::string> sets;  // key -> value, as --set takes them
  // The step's work is the base's by construction (a constant, a schedule, an update of the averaged weights), so
  // the advisor gives it the base's step time without timing it: two timings of one cost differ by the machine's
  // noise alone (3-9% here), which would buy one of them more steps.
  bool same_cost = false;
};

// Every lever the advisor knows, in the order it tries them.
const std::vector<Lever>& lever_catalogue();
// "default" (nanochat 92d63d4's model and optimizer levers, SwiGLU and the weight EMA: 9 levers), "all", "none", or
// comma-separated names; an unknown name is an error listing them.
Status parse_levers(const std::string& list, std::vector<Lever>* out);
// The keys a set of levers sets, merged; a key two levers set differently is an error naming both.
Status merge_levers(const std::vector<const Lever*>& levers, std::map<std::string, std::string>* out);
// "k=v k=v" in key order: the cache's name for a set of keys.
std::string sets_key(const std::map<std::string, std::string>& sets);

}  // namespace frontier
