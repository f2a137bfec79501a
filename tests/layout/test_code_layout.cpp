// The layout's rules, checked on the source tree:
//   - floors, read from the folders, lowest first: framework/core (tensors, dtypes, devices,
//     shapes, storage, memory accounting, errors, logging, files, random numbers), framework/runtime
//     (the allocators, the device runtime, the CUDA backend's loader), kernels, the rest of
//     framework (autograd, ops, amp, optimizers, training, distributed, serialization), then dsl and
//     datasets. An include that goes up a floor fails here, naming the file and line;
//   - no cycle between folders that sit side by side inside one folder (framework/ops and
//     framework/optim, dsl/fit and dsl/callbacks): a folder's includes into a sibling folder, or
//     into what lies below it, are the sibling's;
//   - no include cycle between units (a file's .hpp and .cpp; the files of dsl/fit/, which define
//     one class, are one unit);
//   - every quoted include names a file relative to the including file (or the tree's root), so
//     that it resolves on a clean checkout without the build's <accrue/...> links;
//   - no file over 600 lines and no function over 60 in dsl/, framework/ and kernels/. Functions
//     are found as the code is formatted: a definition starts in the first column and its body
//     ends at the next closing brace there.

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path source_dir = ACCRUE_SOURCE_DIR;
constexpr std::size_t file_limit = 600, function_limit = 60;

struct Source {
  std::string path;  // relative to the source tree, with '/'
  std::vector<std::string> lines;
};

std::vector<Source> sources(std::initializer_list<const char*> folders) {
  std::vector<Source> out;
  for (const char* folder : folders)
    for (const auto& entry : fs::recursive_directory_iterator(source_dir / folder)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh")) continue;
      Source s{fs::relative(entry.path(), source_dir).generic_string(), {}};
      std::ifstream in{entry.path()};
      for (std::string line; std::getline(in, line);) s.lines.push_back(line);
      out.push_back(std::move(s));
    }
  std::sort(out.begin(), out.end(), [](const Source& a, const Source& b) { return a.path < b.path; });
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string stem(const std::string& path) { return path.substr(0, path.rfind('.')); }

// A file's floor is that of the first of these folders that holds it.
struct Floor {
  const char* folder;
  int level;
  const char* name;
};
constexpr Floor floors[] = {
    {"framework/core/", 0, "framework/core"},        {"framework/runtime/", 1, "framework/runtime"},
    {"kernels/", 2, "kernels"},                     {"framework/", 3, "framework above the kernels"},
    {"dsl/", 4, "dsl and datasets"},                {"datasets/", 4, "dsl and datasets"},
};

const Floor& floor_of(const std::string& path) {
  for (const Floor& f : floors)
    if (starts_with(path, f.folder)) return f;
  throw std::runtime_error(path + " is in no folder of the floors");
}

// The unit a file belongs to: its path without extension, and the files of fit's TrainingRun
// (dsl/fit/) one unit.
std::string unit_of(const std::string& path) {
  const std::string s = stem(path);
  return starts_with(s, "dsl/fit/") ? "dsl/fit" : s;
}

// Every `#include "..."` of a file, as (line number, included path relative to the source tree):
// the library names its files relative to the including file.
std::vector<std::pair<std::size_t, std::string>> includes(const Source& s) {
  static const std::regex include{R"(^\s*#\s*include\s+"([^"]+)\")"};
  std::vector<std::pair<std::size_t, std::string>> out;
  std::smatch m;
  const fs::path folder = fs::path(s.path).parent_path();
  for (std::size_t i = 0; i < s.lines.size(); ++i)
    if (std::regex_search(s.lines[i], m, include))
      out.emplace_back(i + 1, (folder / m[1].str()).lexically_normal().generic_string());
  return out;
}

const std::vector<Source>& tree() {
  static const std::vector<Source> all = sources({"framework", "kernels", "dsl", "datasets"});
  return all;
}

}  // namespace

BOOST_AUTO_TEST_CASE(no_include_goes_up_a_floor) {
  std::size_t checked = 0;
  for (const Source& s : tree())
    for (const auto& [line, included] : includes(s)) {
      ++checked;
      const Floor &from = floor_of(s.path), &to = floor_of(included);
      BOOST_TEST(to.level <= from.level,
                 s.path << ":" << line << " (" << from.name << ") includes " << included << " (" << to.name << ")");
    }
  BOOST_TEST(checked > 500u);  // the tree was found and read
}

// Depth-first search over `edges`; each cycle met is reported once, in order, with `what` it is of.
void report_cycles(const std::map<std::string, std::set<std::string>>& edges, const std::string& what) {
  std::map<std::string, int> state;  // 1 on the path, 2 done
  std::vector<std::string> path;
  std::set<std::string> reported;
  const std::function<void(const std::string&)> visit = [&](const std::string& u) {
    state[u] = 1;
    path.push_back(u);
    if (const auto out = edges.find(u); out != edges.end())
      for (const std::string& v : out->second) {
        if (state[v] == 1) {
          std::string cycle;
          for (auto it = std::find(path.begin(), path.end(), v); it != path.end(); ++it) cycle += *it + " -> ";
          if (reported.insert(cycle + v).second) BOOST_ERROR(what << " cycle: " << cycle << v);
        } else if (state[v] == 0) {
          visit(v);
        }
      }
    path.pop_back();
    state[u] = 2;
  };
  for (const auto& [u, _] : edges)
    if (state[u] == 0) visit(u);
}

// The folder of `path` and the one of `other` as siblings see each other: the children of their
// nearest common folder that hold them ("framework/ops" and "framework/optim" for two files there;
// "dsl/fit" and "dsl/callbacks" for dsl/fit/loop.cpp and dsl/callbacks/report/x.hpp). Empty when
// one holds the other (a folder and its own subfolder) and for two top-level folders.
std::pair<std::string, std::string> sibling_folders(const std::string& path, const std::string& other) {
  const std::vector<std::string> a = [&] {
    std::vector<std::string> parts;
    for (const auto& p : fs::path(path).parent_path()) parts.push_back(p.string());
    return parts;
  }();
  std::vector<std::string> b;
  for (const auto& p : fs::path(other).parent_path()) b.push_back(p.string());
  std::size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  // The top-level folders are ordered by the floors instead (framework's core and runtime stand
  // below kernels, the rest of framework above them).
  if (common == 0 || common == a.size() || common == b.size()) return {};
  std::string parent;
  for (std::size_t i = 0; i < common; ++i) parent += a[i] + "/";
  return {parent + a[common], parent + b[common]};
}

BOOST_AUTO_TEST_CASE(sibling_folders_include_each_other_without_cycles) {
  std::map<std::string, std::set<std::string>> edges;
  for (const Source& s : tree())
    for (const auto& [line, included] : includes(s))
      if (const auto [from, to] = sibling_folders(s.path, included); !from.empty()) edges[from].insert(to);
  report_cycles(edges, "folder");
  BOOST_TEST(edges.count("framework/ops") == 1u);  // the graph was built
  BOOST_TEST((sibling_folders("dsl/fit/loop.cpp", "dsl/callbacks/report/x.hpp") ==
              std::make_pair(std::string("dsl/fit"), std::string("dsl/callbacks"))));
}

BOOST_AUTO_TEST_CASE(units_include_each_other_without_cycles) {
  std::map<std::string, std::set<std::string>> edges;
  for (const Source& s : tree())
    for (const auto& [line, included] : includes(s))
      if (unit_of(included) != unit_of(s.path)) edges[unit_of(s.path)].insert(unit_of(included));
  report_cycles(edges, "include");
  BOOST_TEST(edges.size() > 100u);
}

BOOST_AUTO_TEST_CASE(files_and_functions_stay_short) {
  const std::vector<Source> code = sources({"framework", "kernels", "dsl"});
  std::size_t functions = 0;
  for (const Source& s : code) {
    BOOST_TEST(s.lines.size() <= file_limit, s.path << " has " << s.lines.size() << " lines");
    for (std::size_t i = 0; i < s.lines.size(); ++i) {
      const std::string& l = s.lines[i];
      const bool definition_start = !l.empty() && l[0] != ' ' && l[0] != '/' && l[0] != '#' && l[0] != '}' &&
                                    l.find('(') != std::string::npos && l.back() != ';';
      if (!definition_start) continue;
      for (const char* not_a_function : {"namespace", "struct", "class", "enum", "using", "template", "extern", "static_assert"})
        if (starts_with(l, not_a_function)) goto next;
      {
        std::size_t open = i;  // the signature's last line, ending in '{'
        while (open < s.lines.size() && !s.lines[open].empty() && s.lines[open].back() != '{' &&
               s.lines[open].back() != ';' && s.lines[open].back() != '}')
          ++open;
        if (open >= s.lines.size() || s.lines[open].empty() || s.lines[open].back() != '{') goto next;
        std::size_t close = open + 1;
        while (close < s.lines.size() && !starts_with(s.lines[close], "}")) ++close;
        ++functions;
        const std::size_t length = close - i + 1;
        BOOST_TEST(length <= function_limit, s.path << ":" << i + 1 << " is a function of " << length << " lines: " << l);
        i = close;
      }
    next:;
    }
  }
  BOOST_TEST(functions > 1000u);
}

// An editor, a code browser or a structure tool on a clean checkout finds the file behind every
// quoted include: it is named relative to the including file's folder (or to the source tree's
// root). The library's generated headers (accrue/config.hpp, accrue/accrue.hpp) and the library
// as a user includes it are <accrue/...>.
BOOST_AUTO_TEST_CASE(every_quoted_include_names_a_file_of_the_tree) {
  static const std::regex include{R"(^\s*#\s*include\s+"([^"]+)\")"};
  std::size_t checked = 0;
  for (const Source& s : sources({"framework", "kernels", "dsl", "datasets", "examples", "tests", "bench"})) {
    const fs::path folder = source_dir / fs::path(s.path).parent_path();
    std::smatch m;
    for (std::size_t i = 0; i < s.lines.size(); ++i) {
      if (!std::regex_search(s.lines[i], m, include)) continue;
      ++checked;
      const std::string name = m[1].str();
      BOOST_TEST((fs::is_regular_file(folder / name) || fs::is_regular_file(source_dir / name)),
                 s.path << ":" << i + 1 << " includes \"" << name << "\", which is no file beside it or from the tree's root");
    }
  }
  BOOST_TEST(checked > 1000u);
}

// Every folder of the library says what it holds and what it may include, in a README.md.
BOOST_AUTO_TEST_CASE(every_folder_says_what_it_is) {
  std::size_t folders = 0;
  for (const char* top : {"framework", "kernels", "dsl", "datasets"}) {
    std::vector<fs::path> all{source_dir / top};
    for (const auto& entry : fs::recursive_directory_iterator(source_dir / top))
      if (entry.is_directory()) all.push_back(entry.path());
    for (const fs::path& folder : all) {
      ++folders;
      BOOST_TEST(fs::is_regular_file(folder / "README.md"),
                 fs::relative(folder, source_dir).generic_string() << " has no README.md");
    }
  }
  BOOST_TEST(folders > 20u);
}
