// Models of several inputs on data (dataset.hpp, Model::arrange): samples as lists of tensors, as
// tensors named after the model's inputs, and datasets zipped (in memory or read sample by sample);
// fit, evaluate, predict and accumulation on them; and the errors that name what does not match.
// Several outputs, and resuming, are test_several_outputs.cpp's.

#include "../test_util.hpp"

#include "model_zoo.hpp"

using namespace accrue;
using namespace accrue::test;

using zoo::flat_parameters;
using zoo::read_one_by_one;
using zoo::two_inputs;
using zoo::TwoInputs;

namespace {

// The zoo's graph of two inputs (a nested Sequential called twice, a shared Dense, every merge)
// with a classifier on top; the same weights on every call.
Model two_input_classifier() {
  manual_seed(21);
  const zoo::TwoInputGraph g = zoo::two_input_graph();
  return Model{{g.left, g.right}, layers::Dense{3, {.name = "label"}}(g.merged)};
}

}  // namespace

BOOST_AUTO_TEST_CASE(samples_of_several_inputs_as_lists_names_and_zips) {
  const TwoInputs t = two_inputs(10, 1);
  const Dataset listed{{t.left, t.right}, {t.labels}, "listed"};
  BOOST_TEST(listed.layout().inputs.size() == 2u);
  BOOST_TEST(listed.layout().targets.size() == 1u);
  const Example rows = listed.slice(2, 4);
  BOOST_TEST(rows.inputs[1].to_vector() == ops::narrow(t.right, 2, 4).to_vector(), boost::test_tools::per_element());
  const std::vector<std::int64_t> picked{7, 1};
  const Example gathered = listed.gather(picked);
  BOOST_TEST(ops::narrow(gathered.inputs[0], 0, 1).to_vector() == listed[7].inputs[0].to_vector(), boost::test_tools::per_element());
  BOOST_TEST(gathered.target().to_vector<std::int32_t>() ==
                 std::vector<std::int32_t>({t.labels.to_vector<std::int32_t>()[7], t.labels.to_vector<std::int32_t>()[1]}),
             boost::test_tools::per_element());

  // Zipped from a dataset read sample by sample and one in memory: the same batches through a
  // loader, on the training thread and on a background queue.
  const Dataset zipped = Dataset::zip({read_one_by_one(t.left, "left one by one"), Dataset{{t.right}, {t.labels}}});
  BOOST_TEST(!zipped.in_memory());
  BOOST_TEST(zipped.name() == "left one by one + dataset");
  const DataLoader from_memory{listed, {.batch_size = 4, .shuffle = true, .seed = 5}};
  const DataLoader from_zip{zipped, {.batch_size = 4, .shuffle = true, .seed = 5}};
  BatchQueue queue{from_zip, {.workers = 2}};
  for (std::int64_t b = 0; b < from_memory.size(); ++b) {
    const Batch want = from_memory[b], read = from_zip[b], queued = queue.get(b);
    for (std::size_t k = 0; k < 2; ++k) {
      BOOST_TEST(read.inputs[k].to_vector() == want.inputs[k].to_vector(), boost::test_tools::per_element());
      BOOST_TEST(queued.inputs[k].to_vector() == want.inputs[k].to_vector(), boost::test_tools::per_element());
    }
    BOOST_TEST(queued.target().to_vector<std::int32_t>() == want.target().to_vector<std::int32_t>(),
               boost::test_tools::per_element());
  }
  BOOST_TEST(zipped.target(0).to_vector<std::int32_t>() == t.labels.to_vector<std::int32_t>(), boost::test_tools::per_element());
  BOOST_TEST(zipped.fingerprint() != Dataset::zip({read_one_by_one(t.right, "r"), Dataset{{t.left}, {t.labels}}}).fingerprint());

  // By name, in any order; reordered() puts them as asked, in memory still.
  const Dataset named{{{"right", t.right}, {"left", t.left}}, {{"label", t.labels}}, "named"};
  BOOST_TEST(named.layout().input_names == std::vector<std::string>({"right", "left"}), boost::test_tools::per_element());
  const Dataset swapped = named.reordered({1, 0}, {0});
  BOOST_TEST(swapped.in_memory());
  BOOST_TEST(swapped.layout().input_names == std::vector<std::string>({"left", "right"}), boost::test_tools::per_element());
  BOOST_TEST(swapped.slice(0, 3).inputs[0].to_vector() == ops::narrow(t.left, 0, 3).to_vector(), boost::test_tools::per_element());
  const Dataset lazy_swapped = Dataset::zip({read_one_by_one(t.right, "r"), read_one_by_one(t.left, "l")}).reordered({1, 0}, {});
  BOOST_TEST(lazy_swapped.slice(4, 6).inputs[1].to_vector() == ops::narrow(t.right, 4, 6).to_vector(), boost::test_tools::per_element());
  // Parts left out are read into memory of their own and dropped.
  const Example kept = Dataset::zip({read_one_by_one(t.right, "r", t.labels), read_one_by_one(t.left, "l")}).reordered({1}, {}).slice(2, 5);
  BOOST_TEST(kept.inputs.size() == 1u);
  BOOST_TEST(kept.targets.empty());
  BOOST_TEST(kept.inputs[0].to_vector() == ops::narrow(t.left, 2, 5).to_vector(), boost::test_tools::per_element());

  BOOST_CHECK_EXCEPTION(Dataset({t.left, ops::narrow(t.right, 0, 9)}, {t.labels}, "short"), ShapeError,
                        message_has({"'short'", "10 samples in input 0", "9 in input 1"}));
  BOOST_CHECK_EXCEPTION(Dataset::zip({listed, listed.take(9)}), ValueError, message_has({"10 samples", "9", "one size"}));
  BOOST_CHECK_EXCEPTION((void)listed.inputs(), ValueError, message_has({"'listed'", "2 inputs, not one"}));
  BOOST_CHECK_EXCEPTION((void)rows.input(), ValueError, message_has({"2 inputs, not one"}));
  BOOST_CHECK_EXCEPTION((void)named.reordered({0, 0}, {0}), ValueError, message_has({"input 0 given twice"}));
}

// One window of fit on a dataset of two inputs (16 samples, accumulated as 4 micro-batches of 4)
// is the step of the whole batch written by hand: forward both inputs, mean cross-entropy,
// backward, w -= lr * grad.
BOOST_AUTO_TEST_CASE(fit_of_two_inputs_is_the_step_written_by_hand) {
  const TwoInputs t = two_inputs(16, 2);
  Model trained = two_input_classifier();
  trained.compile(optim::SGD{.lr = 0.5}.accumulate(4), losses::CrossEntropy{});
  trained.fit(Dataset{{t.left, t.right}, {t.labels}}, {.epochs = 1, .batch_size = 4, .shuffle = false, .verbose = 0});

  Model by_hand = two_input_classifier();
  ops::cross_entropy(by_hand.forward({t.left, t.right}).front(), t.labels).backward();
  {
    const NoGradGuard no_grad;
    for (Tensor& p : by_hand.parameters()) p.copy_(ops::sub(p, ops::mul(p.grad(), Tensor::scalar(0.5f))));
  }
  check_close(flat_parameters(trained), flat_parameters(by_hand), 1e-6, 1e-5, "fit's window against the step by hand");
}

// The same training whatever form the data has: lists, names in another order, datasets zipped and
// read sample by sample on background threads; evaluate and predict agree; accumulation is exact.
BOOST_AUTO_TEST_CASE(fit_evaluate_and_predict_read_every_form_of_two_inputs_alike) {
  const TwoInputs t = two_inputs(96, 3);
  const auto train = [&](const Dataset& data) {
    Model m = two_input_classifier();
    m.compile(optim::AdamW{.lr = 1e-2}.accumulate(2), losses::CrossEntropy{}, {metrics::Accuracy{}});
    const History h = m.fit(data, {.epochs = 2, .batch_size = 8, .seed = 4, .verbose = 0});
    return std::pair{flat_parameters(m), h.logs().back().at("loss") / h.logs().front().at("loss")};
  };
  const Dataset listed{{t.left, t.right}, {t.labels}, "listed"};
  const auto [want, loss_ratio] = train(listed);
  BOOST_TEST(train(Dataset{{{"right", t.right}, {"left", t.left}}, {{"label", t.labels}}}).first == want,
             boost::test_tools::per_element());
  BOOST_TEST(train(Dataset::zip({read_one_by_one(t.left, "l"), read_one_by_one(t.right, "r", t.labels)})).first == want,
             boost::test_tools::per_element());
  BOOST_TEST(loss_ratio < 0.95);  // it learns

  Model m = two_input_classifier();
  m.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  const Evaluation e = m.evaluate(listed, {.batch_size = 10});
  const Tensor logits = m.predict({t.left, t.right}, 7).front();
  BOOST_TEST(e.loss == ops::cross_entropy(logits, t.labels).item(), boost::test_tools::tolerance(1e-6));
  const AccumulationCheck check = verify_accumulation(m, listed, {.sizes = {8, 8, 8, 5}});
  BOOST_TEST(check.max_relative_difference < 1e-5, check.str());
}

BOOST_AUTO_TEST_CASE(data_that_does_not_match_the_inputs_is_named) {
  const TwoInputs t = two_inputs(8, 6);
  Model m = two_input_classifier();
  m.compile(optim::SGD{.lr = 0.1}, losses::CrossEntropy{});
  const FitOptions quiet{.verbose = 0};
  BOOST_CHECK_EXCEPTION(m.fit(Dataset{t.left, t.labels, "one"}, quiet), ValueError,
                        message_has({"fit: model 'model' on dataset 'one'", "1 input", "2 inputs (left, right)"}));
  BOOST_CHECK_EXCEPTION(m.fit(Dataset{{{"left", t.left}, {"middle", t.right}}, {{"label", t.labels}}}, quiet), ValueError,
                        message_has({"no input named 'right'", "(they have left, middle)"}));
  BOOST_CHECK_EXCEPTION(m.evaluate(Dataset{{{"left", t.left}, {"right", t.right}}, {{"score", t.labels}}}), ValueError,
                        message_has({"evaluate:", "no target named 'label'"}));
  BOOST_CHECK_EXCEPTION(m.fit(Dataset{{t.left, ops::slice(t.right, 1, 1, 5)}, {t.labels}}, quiet), ShapeError,
                        message_has({"input 'right' takes samples of shape (5,)", "(4,)"}));
  BOOST_CHECK_EXCEPTION(m.fit(Dataset{{t.left, t.right}, {}}, quiet), ValueError, message_has({"0 targets", "1 output"}));
}
