// Typed configuration: one table of keys (name, type, default, help) drives TOML parsing, `--set key=value`
// overrides, validation and printing, so a key is declared once.
//
//   ConfigSchema schema;
//   schema.add_int("model.depth", 8, "transformer layers: the one dial");
//   Config cfg = schema.defaults();
//   FRONTIER_RETURN_IF_ERROR(schema.load_toml("configs/baseline.toml", &cfg));
//   FRONTIER_RETURN_IF_ERROR(schema.apply_set("model.depth=4", &cfg));
//   int64_t depth = cfg.get_int("model.depth");
//
// Unknown keys are errors that name the closest valid key ("unknown config key 'model.dept' (did you mean
// 'model.depth'?)"); a value of the wrong type is an error naming the key and the expected type. Numbers are
// checked at assignment: a float must be finite (no nan / inf: a budget of inf would run forever), and a key
// declared with bounds rejects values outside them, naming the range.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "util/status.h"

namespace frontier {

using ConfigValue = std::variant<int64_t, double, bool, std::string>;

class Config {
 public:
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;
  const std::map<std::string, ConfigValue>& values() const { return values_; }
  void set(const std::string& key, ConfigValue v) { values_[key] = std::move(v); }
  std::string to_toml() const;  // resolved config, grouped by table, reloadable

 private:
  std::map<std::string, ConfigValue> values_;
};

// Inclusive bounds of a numeric key.
struct Bounds {
  double lo = -1e300, hi = 1e300;
};

class ConfigSchema {
 public:
  void add_int(const std::string& key, int64_t def, const std::string& help, Bounds b = {});
  void add_float(const std::string& key, double def, const std::string& help, Bounds b = {});
  void add_bool(const std::string& key, bool def, const std::string& help);
  void add_string(const std::string& key, const std::string& def, const std::string& help);

  Config defaults() const;
  Status load_toml(const std::string& path, Config* cfg) const;
  Status load_toml_string(const std::string& text, const std::string& origin, Config* cfg) const;
  Status apply_set(const std::string& assignment, Config* cfg) const;  // "key=value"
  // Every value of cfg against its key's type and bounds (for configs built in code with Config::set).
  Status validate(const Config& cfg) const;
  std::string closest_key(const std::string& key) const;
  std::string help() const;  // one line per key: name, type, default, help

 private:
  struct Entry {
    std::string key, help;
    ConfigValue def;
    Bounds bounds;
  };
  const Entry* find(const std::string& key) const;
  Status unknown(const std::string& key, const std::string& origin) const;
  Status assign(const Entry& e, const ConfigValue& v, const std::string& origin, Config* cfg) const;
  std::vector<Entry> entries_;
};

// Edit distance, for "did you mean".
size_t levenshtein(const std::string& a, const std::string& b);

}  // namespace frontier
