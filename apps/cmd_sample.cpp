// frontier sample: generate text from a checkpoint with a KV cache (model/sampler.h).
#include <cfloat>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "model/gpt.h"
#include "model/sampler.h"
#include "train/eval_checkpoint.h"
#include "util/rng.h"
#include "util/utf8.h"

namespace frontier::cli {
namespace {

struct SampleArgs {
  std::string ckpt, data, prompt;
  int tokens = 100, top_k = 50;
  float temperature = 0.8f;
  uint64_t seed = 42;
};

// Samples up to a.tokens tokens after the prompt (already pushed: `logits` are its last), printing the text as it
// forms; returns how many were drawn.
int generate(const SampleArgs& a, const Tokenizer& tok, Sampler& smp, std::vector<float>& logits) {
  Rng rng{a.seed};
  std::vector<uint32_t> gen;
  std::string shown;
  int n = 0;
  for (; n < a.tokens; n++) {
    uint32_t t = Sampler::sample(logits, a.temperature, a.top_k, &rng);
    gen.push_back(t);
    std::string text = tok.decode(gen);  // decode the whole tail: tokens may split UTF-8 sequences
    if (utf8_first_invalid(text) == std::string::npos) {
      std::printf("%s", text.substr(shown.size()).c_str());
      std::fflush(stdout);
      shown = text;
    }
    if (smp.position() >= smp.capacity()) {
      n++;
      break;
    }
    smp.push(t, &logits);
  }
  std::printf("%s\n", tok.decode(gen).substr(shown.size()).c_str());
  std::fflush(stdout);
  return n;
}

int run_sample(const SampleArgs& a) {
  EvalCheckpoint ec;
  Status s = open_checkpoint_for_eval(a.ckpt, a.data, EvalNeeds::kTokenizer, false, &ec);
  if (!s.ok()) return fail(s);
  const Tokenizer& tok = ec.tok;
  if (utf8_first_invalid(a.prompt) != std::string::npos) return fail(Status::error("--prompt is not valid UTF-8"));
  std::vector<uint32_t> ids = {tok.bos_id()};
  if (Status es = tok.encode_ordinary(a.prompt, &ids); !es.ok())
    return fail(Status::error("--prompt: " + es.message()));
  Sampler smp(*ec.gpt);
  if (static_cast<int64_t>(ids.size()) >= smp.capacity())
    return fail(Status::error("the prompt has " + std::to_string(ids.size()) + " tokens; the model's context is " +
                              std::to_string(smp.capacity())));
  std::vector<float> logits;
  for (uint32_t t : ids) smp.push(t, &logits);
  std::printf("%s", a.prompt.c_str());
  const int n = generate(a, tok, smp, logits);
  std::fprintf(stderr, "[sample] %d tokens, temperature %.2f, top-k %d, seed %llu%s\n", n, a.temperature, a.top_k,
               static_cast<unsigned long long>(a.seed),
               smp.position() >= smp.capacity() ? " (stopped at the model's context length)" : "");
  return 0;
}

}  // namespace

void add_sample_command(CLI::App& app, Commands& cmds) {
  auto a = std::make_shared<SampleArgs>();
  auto* sm = app.add_subcommand("sample", "Generate text from a checkpoint (KV cache; temperature, top-k; "
                                          "deterministic for a seed)");
  sm->add_option("--checkpoint", a->ckpt, "RUN_DIR/model.ckpt from frontier train")->required();
  sm->add_option("--data", a->data, "Prepared dataset whose tokenizer to use (default: the run's train.data)");
  sm->add_option("--prompt", a->prompt, "Text to continue (default: unconditioned, from <|bos|> alone)");
  sm->add_option("--tokens", a->tokens, "Tokens to generate (stops earlier at the model's context length)")
      ->check(number_in(0))
      ->capture_default_str();
  sm->add_option("--temperature", a->temperature, "Softmax temperature; 0 = greedy")
      ->check(number_in(0, FLT_MAX))  // finite as a float
      ->capture_default_str();
  sm->add_option("--top-k", a->top_k, "Sample among the k most likely tokens (0 = all)")
      ->check(number_in(0))
      ->capture_default_str();
  sm->add_option("--seed", a->seed, "Sampling seed")->check(number_in(0))->capture_default_str();
  cmds.push_back({sm, [a] { return run_sample(*a); }});
}

}  // namespace frontier::cli
