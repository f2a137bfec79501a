// CSV tables: RFC 4180 quoting, categorical columns, missing values, every malformed case with the
// line and column it names, scikit-learn's tables as they ship, and the Normalization layer whose
// statistics come from the training split.

#include <accrue/datasets/csv.hpp>
#include <filesystem>
#include <fstream>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

std::string write(const test::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = (dir.path / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

const std::string sklearn = "/usr/lib/python3/dist-packages/sklearn/datasets/data/";

}  // namespace

BOOST_AUTO_TEST_CASE(quoted_fields_categories_and_line_endings) {
  test::TempDir dir{"csv_good"};
  // CRLF line ends, a quoted name holding the delimiter, a quote and a line break, a categorical
  // column, a class given as text, spaces around numbers, no newline at the end.
  const std::string path = write(dir, "people.csv",
                                 "name,age,colour,height,label\r\n"
                                 "\"Smith, \"\"Jo\"\"\",31,red, 1.5e2 ,yes\r\n"
                                 "\"two\nlines\",  42,blue,170,no\r\n"
                                 "plain,7,red,-3,yes");
  const Dataset d = datasets::csv(path, {.columns = {"age", "colour", "height"}, .categorical = {"colour"}});
  BOOST_TEST(d.size() == 3);
  BOOST_TEST(d.inputs().shape() == Shape({3, 4}));  // age, colour=blue, colour=red, height
  BOOST_TEST(d.inputs().to_vector() == std::vector<float>({31, 0, 1, 150, 42, 1, 0, 170, 7, 0, 1, -3}));
  BOOST_TEST(d.targets().to_vector<std::int32_t>() == std::vector<std::int32_t>({1, 0, 1}));  // "no" < "yes"
  BOOST_TEST(datasets::csv_features(path, {.columns = {"age", "colour", "height"}, .categorical = {"colour"}}) ==
             std::vector<std::string>({"age", "colour=blue", "colour=red", "height"}));
  // Categories as indices, a regression target, a semicolon-separated file, a fill for a gap.
  const Dataset indices = datasets::csv(path, {.target = "height", .columns = {"colour"}, .categorical = {"colour"},
                                               .one_hot = false, .classes = false});
  BOOST_TEST(indices.inputs().to_vector() == std::vector<float>({1, 0, 1}));
  BOOST_TEST(indices.targets().shape() == Shape({3, 1}));
  BOOST_TEST(indices.targets().to_vector() == std::vector<float>({150, 170, -3}));
  const std::string semi = write(dir, "semi.csv", "a;b;y\n1;;0\n\n2;5;1\n");
  const Dataset filled = datasets::csv(semi, {.delimiter = ';', .missing = -1.0f});
  BOOST_TEST(filled.inputs().to_vector() == std::vector<float>({1, -1, 2, 5}));
  // A column of sample weights: not a feature, each row's weight.
  const std::string weighted = write(dir, "weighted.csv", "a,w,b,y\n1,0.5,2,0\n3,2,4,1\n");
  const Dataset w = datasets::csv(weighted, {.sample_weight = "w"});
  BOOST_TEST(w.inputs().to_vector() == std::vector<float>({1, 2, 3, 4}));
  BOOST_TEST((*w.sample_weights() == std::vector<float>{0.5f, 2.0f}));
  BOOST_TEST(datasets::csv_features(weighted, {.sample_weight = 1}) == std::vector<std::string>({"a", "b"}));
}

// Column groups become inputs of their own, named after the groups: a wide-and-deep model's numbers
// and its categories (int32, for an Embedding), which fit gives to the model's inputs of those names
// whatever their order.
BOOST_AUTO_TEST_CASE(column_groups_become_named_inputs) {
  test::TempDir dir{"csv_groups"};
  const std::string path = write(dir, "houses.csv",
                                 "rooms,area,city,kind,sold\n"
                                 "3,70.5,paris,flat,1\n"
                                 "5,120,lyon,house,0\n"
                                 "2,40,paris,flat,1\n"
                                 "4,95,lyon,flat,0\n");
  const datasets::CsvOptions options{.target = "sold",
                                     .groups = {{"numbers", {"rooms", "area"}}, {"place", {"city", "kind"}, DType::i32}},
                                     .categorical = {"city", "kind"},
                                     .one_hot = false};
  const Dataset d = datasets::csv(path, options);
  const SampleLayout l = d.layout();
  BOOST_TEST(l.input_names == std::vector<std::string>({"numbers", "place"}), boost::test_tools::per_element());
  BOOST_TEST(l.str() == "'numbers' float32 (2,), 'place' int32 (2,) -> int32 ()");
  const Example all = d.slice(0, 4);
  BOOST_TEST(all.inputs[0].to_vector() == std::vector<float>({3, 70.5f, 5, 120, 2, 40, 4, 95}), boost::test_tools::per_element());
  // lyon 0, paris 1; flat 0, house 1
  BOOST_TEST(all.inputs[1].to_vector<std::int32_t>() == std::vector<std::int32_t>({1, 0, 0, 1, 1, 0, 0, 0}),
             boost::test_tools::per_element());
  BOOST_TEST(all.target().to_vector<std::int32_t>() == std::vector<std::int32_t>({1, 0, 1, 0}), boost::test_tools::per_element());
  BOOST_TEST(datasets::csv_features(path, options) == std::vector<std::string>({"rooms", "area", "city", "kind"}),
             boost::test_tools::per_element());

  manual_seed(5);
  layers::Input place{{2}, {.name = "place", .dtype = DType::i32}}, numbers{{2}, {.name = "numbers"}};
  const Symbol deep = layers::Flatten{}(layers::Embedding{2, 3}(place));
  Model wide_and_deep{{place, numbers}, layers::Dense{2}(layers::Concatenate{}({deep, layers::Dense{4}(numbers)}))};
  wide_and_deep.compile(optim::SGD{.lr = 0.01}, losses::CrossEntropy{});
  const double before = wide_and_deep.evaluate(d).loss;
  wide_and_deep.fit(d, {.epochs = 20, .batch_size = 2, .verbose = 0});
  BOOST_TEST(wide_and_deep.evaluate(d).loss < before);

  datasets::CsvOptions both = options;
  both.columns = {"rooms"};
  BOOST_CHECK_EXCEPTION(datasets::csv(path, both), ValueError, message_has({"give .columns or .groups, not both"}));
  BOOST_CHECK_EXCEPTION(datasets::csv(path, {.target = "sold", .groups = {{"bad", {"area"}, DType::i32}}}), IoError,
                        message_has({"houses.csv", "group 'bad' is read as int32 but row 1 holds 70.5"}));
}

BOOST_AUTO_TEST_CASE(every_malformed_case_names_the_line_and_column) {
  test::TempDir dir{"csv_bad"};
  struct Case {
    std::string text;
    datasets::CsvOptions options;
    std::vector<std::string> message;
  };
  const std::vector<Case> cases = {
      {"a,b,y\n1,2,0\n3,4\n", {}, {"bad.csv", "line 3 has 2 fields", "the header has 3"}},
      {"a,b,y\n1,\"2,0\n3,4,1\n", {}, {"line 2, column 2", "not closed before the end of the file"}},
      {"a,b,y\n1,\"2\"x,0\n", {}, {"line 2, column 2", "'x' after the closing quote"}},
      {"a,b,y\n1,2\"3,0\n", {}, {"line 2, column 2", "quote inside a field"}},
      {"a,b,y\n1,2,0\n1,abc,0\n", {}, {"line 3, column 2 ('b')", "'abc' is not a number", ".categorical"}},
      {"a,b,y\n1,,0\n", {}, {"line 2, column 2 ('b')", "missing", "CsvOptions::missing"}},
      {"a,b,y\n1,2,\n", {}, {"line 2, column 3 ('y')", "target is missing"}},
      {"a,b,y\n1,2,0.5\n", {}, {"line 2, column 3 ('y')", "'0.5' is not a whole number", ".classes = false"}},
      {"a,b,y\n1,2,-1\n", {}, {"line 2, column 3 ('y')", "'-1' is not a whole number"}},
      {"a,b,y\n1,2,0\n", {.target = "z"}, {"no column 'z'", "a, b, y"}},
      {"a,b,y\n1,2,0\n", {.target = 5}, {"no column 5", "3 columns"}},
      {"1,2,0\n", {.header = false, .columns = {"a"}}, {"column 'a'", "without a header", "by position"}},
      {"a,b,y\n", {}, {"no data rows"}},
      {"", {}, {"no header row"}},
      {"a,b,y\n1,2,0\n", {.columns = {"y"}}, {"column 3 ('y') is the target and a feature"}},
      {"a,b,y\n1,nan,0\n", {}, {"'nan' is not a number"}},
      {"a,w,y\n1,2,0\n1,-1,0\n", {.sample_weight = "w"}, {"line 3, column 2 ('w')", "sample weight '-1'", ">= 0"}},
      {"a,w,y\n1,,0\n", {.sample_weight = "w"}, {"line 2, column 2 ('w')", "sample weight ''"}},
      {"a,w,y\n1,2,0\n", {.columns = {"a", "w"}, .sample_weight = "w"}, {"('w') is the sample weights and a feature"}},
      {"a,w,y\n1,2,0\n", {.sample_weight = "y"}, {"('y') is the target and the sample weights"}},
      {"a,b,y\n1,2,0\n", {.max_bytes = 4}, {"over the limit of 4", "max_bytes"}},
  };
  for (const Case& c : cases) {
    const std::string path = write(dir, "bad.csv", c.text);
    BOOST_TEST_CONTEXT(c.text) {
      BOOST_CHECK_EXCEPTION(datasets::csv(path, c.options), IoError, message_has(c.message));
    }
  }
  BOOST_CHECK_EXCEPTION(datasets::csv((dir.path / "absent.csv").string()), Error, message_has({"absent.csv"}));
}

BOOST_AUTO_TEST_CASE(class_labels_stay_numbers_and_count_the_classes) {
  test::TempDir dir{"csv_labels"};
  // Numbers stay numbers: one name among them is refused by its line (it used to turn every label
  // into text sorted as strings, label 2 becoming class 4 of "10" < "11" < ... < "2").
  const std::string mixed = write(dir, "mixed.csv", "x,y\n1,10\n2,2\n3,11\n4,cat\n5,0\n");
  BOOST_CHECK_EXCEPTION(datasets::csv(mixed), IoError,
                        message_has({"mixed.csv: line 5, column 2 ('y')", "'cat'", "first label ('10' on line 2) is a number"}));
  // Labels 0 to K-1 are the classes as they are.
  const std::string dense = write(dir, "dense.csv", "x,y\n1,2\n2,0\n3,1\n4,2\n");
  BOOST_TEST(datasets::csv(dense).targets().to_vector<std::int32_t>() == std::vector<std::int32_t>({2, 0, 1, 2}));
  BOOST_TEST(datasets::csv_classes(dense) == std::vector<std::string>({"0", "1", "2"}));
  // Sparse labels (1-based, or a stray 100000): as many classes as labels, in numeric order, with a
  // warning naming the mapping; num_classes keeps them as they are.
  const std::string sparse = write(dir, "sparse.csv", "x,y\n1,0\n2,1\n3,100000\n4,1\n");
  test::CapturedLog log;
  BOOST_TEST(datasets::csv(sparse).targets().to_vector<std::int32_t>() == std::vector<std::int32_t>({0, 1, 2, 1}));
  BOOST_TEST(log.text().find("3 distinct class labels are not 0 to 2 (the largest is 100000)") != std::string::npos);
  BOOST_TEST(log.text().find("100000 -> 2") != std::string::npos);
  BOOST_TEST(datasets::csv_classes(sparse) == std::vector<std::string>({"0", "1", "100000"}));
  const std::string one_based = write(dir, "one_based.csv", "x,y\n1,1\n2,3\n3,2\n");
  BOOST_TEST(datasets::csv(one_based, {.num_classes = 4}).targets().to_vector<std::int32_t>() == std::vector<std::int32_t>({1, 3, 2}));
  BOOST_TEST(datasets::csv_classes(one_based, {.num_classes = 4}).size() == 4u);
  BOOST_CHECK_EXCEPTION(datasets::csv(one_based, {.num_classes = 3}), IoError,
                        message_has({"line 3, column 2 ('y')", "'3' is not below num_classes = 3"}));
  // Names are numbered in sorted order.
  const std::string names = write(dir, "names.csv", "x,y\n1,dog\n2,cat\n3,dog\n");
  BOOST_TEST(datasets::csv(names).targets().to_vector<std::int32_t>() == std::vector<std::int32_t>({1, 0, 1}));
  BOOST_TEST(datasets::csv_classes(names) == std::vector<std::string>({"cat", "dog"}));
}

BOOST_AUTO_TEST_CASE(values_beyond_float32_and_tables_beyond_memory_are_refused) {
  test::TempDir dir{"csv_range"};
  // 1e39 would be infinity in float32, and the loss NaN a batch later.
  for (const auto& [text, options, where] : std::vector<std::tuple<std::string, datasets::CsvOptions, std::string>>{
           {"a,b,y\n1,1e39,0\n", {}, "line 2, column 2 ('b'): the value '1e39'"},
           {"a,b,y\n1,-4e38,0\n", {}, "line 2, column 2 ('b'): the value '-4e38'"},
           {"a,y\n1,1e39\n", {.classes = false}, "line 2, column 2 ('y'): the target '1e39'"},
           {"a,w,y\n1,1e39,0\n", {.sample_weight = "w"}, "line 2, column 2 ('w'): the sample weight '1e39'"}}) {
    const std::string path = write(dir, "range.csv", text);
    BOOST_CHECK_EXCEPTION(datasets::csv(path, options), IoError, message_has({where, "beyond float32's range"}));
  }
  BOOST_TEST(datasets::csv(write(dir, "edge.csv", "a,y\n3.4e38,0\n")).inputs().to_vector()[0] == 3.4e38f);
  // A one-hot column of 30,000 categories over 30,000 rows asks for 3.4 GiB: refused before any is
  // allocated when the process may not take it (here a memory limit of 1 GiB), naming the column
  // and one_hot = false.
  std::string many = "zip,a,y\n";
  for (int i = 0; i < 30000; ++i) many += fmt::format("z{},{},{}\n", i, i % 7, i % 2);
  const std::string path = write(dir, "many.csv", many);
  set_memory_limit(Device::cpu(), std::size_t{1} << 30);
  BOOST_CHECK_EXCEPTION(datasets::csv(path, {.categorical = {"zip"}}), IoError,
                        message_has({"many.csv: 30000 rows of 30001 features needs 3.35 GiB", "memory limit of 1.00 GiB",
                                     "column 1 ('zip') has 30000 categories", ".one_hot = false"}));
  BOOST_TEST(datasets::csv(path, {.categorical = {"zip"}, .one_hot = false}).inputs().shape() == Shape({30000, 2}));
  set_memory_limit(Device::cpu(), 0);
}

BOOST_AUTO_TEST_CASE(scikit_learns_tables_read_as_they_ship) {
  if (!std::filesystem::exists(sklearn + "breast_cancer.csv")) {
    BOOST_TEST_MESSAGE("SKIPPED: scikit-learn's tables are absent (Debian's python3-sklearn)");
    return;
  }
  // A first line of counts and class names, then rows whose last field is the class.
  const datasets::CsvOptions sk{.header = false, .skip_rows = 1};
  const Dataset cancer = datasets::csv(sklearn + "breast_cancer.csv", sk);
  BOOST_TEST(cancer.inputs().shape() == Shape({569, 30}));
  const auto y = cancer.targets().to_vector<std::int32_t>();
  BOOST_TEST(std::count(y.begin(), y.end(), 1) == 357);  // benign, as load_breast_cancer counts them
  BOOST_TEST(cancer.inputs().to_vector()[0] == 17.99f);
  const Dataset iris = datasets::csv(sklearn + "iris.csv", sk);
  BOOST_TEST(iris.inputs().shape() == Shape({150, 4}));
  const Dataset wine = datasets::csv(sklearn + "wine_data.csv", sk);
  BOOST_TEST(wine.inputs().shape() == Shape({178, 13}));
  const auto w = wine.targets().to_vector<std::int32_t>();
  BOOST_TEST(*std::max_element(w.begin(), w.end()) == 2);
}

BOOST_AUTO_TEST_CASE(normalization_adapts_to_the_training_split_and_is_saved_with_the_weights) {
  Generator gen{3};
  const Tensor x = ops::add(ops::mul(Tensor::normal({200, 3}, 0.0f, 1.0f, &gen), Tensor::from({1.0f, 10.0f, 0.1f}, {3})),
                            Tensor::from({5.0f, -2.0f, 0.0f}, {3}));
  const Dataset data{x, Tensor::zeros({200}, {.dtype = DType::i32}), "features"};
  const auto [train, test] = data.split(0.75, 1);
  layers::Normalization norm;
  norm.adapt(train);
  // The statistics of the training split alone, as numpy's mean and var (ddof 0) give them.
  const auto v = train.inputs().to_vector();
  for (int f = 0; f < 3; ++f) {
    double s = 0, q = 0;
    for (std::size_t r = 0; r < v.size() / 3; ++r) s += v[r * 3 + f], q += double(v[r * 3 + f]) * v[r * 3 + f];
    const double n = double(v.size() / 3), m = s / n;
    BOOST_TEST(norm.mean()[f] == m, boost::test_tools::tolerance(1e-5));
    BOOST_TEST(norm.variance()[f] == q / n - m * m, boost::test_tools::tolerance(1e-4));
  }
  manual_seed(2);
  Sequential model{layers::Input{3}, norm, layers::Dense{2}};
  const Tensor normalized = model.layer<layers::Normalization>(0).forward(train.inputs());
  const auto nv = normalized.to_vector();
  double mean0 = 0;
  for (std::size_t r = 0; r < nv.size() / 3; ++r) mean0 += nv[r * 3 + 1];
  BOOST_TEST(mean0 / double(nv.size() / 3) == 0.0, boost::test_tools::tolerance(1e-4));
  // Saved with the weights: a fresh, unadapted layer loads them.
  test::TempDir dir{"normalization"};
  const std::string file = (dir.path / "m.safetensors").string();
  model.save_weights(file);
  manual_seed(2);
  Sequential loaded{layers::Input{3}, layers::Normalization{}, layers::Dense{2}};
  loaded.load_weights(file);
  BOOST_TEST(loaded.layer<layers::Normalization>(0).mean() == norm.mean());
  BOOST_TEST(loaded.predict(test.inputs()).to_vector() == model.predict(test.inputs()).to_vector());
  // Adapted after being built, on the model's own layer.
  loaded.layer<layers::Normalization>(0).adapt(test);
  BOOST_TEST(loaded.layer<layers::Normalization>(0).mean() != norm.mean());
  BOOST_CHECK_EXCEPTION((Sequential{layers::Input{4}, norm}), ShapeError, message_has({"Normalization", "3 features"}));
}
