// The layout's rules, checked on the source tree:
//   - floors: framework's core (tensors, dtypes, devices, shapes, storage, memory accounting,
//     errors, logging, and the device runtime under them) includes nothing above it; kernels stand
//     on the core only, beside Tensor's members that run them (framework/tensor_values.cpp); the rest of framework (autograd, ops, optimizers, training, distributed,
//     serialization) on both; dsl and datasets on everything below them. An include that goes up a
//     floor fails here, naming the file and line.
//   - no include cycle between units (a file's .hpp and .cpp; an op's facade kernels/<op>.* and its
//     bodies kernels/cpu/<op>* and kernels/cuda/<op>* are one unit, as they are one op, and so are
//     the files of dsl/fit/, which define one class);
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

// 0: framework's core and the device runtime it uses; 1: kernels; 2: the rest of framework;
// 3: dsl and datasets.
int floor_of(const std::string& path) {
  static const std::set<std::string> core = [] {
    std::set<std::string> units;
    std::ifstream in{source_dir / "tests/layout/core_units.txt"};
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') units.insert(line);
    return units;
  }();
  static const std::vector<std::string> runtime = {"kernels/common/",       "kernels/device_query", "kernels/cuda/device_query",
                                                   "kernels/cuda/context",  "kernels/cuda/check",   "kernels/cuda/backend",
                                                   "kernels/cuda/runtime"};
  const std::string s = stem(path);
  if (core.count(s) != 0) return 0;
  for (const std::string& r : runtime)
    if (starts_with(s, r)) return 0;
  // Tensor's members that run kernels (fills, casts, copies): beside the kernels, which use them.
  if (starts_with(s, "kernels/") || s == "framework/tensor_values") return 1;
  if (starts_with(s, "framework/")) return 2;
  return 3;
}

// The unit a file belongs to: its path without extension, an op's bodies joined to the op, and the
// files of fit's TrainingRun (dsl/fit/) one unit.
std::string unit_of(const std::string& path) {
  std::string s = stem(path);
  if (starts_with(s, "dsl/fit/")) return "dsl/fit";
  for (const char* backend : {"kernels/cpu/", "kernels/cuda/"})
    if (starts_with(s, backend)) {
      const std::string rest = s.substr(std::string(backend).size());
      return "kernels/" + rest.substr(0, rest.find('/'));
    }
  return s;
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
  static const char* floor_names[] = {"framework's core", "kernels", "framework above the kernels", "dsl and datasets"};
  std::size_t checked = 0;
  for (const Source& s : tree())
    for (const auto& [line, included] : includes(s)) {
      ++checked;
      const int from = floor_of(s.path), to = floor_of(included);
      BOOST_TEST(to <= from, s.path << ":" << line << " (" << floor_names[from] << ") includes " << included << " ("
                                    << floor_names[to] << ")");
    }
  BOOST_TEST(checked > 500u);  // the tree was found and read
  BOOST_TEST(floor_of("framework/tensor.hpp") == 0);  // and so was the list of the core
}

BOOST_AUTO_TEST_CASE(units_include_each_other_without_cycles) {
  std::map<std::string, std::set<std::string>> edges;
  for (const Source& s : tree())
    for (const auto& [line, included] : includes(s))
      if (unit_of(included) != unit_of(s.path)) edges[unit_of(s.path)].insert(unit_of(included));
  // Depth-first search; a unit met again on the current path closes a cycle, printed in order.
  std::map<std::string, int> state;  // 1 on the path, 2 done
  std::vector<std::string> path;
  std::set<std::string> reported;
  const std::function<void(const std::string&)> visit = [&](const std::string& u) {
    state[u] = 1;
    path.push_back(u);
    for (const std::string& v : edges[u]) {
      if (state[v] == 1) {
        std::string cycle;
        for (auto it = std::find(path.begin(), path.end(), v); it != path.end(); ++it) cycle += *it + " -> ";
        if (reported.insert(cycle + v).second) BOOST_ERROR("include cycle: " << cycle << v);
      } else if (state[v] == 0) {
        visit(v);
      }
    }
    path.pop_back();
    state[u] = 2;
  };
  for (const auto& [u, _] : edges)
    if (state[u] == 0) visit(u);
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
