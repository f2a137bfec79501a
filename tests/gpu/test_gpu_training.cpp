// Layers, models, optimizers, the loss scaler and fit() on the GPU against the same on the CPU,
// and a short FashionMNIST run.

#include <accrue/framework/autograd/gradients.hpp>
#include <limits>

#include "gpu_test.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

Sequential mlp(std::uint64_t seed, float dropout = 0.0f) {
  manual_seed(seed);
  Sequential m{layers::Input{6}, layers::Dense{32}, layers::GELU{}, layers::Dropout{dropout}, layers::Dense{16},
               layers::Tanh{}, layers::Dense{8},    layers::Sigmoid{}, layers::Dense{4}};
  return m;
}

void check_same_parameters(Sequential& on_gpu, Sequential& on_cpu, double tol, const std::string& what) {
  const auto g = on_gpu.named_parameters(), c = on_cpu.named_parameters();
  BOOST_REQUIRE(g.size() == c.size());
  for (std::size_t i = 0; i < g.size(); ++i) check_gpu_close(g[i].second, c[i].second, tol, tol, what + " " + g[i].first);
}

}  // namespace

BOOST_AUTO_TEST_CASE(models_move_and_build_on_their_device) {
  Sequential built = mlp(1);
  Sequential copy = mlp(1);
  built.to(gpu());
  BOOST_TEST(built.device() == gpu());
  for (const Tensor& p : built.parameters()) BOOST_TEST(p.device() == gpu());
  check_same_parameters(built, copy, 0.0, "moved");
  // A model built after to() initialises on the CPU and moves: the same weights as on the CPU.
  manual_seed(2);
  Sequential lazy{layers::Flatten{}, layers::Dense{5}};
  lazy.to(gpu());
  const Tensor out = lazy.forward(random_tensor({3, 2, 2}, 3).to(gpu()));
  BOOST_TEST(out.device() == gpu());
  manual_seed(2);
  Sequential lazy_cpu{layers::Flatten{}, layers::Dense{5}};
  lazy_cpu.forward(random_tensor({3, 2, 2}, 3));
  check_same_parameters(lazy, lazy_cpu, 0.0, "built on the GPU");
  // forward() names both devices when the input is elsewhere.
  BOOST_CHECK_EXCEPTION(built.forward(Tensor::zeros({2, 6})), ValueError, message_has({"cuda:0", "cpu", "to(model.device())"}));
  // predict() moves batches itself and answers on the input's device.
  const Tensor x = random_tensor({10, 6}, 4);
  check_close(built.predict(x, 4), copy.predict(x, 4), 1e-5, 1e-5, "predict");
  built.to(Device::cpu());
  for (const Tensor& p : built.parameters()) BOOST_TEST(p.device() == Device::cpu());
}

BOOST_AUTO_TEST_CASE(every_layer_forward_and_backward) {
  for (float dropout : {0.0f, 0.25f}) {
    Sequential g = mlp(5, dropout), c = mlp(5, dropout);
    g.to(gpu());
    const Tensor x = random_tensor({9, 6}, 6);
    const Tensor y_gpu = g.forward(x.to(gpu())), y_cpu = c.forward(x);
    check_gpu_close(y_gpu, y_cpu, 1e-5, 1e-5, "model output");
    ops::sum(ops::square(y_gpu)).backward();
    ops::sum(ops::square(y_cpu)).backward();
    const auto gp = g.named_parameters(), cp = c.named_parameters();
    for (std::size_t i = 0; i < gp.size(); ++i)
      check_gpu_close(gp[i].second.grad(), cp[i].second.grad(), 1e-5, 1e-4, "gradient of " + gp[i].first);
  }
  // Softmax as a layer, and MSE.
  manual_seed(7);
  Sequential sg{layers::Input{5}, layers::Dense{3}, layers::Softmax{}};
  manual_seed(7);
  Sequential sc{layers::Input{5}, layers::Dense{3}, layers::Softmax{}};
  sg.to(gpu());
  const Tensor x = random_tensor({4, 5}, 8), t = random_tensor({4, 3}, 9);
  const Tensor lg = ops::mse_loss(sg.forward(x.to(gpu())), t.to(gpu())), lc = ops::mse_loss(sc.forward(x), t);
  check_gpu_close(lg, lc, 1e-6, 1e-5, "mse of softmax");
  lg.backward();
  lc.backward();
  check_gpu_close(sg.parameters()[0].grad(), sc.parameters()[0].grad(), 1e-6, 1e-4, "its gradient");
}

// Lion is left out here: the sign of a momentum near zero may differ with the GPU's summation order
// (its kernel is compared with the CPU's in test_gpu_ops).
BOOST_AUTO_TEST_CASE(fit_with_each_optimizer_matches_the_cpu) {
  const Dataset data = blobs(256, 11);
  const std::vector<std::pair<std::string, optim::Recipe>> recipes = {
      {"sgd", optim::SGD{.lr = 0.05, .momentum = 0.9, .nesterov = true}.accumulate(2).clip(1.0)},
      {"adam", optim::Adam{.lr = 1e-2}.accumulate(3)},
      {"adamw amsgrad", optim::AdamW{.lr = 1e-2, .amsgrad = true}.clip_value(0.5)},
      {"rmsprop centered", optim::RMSprop{.lr = 1e-3, .momentum = 0.9, .centered = true}.accumulate(2)},
      {"adagrad with swa", optim::Adagrad{.lr = 0.05}.swa({.start = 10})},
      {"lars with ema", optim::LARS{.lr = 0.5, .trust_coefficient = 0.02}.accumulate(2).ema({.decay = 0.9})},
      {"lamb scaled to its batch", optim::LAMB{.lr = 1e-2}.accumulate(4).reference_batch(16)},
  };
  for (const auto& [name, recipe] : recipes) {
    Sequential g = mlp(12), c = mlp(12);
    g.to(gpu());
    g.compile(recipe, losses::CrossEntropy{}, {metrics::Accuracy{}});
    c.compile(recipe, losses::CrossEntropy{}, {metrics::Accuracy{}});
    const History hg = g.fit(data, {.epochs = 3, .batch_size = 16, .seed = 4, .verbose = 0});
    const History hc = c.fit(data, {.epochs = 3, .batch_size = 16, .seed = 4, .verbose = 0});
    for (std::size_t e = 0; e < 3; ++e)
      BOOST_TEST(std::abs(hg.logs()[e].at("loss") - hc.logs()[e].at("loss")) <= 1e-3, name << " epoch " << e);
    check_same_parameters(g, c, 1e-3, name);
    const Evaluation eg = g.evaluate(data), ec = c.evaluate(data);
    BOOST_TEST(std::abs(eg.loss - ec.loss) <= 1e-3);
  }
}

BOOST_AUTO_TEST_CASE(amp_on_cuda_is_float16_with_loss_scaling) {
  Sequential g = mlp(13);
  g.to(gpu());
  g.compile(optim::SGD{.lr = 0.05}.accumulate(2).clip(1.0).amp(), losses::CrossEntropy{});
  BOOST_REQUIRE(g.scaler() != nullptr);
  BOOST_TEST((g.recipe().amp_dtype(gpu()) == std::optional<DType>{DType::f16}));
  const History h = g.fit(blobs(256, 14), {.epochs = 4, .batch_size = 16, .verbose = 0});
  BOOST_TEST(h.logs().back().at("loss") < h.logs().front().at("loss"));
  // The same recipe in float16 on the CPU (emulated) lands close by.
  Sequential c = mlp(13);
  c.compile(optim::SGD{.lr = 0.05}.accumulate(2).clip(1.0).amp(dtype::f16), losses::CrossEntropy{});
  c.fit(blobs(256, 14), {.epochs = 4, .batch_size = 16, .verbose = 0});
  check_same_parameters(g, c, 2e-2, "float16 training");
}

BOOST_AUTO_TEST_CASE(the_scaler_skips_overflowing_steps_on_the_gpu) {
  Sequential g = mlp(15);
  g.to(gpu());
  // An initial scale of 2^40 overflows float16 at once: steps are skipped and the scale backs off
  // until it fits, as on the CPU.
  optim::AmpOptions amp{.dtype = DType::f16};
  amp.scaler.init_scale = 1099511627776.0;
  g.compile(optim::SGD{.lr = 0.05}.amp(amp), losses::CrossEntropy{});
  g.fit(blobs(64, 16), {.epochs = 1, .batch_size = 16, .verbose = 0});
  BOOST_REQUIRE(g.scaler() != nullptr);
  BOOST_TEST(g.scaler()->skipped_steps() >= 1);
  BOOST_TEST(g.scaler()->scale() < amp.scaler.init_scale);
  BOOST_TEST_MESSAGE("skipped " << g.scaler()->skipped_steps() << " steps, scale now " << g.scaler()->scale());
}

BOOST_AUTO_TEST_CASE(a_dataset_kept_on_the_gpu_trains_as_on_the_cpu) {
  // Its batches are views of device memory: handed over, never read as host memory for staging.
  const Dataset data = blobs(256, 17);
  const Dataset on_device{data.inputs().to(gpu()), data.targets().to(gpu()), "blobs on cuda:0"};
  Sequential g = mlp(18), c = mlp(18);
  g.to(gpu());
  for (Sequential* m : {&g, &c}) m->compile(optim::SGD{.lr = 0.05}.accumulate(2), losses::CrossEntropy{});
  g.fit(on_device, {.epochs = 2, .batch_size = 16, .shuffle = false, .verbose = 0});
  c.fit(data, {.epochs = 2, .batch_size = 16, .shuffle = false, .verbose = 0});
  check_same_parameters(g, c, 1e-3, "a dataset on the GPU");
}

BOOST_AUTO_TEST_CASE(prefetched_batches_survive_skipped_windows_and_back_off) {
  // A NaN input poisons its window: the window's other micro-batches are not asked for, so the
  // batch prefetched for them is dropped while its copy may still run.
  std::vector<float> x = blobs(256, 19).inputs().to_vector();
  x[6 * 40] = std::numeric_limits<float>::quiet_NaN();  // sample 40: the third micro-batch of 16
  const Dataset poisoned{Tensor::from(x, {256, 6}), blobs(256, 19).targets(), "blobs with a NaN"};
  Sequential g = mlp(20), c = mlp(20);
  g.to(gpu());
  for (Sequential* m : {&g, &c}) m->compile(optim::SGD{.lr = 0.05}.accumulate(4), losses::CrossEntropy{});
  g.fit(poisoned, {.epochs = 2, .batch_size = 16, .callbacks = {callbacks::NanGuard{}}, .seed = 5, .verbose = 0});
  c.fit(poisoned, {.epochs = 2, .batch_size = 16, .callbacks = {callbacks::NanGuard{}}, .seed = 5, .verbose = 0});
  check_same_parameters(g, c, 1e-3, "skipped windows");

  // Out of memory at micro-batches of 64 under a limit that 32 fits: the window is redone with 32 x 2,
  // the prefetch made for 64 dropped, and training matches 32 x 2 from the start on the CPU.
  const Dataset data = blobs(512, 21);
  Sequential backs_off = mlp(22), plain = mlp(22);
  backs_off.to(gpu());
  backs_off.compile(optim::SGD{.lr = 0.05}, losses::CrossEntropy{});
  plain.compile(optim::SGD{.lr = 0.05}.accumulate(2), losses::CrossEntropy{});
  const std::size_t live = memory_stats(gpu()).live_total;
  const std::size_t limit = live + (backs_off.memory_plan(32, true).peak_total + backs_off.memory_plan(64).peak_total) / 2;
  set_memory_limit(gpu(), limit);
  backs_off.fit(data, {.epochs = 1, .batch_size = 64, .seed = 6, .verbose = 0, .backoff_on_oom = true});
  set_memory_limit(gpu(), 0);
  plain.fit(data, {.epochs = 1, .batch_size = 32, .seed = 6, .verbose = 0});
  check_same_parameters(backs_off, plain, 1e-3, "after backing off");
}

BOOST_AUTO_TEST_CASE(fashion_mnist_trains_on_the_gpu, *boost::unit_test::precondition(requires_fashion_mnist)) {
  const auto [train, test] = datasets::fashion_mnist();
  manual_seed(0);
  Sequential model{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{512}, layers::ReLU{},
                   layers::Dense{512},       layers::ReLU{},    layers::Dense{10}};
  model.to(gpu());
  model.compile(optim::SGD{.lr = 0.05, .momentum = 0.9}.accumulate(2), losses::CrossEntropy{}, {metrics::Accuracy{}});
  model.fit(train, {.epochs = 1, .batch_size = 32, .verbose = 2});
  const double accuracy = model.evaluate(test, {.batch_size = 1000})["accuracy"];
  BOOST_TEST_MESSAGE("FashionMNIST on " << gpu().str() << ": test accuracy " << accuracy << " after one epoch");
  BOOST_TEST(accuracy > 0.80);
  const MemoryStats m = memory_stats(gpu());
  BOOST_TEST_MESSAGE("GPU memory:\n" << m.str());
  BOOST_TEST(m.peak_of(MemoryCategory::activations) > 0u);
  BOOST_TEST(m.live_of(MemoryCategory::parameters) >= static_cast<std::size_t>(model.parameter_count()) * 4);
}

BOOST_AUTO_TEST_CASE(a_cnn_with_each_normalization_trains_as_on_the_cpu) {
  Generator gen{21};
  std::vector<std::int32_t> labels(96);
  for (auto& l : labels) l = static_cast<std::int32_t>(gen.below(4));
  const Dataset data{Tensor::uniform({96, 1, 12, 12}, 0, 1, &gen), Tensor::from(labels, {96}), "images"};
  for (const std::string norm : {"none", "batch", "group"}) {
    auto make = [&] {
      manual_seed(22);
      Sequential m{layers::Input{1, 12, 12}, layers::Conv2d{8, 3, {.padding = 1}}};
      if (norm == "batch") m.add(layers::BatchNorm2d{});
      if (norm == "group") m.add(layers::GroupNorm{4});
      m.add(layers::ReLU{});
      m.add(layers::MaxPool2d{2});
      m.add(layers::Flatten{});
      m.add(layers::Dense{4});
      m.compile(optim::Adam{.lr = 1e-3}.accumulate(2), losses::CrossEntropy{});
      return m;
    };
    Sequential g = make(), c = make();
    g.to(gpu());
    g.fit(data, {.epochs = 2, .batch_size = 8, .verbose = 0});
    c.fit(data, {.epochs = 2, .batch_size = 8, .verbose = 0});
    check_same_parameters(g, c, 1e-3, "CNN with norm " + norm);
    const auto gb = g.named_buffers(), cb = c.named_buffers();
    for (std::size_t i = 0; i < gb.size(); ++i) check_gpu_close(gb[i].second, cb[i].second, 1e-4, 1e-4, gb[i].first);
  }
}

BOOST_AUTO_TEST_CASE(checkpoints_resume_on_the_gpu_and_move_between_devices) {
  // A checkpoint taken inside a window on the GPU resumes there (the same kernels in the same order,
  // so the same parameters up to the order-dependence of atomics), and one written on the CPU
  // resumes on the GPU.
  const Dataset data = blobs(256, 11);
  const optim::Recipe recipe = optim::Adam{.lr = 1e-2}.accumulate(3).clip(1.0);
  TempDir dir{"gpu_checkpoints"};
  const auto options = [&](const std::string& ckpt, const std::string& resume) {
    return FitOptions{.epochs = 2, .batch_size = 16, .seed = 4, .verbose = 0,
                      .checkpoint = {.dir = ckpt, .every_micro_batches = ckpt.empty() ? 0 : 7, .keep = 100},
                      .resume_from = resume};
  };
  const auto trained = [&](std::uint64_t seed, bool on_gpu, const std::string& ckpt, const std::string& resume) {
    Sequential m = mlp(seed, 0.2f);
    if (on_gpu) m.to(gpu());
    m.compile(recipe, losses::CrossEntropy{}, {metrics::Accuracy{}});
    m.fit(data, options(ckpt, resume));
    return m;
  };
  Sequential reference = trained(12, true, dir.file("gpu"), "");
  Sequential resumed = trained(13, true, "", dir.file("gpu/checkpoint-0000000007.safetensors"));
  check_same_parameters(resumed, reference, 1e-5, "resumed on the gpu");

  Sequential on_cpu = trained(12, false, dir.file("cpu"), "");
  Sequential moved = trained(14, true, "", dir.file("cpu/checkpoint-0000000007.safetensors"));
  for (const Tensor& p : moved.parameters()) BOOST_TEST(p.device() == gpu());
  check_same_parameters(moved, on_cpu, 1e-3, "cpu checkpoint resumed on the gpu");
}
