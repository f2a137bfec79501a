#include <accrue/accrue.hpp>
#include <filesystem>

// consumer [FOLDER]: trains a small model; given the folder the installed library should look in
// for onnxruntime-node (<prefix>/share/accrue/onnxruntime-node), also checks that it does (it used to
// look in the build tree it was built in).
int main(int argc, char** argv) {
  using namespace accrue;
  if (argc > 1) {
    const std::string folder = onnx::default_onnxruntime_folder();
    fmt::print("onnxruntime-node is looked for in {}\n", folder);
    if (std::filesystem::path(folder).lexically_normal() != std::filesystem::path(argv[1]).lexically_normal()) return 1;
  }
  manual_seed(0);
  const Tensor x = Tensor::uniform({64, 4}, -1, 1);
  const Tensor y = ops::sum(x, 1, true) * 0.5f;
  Sequential model{layers::Input{4}, layers::Dense{8}, layers::Tanh{}, layers::Dense{1}};
  model.compile(optim::Adam{.lr = 1e-2}, losses::MSE{});
  const History h = model.fit(Dataset{x, y}, {.epochs = 30, .batch_size = 16, .verbose = 0});
  fmt::print("{} parameters, loss {:.4f} -> {:.4f}\n", model.parameter_count(), h["loss"].front(), h["loss"].back());
  return model.parameter_count() == 49 && h["loss"].back() < h["loss"].front() / 2 ? 0 : 1;
}
