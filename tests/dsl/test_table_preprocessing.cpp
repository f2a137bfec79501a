// Keras's preprocessing layers for tables (layers/lookup.hpp): StringLookup, IntegerLookup,
// CategoryEncoding and Hashing on their own, and a CSV model that takes the raw columns (numbers
// and words) and so scores another file, its columns in another order and holding a category never
// seen, consistently: in Accrue, after load_model, and in ONNX Runtime.

#include "../test_util.hpp"

#include <fstream>

#include <accrue/dsl/onnx.hpp>

using namespace accrue;
using namespace accrue::test;

namespace {

// Words as text samples (N, 1, width): bytes, zeros after them.
Tensor words(const std::vector<std::string>& list, std::int64_t width = 8) {
  std::vector<std::int32_t> v(list.size() * static_cast<std::size_t>(width), 0);
  for (std::size_t i = 0; i < list.size(); ++i) {
    BOOST_REQUIRE(static_cast<std::int64_t>(list[i].size()) <= width);
    for (std::size_t j = 0; j < list[i].size(); ++j) v[i * static_cast<std::size_t>(width) + j] = static_cast<unsigned char>(list[i][j]);
  }
  return Tensor::from(v, {static_cast<std::int64_t>(list.size()), 1, width});
}

Tensor run(Layer& layer, const Tensor& x) {
  Generator g{1};
  layer.ensure_built(x.shape().drop_front(), g);
  return layer.forward(x);
}

std::vector<std::int32_t> ints(const Tensor& t) { return t.to_vector<std::int32_t>(); }

}  // namespace

BOOST_AUTO_TEST_CASE(string_lookup_indexes_words_by_frequency_and_unknown_ones_as_zero) {
  layers::StringLookup lookup;
  lookup.adapt(words({"rain", "sun", "sun", "fog", "rain", "sun", "cloud", "fog"}));
  // sun 3, fog 2 and rain 2 (ties in byte order), cloud 1.
  BOOST_TEST(lookup.vocabulary() == (std::vector<std::string>{"sun", "fog", "rain", "cloud"}), boost::test_tools::per_element());
  BOOST_TEST(lookup.vocabulary_size() == 5);
  BOOST_TEST(ints(run(lookup, words({"cloud", "sun", "snow", ""}))) == (std::vector<std::int32_t>{4, 1, 0, 0}),
             boost::test_tools::per_element());
  layers::StringLookup top{{.max_tokens = 2}};
  top.adapt(words({"rain", "sun", "sun", "fog", "rain", "sun"}));
  BOOST_TEST(top.vocabulary() == (std::vector<std::string>{"sun", "rain"}), boost::test_tools::per_element());
  layers::StringLookup given{{.vocabulary = {"a", "b"}}};
  BOOST_TEST(ints(run(given, words({"b", "a", "c"}))) == (std::vector<std::int32_t>{2, 1, 0}), boost::test_tools::per_element());
  BOOST_CHECK_EXCEPTION(layers::StringLookup({.vocabulary = {"a", "a"}}), Error, message_has({"holds a twice"}));
  const Tensor bad = Tensor::from(std::vector<std::int32_t>{300, 0, 0, 0, 0, 0, 0, 0}, {1, 1, 8});
  BOOST_CHECK_EXCEPTION(run(given, bad), Error, message_has({"300, not a byte"}));
}

BOOST_AUTO_TEST_CASE(integer_lookup_category_encoding_and_hashing_do_what_keras_describes) {
  layers::IntegerLookup lookup;
  lookup.adapt(Tensor::from(std::vector<std::int32_t>{7, 3, 7, 12, 3, 7}, {6, 1}));
  BOOST_TEST(lookup.vocabulary() == (std::vector<std::int64_t>{7, 3, 12}), boost::test_tools::per_element());
  BOOST_TEST(ints(run(lookup, Tensor::from({12.0f, 5.0f, 7.0f}, {3, 1}))) == (std::vector<std::int32_t>{3, 0, 1}),
             boost::test_tools::per_element());

  const Tensor indices = Tensor::from(std::vector<std::int32_t>{1, 3, 3, 0, 2, 2}, {2, 3});
  layers::CategoryEncoding multi{4}, count{4, {.output_mode = layers::Encoding::count}};
  BOOST_TEST(run(multi, indices).to_vector() == (std::vector<float>{0, 1, 0, 1, 1, 0, 1, 0}), boost::test_tools::per_element());
  BOOST_TEST(run(count, indices).to_vector() == (std::vector<float>{0, 1, 0, 2, 1, 0, 2, 0}), boost::test_tools::per_element());
  layers::CategoryEncoding one_hot{4, {.output_mode = layers::Encoding::one_hot}};
  BOOST_TEST(run(one_hot, Tensor::from(std::vector<std::int32_t>{2, 0}, {2, 1})).to_vector() ==
                 (std::vector<float>{0, 0, 1, 0, 1, 0, 0, 0}),
             boost::test_tools::per_element());
  layers::CategoryEncoding small{3};
  BOOST_CHECK_EXCEPTION(run(small, indices), Error, message_has({"sample 0 holds index 3, outside 0 to 2"}));

  layers::Hashing text_bins{16}, number_bins{16};
  const std::vector<std::int32_t> bins = ints(run(text_bins, words({"sun", "rain", "sun", "a-much-longer"}, 16)));
  BOOST_TEST(bins[0] == bins[2]);
  for (const std::int32_t b : bins) BOOST_TEST((b >= 0 && b < 16));
  const std::vector<std::int32_t> numbers = ints(run(number_bins, Tensor::from(std::vector<std::int32_t>{-5, 0, 7, 7}, {4, 1})));
  BOOST_TEST(numbers[2] == numbers[3]);
  for (const std::int32_t b : numbers) BOOST_TEST((b >= 0 && b < 16));
}

namespace {

// A table of weather and whether it rained; `order` the columns' order in the file.
void write_weather(const std::string& path, const std::vector<std::string>& order, const std::vector<std::vector<std::string>>& rows) {
  std::ofstream out(path);
  for (std::size_t c = 0; c < order.size(); ++c) out << (c ? "," : "") << order[c];
  out << "\n";
  const std::vector<std::string> columns{"temperature", "humidity", "sky", "rain"};
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < order.size(); ++c)
      out << (c ? "," : "") << row[static_cast<std::size_t>(std::find(columns.begin(), columns.end(), order[c]) - columns.begin())];
    out << "\n";
  }
}

datasets::CsvOptions weather_columns() {
  return {.target = "rain", .groups = {{"numbers", {"temperature", "humidity"}}, {"sky", {"sky"}, DType::f32, true}}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_csv_model_takes_raw_columns_and_scores_any_file_with_them_alike) {
  test::TempDir dir{"table_preprocessing"};
  std::vector<std::vector<std::string>> rows;
  Generator g{5};
  const std::vector<std::string> skies{"sunny", "cloudy", "rain", "overcast"};
  for (int i = 0; i < 120; ++i) {
    const std::string sky = skies[g.below(4)];
    const int temperature = 5 + static_cast<int>(g.below(25)), humidity = 20 + static_cast<int>(g.below(80));
    const bool wet = sky == "rain" || (sky == "overcast" && humidity > 60);
    rows.push_back({std::to_string(temperature), std::to_string(humidity), sky, wet ? "yes" : "no"});
  }
  const std::string train_path = (dir.path / "train.csv").string();
  write_weather(train_path, {"temperature", "humidity", "sky", "rain"}, rows);
  const Dataset train = datasets::csv(train_path, weather_columns());
  BOOST_TEST((train.layout().input_names == std::vector<std::string>{"numbers", "sky"}));

  manual_seed(6);
  layers::Normalization norm;
  norm.adapt(train.slice(0, train.size()).inputs[0]);
  layers::StringLookup sky_words;
  sky_words.adapt(train, "sky");
  layers::Input numbers{{2}, {.name = "numbers"}}, sky{{1, 32}, {.name = "sky", .dtype = DType::i32}};
  const Symbol words = layers::CategoryEncoding{sky_words.vocabulary_size(), {.output_mode = layers::Encoding::one_hot}}(sky_words(sky));
  const Symbol x = layers::ReLU{}(layers::Dense{8}(layers::Concatenate{}({norm(numbers), words})));
  Model model{{numbers, sky}, {layers::Dense{2}(x)}};
  model.compile(optim::Adam{.lr = 3e-2}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  model.fit(train, {.epochs = 30, .batch_size = 16, .verbose = 0});
  BOOST_TEST(model.evaluate(train)["accuracy"] > 0.9);
  BOOST_TEST(model.class_names() == (std::vector<std::string>{"no", "yes"}), boost::test_tools::per_element());

  // Another file: the columns in another order, the first rows again, then "fog", never seen.
  std::vector<std::vector<std::string>> scored(rows.begin(), rows.begin() + 10);
  scored.push_back({"12", "90", "fog", "yes"});
  scored.push_back({"12", "90", "snow", "yes"});
  const std::string score_path = (dir.path / "score.csv").string();
  write_weather(score_path, {"sky", "rain", "humidity", "temperature"}, scored);
  const Dataset other = datasets::csv(score_path, weather_columns());
  const std::vector<Tensor> a = model.predict(train.slice(0, 10).inputs), b = model.predict(other.slice(0, 12).inputs);
  BOOST_TEST(ops::slice(b[0], 0, 0, 10).to_vector() == a[0].to_vector(), boost::test_tools::per_element());
  // Both unseen words are the out-of-vocabulary index: the same answer.
  BOOST_TEST(ops::slice(b[0], 0, 10, 11).to_vector() == ops::slice(b[0], 0, 11, 12).to_vector(), boost::test_tools::per_element());
  BOOST_TEST(ints(sky_words.called()->forward(ops::slice(other.slice(0, 12).inputs[1], 0, 10, 12))) == (std::vector<std::int32_t>{0, 0}),
             boost::test_tools::per_element());

  const std::string saved = (dir.path / "weather.safetensors").string();
  model.save(saved);
  Model loaded = load_model(saved);
  BOOST_TEST(loaded.predict(other.slice(0, 12).inputs)[0].to_vector() == b[0].to_vector(), boost::test_tools::per_element());
  // The file says which columns make each input (fit took them from the table), so a program with
  // none of this code reads the other file's rows as training read its own.
  const ModelSignature stated = loaded.signature();
  BOOST_REQUIRE(stated.inputs[0].table && stated.inputs[1].table);
  BOOST_TEST(!stated.inputs[0].table->text);
  BOOST_TEST((stated.inputs[1].table->columns == std::vector<std::variant<std::string, int>>{"sky"}));
  BOOST_TEST(stated.inputs[1].table->text_bytes == 32);
  BOOST_TEST(stated.str().find("from columns 'temperature', 'humidity'") != std::string::npos, stated.str());
  BOOST_TEST(stated.str().find("from column 'sky' as text") != std::string::npos, stated.str());
  const Dataset served = datasets::csv(score_path, stated.csv_options());
  BOOST_TEST(loaded.predict(served.slice(0, 12).inputs)[0].to_vector() == b[0].to_vector(), boost::test_tools::per_element());

  std::string why;
  if (onnx::onnxruntime_folder(&why).empty()) {
    BOOST_TEST_MESSAGE("SKIPPED: ONNX Runtime comparison: " << why);
    return;
  }
  const std::string onnx_path = (dir.path / "weather.onnx").string();
  model.export_onnx(onnx_path);
  // The ONNX file's metadata states the columns too: its rows read from its signature alone.
  const Dataset for_onnx = datasets::csv(score_path, onnx::signature(onnx_path).csv_options());
  const onnx::Difference d = onnx::compare(onnx::run_onnxruntime(onnx_path, for_onnx.slice(0, 12).inputs).at(0), b[0]);
  BOOST_TEST_MESSAGE("ONNX Runtime against predict on the other file: " << d.str());
  BOOST_TEST(d.within, d.str());
}

BOOST_AUTO_TEST_CASE(a_model_states_its_table_columns_only_where_another_file_reads_alike) {
  test::TempDir dir{"table_columns"};
  const std::string path = (dir.path / "weather.csv").string();
  std::ofstream(path) << "temperature,humidity,sky,rain\n21,30,sunny,no\n12,90,rain,yes\n15,70,cloudy,no\n25,20,sunny,no\n";
  // Columns by position in a file without a header: positions from 0, the header's line skipped.
  Sequential positional{layers::Input{2}, layers::Dense{2}};
  positional.compile(optim::SGD{.lr = 0.01}, losses::CrossEntropy{});
  positional.fit(datasets::csv(path, {.target = 3, .header = false, .skip_rows = 1, .columns = {1, 0}, .missing = 0.5f}),
                 {.epochs = 1, .batch_size = 2, .verbose = 0});
  const ModelSignature s = positional.signature();
  BOOST_REQUIRE(s.inputs[0].table);
  BOOST_TEST((s.inputs[0].table->columns == std::vector<std::variant<std::string, int>>{1, 0}));
  BOOST_TEST((s.inputs[0].table->missing == 0.5f));
  datasets::CsvOptions read = s.csv_options();
  BOOST_TEST(!read.header);
  BOOST_TEST(!read.target.has_value());
  read.skip_rows = 1;
  BOOST_TEST((datasets::csv(path, read).slice(0, 1).inputs[0].to_vector() == std::vector<float>{30, 21}),
             boost::test_tools::per_element());
  // A categorical column is numbered by the values of the file it is read from: no columns stated,
  // and reading by the signature says why, naming the input.
  Sequential categories{layers::Input{5}, layers::Dense{2}};
  categories.compile(optim::SGD{.lr = 0.01}, losses::CrossEntropy{});
  categories.fit(datasets::csv(path, {.target = "rain", .categorical = {"sky"}}), {.epochs = 1, .batch_size = 2, .verbose = 0});
  BOOST_TEST(!categories.signature().inputs[0].table.has_value());
  BOOST_CHECK_EXCEPTION(categories.signature().csv_options(), Error,
                        message_has({"input 'input'", "does not say which table columns", ".categorical", "StringLookup"}));
  // Columns that cannot make the input are refused, naming both.
  BOOST_CHECK_EXCEPTION(categories.set_table_columns({.columns = {"temperature", "humidity"}}), Error,
                        message_has({"2 columns read as numbers make samples of (2,)", "the input takes float32 (5,)"}));
  BOOST_CHECK_EXCEPTION(categories.set_table_columns({.columns = {}}), Error, message_has({"no columns given"}));
  // A file whose table entry is damaged names the file and the place.
  const std::string saved = (dir.path / "m.safetensors").string();
  positional.save(saved);
  std::string bytes = read_file(saved);
  const std::size_t at = bytes.find("\\\"columns\\\":[1,0]");
  BOOST_REQUIRE(at != std::string::npos);
  bytes.replace(at + 12, 5, "[0.5]");  // same length: a column neither named nor a position
  std::ofstream(saved, std::ios::binary) << bytes;
  BOOST_CHECK_EXCEPTION(load_model(saved), Error, message_has({saved, "signature", "table column"}));
}

BOOST_AUTO_TEST_CASE(lookups_hashing_and_encodings_run_in_onnx_runtime_as_in_accrue) {
  std::string why;
  if (onnx::onnxruntime_folder(&why).empty()) {
    BOOST_TEST_MESSAGE("SKIPPED: ONNX Runtime comparison: " << why);
    return;
  }
  manual_seed(7);
  layers::Input text{{2, 8}, {.name = "text", .dtype = DType::i32}};
  layers::StringLookup lookup{{.vocabulary = {"sun", "rain", "a-word-longer-than-8"}}};
  const Symbol multi = layers::CategoryEncoding{4}(lookup(text));
  const Symbol counted = layers::CategoryEncoding{16, {.output_mode = layers::Encoding::count}}(layers::Hashing{16}(text));
  Model model{{text}, {layers::Dense{3}(layers::Concatenate{}({multi, counted}))}};
  test::TempDir dir{"lookup_onnx"};
  const std::string path = (dir.path / "m.onnx").string();
  model.export_onnx(path);
  Tensor x = words({"sun", "fog", "rain", "rain", "", "sun"}).reshape(Shape{3, 2, 8});
  const onnx::Difference d = onnx::compare(onnx::run_onnxruntime(path, {x}).at(0), model.predict(x));
  BOOST_TEST(d.within, d.str());

  layers::Input numbers{{3}, {.name = "numbers", .dtype = DType::i32}};
  layers::IntegerLookup integers{{.vocabulary = {7, 3, 12}}};
  const Symbol hot = layers::CategoryEncoding{4}(integers(numbers));
  const Symbol hashed = layers::CategoryEncoding{8}(layers::Hashing{8}(numbers));
  Model ints_model{{numbers}, {layers::Dense{2}(layers::Concatenate{}({hot, hashed}))}};
  ints_model.export_onnx(path);
  const Tensor n = Tensor::from(std::vector<std::int32_t>{7, 5, -3, 12, 3, 3}, {2, 3});
  const onnx::Difference e = onnx::compare(onnx::run_onnxruntime(path, {n}).at(0), ints_model.predict(n));
  BOOST_TEST(e.within, e.str());
}

BOOST_AUTO_TEST_CASE(text_groups_refuse_what_they_cannot_hold) {
  test::TempDir dir{"text_groups"};
  const std::string path = (dir.path / "long.csv").string();
  std::ofstream(path) << "temperature,humidity,sky,rain\n12,40,sunny,no\n13,50," << std::string(40, 'x') << ",yes\n";
  BOOST_CHECK_EXCEPTION(datasets::csv(path, weather_columns()), IoError,
                        message_has({"long.csv: line 3, column 3 ('sky')", "40 bytes, more than max_text_bytes (32)"}));
  const std::string nul_path = (dir.path / "nul.csv").string();
  std::ofstream(nul_path, std::ios::binary) << "temperature,humidity,sky,rain\n12,40,su" << '\0' << "ny,no\n";
  BOOST_CHECK_EXCEPTION(datasets::csv(nul_path, weather_columns()), IoError,
                        message_has({"nul.csv: line 2, column 3 ('sky')", "NUL byte"}));
  datasets::CsvOptions wider = weather_columns();
  wider.max_text_bytes = 64;
  const Dataset table = datasets::csv(path, wider);
  BOOST_TEST((table.layout().inputs[1].shape == Shape{1, 64}));
  BOOST_TEST(table.layout().inputs[1].dtype == DType::i32);
  // Only text: no numbers are read.
  const Dataset words_only = datasets::csv(path, {.target = "rain", .groups = {{"sky", {"sky"}, DType::f32, true}}, .max_text_bytes = 64});
  BOOST_TEST(words_only.layout().inputs.size() == 1u);
  datasets::CsvOptions target_as_text = weather_columns();
  target_as_text.groups[1].columns = {"rain"};
  BOOST_CHECK_EXCEPTION(datasets::csv(path, target_as_text), IoError, message_has({"is the target and text of group 'sky'"}));
}
