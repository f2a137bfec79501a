// Classifies images with a model saved by Sequential::save, with none of the model's code: the
// inference half of a program that trains elsewhere. With --onnx, MODEL is an ONNX file written by
// export_onnx, run by ONNX Runtime (onnx::run_onnxruntime) instead of Accrue: the same classes.
//
//   12_predict [--onnx] MODEL FILE... [--top 3] [--classes fashion_mnist|NAME,NAME,...] [--first 5]
//
// Each FILE is a PNG or JPEG image (decoded, converted and resized to the model's input shape as
// datasets::image_folder reads samples) or an IDX file of images such as FashionMNIST's
// t10k-images-idx3-ubyte (its first --first images, in [0, 1]). For each image it prints the --top
// most probable classes (the softmax of the model's outputs), by name with --classes.
//
//   01_fashion_mnist_mlp --epochs 2 --save-model mlp.safetensors
//   12_predict mlp.safetensors /usr/share/dataset-fashion-mnist/t10k-images-idx3-ubyte.gz --classes fashion_mnist
//   01_fashion_mnist_mlp --epochs 2 --export-onnx mlp.onnx
//   12_predict --onnx mlp.onnx /usr/share/dataset-fashion-mnist/t10k-images-idx3-ubyte.gz --classes fashion_mnist

#include <algorithm>
#include <fstream>
#include <numeric>

#include "example_options.hpp"

using namespace accrue;

namespace {

// --classes: FashionMNIST's ten names, or those given; none gives "class K".
std::vector<std::string> class_names(const std::string& classes) {
  std::vector<std::string> names;
  if (classes == "fashion_mnist") {
    for (int k = 0; k < 10; ++k) names.emplace_back(datasets::fashion_mnist_class_name(k));
  } else if (!classes.empty()) {
    std::size_t at = 0;
    for (std::size_t comma; (comma = classes.find(',', at)) != std::string::npos; at = comma + 1)
      names.push_back(classes.substr(at, comma - at));
    names.push_back(classes.substr(at));
  }
  return names;
}

std::string class_name(std::int64_t k, const std::vector<std::string>& names) {
  return k < static_cast<std::int64_t>(names.size()) ? names[static_cast<std::size_t>(k)] : fmt::format("class {}", k);
}

// (label, batch of samples) for one FILE argument.
std::vector<std::pair<std::string, Tensor>> inputs_of(const std::string& file, const Shape& sample, std::int64_t first) {
  // By the file's first bytes, not its name: PNG and JPEG have signatures, anything else is read as IDX.
  require_readable_file(file, "image or IDX file");
  std::string head(8, '\0');
  std::ifstream(file, std::ios::binary).read(head.data(), static_cast<std::streamsize>(head.size()));
  if (!datasets::looks_like_image(head)) {
    const datasets::IdxArray images = datasets::read_idx(file);
    Tensor all = datasets::idx_to_float(images, 1.0f / 255.0f);
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
  Tensor image = datasets::read_image_sample(
      file, {.image_size = Size2{sample[1], sample[2]}, .channels = static_cast<int>(sample[0])});
  return {{file, image.reshape(sample.prepend(1))}};
}

// "label: Name (p%), Name (p%)": the `top` most probable classes of `logits`.
std::string top_classes(const std::string& label, const Tensor& logits, std::int64_t top, const std::vector<std::string>& names) {
  const std::vector<float> p = ops::softmax(logits, -1).to_vector<float>();
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Classify images with a saved model"};
  std::string model_path, classes;
  std::vector<std::string> files;
  std::int64_t top = 3, first = 5;
  bool use_onnx = false;
  app.add_option("model", model_path, "A model written by Model::save (--save-model), or with --onnx an ONNX file")->required();
  app.add_option("files", files, "PNG or JPEG images, or IDX files of images")->required();
  app.add_flag("--onnx", use_onnx, "MODEL is an ONNX file (export_onnx, --export-onnx), run in ONNX Runtime");
  app.add_option("--top", top, "Classes printed per image")->check(examples::whole_number(1, 1000));
  app.add_option("--first", first, "Images taken from each IDX file")->check(examples::whole_number(1, 1000000));
  app.add_option("--classes", classes, "fashion_mnist, or the class names in order, separated by commas");
  return examples::run_example(app, argc, argv, [&] {
    std::optional<Model> model;
    if (!use_onnx) model = load_model(model_path);
    const Shape sample = use_onnx ? onnx::sample_shape(model_path) : *model->input_shape();
    const std::vector<std::string> names = class_names(classes);
    std::vector<std::string> labels;
    std::vector<Tensor> batch;
    for (const std::string& file : files)
      for (auto& [label, x] : inputs_of(file, sample, first)) {
        labels.push_back(label);
        batch.push_back(x);
      }
    // Every image in one batch: one run of ONNX Runtime's process for them all.
    const Tensor x = ops::cat(batch, 0);
    const Tensor logits = use_onnx ? onnx::run_onnxruntime(model_path, {x}).at(0) : model->predict(x, 32);
    const std::int64_t classes_out = logits.shape().numel() / logits.size(0);
    for (std::size_t i = 0; i < labels.size(); ++i) {
      const auto row = static_cast<std::int64_t>(i);
      fmt::print("{}\n", top_classes(labels[i], logits.narrow(row, row + 1).reshape(Shape{classes_out}), top, names));
    }
  });
}
