// The safetensors format (Hugging Face), read and written without the `safetensors` package:
//
//   uint64 little-endian N | N bytes of JSON header (UTF-8, padded with spaces) | data
//   header: {"__metadata__": {"k": "v", ...},                        (optional, string values)
//            "<name>": {"dtype": "F32", "shape": [r, c], "data_offsets": [begin, end]}, ...}
//   offsets are relative to the first data byte; the tensors tile the data exactly (no gaps, no overlaps,
//   nothing after the last), each in row-major order, little-endian.
//
//   std::vector<StTensorIn> ts = {{"lm_head.weight", {V, C}, w, StDtype::kBF16}};   // fp32 in, stored as
//   bf16 FRONTIER_RETURN_IF_ERROR(write_safetensors("out/model.safetensors", ts, {{"format", "pt"}}));
//   SafetensorsFile f;
//   FRONTIER_RETURN_IF_ERROR(f.open("out/model.safetensors"));    // every size and offset checked here
//   const StTensor* t = f.find("lm_head.weight");
//   std::vector<float> x(t->numel());
//   f.read_f32(*t, x.data());                                      // bf16 / f16 widened exactly
//
// Reading checks everything a header can lie about, each as a one-line error "<path>: <problem>": a header
// length past the end of the file (or above 100 MB, the format's own limit), JSON that does not parse or is
// not an object of tensor entries, an unknown dtype or one this reader does not convert (it reads F32, BF16
// and F16), shapes whose byte size differs from their offsets, offsets outside the data, overlapping tensors,
// and bytes that belong to no tensor. The file is memory-mapped; a SafetensorsFile keeps the mapping for
// read_f32.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/file.h"
#include "util/status.h"

namespace frontier {

enum class StDtype { kF32, kBF16, kF16 };
const char* st_dtype_name(StDtype d);  // "F32", "BF16", "F16": the names in the header
size_t st_dtype_size(StDtype d);

struct StTensorIn {
  std::string name;
  std::vector<int64_t> shape;
  const float* data;  // numel floats, row-major
  StDtype dtype;      // stored as: F32 verbatim, BF16 / F16 rounded to nearest even
};

// Writes atomically (a temporary, then a rename). Tensors are stored in the order given.
Status write_safetensors(const std::string& path, const std::vector<StTensorIn>& tensors,
                         const std::map<std::string, std::string>& metadata);

struct StTensor {
  std::string name;
  StDtype dtype = StDtype::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range in the data section
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

class SafetensorsFile {
 public:
  static constexpr uint64_t kMaxHeaderBytes =
      100'000'000;  // the format's limit (safetensors MAX_HEADER_SIZE)
  static constexpr size_t kMaxRank = 8;

  Status open(const std::string& path);
  const std::string& path() const { return path_; }
  const std::vector<StTensor>& tensors() const { return tensors_; }  // in data order
  const StTensor* find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // t's values as fp32 (t must come from this file).
  void read_f32(const StTensor& t, float* out) const;

 private:
  std::string path_;
  MappedFile map_;
  const uint8_t* data_ = nullptr;  // the first data byte
  std::vector<StTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace frontier
