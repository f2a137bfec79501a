#include <accrue/accrue.hpp>

int main() {
  using namespace accrue;
  manual_seed(0);
  const Tensor x = Tensor::uniform({64, 4}, -1, 1);
  const Tensor y = ops::sum(x, 1, true) * 0.5f;
  Sequential model{layers::Input{4}, layers::Dense{8}, layers::Tanh{}, layers::Dense{1}};
  model.compile(optim::Adam{.lr = 1e-2}, losses::MSE{});
  const History h = model.fit(Dataset{x, y}, {.epochs = 30, .batch_size = 16, .verbose = 0});
  fmt::print("{} parameters, loss {:.4f} -> {:.4f}\n", model.parameter_count(), h["loss"].front(), h["loss"].back());
  return model.parameter_count() == 49 && h["loss"].back() < h["loss"].front() / 2 ? 0 : 1;
}
