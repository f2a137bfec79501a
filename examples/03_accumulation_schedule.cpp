// An accumulation schedule with a warmup-cosine learning rate and clipping, through a Trainer:
// 8 micro-batches per step for the first two epochs, 4 for the next two, then 2, as PyTorch
// Lightning's accumulate_grad_batches={0: 8, 2: 4, 4: 2}. The plan (optimizer steps, warmup, the
// learning rate at chosen steps) is printed before training, and checked against what training did.
//
//   03_accumulation_schedule [--epochs 6] [--data DIR] [--seed 0] [--amp[=f16|bf16]] [--device best|cpu|cuda]

#include "example_options.hpp"

using namespace accrue;

int main(int argc, char** argv) {
  CLI::App app{"A per-epoch accumulation schedule with warmup-cosine and clipping"};
  examples::ExampleOptions common{.epochs = 6};
  common.add_to(app);
  common.add_report_flag(app);

  return examples::run_example(app, argc, argv, [&] {
    common.check_report(common.fashion_mnist_inputs());
    auto [train, test] = datasets::fashion_mnist(common.data);
    manual_seed(common.seed);
    Sequential model{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{256}, layers::ReLU{}, layers::Dense{10}};
    model.to(common.target());
    // The confusion matrix is a table of counts per epoch: the report draws it (--report).
    std::vector<std::string> classes;
    for (int c = 0; c < 10; ++c) classes.emplace_back(datasets::fashion_mnist_class_name(c));
    model.compile(common.with_amp(optim::AdamW{.lr = 2e-3}.clip(1.0)), losses::CrossEntropy{},
                  {metrics::Accuracy{}, metrics::ConfusionMatrix{{.num_classes = 10, .labels = classes}}});

    const auto lr_monitor = std::make_shared<callbacks::LearningRateMonitor>();
    Trainer trainer{{
        .epochs = common.epochs,
        .batch_size = 16,
        .accumulate = {{0, 8}, {2, 4}, {4, 2}},
        .schedule = schedules::warmup_cosine({.warmup_ratio = 0.05, .min_lr_ratio = 0.05}),
        .callbacks = common.callbacks({lr_monitor}),
        .seed = common.seed,
        .verbose = 2,
    }};

    // The plan, before any training: a row for each of the first epochs (the schedule's changes),
    // one line for the rest.
    const StepPlan plan = trainer.plan(model, train.size());
    LrSchedule schedule = trainer.options().schedule;
    schedule.prepare(plan);
    const std::int64_t total = plan.total_optimizer_steps(), warmup = schedule.warmup_steps();
    fmt::print("Planned: {} optimizer steps, warmup {} steps\n", total, warmup);
    const int shown = std::min(common.epochs, 6);
    for (int e = 0; e < shown; ++e)
      fmt::print("  epoch {}: {} optimizer steps\n", e + 1, plan.steps_after_epochs(e + 1) - plan.steps_after_epochs(e));
    if (common.epochs > shown)
      fmt::print("  epochs {} to {}: {} optimizer steps\n", shown + 1, common.epochs, total - plan.steps_after_epochs(shown));
    const double base = model.optimizer().lr();
    const std::vector<std::int64_t> chosen = {0, warmup / 2, warmup, total / 2, total - 1};
    for (std::int64_t s : chosen) fmt::print("  lr at step {}: {:.3e}\n", s, base * schedule.factor(s));

    trainer.fit(model, train, test);

    // What training did: the same steps, and the same learning rates at the chosen steps.
    const auto& applied = lr_monitor->history();
    fmt::print("Applied: {} optimizer steps\n", applied.size());
    for (std::int64_t s : chosen)
      fmt::print("  lr at step {}: {:.3e}\n", s, applied.at(static_cast<std::size_t>(s)).second);
    common.print_accuracy(model.evaluate(test, {.batch_size = 1000})["accuracy"]);
  });
}
