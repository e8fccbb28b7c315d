// The calibration file (calibrate/calibrate.h load_calibration): the input is $FRONTIER_CACHE/calibration.json as
// `frontier calibrate` saves it and train, bench and profile read it back, for 1 and for 2 threads.
// Seeds: files written by `frontier calibrate` on this machine, and older or foreign variants of them.
// Dictionary: fuzz/dicts/json.dict (scripts/sanitize.sh passes it to libFuzzer).
#include <cstdint>
#include <string>

#include "calibrate/calibrate.h"
#include "fuzz_util.h"

using namespace frontier;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fuzz::scratch_dir() + "/calibration.json";
  fuzz::write(path, data, size);
  for (int threads : {1, 2}) {
    Calibration c;
    (void)load_calibration(path, threads, &c);
  }
  return 0;
}
