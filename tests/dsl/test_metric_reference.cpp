// Precision, Recall, F1Score, AUC (ROC and PR), SparseTopKCategoricalAccuracy and ConfusionMatrix against
// scikit-learn 1.2 (tests/data/make_metric_reference.py), updated batch by batch; their states are
// counts, so two shares' states summed (as processes' are) give the whole set's value exactly.

#include <filesystem>
#include <numeric>

#include "../pytorch_reference.hpp"

using namespace accrue;
using namespace accrue::test;
using json = nlohmann::json;

namespace {

json reference() { return test::pytorch_reference("metric_reference.json"); }

// `metric` updated over rows [begin, end) of the predictions and targets, in batches of 32.
void feed(Metric& metric, const Tensor& prediction, const Tensor& target, std::int64_t begin, std::int64_t end) {
  for (std::int64_t b = begin; b < end; b += 32) {
    const std::int64_t e = std::min(end, b + 32);
    metric.update(ops::narrow(prediction, b, e), ops::narrow(target, b, e), 0.0);
  }
}

double value(Metric metric, const Tensor& prediction, const Tensor& target) {
  metric.reset();
  feed(metric, prediction, target, 0, prediction.size(0));
  return metric.result();
}

}  // namespace

BOOST_AUTO_TEST_CASE(binary_metrics_match_scikit_learn) {
  const json ref = reference();
  const auto N = static_cast<std::int64_t>(ref["labels"].size());
  const Tensor scores = Tensor::from(ref["scores"].get<std::vector<float>>(), {N, 1});
  const Tensor labels = Tensor::from(ref["labels"].get<std::vector<std::int32_t>>(), {N});
  const auto C = ref["classes"].get<std::int64_t>();
  const Tensor class_scores = Tensor::from(ref["class_scores"].get<std::vector<float>>(), {N, C});
  const Tensor class_labels = Tensor::from(ref["class_labels"].get<std::vector<std::int32_t>>(), {N});
  struct Case {
    std::string key;
    metrics::BinaryOptions options;
    Tensor prediction, target;
  };
  const Tensor logits = Tensor::from(ref["logits"].get<std::vector<float>>(), {N, 1});
  for (const Case& c : {Case{"binary", {}, scores, labels}, Case{"binary_threshold_0.3", {.threshold = 0.3f}, scores, labels},
                        Case{"binary", {.from_logits = true}, logits, labels},
                        Case{"class_2_softmax_threshold_0.3", {.threshold = 0.3f, .class_id = 2, .from_logits = true},
                             class_scores, class_labels}}) {
    const json& expected = ref[c.key];
    BOOST_TEST(value(metrics::Precision{c.options}, c.prediction, c.target) == expected["precision"].get<double>(),
               c.key << boost::test_tools::tolerance(1e-12));
    BOOST_TEST(value(metrics::Recall{c.options}, c.prediction, c.target) == expected["recall"].get<double>(),
               c.key << boost::test_tools::tolerance(1e-12));
    BOOST_TEST(value(metrics::F1Score{c.options}, c.prediction, c.target) == expected["f1_score"].get<double>(),
               c.key << boost::test_tools::tolerance(1e-12));
  }
  BOOST_TEST(value(metrics::BinaryAccuracy{}, scores, labels) == ref["binary_accuracy"].get<double>(),
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(value(metrics::BinaryAccuracy{{.from_logits = true}}, logits, labels) == ref["binary_accuracy"].get<double>(),
             boost::test_tools::tolerance(1e-12));
  // Keras's AUC counts at 200 thresholds; scikit-learn's is exact over the 300 scores.
  BOOST_TEST(value(metrics::AUC{}, scores, labels) == ref["roc_auc"].get<double>(), boost::test_tools::tolerance(2e-3));
  BOOST_TEST(value(metrics::AUC{{.from_logits = true}}, logits, labels) == ref["roc_auc"].get<double>(),
             boost::test_tools::tolerance(2e-3));
  BOOST_TEST(value(metrics::AUC{{.class_id = 2, .from_logits = true}}, class_scores, class_labels) ==
                 ref["class_2_roc_auc"].get<double>(),
             boost::test_tools::tolerance(2e-3));
  BOOST_TEST(value(metrics::AUC{{.curve = metrics::AucCurve::pr}}, scores, labels) == ref["pr_auc"].get<double>(),
             boost::test_tools::tolerance(1e-2));
  const Tensor softmax = ops::softmax(class_scores, -1);
  BOOST_TEST(value(metrics::AUC{{.class_id = 2}}, softmax, class_labels) == ref["class_2_roc_auc"].get<double>(),
             boost::test_tools::tolerance(2e-3));
  BOOST_TEST(value(metrics::SparseTopKCategoricalAccuracy{1}, class_scores, class_labels) == ref["top_1"].get<double>(),
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(value(metrics::SparseTopKCategoricalAccuracy{2}, class_scores, class_labels) == ref["top_2"].get<double>(),
             boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(shares_summed_give_the_whole) {
  const json ref = reference();
  const auto N = static_cast<std::int64_t>(ref["labels"].size());
  const Tensor scores = Tensor::from(ref["scores"].get<std::vector<float>>(), {N, 1});
  const Tensor labels = Tensor::from(ref["labels"].get<std::vector<std::int32_t>>(), {N});
  for (Metric m : {Metric{metrics::Precision{}}, Metric{metrics::F1Score{}}, Metric{metrics::AUC{}},
                   Metric{metrics::AUC{{.curve = metrics::AucCurve::pr}}}}) {
    // Two processes' shares (uneven), their states summed: what fit does across processes.
    Metric a = m, b = m;
    a.reset();
    b.reset();
    feed(a, scores, labels, 0, 100);
    feed(b, scores, labels, 100, N);
    std::vector<double> sum = *a.state();
    const std::vector<double> other = *b.state();
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += other[i];
    Metric whole = m;
    whole.load_state(sum);
    BOOST_TEST(whole.result() == value(m, scores, labels), m.name());
    // The mean of the shares' values is another number.
    BOOST_TEST(std::abs((a.result() + b.result()) / 2 - whole.result()) > 1e-6, m.name());
  }
}

BOOST_AUTO_TEST_CASE(confusion_matrix_matches_scikit_learn) {
  const json ref = reference();
  const auto N = static_cast<std::int64_t>(ref["labels"].size());
  const auto C = ref["classes"].get<std::int64_t>();
  const Tensor class_scores = Tensor::from(ref["class_scores"].get<std::vector<float>>(), {N, C});
  const Tensor class_labels = Tensor::from(ref["class_labels"].get<std::vector<std::int32_t>>(), {N});
  Metric m = metrics::ConfusionMatrix{{.num_classes = C, .labels = {"a", "b", "c", "d"}}};
  feed(m, class_scores, class_labels, 0, N);
  const CountTable t = *m.table();
  BOOST_TEST(t.counts == ref["confusion"].get<std::vector<std::int64_t>>(), boost::test_tools::per_element());
  BOOST_TEST((t.labels == std::vector<std::string>{"a", "b", "c", "d"}));
  BOOST_TEST_MESSAGE(t.str());
  BOOST_TEST(t.str().substr(0, 15) == "    a  b  c  d\n");
  // One output against 0/1 labels, decided at a threshold; shares summed as processes' are.
  const Tensor scores = Tensor::from(ref["scores"].get<std::vector<float>>(), {N, 1});
  const Tensor labels = Tensor::from(ref["labels"].get<std::vector<std::int32_t>>(), {N});
  Metric a = metrics::ConfusionMatrix{{.num_classes = 2, .threshold = 0.3f}}, b = a;
  feed(a, scores, labels, 0, 100);
  feed(b, scores, labels, 100, N);
  std::vector<double> sum = *a.state();
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += (*b.state())[i];
  a.load_state(sum);
  BOOST_TEST(a.table()->counts == ref["binary_confusion_threshold_0.3"].get<std::vector<std::int64_t>>(),
             boost::test_tools::per_element());
  BOOST_CHECK_EXCEPTION(a.result(), ValueError, message_has({"confusion_matrix", "table"}));
  // Labels outside the classes, and shapes that are not scores of num_classes.
  metrics::ConfusionMatrix three{3};
  BOOST_CHECK_EXCEPTION(three.update(Tensor::zeros({2, 3}), Tensor::from(std::vector<std::int32_t>{0, 3}, {2}), 0.0),
                        ValueError, message_has({"label 3 of sample 1", "[0, 3)"}));
  BOOST_CHECK_EXCEPTION(three.update(Tensor::zeros({2, 4}), Tensor::from(std::vector<std::int32_t>{0, 1}, {2}), 0.0),
                        ShapeError, message_has({"(B, 3)", "(2, 4)"}));
  BOOST_CHECK_EXCEPTION(metrics::ConfusionMatrix({.num_classes = 3, .labels = {"x"}}), ValueError,
                        message_has({"1 labels for 3 classes"}));
  // A saved model cannot ask for counts beyond memory.
  BOOST_CHECK_EXCEPTION(metrics::ConfusionMatrix{65536}, ValueError, message_has({"from 2 to 4096", "65536"}));
}

BOOST_AUTO_TEST_CASE(logits_without_from_logits_are_refused_naming_it) {
  // A classifier's logits scored as probabilities gave an AUC of 0.07 where its probabilities give
  // 0.93: every threshold metric refuses a score outside [0, 1] and says what to give.
  const json ref = reference();
  const auto N = static_cast<std::int64_t>(ref["labels"].size());
  const auto C = ref["classes"].get<std::int64_t>();
  const Tensor logits = Tensor::from(ref["logits"].get<std::vector<float>>(), {N, 1});
  const Tensor labels = Tensor::from(ref["labels"].get<std::vector<std::int32_t>>(), {N});
  const Tensor class_scores = Tensor::from(ref["class_scores"].get<std::vector<float>>(), {N, C});
  const Tensor class_labels = Tensor::from(ref["class_labels"].get<std::vector<std::int32_t>>(), {N});
  for (Metric m : {Metric{metrics::AUC{}}, Metric{metrics::AUC{{.curve = metrics::AucCurve::pr}}}, Metric{metrics::Precision{}},
                   Metric{metrics::Recall{}}, Metric{metrics::F1Score{}}, Metric{metrics::BinaryAccuracy{}},
                   Metric{metrics::ConfusionMatrix{2}}})
    BOOST_CHECK_EXCEPTION(value(m, logits, labels), ValueError, message_has({m.name(), "outside [0, 1]", ".from_logits = true"}));
  BOOST_CHECK_EXCEPTION(value(metrics::AUC{{.class_id = 1}}, class_scores, class_labels), ValueError,
                        message_has({"auc", "outside [0, 1]", "from_logits"}));
  // Probabilities a softmax or sigmoid rounded to just past 1 are taken.
  BOOST_TEST(value(metrics::AUC{}, Tensor::from({1.0000001f, 0.0f}, {2, 1}), Tensor::from(std::vector<std::int32_t>{1, 0}, {2})) ==
             1.0);
}

namespace {

// scikit-learn's roc_auc_score: the chance a positive scores above a negative, ties counting half.
double exact_roc_auc(const std::vector<float>& score, const std::vector<bool>& positive) {
  std::vector<std::size_t> order(score.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return score[a] < score[b]; });
  double ranks = 0, positives = 0;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j < order.size() && score[order[j]] == score[order[i]]) ++j;
    const double rank = (static_cast<double>(i + j) + 1.0) / 2.0;  // the tie's mean rank, from 1
    for (std::size_t k = i; k < j; ++k)
      if (positive[order[k]]) ranks += rank, positives += 1;
    i = j;
  }
  const double negatives = static_cast<double>(score.size()) - positives;
  return (ranks - positives * (positives + 1) / 2) / (positives * negatives);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_csv_classifier_gets_its_auc_from_logits) {
  // scikit-learn's breast cancer table, a classifier ending in Dense{2} with CrossEntropy (logits):
  // AUC with from_logits is the model's probabilities' exact ROC AUC within 0.01, and without it
  // the metric refuses the logits, naming from_logits (it reported 0.07 for an AUC of 0.93).
  const std::string table = "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv";
  if (!std::filesystem::exists(table)) {
    BOOST_TEST_MESSAGE("SKIPPED: scikit-learn's tables are absent (Debian's python3-sklearn)");
    return;
  }
  const Dataset data = datasets::csv(table, {.header = false, .skip_rows = 1});
  const auto [train, test] = data.split(0.8, 1);
  manual_seed(1);
  layers::Normalization normalize;
  normalize.adapt(train);
  Sequential model{layers::Input{30}, normalize, layers::Dense{8}, layers::ReLU{}, layers::Dense{2}};
  model.compile(optim::Adam{.lr = 1e-2}, losses::CrossEntropy{},
                {metrics::AUC{{.class_id = 1, .from_logits = true}}, metrics::BinaryAccuracy{{.class_id = 1, .from_logits = true}}});
  model.fit(train, {.epochs = 3, .batch_size = 32, .verbose = 0});
  const Evaluation result = model.evaluate(test);
  const std::vector<float> p = ops::softmax(model.predict(test.inputs()), -1).to_vector();
  const std::vector<std::int32_t> y = test.targets().to_vector<std::int32_t>();
  std::vector<float> score;
  std::vector<bool> positive;
  for (std::size_t i = 0; i < y.size(); ++i) score.push_back(p[2 * i + 1]), positive.push_back(y[i] == 1);
  const double exact = exact_roc_auc(score, positive);
  BOOST_TEST_MESSAGE("breast cancer, 3 epochs: AUC from logits " << result["auc"] << ", exact " << exact);
  BOOST_TEST(result["auc"] == exact, boost::test_tools::tolerance(0.01));
  BOOST_TEST(exact > 0.9);
  Sequential raw{layers::Input{30}, layers::Dense{2}};
  raw.compile(optim::SGD{}, losses::CrossEntropy{}, {metrics::AUC{{.class_id = 1}}});
  BOOST_CHECK_EXCEPTION(raw.evaluate(test), ValueError, message_has({"auc", "outside [0, 1]", ".from_logits = true"}));
}

BOOST_AUTO_TEST_CASE(two_metrics_of_one_kind_log_under_their_names) {
  Sequential m{layers::Input{6}, layers::Dense{4}};
  m.compile(optim::SGD{}, losses::CrossEntropy{},
            {metrics::Precision{{.class_id = 0, .from_logits = true, .name = "precision_0"}},
             metrics::Precision{{.class_id = 1, .from_logits = true, .name = "precision_1"}}});
  const Dataset data = test::blobs(24, 3);
  const History h = m.fit(data, {.epochs = 1, .batch_size = 8, .validation = data, .verbose = 0});
  for (const char* name : {"precision_0", "precision_1", "val_precision_0", "val_precision_1"})
    BOOST_TEST(h.logs()[0].contains(name), name);
  BOOST_CHECK_EXCEPTION(m.compile(optim::SGD{}, losses::CrossEntropy{}, {metrics::Precision{}, metrics::Precision{}}),
                        ValueError, message_has({"two metrics named 'precision'", ".name"}));
  // A saved model keeps each metric's kind and name.
  test::TempDir dir{"named_metrics"};
  const std::string path = (dir.path / "m.safetensors").string();
  m.save(path);
  const Model loaded = load_model(path);
  BOOST_REQUIRE(loaded.metrics().size() == 2u);
  BOOST_TEST(loaded.metrics()[1].name() == "precision_1");
  BOOST_TEST(loaded.metrics()[1].type() == "precision");
}

BOOST_AUTO_TEST_CASE(shapes_are_checked_and_metrics_saved) {
  metrics::Precision p;
  BOOST_CHECK_EXCEPTION(p.update(Tensor::zeros({4, 3}), Tensor::zeros({4}), 0.0), ShapeError,
                        message_has({"precision", "(4, 3)", "class_id"}));
  metrics::AUC a{{.class_id = 5}};
  BOOST_CHECK_EXCEPTION(a.update(Tensor::zeros({4, 3}), Tensor::from(std::vector<std::int32_t>{0, 1, 2, 0}, {4}), 0.0),
                        ValueError, message_has({"class_id 5", "3 classes"}));
  test::TempDir dir{"metric_reference"};
  const std::string path = (dir.path / "m.safetensors").string();
  Sequential m{layers::Input{3}, layers::Dense{4}};
  m.compile(optim::SGD{}, losses::CrossEntropy{},
            {metrics::Precision{{.threshold = 0.4f, .class_id = 1, .from_logits = true}},
             metrics::AUC{{.curve = metrics::AucCurve::pr, .class_id = 0, .from_logits = true}}, metrics::BinaryAccuracy{{.name = "bin"}},
             metrics::SparseTopKCategoricalAccuracy{2}, metrics::ConfusionMatrix{{.num_classes = 4, .labels = {"w", "x", "y", "z"}}}});
  m.save(path);
  const Model loaded = load_model(path);
  BOOST_REQUIRE(loaded.metrics().size() == 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    BOOST_TEST(loaded.metrics()[i].name() == m.metrics()[i].name());
    BOOST_TEST((loaded.metrics()[i].config() == m.metrics()[i].config()));
  }
}
