#include "advise/levers.h"

namespace frontier {

namespace {

struct Entry {
  Lever lever;
  bool in_default;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = {
      {{"windows", "sliding windows SSSL (nanochat 92d63d4: S layers see a quarter of the context)",
        {{"model.window_pattern", "SSSL"}}}, true},
      {{"swiglu", "SwiGLU MLP at relu2's parameters (hidden 8/3 x dim)",
        {{"model.mlp", "swiglu"}, {"model.mlp_ratio", "2.6667"}}}, true},
      {{"leaky_relu2", "LeakyReLU(0.5)^2 MLP", {{"model.mlp", "leaky_relu2"}}}, false},
      {{"smear", "smear: each token mixes in the previous one's embedding (nanochat 92d63d4)",
        {{"model.smear", "true"}}}, true},
      {{"backout", "backout: subtract a learned share of the middle layer's residual before the head",
        {{"model.backout", "true"}}}, true},
      {{"qk_scale", "q and k x 1.2 after QK-norm", {{"model.qk_scale", "1.2"}}, true}, true},
      {{"ve_gate", "value-embedding gate over 12 channels, 3 sigmoid (nanochat 92d63d4)",
        {{"model.ve_gate_channels", "12"}, {"model.ve_gate_scale", "3"}, {"model.ve_gate_init", "0.02"}}}, true},
      {{"value_embeds_all", "value embeddings on every layer", {{"model.value_embeds", "all"}}}, false},
      {{"rope_half", "partial RoPE: half of each head's dimensions rotated", {{"model.rope_fraction", "0.5"}}, true}, false},
      {{"mtp", "multi-token prediction: one extra target (t+2), annealed", {{"model.mtp_heads", "1"}}}, false},
      {{"ngram", "hashed bigram and trigram embedding tables", {{"model.ngram_orders", "2,3"}}}, false},
      {{"normuon", "nanochat 92d63d4's Muon: NorMuon (beta2 0.9), MuonEq rows, Muon+ renormalisation",
        {{"optim.normuon_beta2", "0.9"}, {"optim.muon_equilibrate", "true"}, {"optim.muon_renormalize", "true"}}},
       true},
      {{"nanochat_schedules", "nanochat 92d63d4's momentum (0.85 -> 0.97 -> 0.90) and cosine weight decay",
        {{"optim.momentum_schedule", "nanochat"}, {"optim.weight_decay_schedule", "cosine"}}, true}, true},
      {{"ns3", "three Polar Express iterations instead of five (a cheaper optimizer step)",
        {{"optim.ns_steps", "3"}}}, false},
      {{"muon_every2", "Polar Express every other step, the last update reused between (a cheaper optimizer step)",
        {{"optim.muon_every", "2"}}}, false},
      {{"ema", "weight EMA (decay 0.9): checkpoint and val_bpb on the average", {{"train.ema_decay", "0.9"}}, true}, true},
      // The warm-ups make the early steps cheaper, but the advisor trains in probe mode, which credits no step
      // below the full shape's time (as train.batch_warmup_ratio): the sequence warm-up's step is the base's.
      {{"seq_warmup", "sequence-length warm-up: rows of seq_len / 4 tokens (4x as many) over the first 30%",
        {{"train.seq_warmup_ratio", "0.3"}}, true}, false},
      // Its own S layers (as `windows`, whose step it then has: timed), their window growing from 64.
      {{"window_warmup", "sliding windows SSSL whose window grows from 64 tokens over the first half",
        {{"model.window_pattern", "SSSL"}, {"train.window_warmup_ratio", "0.5"}, {"train.window_start", "64"}}},
       false},
      // The untied model's parameters and work from the first step (lm_head exists, idle until the untie): the
      // default (untied) base's step.
      {{"untie", "tied embeddings until 2/3 of the run, then an lm_head of their own (modded-nanogpt)",
        {{"model.tie_embeddings", "true"}, {"model.untie_at", "0.667"}}, true}, false},
  };
  return e;
}

}  // namespace

const std::vector<Lever>& lever_catalogue() {
  static const std::vector<Lever> all = [] {
    std::vector<Lever> v;
    for (const auto& e : entries()) v.push_back(e.lever);
    return v;
  }();
  return all;
}

Status parse_levers(const std::string& list, std::vector<Lever>* out) {
  out->clear();
  if (list == "none") return ok_status();
  if (list == "all" || list == "default") {
    for (const auto& e : entries())
      if (list == "all" || e.in_default) out->push_back(e.lever);
    return ok_status();
  }
  for (size_t i = 0; i <= list.size();) {
    size_t j = list.find(',', i);
    if (j == std::string::npos) j = list.size();
    const std::string name = list.substr(i, j - i);
    const Lever* hit = nullptr;
    for (const auto& l : lever_catalogue())
      if (l.name == name) hit = &l;
    if (hit == nullptr) {
      std::string names;
      for (const auto& l : lever_catalogue()) names += (names.empty() ? "" : ", ") + l.name;
      return Status::error("--levers: unknown lever '" + name + "'; use default, all, none or names from: " + names);
    }
    for (const auto& l : *out)
      if (l.name == name) return Status::error("--levers names '" + name + "' twice");
    out->push_back(*hit);
    i = j + 1;
  }
  return ok_status();
}

Status merge_levers(const std::vector<const Lever*>& levers, std::map<std::string, std::string>* out) {
  std::map<std::string, std::string> who;
  for (const Lever* l : levers)
    for (const auto& [k, v] : l->sets) {
      auto it = out->find(k);
      if (it != out->end() && it->second != v)
        return Status::error("levers " + who[k] + " and " + l->name + " set " + k + " differently (" + it->second +
                             " vs " + v + ")");
      (*out)[k] = v;
      who[k] = l->name;
    }
  return ok_status();
}

std::string sets_key(const std::map<std::string, std::string>& sets) {
  std::string k;
  for (const auto& [key, v] : sets) k += (k.empty() ? "" : " ") + key + "=" + v;
  return k;
}

}  // namespace frontier
