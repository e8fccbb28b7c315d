// Runs the PyTorch GPT peer (tests/torch/gpt_ref.py) on a Frontier model's weights and a batch.
#pragma once

#include <nlohmann/json.hpp>

#include "model/gpt.h"
#include "test_util.h"
#include "util/file.h"

namespace frontier::testing {

// Writes spec (shape, parameter table, B, T, plus `extra`), weights, batch (idx then targets) and rotary tables
// into dir, runs the peer, and returns its output file's bytes in *out. False (with a test failure) on error.
inline bool run_gpt_peer(const Gpt& gpt, const std::vector<float>& weights, int B, int T,
                         const std::vector<int32_t>& idx, const std::vector<int32_t>& targets,
                         const nlohmann::json& extra, const std::string& dir, std::string* out) {
  const ModelShape& s = gpt.shape();
  nlohmann::json spec = {{"depth", s.depth}, {"dim", s.dim}, {"n_head", s.n_head}, {"n_kv_head", s.n_kv_head},
                         {"head_dim", s.head_dim}, {"vocab_size", s.vocab_size}, {"B", B}, {"T", T},
                         {"params", nlohmann::json::array()}};
  for (const auto& p : gpt.params())
    spec["params"].push_back({{"name", p.name}, {"shape", p.shape}, {"offset", p.offset}});
  spec.update(extra);
  auto bytes = [](const void* p, size_t n) { return std::string_view(static_cast<const char*>(p), n); };
  std::vector<int32_t> batch = idx;
  batch.insert(batch.end(), targets.begin(), targets.end());
  const size_t half = static_cast<size_t>(T) * s.head_dim / 2;
  std::vector<float> rope(gpt.rope_cos().begin(), gpt.rope_cos().begin() + half);
  rope.insert(rope.end(), gpt.rope_sin().begin(), gpt.rope_sin().begin() + half);
  bool ok = write_file_atomic(dir + "/spec.json", spec.dump()).ok() &&
            write_file_atomic(dir + "/w.f32", bytes(weights.data(), weights.size() * 4)).ok() &&
            write_file_atomic(dir + "/b.i32", bytes(batch.data(), batch.size() * 4)).ok() &&
            write_file_atomic(dir + "/r.f32", bytes(rope.data(), rope.size() * 4)).ok();
  EXPECT_TRUE(ok) << "cannot write the peer's inputs in " << dir;
  if (!ok) return false;
  auto r = run_cmd("/usr/bin/python3 " + source_dir() + "/tests/torch/gpt_ref.py " + dir + "/spec.json " + dir +
                   "/w.f32 " + dir + "/b.i32 " + dir + "/r.f32 " + dir + "/out.bin");
  EXPECT_EQ(r.rc, 0) << "PyTorch peer failed (Debian python3-torch; run scripts/install_deps.sh): " << r.out;
  return r.rc == 0 && read_file(dir + "/out.bin", out).ok();
}

}  // namespace frontier::testing
