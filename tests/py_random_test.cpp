// Python's random.Random reproduced bit for bit, checked against python3 itself: random(), getrandbits(k) for
// k in 1..64, shuffle() as nanochat shuffles CORE data (seed 1337), and sample() as nanochat draws few-shot
// examples (seed 1234 + idx over the other indices; both of CPython's sample branches). Tolerance: exact.
#include <nlohmann/json.hpp>

#include "eval/py_random.h"
#include "test_util.h"

using namespace frontier;
using namespace frontier::testing;

TEST(PyRandom, MatchesPython) {
  const char* script = R"PY(
import json, random
out = {}
r = random.Random(42); out["random"] = [r.random() for _ in range(5)]
out["bits"] = [random.Random(7 + k).getrandbits(k) for k in range(1, 65)]
out["big_seed"] = [random.Random(2**40 + 5).random(), random.Random(2**63 + 11).getrandbits(64)]
x = list(range(1000)); random.Random(1337).shuffle(x); out["shuffle"] = x
s = []
for n, idx, k in [(10, 3, 5), (50, 0, 1), (100, 42, 10), (3000, 1234, 25), (25, 24, 0), (8, 7, 7)]:
    avail = [i for i in range(n) if i != idx]
    s.append(random.Random(1234 + idx).sample(avail, k))
out["sample"] = s
print(json.dumps(out))
)PY";
  std::string dir = make_temp_dir("pyrand");
  write_text(dir + "/p.py", script);
  auto r = run_cmd("/usr/bin/python3 " + dir + "/p.py");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  PyRandom a(42);
  for (int i = 0; i < 5; i++) EXPECT_EQ(a.random(), j["random"][i].get<double>()) << i;
  for (int k = 1; k <= 64; k++) EXPECT_EQ(PyRandom(7 + k).getrandbits(k), j["bits"][k - 1].get<uint64_t>()) << k;
  EXPECT_EQ(PyRandom((1ull << 40) + 5).random(), j["big_seed"][0].get<double>());
  EXPECT_EQ(PyRandom((1ull << 63) + 11).getrandbits(64), j["big_seed"][1].get<uint64_t>());
  std::vector<int> x(1000);
  for (int i = 0; i < 1000; i++) x[i] = i;
  PyRandom(1337).shuffle(x);
  EXPECT_EQ(x, j["shuffle"].get<std::vector<int>>());
  int c = 0;
  for (auto [n, idx, k] : std::vector<std::tuple<int, int, int>>{{10, 3, 5}, {50, 0, 1}, {100, 42, 10},
                                                                 {3000, 1234, 25}, {25, 24, 0}, {8, 7, 7}}) {
    std::vector<int> avail;
    for (int i = 0; i < n; i++)
      if (i != idx) avail.push_back(i);
    EXPECT_EQ(PyRandom(1234 + idx).sample(avail, k), j["sample"][c].get<std::vector<int>>()) << "case " << c;
    c++;
  }
  std::filesystem::remove_all(dir);
}
