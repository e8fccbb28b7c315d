#include "config/config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "config/tomlpp.h"
#include "util/utf8.h"

namespace frontier {

namespace {

const char* type_name(const ConfigValue& v) {
  switch (v.index()) {
    case 0: return "integer";
    case 1: return "float";
    case 2: return "boolean";
    default: return "string";
  }
}

std::string format_value(const ConfigValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) {
    // The shortest of 15 and 17 significant digits that reads back as the same double (0.1, not
    // 0.10000000000000001): configs stay exact and readable.
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.15g", *d);
    if (std::strtod(buf, nullptr) != *d) std::snprintf(buf, sizeof(buf), "%.17g", *d);
    std::string s = buf;
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
  }
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  std::string s = "\"";
  for (char c : std::get<std::string>(v)) {
    if (c == '"' || c == '\\') s.push_back('\\');
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {  // a TOML basic string holds no raw control character
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\u%04x", static_cast<unsigned>(c));
      s += esc;
      continue;
    }
    s.push_back(c);
  }
  return s + "\"";
}

bool node_value(const toml::node& node, ConfigValue* v) {
  if (auto i = node.value_exact<int64_t>()) *v = *i;
  else if (auto d = node.value_exact<double>()) *v = *d;
  else if (auto b = node.value_exact<bool>()) *v = *b;
  else if (auto s = node.value_exact<std::string>()) *v = *s;
  else return false;
  return true;
}

// toml++ as Debian builds it reports parse errors by exception.
Status parse_toml(const std::string& text, const std::string& origin, toml::table* out) {
  try {
    *out = toml::parse(text, origin);
  } catch (const toml::parse_error& err) {
    return Status::error(origin + ":" + std::to_string(err.source().begin.line) + ": " +
                         std::string(err.description()));
  }
  return ok_status();
}

std::string range_text(const Bounds& b, bool integer) {
  auto num = [&](double x) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), integer ? "%.0f" : "%g", x);
    return std::string(buf);
  };
  if (b.lo <= -1e300) return "(at most " + num(b.hi) + ")";
  if (b.hi >= 1e300) return "(at least " + num(b.lo) + ")";
  return "[" + num(b.lo) + ", " + num(b.hi) + "]";
}

}  // namespace

size_t levenshtein(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); j++) prev[j] = j;
  for (size_t i = 1; i <= a.size(); i++) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); j++)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

int64_t Config::get_int(const std::string& key) const { return std::get<int64_t>(values_.at(key)); }
double Config::get_float(const std::string& key) const { return std::get<double>(values_.at(key)); }
bool Config::get_bool(const std::string& key) const { return std::get<bool>(values_.at(key)); }
const std::string& Config::get_string(const std::string& key) const { return std::get<std::string>(values_.at(key)); }

std::string Config::to_toml() const {
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> tables;
  for (const auto& [k, v] : values_) {
    size_t dot = k.rfind('.');
    std::string table = dot == std::string::npos ? "" : k.substr(0, dot);
    tables[table].emplace_back(dot == std::string::npos ? k : k.substr(dot + 1), format_value(v));
  }
  std::string out;
  for (const auto& [t, kvs] : tables) {
    if (!t.empty()) out += (out.empty() ? "" : "\n") + std::string("[") + t + "]\n";
    for (const auto& [k, v] : kvs) out += k + " = " + v + "\n";
  }
  return out;
}

void ConfigSchema::add_int(const std::string& k, int64_t d, const std::string& h, Bounds b) {
  entries_.push_back({k, h, d, b});
}
void ConfigSchema::add_float(const std::string& k, double d, const std::string& h, Bounds b) {
  entries_.push_back({k, h, d, b});
}
void ConfigSchema::add_bool(const std::string& k, bool d, const std::string& h) { entries_.push_back({k, h, d, {}}); }
void ConfigSchema::add_string(const std::string& k, const std::string& d, const std::string& h) {
  entries_.push_back({k, h, d, {}});
}

Config ConfigSchema::defaults() const {
  Config c;
  for (const auto& e : entries_) c.set(e.key, e.def);
  return c;
}

const ConfigSchema::Entry* ConfigSchema::find(const std::string& key) const {
  for (const auto& e : entries_)
    if (e.key == key) return &e;
  return nullptr;
}

std::string ConfigSchema::closest_key(const std::string& key) const {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& e : entries_) {
    // Compare against the full key and against its last component, so "depth" suggests "model.depth".
    size_t dot = e.key.rfind('.');
    size_t d = levenshtein(key, e.key);
    if (dot != std::string::npos) d = std::min(d, levenshtein(key, e.key.substr(dot + 1)));
    if (d < best_d) {
      best_d = d;
      best = e.key;
    }
  }
  return best;
}

Status ConfigSchema::unknown(const std::string& key, const std::string& origin) const {
  return Status::error(origin + ": unknown config key '" + key + "' (did you mean '" + closest_key(key) + "'?)");
}

Status ConfigSchema::assign(const Entry& e, const ConfigValue& v, const std::string& origin, Config* cfg) const {
  ConfigValue out = v;
  if (e.def.index() == 1 && v.index() == 0) out = static_cast<double>(std::get<int64_t>(v));  // 3 -> 3.0
  if (out.index() != e.def.index())
    return Status::error(origin + ": config key '" + e.key + "' needs type " + type_name(e.def) + ", got " +
                         type_name(v) + " (" + format_value(v) + ")");
  // TOML text is UTF-8, and train writes the config into config.toml and every checkpoint: a string that is not
  // (a path given as raw bytes) could be set but never read back.
  if (auto* str = std::get_if<std::string>(&out); str && utf8_first_invalid(*str) != std::string::npos)
    return Status::error(origin + ": config key '" + e.key + "' is not valid UTF-8 at byte " +
                         std::to_string(utf8_first_invalid(*str)) + " (a config is TOML text; use a UTF-8 name)");
  if (out.index() == 0 || out.index() == 1) {
    const double x = out.index() == 0 ? static_cast<double>(std::get<int64_t>(out)) : std::get<double>(out);
    if (!std::isfinite(x))
      return Status::error(origin + ": config key '" + e.key + "' must be a finite number, got " + format_value(out));
    if (x < e.bounds.lo || x > e.bounds.hi)
      return Status::error(origin + ": config key '" + e.key + "' = " + format_value(out) + " is out of range " +
                           range_text(e.bounds, out.index() == 0));
  }
  cfg->set(e.key, out);
  return ok_status();
}

Status ConfigSchema::load_toml(const std::string& path, Config* cfg) const {
  // A config is a few KiB of text. Read at most kMaxBytes (+1 to tell): /dev/zero or a huge file is an error naming
  // the file, not an allocation that fails later and blames a model key. A directory (which fopen opens and read
  // fails on) or any read error is an error, never an empty config. Pipes (--config <(...)) still work.
  constexpr size_t kMaxBytes = 1 << 20;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return Status::error("config " + path + " is a directory, not a TOML file (check the path)");
  std::string text;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::error("cannot open config " + path + ": " + std::strerror(errno) + " (check the path)");
  char buf[4096];
  size_t n;
  while (text.size() <= kMaxBytes && (n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f);
  const int err = errno;
  std::fclose(f);
  if (failed) return Status::error("cannot read config " + path + ": " + std::strerror(err));
  if (text.size() > kMaxBytes)
    return Status::error("config " + path + " is over " + std::to_string(kMaxBytes >> 20) +
                         " MiB, too large for a TOML config (is it the right file?)");
  return load_toml_string(text, path, cfg);
}

Status ConfigSchema::load_toml_string(const std::string& text, const std::string& origin, Config* cfg) const {
  toml::table root;
  FRONTIER_RETURN_IF_ERROR(parse_toml(text, origin, &root));
  Status st;
  auto visit = [&](auto&& self, const toml::table& t, const std::string& prefix) -> void {
    for (auto&& [k, node] : t) {
      if (!st.ok()) return;
      std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
      std::string where = origin + ":" + std::to_string(node.source().begin.line);
      if (const toml::table* sub = node.as_table()) {
        self(self, *sub, key);
        continue;
      }
      const Entry* e = find(key);
      if (!e) {
        st = unknown(key, where);
        return;
      }
      ConfigValue v;
      if (!node_value(node, &v)) {
        st = Status::error(where + ": config key '" + key + "' has an unsupported value type");
        return;
      }
      st = assign(*e, v, where, cfg);
    }
  };
  visit(visit, root, "");
  return st;
}

Status ConfigSchema::apply_set(const std::string& a, Config* cfg) const {
  size_t eq = a.find('=');
  if (eq == std::string::npos || eq == 0)
    return Status::error("--set '" + a + "' is not key=value (e.g. --set model.depth=4)");
  std::string key = a.substr(0, eq), val = a.substr(eq + 1);
  const Entry* e = find(key);
  if (!e) return unknown(key, "--set");
  // Parse the value with TOML's rules; a bare word is taken as a string, and so is any unquoted value of a
  // string key (model.ngram_orders=2 is the string "2", model.window_pattern=SSSL the string "SSSL").
  ConfigValue v = val;
  toml::table t;
  const bool raw_string = std::holds_alternative<std::string>(e->def) && (val.empty() || (val[0] != '"' && val[0] != '\''));
  if (!raw_string && parse_toml("v = " + val, "--set", &t).ok() && t.get("v")) node_value(*t.get("v"), &v);
  return assign(*e, v, "--set " + key, cfg);
}

Status ConfigSchema::validate(const Config& cfg) const {
  for (const auto& [k, v] : cfg.values()) {
    const Entry* e = find(k);
    if (!e) return unknown(k, "config");
    Config scratch;
    FRONTIER_RETURN_IF_ERROR(assign(*e, v, "config", &scratch));
  }
  return ok_status();
}

std::string ConfigSchema::help() const {
  std::string out;
  for (const auto& e : entries_) {
    char buf[768];
    std::string range;
    if (e.bounds.lo > -1e300 || e.bounds.hi < 1e300) range = " " + range_text(e.bounds, e.def.index() == 0);
    std::snprintf(buf, sizeof(buf), "  %-28s %-8s %-14s %s%s\n", e.key.c_str(), type_name(e.def),
                  format_value(e.def).c_str(), e.help.c_str(), range.c_str());
    out += buf;
  }
  return out;
}

}  // namespace frontier
