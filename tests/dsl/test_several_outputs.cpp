// Models of several outputs (Model::compile with a loss per output): the loss that trains is the
// weighted sum of each output's mean loss over its own samples or tokens in the whole window, so
// accumulation stays exact when the outputs count different tokens; Keras's log names; evaluate;
// and a run of two inputs and two outputs resumed bit for bit from any checkpoint.

#include <accrue/dsl/training_checkpoint.hpp>

#include "../pytorch_reference.hpp"
#include "../test_util.hpp"

#include "model_zoo.hpp"

using namespace accrue;
using namespace accrue::test;

using zoo::compile_two_headed;
using zoo::flat_parameters;
using zoo::pytorch_twin;
using zoo::scores_of;
using zoo::token_heads;
using zoo::two_headed;
using zoo::two_inputs;
using zoo::TwoInputs;
using zoo::uneven_tokens;

namespace {

// w -= lr * grad for every parameter, after backward of `loss`.
void step_by_hand(Model& m, const Tensor& loss, float lr) {
  loss.backward();
  const NoGradGuard no_grad;
  for (Tensor& p : m.parameters()) p.copy_(ops::sub(p, ops::mul(p.grad(), Tensor::scalar(lr))));
}

}  // namespace

BOOST_AUTO_TEST_CASE(compile_gives_each_output_its_loss_weight_and_metrics) {
  Model m = two_headed();
  compile_two_headed(m, optim::SGD{.lr = 0.1});
  std::vector<std::string> names;
  for (const Metric& metric : m.metrics()) names.push_back(metric.name());
  BOOST_TEST(names == std::vector<std::string>({"label_loss", "label_accuracy", "score_loss"}), boost::test_tools::per_element());
  BOOST_TEST(m.losses_str() == "label: CrossEntropy, score: MSE x 0.5");
  BOOST_CHECK_EXCEPTION((void)m.loss(), ValueError, message_has({"2 outputs", "losses()"}));
  // A model file keeps each output's loss, weight and metrics.
  TempDir dir{"several_outputs_file"};
  m.save(dir.file("two_headed.safetensors"));
  const Model loaded = load_model(dir.file("two_headed.safetensors"));
  BOOST_TEST(loaded.losses_str() == m.losses_str());
  BOOST_TEST(loaded.metrics().size() == m.metrics().size());
  for (std::size_t i = 0; i < m.metrics().size(); ++i) BOOST_TEST(loaded.metrics()[i].name() == m.metrics()[i].name());

  // One loss for a model of several outputs is every output's loss, as in Keras.
  m.compile(optim::SGD{.lr = 0.1}, losses::MSE{}, {metrics::Accuracy{}});
  names.clear();
  for (const Metric& metric : m.metrics()) names.push_back(metric.name());
  BOOST_TEST(names == std::vector<std::string>({"label_loss", "label_accuracy", "score_loss", "score_accuracy"}),
             boost::test_tools::per_element());
  BOOST_TEST(m.losses_str() == "label: MSE, score: MSE");

  BOOST_CHECK_EXCEPTION(m.compile(optim::SGD{}, {{"label", {.loss = losses::CrossEntropy{}}}}), ValueError,
                        message_has({"no loss given for output 'score'"}));
  BOOST_CHECK_EXCEPTION(m.compile(optim::SGD{}, {{"label", {.loss = losses::CrossEntropy{}}}, {"price", {.loss = losses::MSE{}}}}),
                        ValueError, message_has({"no output 'price'", "(its outputs: label, score)"}));
  BOOST_CHECK_EXCEPTION(
      m.compile(optim::SGD{}, {{"label", {.loss = losses::CrossEntropy{}}}, {"score", {.loss = losses::MSE{}, .weight = -1.0}}}),
      ValueError, message_has({"output 'score' has loss weight -1"}));
}

// One window of fit (16 samples as 4 accumulated micro-batches of 4) is the step written by hand
// on the whole batch: mean cross-entropy + 0.5 x mean squared error.
BOOST_AUTO_TEST_CASE(fit_of_two_outputs_is_the_step_written_by_hand) {
  const TwoInputs t = two_inputs(16, 2);
  Model trained = two_headed();
  compile_two_headed(trained, optim::SGD{.lr = 0.5}.accumulate(4));
  trained.fit(Dataset{{t.left, t.right}, {t.labels, scores_of(t)}}, {.epochs = 1, .batch_size = 4, .shuffle = false, .verbose = 0});

  Model by_hand = two_headed();
  const std::vector<Tensor> out = by_hand.forward({t.left, t.right});
  step_by_hand(by_hand, ops::add(ops::cross_entropy(out[0], t.labels), ops::mul(ops::mse_loss(out[1], scores_of(t)), Tensor::scalar(0.5f))), 0.5f);
  check_close(flat_parameters(trained), flat_parameters(by_hand), 1e-6, 1e-5, "fit's window against the step by hand");
}

// Outputs that count different tokens: each output's loss is its mean over its own tokens of the
// whole window, whatever micro-batch they fall in, which verify_accumulation confirms and a window
// of fit repeats (against the step by hand).
BOOST_AUTO_TEST_CASE(outputs_with_uneven_masks_accumulate_exactly) {
  const Dataset data = uneven_tokens(12, 3);
  Model m = token_heads();
  m.compile(optim::SGD{.lr = 0.5}.accumulate(3), {{"tags", {.loss = losses::CrossEntropy{}}},
                                                  {"moods", {.loss = losses::CrossEntropy{}, .weight = 0.25}}});
  const AccumulationCheck check = verify_accumulation(m, data, {.sizes = {3, 5, 4}});
  BOOST_TEST(check.max_relative_difference < 1e-5, check.str());
  m.fit(data, {.epochs = 1, .batch_size = 4, .shuffle = false, .verbose = 0});

  Model by_hand = token_heads();
  const Example all = data.slice(0, 12);
  const std::vector<Tensor> out = by_hand.forward(all.inputs);
  step_by_hand(by_hand, ops::add(ops::cross_entropy(out[0], all.targets[0]), ops::mul(ops::cross_entropy(out[1], all.targets[1]), Tensor::scalar(0.25f))), 0.5f);
  check_close(flat_parameters(m), flat_parameters(by_hand), 1e-6, 1e-5, "fit's window against the step by hand");
}

// The model of two inputs and two outputs trained step by step as PyTorch 1.13 trains it
// (tests/data/make_graph_reference.py): windows of 16 accumulated from micro-batches of 4 with a
// short last window, cross-entropy + 0.5 x MSE, clipping to norm 1, AdamW, six steps. The weights
// after them and every epoch's logs are PyTorch's, to float32 rounding.
BOOST_AUTO_TEST_CASE(two_inputs_and_outputs_train_as_pytorch_does) {
  const nlohmann::json ref = pytorch_reference("graph_reference.json");
  Model m = pytorch_twin();
  for (auto& [name, p] : m.named_parameters()) p.copy_(tensor_of(ref["initial"].at(name)));
  m.compile(optim::AdamW{.lr = 1e-2}.accumulate(4).clip(1.0),
            {{"label", {.loss = losses::CrossEntropy{}}}, {"score", {.loss = losses::MSE{}, .weight = 0.5}}});
  const Dataset data{{{"left", tensor_of(ref["left"])}, {"right", tensor_of(ref["right"])}},
                     {{"label", tensor_of(ref["labels"], DType::i32)}, {"score", tensor_of(ref["scores"])}}};
  const History h = m.fit(data, {.epochs = 3, .batch_size = 4, .shuffle = false, .verbose = 0});
  for (std::size_t e = 0; e < 3; ++e)
    for (const char* log : {"loss", "label_loss", "score_loss"})
      BOOST_TEST(h.logs()[e].at(log) == ref["epochs"][e][log].get<double>(), "epoch " << e + 1 << " " << log << boost::test_tools::tolerance(1e-5));
  for (const auto& [name, p] : m.named_parameters()) expect_close(p, ref["final"].at(name), name, 1e-5);
}

// fit logs as Keras does: "loss" and each output's "<output>_loss" and metrics, each behind "val_"
// for validation; evaluate's loss is the weighted sum of the outputs' mean losses, each that of
// predict's outputs.
BOOST_AUTO_TEST_CASE(logs_name_each_output_as_keras_does) {
  const TwoInputs t = two_inputs(64, 4), v = two_inputs(24, 5);
  const Dataset train{{t.left, t.right}, {t.labels, scores_of(t)}}, validation{{v.left, v.right}, {v.labels, scores_of(v)}};
  Model m = two_headed();
  compile_two_headed(m, optim::AdamW{.lr = 1e-2});
  const History h = m.fit(train, {.epochs = 2, .batch_size = 8, .validation = validation, .verbose = 0});
  std::vector<std::string> keys;
  for (const auto& [key, value] : h.logs().back().items()) keys.push_back(key);
  BOOST_TEST(keys == std::vector<std::string>({"loss", "label_loss", "label_accuracy", "score_loss", "val_loss",
                                               "val_label_loss", "val_label_accuracy", "val_score_loss"}),
             boost::test_tools::per_element());
  BOOST_TEST(h.logs().back().at("loss") < h.logs().front().at("loss"));

  const Evaluation e = m.evaluate(validation, {.batch_size = 24});
  const std::vector<Tensor> out = m.predict({v.left, v.right});
  const double label = ops::cross_entropy(out[0], v.labels).item(), score = ops::mse_loss(out[1], scores_of(v)).item();
  BOOST_TEST(e["label_loss"] == label, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(e["score_loss"] == score, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(e.loss == label + 0.5 * score, boost::test_tools::tolerance(1e-5));
}

// A run of two inputs (one read sample by sample) and two outputs, its metrics held back to each
// window's end (backoff_on_oom) so that checkpoints inside a window carry each output's pending
// update: resumed from any checkpoint it ends with the parameters and history of the run never
// stopped, bit for bit.
BOOST_AUTO_TEST_CASE(a_run_of_two_inputs_and_outputs_resumes_bit_for_bit) {
  TempDir dir{"several_outputs_resume"};
  const TwoInputs t = two_inputs(40, 6);
  const Dataset data = Dataset::zip({zoo::read_one_by_one(t.left, "left"), Dataset{{t.right}, {t.labels, scores_of(t)}}});
  const auto run = [&](const std::string& checkpoints, const std::string& resume) {
    manual_seed(77);
    Model m = two_headed();
    compile_two_headed(m, optim::AdamW{.lr = 1e-2}.accumulate(3));
    const History h = m.fit(data, {.epochs = 2, .batch_size = 4, .verbose = 0, .backoff_on_oom = true,
                                   .checkpoint = {.dir = checkpoints, .every_micro_batches = checkpoints.empty() ? 0 : 1, .keep = 1000},
                                   .resume_from = resume});
    return std::pair{flat_parameters(m), h.logs().back().items()};
  };
  const auto whole = run(dir.path.string(), "");
  const std::vector<std::string> files = detail::checkpoints_in(dir.path.string());
  BOOST_TEST(files.size() == 20u);  // 2 epochs of 10 micro-batches
  for (std::size_t f = 0; f < files.size(); f += 3) {
    const auto resumed = run("", files[f]);
    BOOST_TEST(resumed.first == whole.first, boost::test_tools::per_element());
    BOOST_TEST(resumed.second == whole.second, "resumed from " << files[f]);
  }
}

// The rest of what fit does, on a graph of two inputs and two outputs: bfloat16 autocast with
// accumulation and clipping, a warmup-cosine schedule, EarlyStopping and ModelCheckpoint watching
// one output's validation accuracy (its direction known from the metric), a frozen layer that keeps
// its weights, and the memory planner choosing the micro-batch under a budget.
BOOST_AUTO_TEST_CASE(the_rest_of_fit_works_on_two_outputs) {
  const TwoInputs t = two_inputs(64, 7), v = two_inputs(24, 8);
  const Dataset train{{t.left, t.right}, {t.labels, scores_of(t)}}, validation{{v.left, v.right}, {v.labels, scores_of(v)}};
  TempDir dir{"several_outputs_options"};
  Model m = two_headed();
  compile_two_headed(m, optim::AdamW{.lr = 1e-2}.accumulate(2).amp(DType::bf16).clip(1.0));
  m.freeze(0, 1);
  const std::vector<float> frozen = m.layer(std::size_t{0}).named_parameters()[0].second.to_vector();
  const History h = m.fit(train, {.epochs = 8,
                                  .batch_size = 8,
                                  .validation = validation,
                                  .schedule = schedules::warmup_cosine({.warmup_ratio = 0.2}),
                                  .callbacks = {callbacks::EarlyStopping{{.monitor = "val_label_accuracy", .patience = 1}},
                                                callbacks::ModelCheckpoint{dir.file("weights"),
                                                                           {.keep_best = true, .monitor = "val_label_accuracy"}}},
                                  .verbose = 0});
  BOOST_TEST(h.epochs() >= 2u);
  for (const Logs& logs : h.logs())
    for (const char* log : {"loss", "label_loss", "score_loss", "val_label_accuracy"}) BOOST_TEST(std::isfinite(logs.at(log)), log);
  BOOST_TEST(m.layer(std::size_t{0}).named_parameters()[0].second.to_vector() == frozen, boost::test_tools::per_element());
  BOOST_TEST(std::filesystem::exists(dir.file("weights/best.safetensors")));

  Model planned = two_headed();
  compile_two_headed(planned, optim::AdamW{.lr = 1e-2}.effective_batch(32).memory_budget(std::size_t{8} << 20));
  const History p = planned.fit(train, {.epochs = 1, .batch_size = 16, .verbose = 0});
  BOOST_TEST(std::isfinite(p.logs().back().at("loss")));
}
