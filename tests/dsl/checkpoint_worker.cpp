// The training program test_checkpoint_kill kills: it trains a small MLP with accumulation,
// dropout, a schedule and a CSV log, writing a checkpoint every few micro-batches into DIR/ckpt
// and resuming from the newest one it finds, then saves the final weights to OUT.
//
//   checkpoint_worker DIR OUT

#include <cstdio>
#include <string>
#include <vector>

#include <accrue/dsl/accrue.hpp>

using namespace accrue;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DIR OUT\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  // Four Gaussian blobs in 6 dimensions, the same in every process.
  const std::int64_t n = 4000;
  Generator gen{11};
  const std::vector<float> noise = Tensor::normal({n, 6}, 0.0f, 0.8f, &gen).to_vector();
  std::vector<float> x(noise.size());
  std::vector<std::int32_t> y(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const int label = static_cast<int>(gen.below(4));
    y[static_cast<std::size_t>(i)] = label;
    for (int j = 0; j < 6; ++j)
      x[static_cast<std::size_t>(i * 6 + j)] = noise[static_cast<std::size_t>(i * 6 + j)] + (j % 4 == label ? 2.0f : 0.0f);
  }
  const Dataset data{Tensor::from(x, {n, 6}), Tensor::from(y, {n}), "blobs"};

  manual_seed(1);
  Sequential model{layers::Input{6}, layers::Dense{64}, layers::ReLU{}, layers::Dropout{0.2f},
                   layers::Dense{64}, layers::ReLU{},   layers::Dense{4}};
  model.compile(optim::Adam{.lr = 3e-3}.accumulate(3).clip(1.0), losses::CrossEntropy{}, {metrics::Accuracy{}});
  model.fit(data, {.epochs = 5,
                   .batch_size = 16,
                   .schedule = schedules::warmup_cosine({.warmup_ratio = 0.1}),
                   .callbacks = {callbacks::CSVLogger{dir + "/log.csv"}},
                   .verbose = 0,
                   .checkpoint = {.dir = dir + "/ckpt", .every_micro_batches = 4}});
  model.save_weights(argv[2]);
  return 0;
}
