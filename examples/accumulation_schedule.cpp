// An accumulation schedule with a warmup-cosine learning rate and clipping, through a Trainer:
// 8 micro-batches per step for the first two epochs, 4 for the next two, then 2, as PyTorch
// Lightning's accumulate_grad_batches={0: 8, 2: 4, 4: 2}. The plan (optimizer steps, warmup, the
// learning rate at chosen steps) is printed before training, and checked against what training did.
//
//   accumulation_schedule [--epochs 6] [--data DIR] [--seed 0] [--amp[=f16|bf16]] [--device best|cpu|cuda]

#include <CLI/CLI.hpp>
#include <accrue/accrue.hpp>

using namespace accrue;

int main(int argc, char** argv) {
  CLI::App app{"A per-epoch accumulation schedule with warmup-cosine and clipping"};
  int epochs = 6;
  std::string data;
  std::uint64_t seed = 0;
  std::string amp = "off";
  std::string device = "best";
  app.add_option("--epochs", epochs, "Passes over the training set")->check(CLI::PositiveNumber);
  app.add_option("--data", data, "Folder with the FashionMNIST IDX files");
  app.add_option("--seed", seed, "Seed of initialisation and shuffling");
  app.add_flag("--amp{auto}", amp, "Mixed precision: --amp (bfloat16 on the CPU), --amp=f16, --amp=bf16")
      ->check(CLI::IsMember({"off", "auto", "f16", "bf16"}));
  app.add_option("--device", device, "Where to train: best (a GPU when there is one), cpu, cuda, cuda:N");
  CLI11_PARSE(app, argc, argv);

  try {
    auto [train, test] = datasets::fashion_mnist(data);
    manual_seed(seed);
    Sequential model{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{256}, layers::ReLU{}, layers::Dense{10}};
    model.to(Device::parse(device));
    optim::Recipe recipe = optim::AdamW{.lr = 2e-3}.clip(1.0);
    if (amp == "auto") recipe = recipe.amp();
    if (amp == "f16") recipe = recipe.amp(dtype::f16);
    if (amp == "bf16") recipe = recipe.amp(dtype::bf16);
    model.compile(recipe, losses::CrossEntropy{}, {metrics::Accuracy{}});

    const auto lr_monitor = std::make_shared<callbacks::LearningRateMonitor>();
    Trainer trainer{{
        .epochs = epochs,
        .batch_size = 16,
        .accumulate = {{0, 8}, {2, 4}, {4, 2}},
        .schedule = schedules::warmup_cosine({.warmup_ratio = 0.05, .min_lr_ratio = 0.05}),
        .callbacks = {lr_monitor},
        .seed = seed,
        .verbose = 2,
    }};

    // The plan, before any training.
    const StepPlan plan = trainer.plan(model, train.size());
    LrSchedule schedule = trainer.options().schedule;
    schedule.prepare(plan);
    const std::int64_t total = plan.total_optimizer_steps(), warmup = schedule.warmup_steps();
    fmt::print("Planned: {} optimizer steps, warmup {} steps\n", total, warmup);
    for (int e = 0; e < epochs; ++e)
      fmt::print("  epoch {}: {} optimizer steps\n", e + 1, plan.steps_after_epochs(e + 1) - plan.steps_after_epochs(e));
    const double base = model.optimizer().lr();
    const std::vector<std::int64_t> chosen = {0, warmup / 2, warmup, total / 2, total - 1};
    for (std::int64_t s : chosen) fmt::print("  lr at step {}: {:.3e}\n", s, base * schedule.factor(s));

    trainer.fit(model, train, test);

    // What training did: the same steps, and the same learning rates at the chosen steps.
    const auto& applied = lr_monitor->history();
    fmt::print("Applied: {} optimizer steps\n", applied.size());
    for (std::int64_t s : chosen)
      fmt::print("  lr at step {}: {:.3e}\n", s, applied.at(static_cast<std::size_t>(s)).second);
    fmt::print("Accuracy: {:.1f}%\n", 100 * model.evaluate(test, {.batch_size = 1000})["accuracy"]);
  } catch (const Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
