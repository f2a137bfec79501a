// BinaryCrossEntropy, Huber and KLDivergence against PyTorch 1.13's own losses
// (tests/data/make_loss_reference.py): the mean value and its gradient with respect to the
// predictions; finite differences of every per-sample loss; shapes and options refused by name.

#include "../pytorch_reference.hpp"

using namespace accrue;
using namespace accrue::test;
using json = nlohmann::json;

namespace {

Loss loss_of(const std::string& type, const json& o) {
  if (type == "BinaryCrossEntropy")
    return losses::BinaryCrossEntropy{.from_logits = o.value("from_logits", false),
                                      .label_smoothing = o.value("label_smoothing", 0.0f),
                                      .pos_weight = o.value("pos_weight", 1.0f)};
  if (type == "Huber") return losses::Huber{.delta = o.value("delta", 1.0f)};
  BOOST_REQUIRE(type == "KLDivergence");
  return losses::KLDivergence{.from_logits = o.value("from_logits", false)};
}

}  // namespace

BOOST_AUTO_TEST_CASE(values_and_gradients_match_pytorch) {
  const json ref = test::pytorch_reference("loss_reference.json");
  const Shape shape(ref["shape"].get<std::vector<std::int64_t>>());
  for (const json& c : ref["cases"]) {
    const Loss loss = loss_of(c["loss"], c["options"]);
    const std::string what = c["loss"].get<std::string>() + " " + c["options"].dump();
    Tensor p = Tensor::from(c["prediction"].get<std::vector<float>>(), shape);
    p.set_requires_grad(true);
    const Tensor y = Tensor::from(c["target"].get<std::vector<float>>(), shape);
    // What training computes: the sum of per-sample losses, over the batch's samples.
    const Tensor mean = loss.batch_sum(p, y) * (1.0f / static_cast<float>(shape[0]));
    BOOST_TEST(mean.item() == c["value"].get<double>(), what << boost::test_tools::tolerance(1e-5));
    mean.backward();
    check_close(p.grad(), c["grad"].get<std::vector<float>>(), 1e-6, 1e-4, what);
  }
}

BOOST_AUTO_TEST_CASE(per_sample_losses_pass_gradcheck) {
  const Tensor logits = test::random_tensor({4, 3}, 1, -2.0f, 2.0f);
  const Tensor probabilities = test::random_tensor({4, 3}, 2, 0.1f, 0.9f);
  const Tensor binary = ops::cast(ops::clamp(test::random_tensor({4, 3}, 3, 0.0f, 2.0f), 0.0f, 1.0f), DType::f32);
  const Tensor distribution = ops::softmax(test::random_tensor({4, 3}, 4), -1);
  const Tensor regression = test::random_tensor({4, 3}, 5, -3.0f, 3.0f);
  const std::vector<std::tuple<std::string, std::function<Tensor(const Tensor&)>, Tensor>> cases = {
      {"bce logits", [&](const Tensor& x) { return losses::BinaryCrossEntropy{.from_logits = true, .pos_weight = 2.0f}.per_sample(x, binary); }, logits},
      {"bce probabilities", [&](const Tensor& x) { return losses::BinaryCrossEntropy{.label_smoothing = 0.1f}.per_sample(x, binary); }, probabilities},
      {"huber", [&](const Tensor& x) { return losses::Huber{.delta = 0.7f}.per_sample(x, regression); }, test::random_tensor({4, 3}, 6, -3.0f, 3.0f)},
      {"kl probabilities", [&](const Tensor& x) { return losses::KLDivergence{}.per_sample(x, distribution); }, probabilities},
      {"kl logits", [&](const Tensor& x) { return losses::KLDivergence{.from_logits = true}.per_sample(x, distribution); }, logits},
  };
  for (const auto& [name, f, input] : cases) {
    Tensor x = input.clone();
    x.set_requires_grad(true);
    const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& in) { return f(in[0]); }, {x});
    BOOST_TEST(r.ok, name << ": " << r.report);
  }
}

BOOST_AUTO_TEST_CASE(labels_shapes_and_options) {
  // int32 labels (B) for predictions (B, 1), as a binary classifier's dataset gives them.
  const Tensor p = Tensor::from(std::vector<float>{0.5f, -1.0f, 2.0f}, {3, 1});
  const Tensor labels = Tensor::from(std::vector<std::int32_t>{1, 0, 1}, {3});
  const Tensor as_floats = Tensor::from(std::vector<float>{1, 0, 1}, {3, 1});
  const losses::BinaryCrossEntropy bce{.from_logits = true};
  BOOST_TEST(bce(p, labels).item() == bce(p, as_floats).item());
  BOOST_CHECK_EXCEPTION(bce(p, Tensor::zeros({3, 2})), ShapeError,
                        message_has({"BinaryCrossEntropy", "prediction of shape (3, 1)", "target of shape (3, 2)"}));
  BOOST_CHECK_EXCEPTION(losses::KLDivergence{}(Tensor::ones({3}), Tensor::ones({3})), ShapeError,
                        message_has({"KLDivergence", "(B, C)"}));
  BOOST_CHECK_EXCEPTION(losses::Huber{.delta = 0.0f}(p, as_floats), ValueError, message_has({"Huber", "delta"}));
  BOOST_TEST(losses::Huber{.reduction = Reduction::sum}(p, as_floats).item() ==
             ops::sum(losses::Huber{}.per_sample(p, as_floats)).item());
}

BOOST_AUTO_TEST_CASE(the_losses_come_back_with_a_saved_model) {
  test::TempDir dir{"loss_reference"};
  const std::string path = (dir.path / "m.safetensors").string();
  for (const Loss& loss : {Loss{losses::BinaryCrossEntropy{.from_logits = true, .label_smoothing = 0.1f, .pos_weight = 2.0f}},
                           Loss{losses::Huber{.reduction = Reduction::sum, .delta = 0.5f}},
                           Loss{losses::KLDivergence{.from_logits = true}}}) {
    Sequential m{layers::Input{3}, layers::Dense{2}};
    m.compile(optim::SGD{}, loss);
    m.save(path);
    const Model loaded = load_model(path);
    BOOST_REQUIRE(loaded.compiled());
    BOOST_TEST(loaded.loss().name() == loss.name());
    BOOST_TEST((loaded.loss().config() == loss.config()), loss.name());
  }
}
