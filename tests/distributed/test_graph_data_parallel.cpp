// Models of several inputs and outputs trained over processes against one process (ctest runs it
// under mpirun with 2 processes, label mpi, and alone): each process reads its share of every
// global micro-batch of both inputs, and each output's loss is weighed by that output's samples or
// tokens over all processes, so the parameters and every output's logs are those of one process
// with the global micro-batch.

#include "../test_util.hpp"
#include "../dsl/model_zoo.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

// The parameters and last epoch's logs of a two-epoch run of `model` on `data`, over the processes
// or alone with `batch` samples a micro-batch.
std::pair<std::vector<float>, Logs> run(Model model, const Dataset& data, std::int64_t batch, bool distributed) {
  const History h = model.fit(data, {.epochs = 2, .batch_size = batch, .seed = 3, .verbose = 0, .distributed = distributed});
  return {zoo::flat_parameters(model), h.logs().back()};
}

void expect_as_one_process(const std::function<Model()>& make, const Dataset& data, std::int64_t batch,
                           const std::vector<std::string>& logs) {
  const int n = distributed::world().size();
  const auto [dp_parameters, dp_logs] = run(make(), data, batch, true);
  const auto [one_parameters, one_logs] = run(make(), data, batch * n, false);
  check_close(dp_parameters, one_parameters, 1e-5, 1e-4, "parameters over the processes against one process");
  for (const std::string& name : logs)
    BOOST_TEST(dp_logs.at(name) == one_logs.at(name), name << boost::test_tools::tolerance(1e-5));
}

}  // namespace

BOOST_AUTO_TEST_CASE(two_inputs_and_two_outputs_train_as_one_process) {
  BOOST_TEST_MESSAGE(distributed::world().size() << " processes");
  // 50 samples in global micro-batches of 4 x n: a short last one; one input read sample by sample.
  const zoo::TwoInputs t = zoo::two_inputs(50, 8);
  const Dataset data = Dataset::zip({zoo::read_one_by_one(t.left, "left"), Dataset{{t.right}, {t.labels, zoo::scores_of(t)}}});
  const auto make = [] {
    Model m = zoo::two_headed();
    zoo::compile_two_headed(m, optim::AdamW{.lr = 1e-2}.accumulate(3).clip(0.5));
    return m;
  };
  expect_as_one_process(make, data, 4, {"loss", "label_loss", "label_accuracy", "score_loss"});
}

BOOST_AUTO_TEST_CASE(outputs_with_uneven_masks_train_as_one_process) {
  const auto make = [] {
    Model m = zoo::token_heads();
    m.compile(optim::SGD{.lr = 0.2, .momentum = 0.9}.accumulate(2),
              {{"tags", {.loss = losses::CrossEntropy{}}}, {"moods", {.loss = losses::CrossEntropy{}, .weight = 0.25}}});
    return m;
  };
  expect_as_one_process(make, zoo::uneven_tokens(30, 9), 3, {"tags_loss", "moods_loss"});
}

// The model test_several_outputs checks against PyTorch step by step (a Dense shared by both
// inputs, a concatenation, an Add skip, a class head and a score head weighing 0.5; AdamW,
// accumulate(4), clipping): over the processes as on one.
BOOST_AUTO_TEST_CASE(the_model_checked_against_pytorch_trains_as_one_process) {
  Generator gen{12};
  const Tensor left = Tensor::normal({24, 6}, 0.0f, 1.0f, &gen), right = Tensor::normal({24, 6}, 0.0f, 1.0f, &gen);
  std::vector<std::int32_t> classes(24);
  for (std::int32_t& c : classes) c = static_cast<std::int32_t>(gen.below(3));
  const Tensor labels = Tensor::from(classes, {24}), scores = Tensor::normal({24, 1}, 0.0f, 1.0f, &gen);
  const auto make = [] {
    manual_seed(13);
    Model m = zoo::pytorch_twin();
    m.compile(optim::AdamW{.lr = 1e-2}.accumulate(4).clip(1.0),
              {{"label", {.loss = losses::CrossEntropy{}}}, {"score", {.loss = losses::MSE{}, .weight = 0.5}}});
    return m;
  };
  expect_as_one_process(make, Dataset{{left, right}, {labels, scores}}, 2, {"loss", "label_loss", "score_loss"});
}
