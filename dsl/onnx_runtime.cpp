// onnx::run_onnxruntime: an ONNX file run by ONNX Runtime's CPU provider, from npm's
// onnxruntime-node in a node process, so that Accrue's export is checked by the runtime its users
// deploy with, and ONNX Runtime is never a dependency of the library. The inputs and outputs pass
// through a temporary folder as raw little-endian arrays described in JSON.

#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "onnx.hpp"
#include "onnx_graph.hpp"
#include "../framework/core/error.hpp"
#include "../framework/core/files.hpp"

extern char** environ;

namespace accrue::onnx {
namespace {

namespace fs = std::filesystem;

// Reads job.json's inputs, runs the session, writes each output and outputs.json.
constexpr const char* runner = R"js(
const fs = require('fs'), path = require('path');
const [folder, work] = process.argv.slice(2);
const ort = require(path.join(folder, 'node_modules', 'onnxruntime-node'));
(async () => {
  const job = JSON.parse(fs.readFileSync(path.join(work, 'job.json'), 'utf8'));
  const session = await ort.InferenceSession.create(job.model, {executionProviders: ['cpu']});
  if (session.inputNames.length !== job.inputs.length)
    throw new Error(`the file takes ${session.inputNames.length} inputs, ${job.inputs.length} given`);
  const feeds = {};
  job.inputs.forEach((input, i) => {
    const bytes = fs.readFileSync(path.join(work, input.file));
    const copy = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
    const data = input.dtype === 'int32' ? new Int32Array(copy) : input.dtype === 'uint8' ? new Uint8Array(copy) : new Float32Array(copy);
    feeds[session.inputNames[i]] = new ort.Tensor(input.dtype, data, input.dims);
  });
  const results = await session.run(feeds);
  const outputs = session.outputNames.map((name, k) => {
    const t = results[name];
    if (t.type !== 'float32') throw new Error(`output ${name} is ${t.type}, not float32`);
    fs.writeFileSync(path.join(work, `output_${k}.bin`), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    return {name, dims: t.dims};
  });
  fs.writeFileSync(path.join(work, 'outputs.json'), JSON.stringify({outputs}));
})().catch(e => { console.error(e && e.message ? e.message : String(e)); process.exit(1); });
)js";

// An input the file takes as uint8: each value must be a whole number 0 to 255.
std::vector<std::uint8_t> pixel_bytes(const Tensor& x, const std::string& path, std::size_t input) {
  ACCRUE_CHECK(x.dtype() == DType::f32, "run_onnxruntime {}: input {} is uint8 in the file; give it float32 pixels, not {}",
               path, input, dtype_name(x.dtype()));
  const std::vector<float> values = x.to_vector<float>();
  std::vector<std::uint8_t> out(values.size());
  for (std::size_t k = 0; k < values.size(); ++k) {
    ACCRUE_CHECK(values[k] >= 0.0f && values[k] <= 255.0f && values[k] == std::floor(values[k]),
                 "run_onnxruntime {}: input {} is uint8 in the file, but value {} is {}, not a whole number 0 to 255",
                 path, input, k, values[k]);
    out[k] = static_cast<std::uint8_t>(values[k]);
  }
  return out;
}

std::string find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream folders(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string folder; std::getline(folders, folder, ':');)
    if (!folder.empty() && ::access((folder + "/" + program).c_str(), X_OK) == 0) return folder + "/" + program;
  return {};
}

// A temporary folder removed with everything in it when this goes.
struct WorkFolder {
  fs::path path;
  WorkFolder() {
    std::string pattern = (fs::temp_directory_path() / "accrue-onnxruntime-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw Error("run_onnxruntime: cannot make a temporary folder in " + fs::temp_directory_path().string());
    path = pattern;
  }
  ~WorkFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

void write_bytes(const fs::path& file, const void* data, std::size_t size) {
  std::ofstream out(file, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw Error(fmt::format("run_onnxruntime: cannot write {}", file.string()));
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs node on the runner; returns its exit status, with what it printed in `messages`.
int run_node(const std::string& node, const std::string& folder, const fs::path& work, std::string& messages) {
  const std::string script = (work / "runner.cjs").string(), log = (work / "node.log").string(), dir = work.string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv{const_cast<char*>(node.c_str()), const_cast<char*>(script.c_str()),
                          const_cast<char*>(folder.c_str()), const_cast<char*>(dir.c_str()), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, node.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw Error(fmt::format("run_onnxruntime: cannot start {}: {}", node, std::strerror(spawned)));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  messages = read_text(log);
  while (!messages.empty() && messages.back() == '\n') messages.pop_back();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::string default_onnxruntime_folder() {
  // Where this library is: in its build tree, the folder the tests fill; installed, the data folder
  // of its prefix.
  Dl_info self{};
  if (::dladdr(reinterpret_cast<void*>(&default_onnxruntime_folder), &self) == 0 || self.dli_fname == nullptr)
    return ACCRUE_ONNXRUNTIME_NODE_DEFAULT;
  std::error_code ec;
  const fs::path library = fs::weakly_canonical(self.dli_fname, ec).parent_path();
  if (library == fs::weakly_canonical(ACCRUE_LIBRARY_DIR, ec)) return ACCRUE_ONNXRUNTIME_NODE_DEFAULT;
  return (library / ACCRUE_DATA_FROM_LIB / "onnxruntime-node").lexically_normal().string();
}

std::string onnxruntime_folder(std::string* why) {
  const auto fail = [&](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return std::string{};
  };
  if (find_on_path("node").empty()) return fail("no node on PATH (Debian's nodejs)");
  const char* set = std::getenv("ACCRUE_ONNXRUNTIME_NODE");
  const std::string folder = set != nullptr && *set != '\0' ? set : default_onnxruntime_folder();
  if (!fs::exists(fs::path(folder) / "node_modules" / "onnxruntime-node" / "package.json"))
    return fail(fmt::format("onnxruntime-node is not installed in {} (tests/onnx/install_onnxruntime.sh FOLDER installs "
                            "it; ACCRUE_ONNXRUNTIME_NODE names another folder)",
                            folder));
  return folder;
}

std::vector<Tensor> run_onnxruntime(const std::string& path, const std::vector<Tensor>& inputs) {
  require_readable_file(path, "ONNX model");
  std::string why;
  const std::string folder = onnxruntime_folder(&why);
  if (folder.empty()) throw Error(fmt::format("run_onnxruntime {}: {}", path, why));
  const WorkFolder work;
  write_bytes(work.path / "runner.cjs", runner, std::strlen(runner));
  nlohmann::json job{{"model", fs::absolute(path).string()}, {"inputs", nlohmann::json::array()}};
  const std::vector<bool> uint8 = uint8_inputs(path);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    ACCRUE_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::i32,
                 "run_onnxruntime {}: input {} is {}; float32 and int32 inputs are supported", path, i,
                 dtype_name(x.dtype()));
    const Tensor cpu = x.to(Device::cpu());
    const std::string file = fmt::format("input_{}.bin", i);
    const bool bytes = i < uint8.size() && uint8[i];
    if (bytes) {
      const std::vector<std::uint8_t> pixels = pixel_bytes(cpu, path, i);
      write_bytes(work.path / file, pixels.data(), pixels.size());
    } else {
      write_bytes(work.path / file, cpu.data_ptr(), cpu.nbytes());
    }
    job["inputs"].push_back({{"dtype", bytes ? "uint8" : x.dtype() == DType::i32 ? "int32" : "float32"},
                             {"dims", std::vector<std::int64_t>(x.shape().begin(), x.shape().end())},
                             {"file", file}});
  }
  const std::string text = job.dump();
  write_bytes(work.path / "job.json", text.data(), text.size());
  std::string messages;
  if (const int status = run_node(find_on_path("node"), folder, work.path, messages); status != 0)
    throw Error(fmt::format("ONNX Runtime could not run {} (node exited with {}): {}", path, status, messages));
  const nlohmann::json done = nlohmann::json::parse(read_text(work.path / "outputs.json"));
  std::vector<Tensor> outputs;
  for (std::size_t k = 0; k < done["outputs"].size(); ++k) {
    const std::vector<std::int64_t> dims = done["outputs"][k]["dims"].get<std::vector<std::int64_t>>();
    const std::string bytes = read_text(work.path / fmt::format("output_{}.bin", k));
    const Shape shape{std::span<const std::int64_t>(dims)};
    ACCRUE_CHECK(static_cast<std::int64_t>(bytes.size()) == shape.numel() * 4,
                 "run_onnxruntime {}: output {} has {} bytes for shape {}", path, k, bytes.size(), shape);
    std::vector<float> values(static_cast<std::size_t>(shape.numel()));
    std::memcpy(values.data(), bytes.data(), bytes.size());
    outputs.push_back(Tensor::from(values, shape));
  }
  return outputs;
}

}  // namespace accrue::onnx
