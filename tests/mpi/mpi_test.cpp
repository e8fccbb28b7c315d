// Data-parallel training under mpirun (issue 13; docs/distributed.md), tested with `mpirun -np 2` on this machine,
// one thread per rank: rank equivalence with one process, bit-identical reruns, sharded = replicated optimizer,
// bit-exact resume, and the failures (a dead rank, a hung rank, mismatched configs, too many ranks for the data,
// resuming on another rank count), each ending with a clear error and no hang.
//
// Tolerance: none for the weights. One process reading the same 2 data streams sums each stream's gradient on its
// own and then adds the two, as 2 ranks each sum theirs and MPI adds them; a sum of two floats is the same in
// either order, so losses, weights and optimizer state are bit-identical (with more ranks MPI's reduction tree may
// associate differently: then last-bit differences, which AdamW's sign-like first steps amplify to ~1e-4 relative
// in the weights of rarely-seen tokens while the losses agree to ~1e-7; measured here when the process summed
// micro-step by micro-step instead). val_bpb's double sums are added in another order: 1e-6.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "../reliability/reliability_util.h"
#include "../train_fixture.h"
#include "model/gpt.h"
#include "train/checkpoint.h"

namespace frontier::testing {
namespace {

// mpirun as CI runs it (root: --allow-run-as-root); -q drops mpirun's own banners; --bind-to none because CTest
// runs tests side by side and two jobs both bound to cores 0 and 1 would share them badly.
std::vector<std::string> mpirun(int np) {
  return {"/usr/bin/mpirun", "-q", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np",
          std::to_string(np)};
}

// The tiny test model (train_fixture.h) in fp32, 20 steps, one thread, in run dir `run`. The gradient exchange
// overlapped with the backward (train.overlap_comm) in 10 KB buckets (about one per parameter: the default 4 MB would
// make the whole 0.4 MB arena one bucket), so that every test also runs it in many pieces.
std::vector<std::string> train_args(const std::string& run, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> a = {frontier_bin(), "train", "--data", dataset() + "/data", "--budget", "600"};
  for (const char* kv : {"model.vocab_size=400", "model.depth=1", "model.dim=64", "model.head_dim=32",
                         "model.seq_len=32", "train.micro_batch=4", "eval.tokens=1024", "eval.batch=4",
                         "train.peak_gflops=100", "train.precision=fp32", "train.threads=1", "train.max_steps=20",
                         "train.overlap_comm=true", "train.comm_bucket_mb=0.01"}) {
    a.push_back("--set");
    a.push_back(kv);
  }
  a.push_back("--set");
  a.push_back("train.run_dir=" + run);
  for (const auto& e : extra) a.push_back(e);
  return a;
}

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<double> losses(const std::string& run) {
  std::vector<double> out;
  std::ifstream in(run + "/log.jsonl");
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line)["loss"].get<double>());
  return out;
}

struct Ckpt {
  std::vector<float> w, st;
  nlohmann::json meta;
};
Ckpt ckpt(const std::string& run) {
  Ckpt c;
  std::string toml, meta;
  Status s = load_checkpoint(run + "/model.ckpt", &toml, &meta, &c.w, &c.st);
  EXPECT_TRUE(s.ok()) << s.message();
  if (s.ok()) c.meta = nlohmann::json::parse(meta);
  return c;
}

void expect_ok(const Outcome& o, const char* what) {
  ASSERT_FALSE(o.timed_out) << what << " hung:\n" << o.err;
  ASSERT_EQ(o.rc, 0) << what << " failed:\n" << o.out << "\n" << o.err;
}

// One "error:" line (rank 0 speaks for the job), containing `want`; no hang, no crash.
void expect_one_error(const Outcome& o, const std::string& want) {
  EXPECT_FALSE(o.timed_out) << "hung:\n" << o.err;
  EXPECT_NE(o.rc, 0);
  size_t n = 0, p = 0;
  while ((p = o.err.find("error: ", p)) != std::string::npos) n++, p++;
  EXPECT_EQ(n, 1u) << o.err;
  EXPECT_NE(o.err.find(want), std::string::npos) << "wanted '" << want << "' in:\n" << o.err;
  for (const char* bad : {"FRONTIER_CHECK", "terminate called", "Segmentation", "Aborted"})
    EXPECT_EQ(o.err.find(bad), std::string::npos) << bad << " in:\n" << o.err;
}

class Mpi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists("/usr/bin/mpirun"))
        << "mpirun is missing: scripts/install_deps.sh installs openmpi-bin";
    dir_ = make_temp_dir("mpi");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

// One process reading 2 data streams (train.total_batch_tokens = tokens, 2 micro-batches of 4 x 32 by default)
// against `mpirun -np 2` with the same extra keys: the same 20 losses, weights and optimizer state, bit for bit.
// Returns the mpirun run's output.
Outcome expect_two_ranks_equal_one_process(const std::string& one, const std::string& two,
                                           const std::vector<std::string>& extra, const std::string& tokens) {
  expect_ok(run_argv(train_args(one, cat(extra, {"--set", "train.data_streams=2", "--set",
                                                 "train.total_batch_tokens=" + tokens})), 180),
            "1 process");
  Outcome o = run_argv(cat(mpirun(2), train_args(two, cat(extra, {"--set", "train.total_batch_tokens=" + tokens}))),
                       180);
  expect_ok(o, "mpirun -np 2");
  const auto a = losses(one), b = losses(two);
  EXPECT_EQ(a.size(), 20u);
  EXPECT_EQ(a, b) << "losses differ";
  const Ckpt ca = ckpt(one), cb = ckpt(two);
  EXPECT_TRUE(ca.w == cb.w) << "weights differ";
  EXPECT_TRUE(ca.st == cb.st) << "optimizer state differs";
  return o;
}

// 2 ranks x micro-batch 4 = 1 process accumulating 2 micro-batches of 4 read from the same 2 data streams.
TEST_F(Mpi, TwoRanksEqualOneProcessAccumulating) {
  const std::string one = dir_ + "/one", two = dir_ + "/two";
  expect_ok(run_argv(train_args(one, {"--set", "train.data_streams=2", "--set", "train.total_batch_tokens=256"}), 120),
            "1 process");
  Outcome o = run_argv(cat(mpirun(2), train_args(two)), 120);
  expect_ok(o, "mpirun -np 2");
  EXPECT_NE(o.out.find("ranks:            2"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("comm_ms_per_step:"), std::string::npos) << o.out;
  const auto a = losses(one), b = losses(two);
  ASSERT_EQ(a.size(), 20u);
  ASSERT_EQ(b.size(), 20u);
  EXPECT_EQ(a, b) << "losses differ";
  const Ckpt ca = ckpt(one), cb = ckpt(two);
  EXPECT_TRUE(ca.w == cb.w) << "weights differ";
  EXPECT_TRUE(ca.st == cb.st) << "optimizer state differs";
  // val_bpb: the ranks' (nats, bytes) sums are added in another order than one process adds them.
  EXPECT_NEAR(summary_value(o.out, "val_bpb"), summary_value(Child::slurp(one + "/summary.txt"), "val_bpb"), 1e-6);
  EXPECT_EQ(cb.meta["ranks"], 2);
  EXPECT_EQ(cb.meta["loaders"].size(), 2u);
}

// Every architecture lever at once (windows, key offset, smear, backout, tied head, n-gram tables, multi-token
// prediction, experts with their load-balance gradient): 2 ranks still equal 1 process bit for bit, and the run
// resumes under mpirun.
TEST_F(Mpi, ArchitectureVariantsEqualOneProcess) {
  const std::vector<std::string> arch = {
      "--set", "model.depth=3", "--set", "model.window_pattern=SL", "--set", "model.short_window=8",
      "--set", "model.rope_fraction=0.5", "--set", "model.key_offset=true", "--set", "model.smear=true",
      "--set", "model.backout=true", "--set", "model.tie_embeddings=true", "--set", "model.ngram_orders=2,3",
      "--set", "model.ngram_buckets=500", "--set", "model.mtp_heads=1", "--set", "model.moe_experts=4",
      "--set", "model.moe_layers=alternate", "--set", "model.mlp=leaky_relu2"};
  expect_two_ranks_equal_one_process(dir_ + "/one", dir_ + "/two", arch, "256");
}

// The recipe levers under mpirun equal one process reading the same 2 streams, bit for bit: NorMuon's moments (kept
// by each matrix's owner and summed into the checkpoint), Muon's last update of optim.muon_every (its owner's), the batch-size warm-up (each rank reads half the
// micro-batches one process reads), the nanochat schedules, the weight EMA (every rank's whole copy), the sequence
// and window warm-ups (every stream's rows change alike) and the untie (every rank copies wte into lm_head, whose
// optimizer state, on its owner, starts at zero).
TEST_F(Mpi, RecipeLeversEqualOneProcess) {
  const std::vector<std::string> recipe = {
      "--set", "optim.normuon_beta2=0.9", "--set", "optim.muon_equilibrate=true", "--set",
      "optim.muon_renormalize=true", "--set", "optim.momentum_schedule=nanochat", "--set",
      "optim.weight_decay_schedule=cosine", "--set", "optim.muon_every=2", "--set", "train.batch_warmup_ratio=0.5",
      "--set",
      "train.ema_decay=0.9", "--set", "train.seq_warmup_ratio=0.3", "--set", "train.seq_len_start=16",
      "--set", "model.depth=2", "--set", "model.window_pattern=SL", "--set", "model.short_window=16", "--set",
      "train.window_warmup_ratio=0.5", "--set", "train.window_start=8", "--set", "model.tie_embeddings=true",
      "--set", "model.untie_at=0.6"};
  // (NorMuon's moments and the EMA are in the optimizer state compared.)
  expect_two_ranks_equal_one_process(dir_ + "/recipe_one", dir_ + "/recipe_two", recipe, "512");
}

// Overlap changes when the buckets go, not what is added: the exchange after the backward (one collective over the
// arena) and the overlapped one with 10 KB buckets (one per parameter) or 100 KB buckets (some spanning both owners'
// ranges), sharded and replicated, give bit-identical weights and optimizer state.
TEST_F(Mpi, OverlappedExchangeIsBitIdentical) {
  Outcome o = run_argv(cat(mpirun(2), train_args(dir_ + "/after", {"--set", "train.overlap_comm=false"})), 120);
  expect_ok(o, "exchange after the backward");
  EXPECT_NE(o.out.find("gradients fp32, after the backward"), std::string::npos) << o.out;
  const Ckpt after = ckpt(dir_ + "/after");
  for (const char* mb : {"0.01", "0.1"})
    for (const char* shard : {"true", "false"}) {
      const std::string run = dir_ + "/ov-" + mb + "-" + shard;
      o = run_argv(cat(mpirun(2), train_args(run, {"--set", std::string("train.comm_bucket_mb=") + mb, "--set",
                                                   std::string("train.shard_optimizer=") + shard})),
                   120);
      expect_ok(o, run.c_str());
      EXPECT_NE(o.out.find("in buckets during the backward"), std::string::npos) << o.out;
      EXPECT_EQ(losses(dir_ + "/after"), losses(run)) << run;
      const Ckpt c = ckpt(run);
      EXPECT_TRUE(c.w == after.w) << run << ": weights differ";
      EXPECT_TRUE(c.st == after.st) << run << ": optimizer state differs";
    }
}

// bf16 gradients on the wire: each owner adds the ranks' bf16-rounded gradients in fp32, in rank order. Sharded and
// replicated, overlapped and not, still agree bit for bit (the same sums). Against fp32 the loss curve moves by
// bf16's rounding (8 bits of mantissa: up to 2^-9 relative per gradient element): measured here over the test
// model's 20 steps, the largest relative loss difference was 1.1e-3; tolerance 5e-3. The weights are printed, not
// bounded: they differ by 2-4% (relative L2) in most tensors and by up to 20% in the zero-initialised output
// projections and the value embeddings, whose first Muon / AdamW steps are direction-only (orthogonalised, or
// m / sqrt(v) = sign(g) at step 1), so a near-cancelling sum whose sign the rounding flips moves them a full step
// the other way; the loss is the comparison that means something.
TEST_F(Mpi, Bf16GradientsMatchFp32WithinTolerance) {
  const std::vector<std::string> bf16 = {"--set", "train.comm_dtype=bf16"};
  Outcome o = run_argv(cat(mpirun(2), train_args(dir_ + "/bf16", bf16)), 120);
  expect_ok(o, "bf16 sharded");
  EXPECT_NE(o.out.find("gradients bf16"), std::string::npos) << o.out;
  expect_ok(run_argv(cat(mpirun(2), train_args(dir_ + "/bf16-rep",
                                                cat(bf16, {"--set", "train.shard_optimizer=false"}))), 120),
            "bf16 replicated");
  expect_ok(run_argv(cat(mpirun(2), train_args(dir_ + "/bf16-after", cat(bf16, {"--set", "train.overlap_comm=false"}))),
                     120), "bf16 after the backward");
  expect_ok(run_argv(cat(mpirun(2), train_args(dir_ + "/fp32")), 120), "fp32");
  const Ckpt b = ckpt(dir_ + "/bf16"), rep = ckpt(dir_ + "/bf16-rep"), after = ckpt(dir_ + "/bf16-after"),
             f = ckpt(dir_ + "/fp32");
  EXPECT_TRUE(b.w == rep.w && b.st == rep.st) << "bf16: sharded and replicated differ";
  EXPECT_TRUE(b.w == after.w && b.st == after.st) << "bf16: overlapped and after the backward differ";
  const auto lb = losses(dir_ + "/bf16"), lf = losses(dir_ + "/fp32");
  ASSERT_EQ(lb.size(), lf.size());
  double worst = 0;
  for (size_t i = 0; i < lb.size(); i++) worst = std::max(worst, std::fabs(lb[i] - lf[i]) / std::fabs(lf[i]));
  Config cfg;
  std::unique_ptr<Gpt> gpt;
  ASSERT_TRUE(load_trained_model(dir_ + "/fp32/model.ckpt", &cfg, &gpt).ok());
  std::printf("bf16 vs fp32 gradient exchange, 20 steps: max relative loss difference %.3g; weights, relative L2:",
              worst);
  for (const auto& p : gpt->params()) {
    double d2 = 0, n2 = 0;
    for (int64_t i = p.offset; i < p.offset + p.numel(); i++)
      d2 += double(b.w[i] - f.w[i]) * (b.w[i] - f.w[i]), n2 += double(f.w[i]) * f.w[i];
    const double rel = n2 > 0 ? std::sqrt(d2 / n2) : std::sqrt(d2);
    std::printf(" %s %.2g", p.name.c_str(), rel);
  }
  std::printf("\n");
  EXPECT_GT(worst, 0) << "bf16 changed nothing: is it on?";
  EXPECT_LT(worst, 5e-3);
}

TEST_F(Mpi, UnknownCommDtypeIsOneError) {
  Outcome o = run_argv(cat(mpirun(2), train_args(dir_ + "/a", {"--set", "train.comm_dtype=fp16"})), 60);
  expect_one_error(o, "train.comm_dtype = 'fp16' is not one of fp32, bf16");
}

// OpenMPI forced over TCP on the loopback interface (the byte transfer layer a multi-host job uses) instead of
// shared memory: the same sums of the same two floats, so bit-identical results.
TEST_F(Mpi, LoopbackTcpEqualsSharedMemory) {
  expect_ok(run_argv(cat(mpirun(2), train_args(dir_ + "/shm")), 120), "shared memory");
  std::vector<std::string> tcp = mpirun(2);
  tcp.insert(tcp.begin() + 1, {"--mca", "pml", "ob1", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"});
  expect_ok(run_argv(cat(tcp, train_args(dir_ + "/tcp")), 120), "TCP loopback");
  EXPECT_EQ(losses(dir_ + "/shm"), losses(dir_ + "/tcp"));
  const Ckpt a = ckpt(dir_ + "/shm"), b = ckpt(dir_ + "/tcp");
  EXPECT_TRUE(a.w == b.w) << "weights differ between shared memory and TCP";
  EXPECT_TRUE(a.st == b.st) << "optimizer state differs between shared memory and TCP";
}

TEST_F(Mpi, SameSeedSameRanksIsBitIdentical) {
  expect_ok(run_argv(cat(mpirun(2), train_args(dir_ + "/a")), 120), "first run");
  expect_ok(run_argv(cat(mpirun(2), train_args(dir_ + "/b")), 120), "second run");
  EXPECT_EQ(losses(dir_ + "/a"), losses(dir_ + "/b"));
  const Ckpt a = ckpt(dir_ + "/a"), b = ckpt(dir_ + "/b");
  EXPECT_TRUE(a.w == b.w) << "weights differ between two identical runs";
  EXPECT_TRUE(a.st == b.st) << "optimizer state differs between two identical runs";
}

// ZeRO-1 sharding changes who computes each update, not the update: with 2 ranks the reduce-scatter and the
// all-reduce add the same two numbers, so weights and the gathered optimizer state are bit-identical.
TEST_F(Mpi, ShardedOptimizerEqualsReplicated) {
  expect_ok(run_argv(cat(mpirun(2), train_args(dir_ + "/sharded")), 120), "sharded");
  Outcome o = run_argv(cat(mpirun(2), train_args(dir_ + "/replicated", {"--set", "train.shard_optimizer=false"})),
                       120);
  expect_ok(o, "replicated");
  EXPECT_NE(o.out.find("replicated (all-reduce)"), std::string::npos) << o.out;
  const Ckpt a = ckpt(dir_ + "/sharded"), b = ckpt(dir_ + "/replicated");
  EXPECT_TRUE(a.w == b.w) << "weights differ";
  EXPECT_TRUE(a.st == b.st) << "optimizer state differs";
}

// Killed after step 10's checkpoint, resumed under mpirun: steps 11-20 and the final weights as an uninterrupted run.
TEST_F(Mpi, ResumeUnderMpirunIsBitExact) {
  const std::string full = dir_ + "/full", cut = dir_ + "/cut";
  expect_ok(run_argv(cat(mpirun(2), train_args(full)), 120), "uninterrupted run");
  Outcome dead = run_argv(cat(mpirun(2), train_args(cut, {"--set", "train.checkpoint_every_steps=10"})), 120,
                          {"FRONTIER_FAULT_EXIT_AFTER_STEP=10"});
  ASSERT_FALSE(dead.timed_out);
  ASSERT_NE(dead.rc, 0) << "the fault did not fire";
  Outcome o = run_argv(cat(mpirun(2), {frontier_bin(), "train", "--resume", cut}), 120);
  expect_ok(o, "resume");
  EXPECT_NE(o.out.find("resumed " + cut + " at step 10"), std::string::npos) << o.out;
  EXPECT_EQ(losses(full), losses(cut));
  EXPECT_TRUE(ckpt(full).w == ckpt(cut).w) << "weights differ after resuming";
  EXPECT_TRUE(ckpt(full).st == ckpt(cut).st) << "optimizer state differs after resuming";
}

// A run's data streams are part of its data order: a different rank count is refused with the fix, unless the
// streams were fixed (train.data_streams), in which case any rank count that divides them continues the run.
TEST_F(Mpi, ResumeOnAnotherRankCount) {
  const std::string cut = dir_ + "/cut", fixed = dir_ + "/fixed";
  Outcome dead = run_argv(cat(mpirun(2), train_args(cut, {"--set", "train.checkpoint_every_steps=10"})), 120,
                          {"FRONTIER_FAULT_EXIT_AFTER_STEP=10"});
  ASSERT_NE(dead.rc, 0);
  Outcome o = run_argv({frontier_bin(), "train", "--resume", cut}, 60);
  EXPECT_CLEAN_ERROR(o, "resume it with `mpirun -np 2`");
  dead = run_argv(cat(mpirun(2), train_args(fixed, {"--set", "train.checkpoint_every_steps=10", "--set",
                                                    "train.data_streams=2"})),
                  120, {"FRONTIER_FAULT_EXIT_AFTER_STEP=10"});
  ASSERT_NE(dead.rc, 0);
  o = run_argv({frontier_bin(), "train", "--resume", fixed}, 120);
  expect_ok(o, "resume of a 2-stream run in one process");
  EXPECT_EQ(losses(fixed).size(), 20u);
}

TEST_F(Mpi, MismatchedConfigsAreNamed) {
  std::vector<std::string> argv = cat(mpirun(1), train_args(dir_ + "/a", {"--set", "train.seed=1"}));
  argv.push_back(":");
  argv.push_back("-np");
  argv.push_back("1");
  argv = cat(argv, train_args(dir_ + "/a", {"--set", "train.seed=2"}));
  Outcome o = run_argv(argv, 60);
  expect_one_error(o, "rank 1 runs a different config");
}

TEST_F(Mpi, DeadRankEndsTheJob) {
  std::vector<std::string> argv = cat(mpirun(2), train_args(dir_ + "/a"));
  argv.erase(argv.begin() + 1);  // without -q: mpirun's own report names the dead rank too
  Outcome o = run_argv(argv, 60, {"FRONTIER_FAULT_RANK=1", "FRONTIER_FAULT_KILL_AT_STEP=3"});
  EXPECT_FALSE(o.timed_out) << "a dead rank hung the job:\n" << o.err;
  EXPECT_NE(o.rc, 0);
  EXPECT_NE(o.err.find("process rank 1 with PID"), std::string::npos) << "mpirun names the dead rank:\n" << o.err;
  EXPECT_NE(o.err.find("error: stopped by a signal while waiting for rank 1 (host "), std::string::npos)
      << "rank 0 names the rank it waited for:\n" << o.err;
}

TEST_F(Mpi, HungRankIsNamedAndEndsTheJob) {
  Outcome o = run_argv(cat(mpirun(2), train_args(dir_ + "/a", {"--set", "train.comm_timeout_seconds=3"})), 60,
                       {"FRONTIER_FAULT_RANK=1", "FRONTIER_FAULT_HANG_AT_STEP=3"});
  EXPECT_FALSE(o.timed_out) << "a hung rank hung the job:\n" << o.err;
  EXPECT_NE(o.rc, 0);
  EXPECT_NE(o.err.find("error: rank 1 (host "), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("has not finished the forward and backward of step 3 within 3 s"), std::string::npos) << o.err;
}

TEST_F(Mpi, MoreRanksThanTheDataAllows) {
  // The test split holds 3 batches of 128 documents: 4 ranks cannot each have their own.
  Outcome o = run_argv(cat(mpirun(4), train_args(dir_ + "/a")), 60);
  expect_one_error(o, "is too small for 4 streams");
}

// `frontier scale comm` under mpirun, then `scale project` reading its JSON (the numbers are this machine's; the
// test checks their shape and sense, never a speed).
TEST_F(Mpi, ScaleCommFeedsTheProjection) {
  const std::string json = dir_ + "/comm.json";
  Outcome o = run_argv(cat(mpirun(2), {frontier_bin(), "scale", "comm", "--max-mb", "1", "--json", json}), 120);
  expect_ok(o, "scale comm");
  EXPECT_NE(o.out.find("collectives between 2 ranks on 1 host"), std::string::npos) << o.out;
  nlohmann::json j = nlohmann::json::parse(Child::slurp(json));
  ASSERT_EQ(j["ranks"], 2);
  ASSERT_EQ(j["rows"].size(), 3u * 4u);  // 3 operations x 4 KB, 16 KB, 64 KB, 256 KB, 1 MB... up to 1 MB: 4 sizes
  for (const auto& r : j["rows"]) EXPECT_GT(r["busbw_GBps"].get<double>(), 0) << r.dump();
  o = run_argv({frontier_bin(), "scale", "project", "--set", "model.depth=1", "--set", "model.seq_len=64",
                "--set", "train.micro_batch=2", "--comm", json, "--steps", "1", "--json", dir_ + "/p.json"}, 120);
  expect_ok(o, "scale project");
  nlohmann::json p = nlohmann::json::parse(Child::slurp(dir_ + "/p.json"));
  ASSERT_GE(p["rows"].size(), 4u);
  EXPECT_NEAR(p["rows"][0]["efficiency"].get<double>(), 1.0, 1e-9);  // 1 rank
  // Above 1 only by the optimizer's share that sharding removes from each rank (the one-rank baseline pays it all).
  const double opt_share = p["t_opt"].get<double>() / (p["t_fb"].get<double>() + p["t_opt"].get<double>());
  for (const auto& r : p["rows"]) {
    EXPECT_GT(r["tokens_per_sec"].get<double>(), 0);
    EXPECT_LE(r["efficiency"].get<double>(), 1.0 / (1.0 - opt_share) + 1e-9) << r.dump();
  }
  EXPECT_NE(o.out.find("measured: 1 host, 2 ranks"), std::string::npos) << o.out;
}

// `frontier research --ranks 2`: every trial runs under mpirun -np 2 and its summary says so.
TEST_F(Mpi, ResearchTrialsRunUnderMpirun) {
  write_text(dir_ + "/base.toml", "[model]\nvocab_size = 400\ndepth = 1\ndim = 64\nhead_dim = 32\nseq_len = 32\n"
                                  "[train]\ndata = \"" + dataset() + "/data\"\nmicro_batch = 4\npeak_gflops = 100.0\n"
                                  "threads = 1\n");
  write_text(dir_ + "/space.toml", "[\"optim.matrix_lr\"]\nchoices = [0.01, 0.03]\n");
  Outcome o = run_argv({frontier_bin(), "research", "--base", dir_ + "/base.toml", "--space", dir_ + "/space.toml",
                        "--budget", "1", "--trials", "2", "--repeats", "1", "--proposer", "random", "--ranks", "2",
                        "--out", dir_ + "/s"},
                       300);
  expect_ok(o, "research --ranks 2");
  int trials = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/s/trials")) {
    if (!e.is_directory() || !std::filesystem::exists(e.path() / "train.log")) continue;
    trials++;
    const std::string log = Child::slurp((e.path() / "train.log").string());
    EXPECT_NE(log.find("ranks:            2"), std::string::npos) << e.path() << ":\n" << log;
  }
  EXPECT_EQ(trials, 2) << o.out << o.err;
}

// A hostfile naming a host that does not exist: OpenMPI's launcher fails before Frontier starts (ssh cannot resolve
// it, or there is no ssh/rsh agent at all): a non-zero exit, quickly, never a hang.
TEST_F(Mpi, UnreachableHostEndsWithAnError) {
  write_text(dir_ + "/hosts", "no-such-host-frontier-test slots=1\n");
  Outcome o = run_argv({"/usr/bin/mpirun", "--allow-run-as-root", "--hostfile", dir_ + "/hosts", "-np", "1",
                        frontier_bin(), "train", "--help"},
                       120);
  EXPECT_FALSE(o.timed_out) << "an unreachable host hung mpirun:\n" << o.err;
  EXPECT_NE(o.rc, 0);
  const std::string all = o.out + o.err;
  EXPECT_TRUE(all.find("no-such-host-frontier-test") != std::string::npos ||
              all.find("rsh_agent") != std::string::npos || all.find("unable to reliably start") != std::string::npos)
      << all;
}

TEST_F(Mpi, OnlyTrainAndScaleCommRunUnderMpirun) {
  Outcome o = run_argv(cat(mpirun(2), {frontier_bin(), "inspect", "--data", dataset() + "/data"}), 60);
  expect_one_error(o, "error: only `frontier train` and `frontier scale comm` run under mpirun");
  EXPECT_NE(o.err.find("error: only `frontier train` and `frontier scale comm` run under mpirun"),
            std::string::npos) << o.err;
}

}  // namespace
}  // namespace frontier::testing
