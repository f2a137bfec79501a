// The loop fit runs, written out with the framework's pieces. For each window of the plan, each
// micro-batch: the next batch, forward, its summed loss weighted by the rule of accumulation
// (loss_weight), backward; then the window's close (clipping, learning rate, optimizer step,
// gradients zeroed: framework/training/window_close.hpp). fit runs exactly this, with progress,
// metrics, checkpoints, signals, processes and out-of-memory back-off around it.
// --compare-with-fit trains the same model with fit and checks that every micro-batch's loss and
// every weight come out the same bits.
//
//   00_manual_loop [--epochs 1] [--data DIR] [--seed 0] [--batch-size 16] [--accumulate 4] [--lr 0.01]
//                  [--samples N] [--compare-with-fit]

#include <accrue/framework/training/window_close.hpp>

#include "example_options.hpp"

using namespace accrue;

namespace {

struct Run {
  int epochs = 1;
  std::int64_t batch_size = 16;
  int accumulate = 4;
  double lr = 0.01;
  std::uint64_t seed = 0;
};

// Trains `model` on `train` by hand; returns every micro-batch's mean loss, in order.
std::vector<double> train_by_hand(Sequential& model, const Dataset& train, const Run& run) {
  model.compile(optim::SGD{.lr = run.lr}.accumulate(run.accumulate), losses::CrossEntropy{}, {metrics::Accuracy{}});
  model.build(train.sample_shape());
  const StepPlan plan{{.dataset_size = train.size(), .micro_batch = run.batch_size, .epochs = run.epochs,
                       .schedule = run.accumulate}};
  LrSchedule schedule;  // constant; a warmup or cosine schedule counts the plan's optimizer steps
  schedule.prepare(plan);
  DataLoader loader{train, {.batch_size = run.batch_size, .shuffle = true, .seed = run.seed}};
  const std::vector<Tensor> parameters = model.parameters();
  const TrainingModeGuard training{model, true};
  std::int64_t steps = 0;
  std::vector<double> losses;
  for (int epoch = 0; epoch < run.epochs; ++epoch) {
    loader.set_epoch(epoch);  // the epoch's shuffled order
    for (const Window& window : plan.epoch_windows(epoch)) {
      for (std::int64_t i = window.first; i < window.first + window.micro_batches; ++i) {
        const Batch batch = loader[i];
        const Tensor loss_sum = model.loss().batch_sum(model.forward(batch.input()), batch.target());
        losses.push_back(loss_sum.item() / static_cast<double>(batch.size()));
        const double weight = loss_weight(Normalization::per_window, {.units = batch.size(), .window_units = window.samples});
        (loss_sum * static_cast<float>(weight)).backward();
      }
      StepRecord record;  // what the close did: its learning rate, gradient norms, step number
      close_window({.parameters = parameters, .optimizer = model.optimizer(), .recipe = model.recipe(),
                    .schedule = schedule, .base_lr = run.lr},
                   /*poisoned=*/false, steps, record);
    }
  }
  return losses;
}

// The same run through fit: true when every micro-batch's loss and every weight are the same bits.
bool same_as_fit(const std::vector<double>& by_hand_losses, Sequential& by_hand, const Dataset& train, const Run& run) {
  manual_seed(run.seed);
  Sequential model = examples::tutorial_mlp();
  model.compile(optim::SGD{.lr = run.lr}.accumulate(run.accumulate), losses::CrossEntropy{}, {metrics::Accuracy{}});
  std::vector<double> losses;
  const callbacks::Lambda record_losses{{.micro_batch_end = [&](const StepRecord& r, const Logs&) { losses.push_back(r.loss); }}};
  model.fit(train, {.epochs = run.epochs, .batch_size = run.batch_size, .callbacks = {record_losses}, .seed = run.seed,
                    .verbose = 0});
  std::size_t same_losses = 0, same_weights = 0;
  for (std::size_t i = 0; i < std::min(losses.size(), by_hand_losses.size()); ++i) same_losses += losses[i] == by_hand_losses[i];
  const std::vector<Tensor> a = model.parameters(), b = by_hand.parameters();
  for (std::size_t i = 0; i < a.size(); ++i) same_weights += a[i].to_vector<float>() == b[i].to_vector<float>();
  fmt::print("fit: {} of {} micro-batch losses and {} of {} weight tensors are the same bits as by hand\n", same_losses,
             losses.size(), same_weights, a.size());
  return same_losses == by_hand_losses.size() && same_losses == losses.size() && same_weights == a.size();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The training loop written out, without fit"};
  Run run;
  std::string data;
  std::int64_t samples = 0;
  bool compare = false;
  app.add_option("--epochs", run.epochs, "Passes over the training set")->check(examples::whole_number(1, 1000));
  app.add_option("--data", data, "Folder with the FashionMNIST IDX files");
  app.add_option("--seed", run.seed, "Seed of initialisation and shuffling");
  app.add_option("--batch-size", run.batch_size, "The micro-batch")->check(examples::whole_number(1, 1 << 20));
  app.add_option("--accumulate", run.accumulate, "Micro-batches per optimizer step")->check(examples::whole_number(1, 1 << 20));
  app.add_option("--lr", run.lr, "SGD learning rate")->check(examples::finite_number(0));
  app.add_option("--samples", samples, "Train on the first N samples (0: all)")->check(examples::whole_number(0, 1 << 30));
  app.add_flag("--compare-with-fit", compare, "Also train with fit and check that both give the same bits");
  return examples::run_example(app, argc, argv, [&] {
    auto [all, test] = datasets::fashion_mnist(data);
    const Example first = all.slice(0, samples > 0 ? std::min(samples, all.size()) : all.size());
    const Dataset train{first.input(), first.target(), all.name()};
    manual_seed(run.seed);
    Sequential model = examples::tutorial_mlp();
    const std::vector<double> losses = train_by_hand(model, train, run);
    fmt::print("{} micro-batches trained by hand, the last one's loss {:.4f}\n", losses.size(), losses.back());
    if (compare && !same_as_fit(losses, model, train, run)) throw Error("the loop by hand and fit differ");
    fmt::print("Accuracy: {:.1f}%\n", 100.0 * model.evaluate(test, {.batch_size = 1000})["accuracy"]);
  });
}
