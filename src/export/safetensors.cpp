#include "export/safetensors.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "util/bf16.h"

namespace frontier {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; so is this reader");

namespace {

constexpr uint64_t kMaxDim = uint64_t(1) << 40;

// IEEE binary16 <-> binary32. Widening is exact; narrowing rounds to nearest even (overflow to infinity).
float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  float mag;
  if (exp == 0)
    mag = std::ldexp(static_cast<float>(man), -24);  // zero, subnormal
  else if (exp == 31)
    mag = man ? std::numeric_limits<float>::quiet_NaN() : INFINITY;  // inf, NaN
  else
    mag = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
  uint32_t u;
  std::memcpy(&u, &mag, 4);
  u |= sign;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7e00u;
  if (a >= 65520.f) return sign | 0x7c00u;  // rounds to infinity
  if (a < 6.103515625e-05f) {               // subnormal range: units of 2^-24, nearest even (nearbyint)
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  uint32_t ua = u & 0x7fffffffu;
  ua += 0xfffu + ((ua >> 13) & 1u);  // round the 13 dropped mantissa bits to nearest even
  return sign | static_cast<uint16_t>(((ua >> 23) - 112) << 10 | ((ua >> 13) & 0x3ffu));
}

bool parse_dtype(const std::string& s, StDtype* d) {
  if (s == "F32")
    *d = StDtype::kF32;
  else if (s == "BF16")
    *d = StDtype::kBF16;
  else if (s == "F16")
    *d = StDtype::kF16;
  else
    return false;
  return true;
}

bool known_unsupported_dtype(const std::string& s) {  // in the format, not converted here
  for (const char* k :
       {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "I32", "U32", "F64", "I64", "U64"})
    if (s == k) return true;
  return false;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); i++) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

std::string range_text(uint64_t a, uint64_t b) {  // appends: GCC 12 warns (-Wrestrict, falsely) on "[" + ...
  std::string t = "[";
  t.append(std::to_string(a)).append(", ").append(std::to_string(b)).append(")");
  return t;
}

}  // namespace

const char* st_dtype_name(StDtype d) {
  switch (d) {
    case StDtype::kF32:
      return "F32";
    case StDtype::kBF16:
      return "BF16";
    case StDtype::kF16:
      return "F16";
  }
  return "?";
}

size_t st_dtype_size(StDtype d) {
  return d == StDtype::kF32 ? 4 : 2;
}

Status write_safetensors(const std::string& path, const std::vector<StTensorIn>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t off = 0;
  for (const auto& t : tensors) {
    FRONTIER_CHECK(!t.name.empty() && t.name != "__metadata__" && !header.contains(t.name));
    uint64_t n = 1;
    for (auto d : t.shape) {
      FRONTIER_CHECK(d >= 0);
      n *= static_cast<uint64_t>(d);
    }
    const uint64_t bytes = n * st_dtype_size(t.dtype);
    header[t.name] = {
        {"dtype", st_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {off, off + bytes}}};
    off += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8,
              ' ');  // the data starts 8-byte aligned (as the reference writer pads)
  const uint64_t n = text.size();
  AtomicFile f;
  FRONTIER_RETURN_IF_ERROR(f.open(path));
  FRONTIER_RETURN_IF_ERROR(f.write(&n, 8));
  FRONTIER_RETURN_IF_ERROR(f.write(text.data(), text.size()));
  std::vector<uint16_t> half;
  for (const auto& t : tensors) {
    int64_t numel = 1;
    for (auto d : t.shape) numel *= d;
    if (t.dtype == StDtype::kF32) {
      FRONTIER_RETURN_IF_ERROR(f.write(t.data, static_cast<size_t>(numel) * 4));
      continue;
    }
    constexpr int64_t kChunk = 1 << 16;  // converted a chunk at a time: no second copy of the model
    for (int64_t i = 0; i < numel; i += kChunk) {
      const int64_t m = std::min(kChunk, numel - i);
      half.resize(m);
      for (int64_t j = 0; j < m; j++)
        half[j] = t.dtype == StDtype::kBF16 ? to_bf16(t.data[i + j]) : f32_to_f16(t.data[i + j]);
      FRONTIER_RETURN_IF_ERROR(f.write(half.data(), m * 2));
    }
  }
  return f.commit();
}

Status SafetensorsFile::open(const std::string& path) {
  path_ = path;
  tensors_.clear();
  metadata_.clear();
  FRONTIER_RETURN_IF_ERROR(map_.open(path));
  auto bad = [&](const std::string& why) { return Status::error(path + ": " + why); };
  const uint64_t size = map_.size();
  if (size < 8)
    return bad("only " + std::to_string(size) +
               " bytes, shorter than the 8-byte header length (not a "
               "safetensors file)");
  uint64_t n;
  std::memcpy(&n, map_.data(), 8);
  if (n > size - 8)
    return bad("header length " + std::to_string(n) + " is larger than the file (" + std::to_string(size) +
               " bytes; truncated, or not a safetensors file)");
  if (n > kMaxHeaderBytes)
    return bad("header length " + std::to_string(n) + " is above the format's limit of " +
               std::to_string(kMaxHeaderBytes) + " bytes");
  const char* h = reinterpret_cast<const char*>(map_.data()) + 8;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(h, h + n);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e999
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos)
      what = what.substr(what.find("] ") + 2);
    return bad("the header is not valid JSON (" + what + ")");
  }
  if (!header.is_object()) return bad("the header is JSON but not an object of tensors");
  data_ = map_.data() + 8 + n;
  const uint64_t data_size = size - 8 - n;
  for (const auto& item : header.items()) {
    const std::string& name =
        item.key();  // not a structured binding: clang 15 cannot capture one in a lambda
    const nlohmann::json& e = item.value();
    if (name == "__metadata__") {
      if (!e.is_object()) return bad("__metadata__ is not an object of strings");
      for (const auto& [k, v] : e.items()) {
        if (!v.is_string()) return bad("__metadata__ '" + k + "' is not a string");
        metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    auto bad_t = [&](const std::string& why) { return bad("tensor '" + name + "': " + why); };
    if (name.empty()) return bad("a tensor has an empty name");
    if (!e.is_object()) return bad_t("its entry is not an object with dtype, shape and data_offsets");
    auto dt = e.find("dtype"), sh = e.find("shape"), of = e.find("data_offsets");
    if (dt == e.end() || sh == e.end() || of == e.end())
      return bad_t("its entry lacks " + std::string(dt == e.end()   ? "dtype"
                                                    : sh == e.end() ? "shape"
                                                                    : "data_offsets"));
    StTensor t;
    t.name = name;
    if (!dt->is_string()) return bad_t("dtype is not a string");
    const std::string ds = dt->get<std::string>();
    if (!parse_dtype(ds, &t.dtype))
      return bad_t(known_unsupported_dtype(ds) ? "dtype " + ds +
                                                     " is not supported (this reader converts F32, BF16 "
                                                     "and F16)"
                                               : "unknown dtype '" + ds.substr(0, 32) +
                                                     "' (safetensors dtypes are "
                                                     "F32, BF16, F16, F64, I64, ...)");
    if (!sh->is_array() || sh->size() > kMaxRank)
      return bad_t("shape is not an array of at most " + std::to_string(kMaxRank) + " dimensions");
    uint64_t numel = 1;
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > kMaxDim)
        return bad_t("shape " + sh->dump().substr(0, 80) +
                     " has a dimension that is not an integer in [0, 2^40]");
      t.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
      if (__builtin_mul_overflow(numel, d.get<uint64_t>(), &numel)) return bad_t("shape overflows 64 bits");
    }
    if (!of->is_array() || of->size() != 2 || !(*of)[0].is_number_unsigned() ||
        !(*of)[1].is_number_unsigned())
      return bad_t("data_offsets is not [begin, end] with two non-negative integers");
    t.begin = (*of)[0].get<uint64_t>();
    t.end = (*of)[1].get<uint64_t>();
    if (t.begin > t.end)
      return bad_t("data_offsets " + range_text(t.begin, t.end) + " end before they begin");
    if (t.end > data_size)
      return bad_t("data_offsets " + range_text(t.begin, t.end) + " reach past the end of the data (" +
                   std::to_string(data_size) + " bytes after the header)");
    uint64_t bytes;
    if (__builtin_mul_overflow(numel, st_dtype_size(t.dtype), &bytes) || bytes != t.end - t.begin)
      return bad_t(
          "shape " + shape_text(t.shape) + " of " + ds + " needs " +
          (bytes / st_dtype_size(t.dtype) == numel ? std::to_string(bytes) : std::string("over 2^64")) +
          " bytes, but data_offsets " + range_text(t.begin, t.end) + " hold " +
          std::to_string(t.end - t.begin));
    tensors_.push_back(std::move(t));
  }
  std::sort(tensors_.begin(), tensors_.end(), [](const StTensor& a, const StTensor& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end != b.end ? a.end < b.end : a.name < b.name;
  });
  uint64_t pos = 0;
  for (size_t i = 0; i < tensors_.size(); i++) {
    const StTensor& t = tensors_[i];
    if (t.begin < pos)
      return bad("tensors '" + tensors_[i - 1].name + "' " +
                 range_text(tensors_[i - 1].begin, tensors_[i - 1].end) + " and '" + t.name + "' " +
                 range_text(t.begin, t.end) + " overlap in the data");
    if (t.begin > pos)
      return bad("data bytes " + range_text(pos, t.begin) +
                 " belong to no tensor (the header does not cover the data)");
    pos = t.end;
  }
  if (pos != data_size)
    return bad("data bytes " + range_text(pos, data_size) +
               " after the last tensor belong to no tensor (the header "
               "does not cover the data)");
  return ok_status();
}

const StTensor* SafetensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

void SafetensorsFile::read_f32(const StTensor& t, float* out) const {
  const uint8_t* p = data_ + t.begin;
  const int64_t n = t.numel();
  if (t.dtype == StDtype::kF32) {
    if (n) std::memcpy(out, p, static_cast<size_t>(n) * 4);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    out[i] = t.dtype == StDtype::kBF16 ? from_bf16(h) : f16_to_f32(h);
  }
}

}  // namespace frontier
