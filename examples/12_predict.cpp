// Classifies images with a saved model, with none of the model's code: the serving half of a
// program that trains elsewhere. The model says what it takes and gives (Model::signature; an ONNX
// file's metadata, onnx::signature), and each image is given to it as it says:
//   - a model that takes images of any size (its preprocessing inside it: Resizing, CenterCrop,
//     Rescaling, as 10_image_folder trains them) gets each file's pixels as
//     decoded, in [0, 255], and does to them exactly what training did;
//   - a model of one input size gets the file resized to it as datasets::image_folder reads
//     samples, in [0, 255] where the model states that range, else in [0, 1].
// A model trained on a table (datasets::csv) states which columns make each of its inputs: each
// FILE is then a CSV file, and each of its rows is read as training read its rows, by the columns'
// names (in any order; other columns are left alone), its categories looked up inside the model.
// It prints the --top most probable classes of each image or row by the model's class names (or
// --classes), with probabilities (the softmax of logits; the values of a model that ends in one).
// With --onnx, MODEL is an ONNX file written by export_onnx, run by ONNX Runtime: the same classes.
//
//   12_predict [--onnx] MODEL FILE... [--top 3] [--classes fashion_mnist|NAME,NAME,...] [--first 5]
//
// A FILE is a PNG or JPEG image, or an IDX file of images such as FashionMNIST's
// t10k-images-idx3-ubyte (its first --first images), or for a table's model a CSV file.
//
//   10_image_folder --epochs 3 --save-model stamps.safetensors --export-onnx stamps.onnx
//   12_predict stamps.safetensors /usr/share/tuxpaint/stamps/animals/birds/*.png
//   12_predict --onnx stamps.onnx /usr/share/tuxpaint/stamps/animals/birds/*.png
//   01_fashion_mnist_mlp --epochs 2 --save-model mlp.safetensors
//   12_predict mlp.safetensors /usr/share/dataset-fashion-mnist/t10k-images-idx3-ubyte.gz --classes fashion_mnist
//   09_tabular_csv --save-model cancer.safetensors
//   12_predict cancer.safetensors /usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv --skip-rows 1

#include <algorithm>
#include <fstream>
#include <map>
#include <numeric>

#include "example_options.hpp"

using namespace accrue;

namespace {

// --classes: FashionMNIST's ten names, or those given; none: the model's own.
std::vector<std::string> class_names(const std::string& classes, const std::vector<std::string>& own) {
  if (classes.empty()) return own;
  std::vector<std::string> names;
  if (classes == "fashion_mnist") {
    for (int k = 0; k < 10; ++k) names.emplace_back(datasets::fashion_mnist_class_name(k));
    return names;
  }
  std::size_t at = 0;
  for (std::size_t comma; (comma = classes.find(',', at)) != std::string::npos; at = comma + 1)
    names.push_back(classes.substr(at, comma - at));
  names.push_back(classes.substr(at));
  return names;
}

std::string class_name(std::int64_t k, const std::vector<std::string>& names) {
  // A folder's or a file's name, escaped: it must not move the terminal's cursor.
  return k < static_cast<std::int64_t>(names.size()) ? printable_name(names[static_cast<std::size_t>(k)]) : fmt::format("class {}", k);
}

// Whether the input takes values in [0, 255] rather than [0, 1].
bool takes_raw_pixels(const InputSignature& in) { return in.any_image_size || (in.range && in.range->second > 1.0f); }

// Whether the file starts as a PNG or JPEG does.
bool is_image(const std::string& file) {
  std::string head(8, '\0');
  std::ifstream(file, std::ios::binary).read(head.data(), static_cast<std::streamsize>(head.size()));
  return datasets::looks_like_image(head);
}

// (label, batch of one sample) for one FILE argument, as the model's input takes it.
std::vector<std::pair<std::string, Tensor>> inputs_of(const std::string& file, const InputSignature& in, std::int64_t first) {
  // By the file's first bytes, not its name: PNG and JPEG have signatures, anything else is read as IDX.
  require_readable_file(file, "image or IDX file");
  const Shape& sample = in.shape;
  if (!is_image(file)) {
    const Tensor all = datasets::idx_to_float(datasets::read_idx(file), takes_raw_pixels(in) ? 1.0f : 1.0f / 255.0f);
    if (all.rank() < 1 || all.shape()[0] == 0) throw IoError(fmt::format("{}: holds no images", file));
    const std::int64_t n = std::min(first, all.shape()[0]);
    ACCRUE_CHECK_SHAPE(all.shape().numel() / all.shape()[0] == sample.numel(),
                       "{}: its images are {} values each, the model takes samples of {}", file,
                       all.shape().numel() / all.shape()[0], sample);
    std::vector<std::pair<std::string, Tensor>> out;
    for (std::int64_t i = 0; i < n; ++i)
      out.emplace_back(fmt::format("{} [{}]", file, i), all.narrow(i, i + 1).reshape(sample.prepend(1)));
    return out;
  }
  ACCRUE_CHECK_SHAPE(sample.rank() == 3, "{}: an image, but the model takes samples of {}, not (channels, height, width)", file, sample);
  const auto channels = static_cast<int>(sample[0]);
  const Tensor image = in.any_image_size
                           ? datasets::read_image_pixels(file, channels)
                           : datasets::read_image_sample(file, {.image_size = Size2{sample[1], sample[2]}, .channels = channels,
                                                                .raw_pixels = takes_raw_pixels(in)});
  return {{file, image.reshape(image.shape().prepend(1))}};
}

// "label: Name (p%), Name (p%)": the `top` most probable classes of one sample's `p`.
std::string top_classes(const std::string& label, const std::vector<float>& p, std::int64_t top,
                        const std::vector<std::string>& names) {
  std::vector<std::int64_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  const auto shown = static_cast<std::ptrdiff_t>(std::min<std::size_t>(static_cast<std::size_t>(top), p.size()));
  const auto at = [&](std::int64_t k) { return p[static_cast<std::size_t>(k)]; };
  std::partial_sort(order.begin(), order.begin() + shown, order.end(), [&](std::int64_t a, std::int64_t b) { return at(a) > at(b); });
  std::string line = label + ":";
  for (std::ptrdiff_t r = 0; r < shown; ++r) {
    const std::int64_t k = order[static_cast<std::size_t>(r)];
    line += fmt::format("{} {} ({:.1f}%)", r == 0 ? "" : ",", class_name(k, names), 100.0 * at(k));
  }
  return line;
}

// Each sample's output, running the samples of one shape together (images of any size come in
// their own sizes): one run of ONNX Runtime's process per shape.
std::vector<Tensor> outputs_of(const std::vector<Tensor>& samples, const std::function<Tensor(const Tensor&)>& run) {
  std::map<std::vector<std::int64_t>, std::vector<std::size_t>> by_shape;
  for (std::size_t i = 0; i < samples.size(); ++i)
    by_shape[{samples[i].shape().begin(), samples[i].shape().end()}].push_back(i);
  std::vector<Tensor> out(samples.size());
  for (const auto& [shape, indices] : by_shape) {
    std::vector<Tensor> batch;
    for (const std::size_t i : indices) batch.push_back(samples[i]);
    const Tensor y = run(ops::cat(batch, 0));
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const auto row = static_cast<std::int64_t>(k);
      out[indices[k]] = y.narrow(row, row + 1);
    }
  }
  return out;
}

// Whether every input states its table columns: the model reads rows of CSV files.
bool reads_tables(const ModelSignature& s) {
  return std::all_of(s.inputs.begin(), s.inputs.end(), [](const InputSignature& in) { return in.table.has_value(); });
}

// Each row of each CSV file, read as the model's inputs say (ModelSignature::csv_options), with
// the model's first output for it.
void score_rows(const std::vector<std::string>& files, const ModelSignature& s, char delimiter, int skip_rows,
                const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& run,
                std::vector<std::string>& labels, std::vector<Tensor>& outputs) {
  datasets::CsvOptions options = s.csv_options();
  options.delimiter = delimiter;
  options.skip_rows = skip_rows;
  for (const std::string& file : files) {
    require_readable_file(file, "CSV file");
    if (is_image(file))
      throw ValueError(fmt::format("{}: an image, but the model reads table rows (its inputs state CSV columns)", file));
    const Dataset rows = datasets::csv(file, options);
    const Tensor y = run(rows.slice(0, rows.size()).inputs).at(0);
    for (std::int64_t i = 0; i < rows.size(); ++i) {
      labels.push_back(fmt::format("{} row {}", file, i + 1));
      outputs.push_back(y.narrow(i, i + 1));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Classify images or table rows with a saved model"};
  std::string model_path, classes;
  std::vector<std::string> files;
  std::int64_t top = 3, first = 5;
  bool use_onnx = false;
  app.add_option("model", model_path, "A model written by Model::save (--save-model), or with --onnx an ONNX file")->required();
  app.add_option("files", files, "PNG or JPEG images, IDX files of images, or for a table's model CSV files")->required();
  app.add_flag("--onnx", use_onnx, "MODEL is an ONNX file (export_onnx, --export-onnx), run in ONNX Runtime");
  app.add_option("--top", top, "Classes printed per image")->check(examples::whole_number(1, 1000));
  app.add_option("--first", first, "Images taken from each IDX file")->check(examples::whole_number(1, 1000000));
  app.add_option("--classes", classes, "fashion_mnist, or the class names in order, separated by commas (default: the model's)");
  char delimiter = ',';
  int skip_rows = 0;
  app.add_option("--delimiter", delimiter, "Between a CSV file's fields");
  app.add_option("--skip-rows", skip_rows, "Lines skipped before a CSV file's header or data")
      ->check(examples::whole_number(0, 1000000));
  return examples::run_example(app, argc, argv, [&] {
    std::optional<Model> model;
    if (!use_onnx) model = load_model(model_path);
    const ModelSignature signature = use_onnx ? onnx::signature(model_path) : model->signature();
    const auto run = [&](const std::vector<Tensor>& x) {
      return use_onnx ? onnx::run_onnxruntime(model_path, x) : model->predict(x, 32);
    };
    const bool tables = reads_tables(signature);
    ACCRUE_CHECK(signature.outputs.size() == 1 && (signature.inputs.size() == 1 || tables),
                 "{}: the model takes {} inputs and gives {} outputs; 12_predict serves models of one output, and of one "
                 "input unless it reads table rows",
                 model_path, signature.inputs.size(), signature.outputs.size());
    const OutputSignature& output = signature.outputs[0];
    const std::vector<std::string> names = class_names(classes, output.class_names);
    std::vector<std::string> labels;
    std::vector<Tensor> logits;
    if (tables) {
      score_rows(files, signature, delimiter, skip_rows, run, labels, logits);
    } else {
      std::vector<Tensor> samples;
      for (const std::string& file : files)
        for (auto& [label, x] : inputs_of(file, signature.inputs[0], first)) {
          labels.push_back(label);
          samples.push_back(x);
        }
      logits = outputs_of(samples, [&](const Tensor& x) { return run({x}).at(0); });
    }
    // Probabilities as they are where the model gives them, else the softmax of what it gives.
    const bool given = output.meaning.starts_with("probabilities");
    for (std::size_t i = 0; i < labels.size(); ++i) {
      const Tensor row = logits[i].reshape(Shape{logits[i].numel()});
      fmt::print("{}\n", top_classes(labels[i], (given ? row : ops::softmax(row, -1)).to_vector<float>(), top, names));
    }
  });
}
