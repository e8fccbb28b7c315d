// The CORE bundle (eval/core_eval.h load_core_bundle): the input after its first byte replaces one file of a valid
// bundle with one task of each type (fuzz_util.h make_bundle), the others kept valid. First byte mod 5 picks:
//   0 core.yaml, 1 eval_meta_data.csv, 2 the multiple_choice task's jsonl, 3 the schema task's, 4 the LM task's.
// Seeds: the real bundle's core.yaml and eval_meta_data.csv (../shared/data/eval_bundle) and the first rows of its
// arc_easy, winograd_wsc and lambada_openai files.
// Dictionary: fuzz/dicts/bundle.dict (scripts/sanitize.sh passes it to libFuzzer).
#include <cstdint>
#include <string>

#include "eval/core_eval.h"
#include "fuzz_util.h"

using namespace frontier;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const fuzz::Bundle b = fuzz::make_bundle();
  const int which = data[0] % 5;
  const std::string path = which == 0   ? b.dir + "/core.yaml"
                           : which == 1 ? b.dir + "/eval_meta_data.csv"
                                        : b.files[which - 2];
  fuzz::write(path, data + 1, size - 1);
  CoreBundle bundle;
  (void)load_core_bundle(b.dir, &bundle);
  fuzz::write(path, which == 0 ? b.yaml : which == 1 ? b.csv : b.rows[which - 2]);
  return 0;
}
