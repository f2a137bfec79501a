// The CNN of 05_fashion_mnist_cnn.cpp trained data-parallel: launched by mpirun, every process trains
// its share of each batch and the gradients are summed once per optimizer step; the result is the
// run of one process with a batch of batch-size x processes. Alone (no mpirun) it is that run.
//
//   mpirun -np 2 build/examples/06_data_parallel [--epochs 3] [--batch-size 32] [--accumulate 1]
//                                             [--data DIR] [--seed 0] [--verbose 0|1|2]
//   build/examples/06_data_parallel --batch-size 64     # the same training in one process
//
// Only rank 0 prints; every rank ends with the same model. With GPUs (--device best, the default)
// each process trains on its own, cuda:local_rank, and gradients travel over NCCL; otherwise on the
// CPU over MPI.

#include <chrono>
#include <limits>

#include "example_options.hpp"

using namespace accrue;

int main(int argc, char** argv) {
  CLI::App app{"Train the FashionMNIST CNN over the processes mpirun starts"};
  examples::ExampleOptions common{.epochs = 3};
  std::int64_t batch_size = 32;
  int accumulate = 1;
  int verbose = 1;
  common.add_to(app);
  common.add_report_flag(app);
  app.add_option("--batch-size", batch_size, "Samples per micro-batch on each process")
      ->check(examples::whole_number(1, std::numeric_limits<std::int64_t>::max()));
  app.add_option("--accumulate", accumulate, "Micro-batches per optimizer step")
      ->check(examples::whole_number(1, std::numeric_limits<int>::max()));
  app.add_option("--verbose", verbose, "0 silent, 1 progress bar on a terminal, 2 one line per epoch")
      ->check(examples::whole_number(0, 2));

  return examples::run_example(app, argc, argv, [&] {
    common.distributed = true;
    common.check_report(common.fashion_mnist_inputs());
    const distributed::Communicator& world = distributed::world();
    manual_seed(common.seed);
    auto [train, test] = datasets::fashion_mnist(common.data);
    Sequential model = examples::tutorial_cnn();
    model.to(common.target());
    model.compile(common.with_amp(optim::Recipe{optim::Adam{.lr = 1e-3}}.accumulate(accumulate)),
                  losses::CrossEntropy{}, {metrics::Accuracy{}});
    if (common.speaks()) model.summary();

    const auto start = std::chrono::steady_clock::now();
    const History history = model.fit(train, {.epochs = common.epochs, .batch_size = batch_size, .validation = test,
                                              .callbacks = common.callbacks(), .seed = common.seed,
                                              .verbose = verbose, .distributed = true});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The last epoch's validation, over the whole test set shared by every process.
    const double accuracy = history.logs().back().at("val_accuracy");
    if (!common.speaks()) return;
    fmt::print("{} process{} x micro-batch {} x accumulation {}: {} epoch{} in {:.1f} s; test loss {:.4f}\n",
               world.size(), world.size() == 1 ? "" : "es", batch_size, accumulate, common.epochs,
               common.epochs == 1 ? "" : "s", seconds, history.logs().back().at("val_loss"));
    common.print_accuracy(accuracy);
  });
}
