// One distributed training run, for tests/distributed/two_hosts.sh (two hosts made of network
// namespaces) and run by hand on real ones:
//   two_hosts OUT [--shard none|optimizer_state|gradients] [--checkpoints DIR] [--resume]
//             [--micro-batch N] [--epochs N] [--pause-ms N] [--timeout S] [--stderr-to-files]
// trains a small MLP on noise (AdamW, clipped, windows of 2 micro-batches) over the processes
// mpirun started and writes its parameters to OUT (process 0). Each process writes its pid to
// OUT.rank<r>.pid first. --pause-ms sleeps after every micro-batch (a run long enough to cut its
// link). An error ends the process with status 1 and its message on stderr, which
// --stderr-to-files sends to OUT.rank<r>.err (a process whose link is cut cannot reach mpirun's).
//   two_hosts --compare A B TOLERANCE
// prints the largest difference between two such files' parameters; status 1 when above.

#include <accrue/accrue.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>
#include <unistd.h>

using namespace accrue;

namespace {

std::map<std::string, std::string> options(int argc, char** argv) {
  std::map<std::string, std::string> out{{"--shard", "none"}, {"--micro-batch", "6"}, {"--epochs", "3"},
                                         {"--pause-ms", "0"}, {"--timeout", "600"}};
  for (int i = 2; i < argc; ++i) {
    const std::string key = argv[i];
    if (key == "--resume" || key == "--stderr-to-files") out[key] = "1";
    else if ((out.contains(key) || key == "--checkpoints") && i + 1 < argc) out[key] = argv[++i];
    else throw ValueError(fmt::format("two_hosts: unknown option '{}'", key));
  }
  return out;
}

Shard shard_of(const std::string& name) {
  if (name == "none") return Shard::none;
  if (name == "optimizer_state") return Shard::optimizer_state;
  if (name == "gradients") return Shard::gradients;
  throw ValueError(fmt::format("two_hosts: --shard takes none, optimizer_state or gradients, not '{}'", name));
}

void train(const std::string& out, const std::map<std::string, std::string>& o) {
  distributed::Communicator& world = distributed::world();
  world.set_timeout_seconds(std::stod(o.at("--timeout")));
  manual_seed(11);
  Sequential model{layers::Input{6}, layers::Dense{32}, layers::ReLU{}, layers::Dense{4}};
  model.compile(optim::Recipe{optim::AdamW{.lr = 1e-2}}.clip(0.5).accumulate(2), losses::CrossEntropy{});
  std::vector<std::int32_t> labels(240);
  Generator gen{5};
  for (auto& l : labels) l = static_cast<std::int32_t>(gen.below(4));
  const Dataset data{Tensor::uniform({240, 6}, -1, 1, &gen), Tensor::from(labels, {240}), "noise"};
  const int pause = std::stoi(o.at("--pause-ms"));
  const std::string checkpoints = o.contains("--checkpoints") ? o.at("--checkpoints") : "";
  model.fit(data, {.epochs = std::stoi(o.at("--epochs")),
                   .batch_size = std::stoi(o.at("--micro-batch")),
                   .callbacks = {callbacks::Lambda{{.micro_batch_end = [&](const StepRecord&, const Logs&) {
                     std::this_thread::sleep_for(std::chrono::milliseconds(pause));
                   }}}},
                   .seed = 3,
                   .verbose = 0,
                   .checkpoint = {.dir = o.contains("--resume") ? "" : checkpoints,
                                  .every_micro_batches = o.contains("--resume") || checkpoints.empty() ? 0 : 2},
                   .resume_from = o.contains("--resume") ? checkpoints : "",
                   .distributed = true,
                   .shard = shard_of(o.at("--shard"))});
  if (world.rank() == 0) {
    serialization::NamedTensors tensors;
    for (const auto& [name, p] : model.named_parameters()) tensors.emplace_back(name, p);
    serialization::save_safetensors(out, tensors);
  }
}

}  // namespace

int compare(const std::string& a, const std::string& b, double tolerance) {
  const serialization::SafetensorsFile x = serialization::load_safetensors(a), y = serialization::load_safetensors(b);
  if (x.tensors.size() != y.tensors.size()) throw ValueError(fmt::format("{} and {} hold other tensors", a, b));
  double largest = 0;
  for (std::size_t i = 0; i < x.tensors.size(); ++i) {
    const std::vector<float> u = x.tensors[i].second.to_vector(), v = y.tensors[i].second.to_vector();
    if (u.size() != v.size()) throw ValueError(fmt::format("{}: tensor {} differs in size", b, i));
    for (std::size_t j = 0; j < u.size(); ++j) largest = std::max(largest, std::abs(double(u[j]) - v[j]));
  }
  std::printf("largest difference %g (tolerance %g)\n", largest, tolerance);
  return largest <= tolerance ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: two_hosts OUT [--shard ...] [--checkpoints DIR] [--resume] [--micro-batch N] "
                         "[--epochs N] [--pause-ms N] [--timeout S]\n");
    return 1;
  }
  try {
    if (argc == 5 && std::string(argv[1]) == "--compare") return compare(argv[2], argv[3], std::stod(argv[4]));
    const std::map<std::string, std::string> o = options(argc, argv);
    const int rank = distributed::world().rank();
    std::ofstream{fmt::format("{}.rank{}.pid", argv[1], rank)} << getpid() << "\n";
    if (o.contains("--stderr-to-files") &&
        std::freopen(fmt::format("{}.rank{}.err", argv[1], rank).c_str(), "w", stderr) == nullptr)
      throw IoError("two_hosts: cannot open the file for stderr");
    train(argv[1], o);
  } catch (const Error& e) {
    std::fprintf(stderr, "two_hosts: %s\n", e.what());
    return 1;
  }
  return 0;
}
