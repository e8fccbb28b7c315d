// Shared by the fuzz targets: a per-process scratch directory, file writes, and the valid files a target puts
// around the one it fuzzes (a prepared dataset, a CORE bundle), so every input reaches the parser under test.
//
//   const std::string& dir = fuzz::scratch_dir();        // $TMPDIR/frontier_fuzz_XXXXXX, removed at exit
//   fuzz::write(dir + "/calibration.json", data, size);
//   static const std::string ds = fuzz::make_dataset();  // prepare() on a small built-in corpus, once
//
// Only the scratch directory is ever written or removed. A crash skips the atexit removal, so scripts/sanitize.sh
// points TMPDIR at a folder of its own and clears that.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "data/prepare.h"

namespace frontier::fuzz {

inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "frontier_fuzz_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) {
      std::perror("fuzz: mkdtemp");
      std::abort();
    }
    static std::string removed = tmpl;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(removed, ec);
    });
    return tmpl;
  }();
  return dir;
}

inline void write(const std::string& path, const void* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(("fuzz: write " + path).c_str());
    std::abort();
  }
}
inline void write(const std::string& path, std::string_view s) { write(path, s.data(), s.size()); }

inline std::string read(const std::string& path) {
  std::string s;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return s;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

// A prepared dataset (vocab 300, one train and one val shard) in scratch_dir()/dataset, built once per process by
// the real prepare() from a fixed corpus, so it is the same bytes every run (the committed manifest seeds match it).
inline std::string make_dataset() {
  const std::string dir = scratch_dir() + "/dataset";
  std::string jsonl;
  uint32_t x = 17;
  auto rnd = [&x] { return (x = x * 1103515245u + 12345u) >> 16; };
  for (int d = 0; d < 60; d++) {
    std::string doc;
    for (int w = 0; w < 20 + d % 13; w++) {
      if (w) doc += rnd() % 9 ? " " : ", ";
      for (int k = 0; k < 2 + static_cast<int>(rnd() % 6); k++) doc.push_back(static_cast<char>('a' + rnd() % 12));
    }
    jsonl += nlohmann::json({{"text", doc + ". " + std::to_string(d) + " \xc3\xa9t\xc3\xa9"}}).dump() + "\n";
  }
  write(scratch_dir() + "/corpus.jsonl", jsonl);
  PrepareOptions o;
  o.train_inputs = {scratch_dir() + "/corpus.jsonl"};
  o.out_dir = dir;
  o.vocab_size = 300;
  o.val_every = 5;
  o.threads = 1;
  o.progress = false;
  PrepareResult r;
  Status s = prepare(o, &r);
  if (!s.ok()) {
    std::fprintf(stderr, "fuzz: preparing the fixture dataset failed: %s\n", s.message().c_str());
    std::abort();
  }
  // FRONTIER_FUZZ_DUMP_FIXTURE=DIR: copy it there, to make seeds from (docs/fuzzing.md).
  if (const char* out = std::getenv("FRONTIER_FUZZ_DUMP_FIXTURE"))
    std::filesystem::copy(dir, out, std::filesystem::copy_options::recursive);
  return dir;
}

// A CORE bundle in nanochat's layout with one task of each type: the real bundle's core.yaml entries,
// eval_meta_data.csv rows and first jsonl rows of arc_easy, winograd and lambada_openai (same dataset_uri, so the
// real core.yaml and csv, used as seeds, find these three tasks).
struct Bundle {
  std::string dir, yaml, csv;
  std::string files[3];  // eval_data/<uri> of the multiple_choice, schema and language_modeling tasks
  std::string rows[3];   // their valid contents
};

inline const char* const kBundleUris[3] = {"world_knowledge/arc_easy.jsonl",
                                           "language_understanding/winograd_wsc.jsonl",
                                           "language_understanding/lambada_openai.jsonl"};

inline Bundle make_bundle() {
  Bundle b;
  b.dir = scratch_dir() + "/bundle";
  std::filesystem::create_directories(b.dir + "/eval_data/world_knowledge");
  std::filesystem::create_directories(b.dir + "/eval_data/language_understanding");
  b.yaml =
      "icl_tasks:\n"
      "-\n  label: arc_easy\n  dataset_uri: world_knowledge/arc_easy.jsonl\n  num_fewshot: [10]\n"
      "  icl_task_type: multiple_choice\n  continuation_delimiter: \"\\nAnswer: \"\n"
      "-\n  label: winograd\n  dataset_uri: language_understanding/winograd_wsc.jsonl\n  num_fewshot: [0]\n"
      "  icl_task_type: schema\n"
      "-\n  label: lambada_openai\n  dataset_uri: language_understanding/lambada_openai.jsonl\n  num_fewshot: [0]\n"
      "  icl_task_type: language_modeling\n"
      "-\n  label: squad\n  dataset_uri: reading_comprehension/squad.jsonl\n  num_fewshot: [10]\n"
      "  icl_task_type: language_modeling\n";
  b.csv =
      "Eval Task,Task Category,Task Type,#shots,#datapoints,Random baseline,Centered Metric?,Description\n"
      "arc_easy,world knowledge,multiple choice,10,2376,25,,\"ARC easy consists of 2,376 easy four-choice "
      "multiple choice science questions\"\n"
      "lambada_openai,language understanding,language modeling,0,5153,0,,\"LAMBADA consists of 5,153 passages\"\n"
      "winograd,language understanding,schema,0,273,50,,\" The Winograd Schema Challenge\"\n";
  b.rows[0] =
      "{\"choices\": [\"safety goggles\", \"breathing mask\", \"rubber gloves\", \"lead apron\"], \"query\": "
      "\"Question: Which piece of safety equipment is used to keep mold spores from entering the respiratory "
      "system?\", \"gold\": 1}\n"
      "{\"choices\": [\"Sunlight is the source of energy for nearly all ecosystems.\", \"Most ecosystems are found "
      "on land instead of in water.\"], \"query\": \"Question: Which statement best explains why photosynthesis is "
      "the foundation of most food webs?\", \"gold\": 0}\n";
  b.rows[1] =
      "{\"context_options\": [\"The city councilmen refused the demonstrators a permit because the city "
      "councilmen\", \"The city councilmen refused the demonstrators a permit because the demonstrators\"], "
      "\"continuation\": \"feared violence.\", \"gold\": 0}\n";
  b.rows[2] =
      "{\"context\": \"Give me a minute to change and I'll meet you at the docks.\\\" She'd forced those words "
      "through her teeth.\\n\\n\\\"No need to change. We won't be that long.\\\"\\n\\nShane gripped her\", "
      "\"continuation\": \"arm\"}\n";
  for (int i = 0; i < 3; i++) b.files[i] = b.dir + "/eval_data/" + kBundleUris[i];
  write(b.dir + "/core.yaml", b.yaml);
  write(b.dir + "/eval_meta_data.csv", b.csv);
  for (int i = 0; i < 3; i++) write(b.files[i], b.rows[i]);
  return b;
}

}  // namespace frontier::fuzz
