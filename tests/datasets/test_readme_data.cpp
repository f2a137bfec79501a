// The programs of docs/02_your_own_data.md, as written there, on small files made here: a folder
// of images, a CSV table, an .npz archive written by NumPy, CIFAR-10's binary layout, types of
// one's own.

#include <accrue/accrue.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "../test_util.hpp"

using namespace accrue;
namespace fs = std::filesystem;

namespace {

struct InFolder {
  test::TempDir dir{"readme_data"};
  fs::path before = fs::current_path();
  InFolder() { fs::current_path(dir.path); }
  ~InFolder() { fs::current_path(before); }
};

void make_photos() {
  for (int k = 0; k < 20; ++k) {
    const std::string cls = k % 2 ? "cat" : "dog";
    fs::create_directories("photos/" + cls);
    datasets::DecodedImage image{48, 40, 3, {}};
    for (int p = 0; p < 48 * 40 * 3; ++p) image.pixels.push_back(static_cast<std::uint8_t>((p * (k + 3)) % 256));
    datasets::write_png(fmt::format("photos/{}/{}.png", cls, k), image);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_folder_of_images) {
  const InFolder here;
  make_photos();
  auto [train, val] = datasets::image_folder_split("photos", {.image_size = 40, .validation_split = 0.2, .seed = 1});
  auto classes = datasets::image_folder_classes("photos");   // sorted sub-folder names: labels 0, 1, ...
  train = train.map({transforms::RandomCrop{32}, transforms::RandomHorizontalFlip{},
                     transforms::ColorJitter{{.brightness = 0.2, .contrast = 0.2}}});
  val = val.map({transforms::CenterCrop{32}});
  Sequential model{layers::Input{3, 32, 32}, layers::Conv2d{32, 3, {.padding = layers::same}}, layers::ReLU{},
                   layers::MaxPool2d{2}, layers::Flatten{}, layers::Dense{std::ssize(classes)}};
  model.compile(optim::AdamW{.lr = 3e-3}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  const History h = model.fit(train, {.epochs = 2, .validation = val, .verbose = 0});
  BOOST_TEST(h.epochs() == 2u);
  BOOST_TEST(classes == std::vector<std::string>({"cat", "dog"}));
}

BOOST_AUTO_TEST_CASE(a_csv_table) {
  const InFolder here;
  std::ofstream("breast_cancer.csv") << "6,30,malignant,benign\n";
  {
    std::ofstream out("breast_cancer.csv", std::ios::app);
    for (int r = 0; r < 6; ++r) {
      for (int c = 0; c < 30; ++c) out << (r * 0.5 + c) << ",";
      out << r % 2 << "\n";
    }
  }
  auto table = datasets::csv("breast_cancer.csv", {.header = false, .skip_rows = 1});   // scikit-learn's, as it ships
  auto [train, test] = table.split(0.8, /*seed=*/0);
  layers::Normalization normalize;
  normalize.adapt(train);
  Sequential model{layers::Input{30}, normalize, layers::Dense{16}, layers::ReLU{}, layers::Dense{2}};
  model.compile(optim::Adam{.lr = 1e-3}, losses::CrossEntropy{}, {metrics::Accuracy{}});
  model.fit(train, {.epochs = 40, .verbose = 0});
  const double accuracy = model.evaluate(test)["accuracy"];
  BOOST_TEST((accuracy >= 0.0 && accuracy <= 1.0));
}

BOOST_AUTO_TEST_CASE(numpy_arrays_and_cifar) {
  const InFolder here;
  fs::copy_file(std::string(ACCRUE_TEST_DATA_DIR) + "/npz/stored.npz", "features.npz");
  auto arrays = datasets::npz("features.npz");                 // np.savez("features.npz", x=x, y=y)
  Dataset data{arrays.at("x"), arrays.at("y"), "features"};
  BOOST_TEST(data.size() == 3);
  fs::create_directories("cifar-10-batches-bin");
  std::string records;
  for (int k = 0; k < 10; ++k) records += static_cast<char>(k) + std::string(3072, static_cast<char>(k * 20));
  for (const char* f : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                        "data_batch_5.bin", "test_batch.bin"})
    std::ofstream(std::string("cifar-10-batches-bin/") + f, std::ios::binary) << records;
  auto cifar = datasets::cifar10("cifar-10-batches-bin");      // or cifar100(dir, /*fine_labels=*/true)
  auto train = cifar.train.map({transforms::RandomCrop{32, {.padding = {4}}}, transforms::RandomHorizontalFlip{},
                                transforms::Normalize{{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}}});
  BOOST_TEST(train.size() == 50);
  BOOST_TEST(train.slice(0, 4).input().shape() == Shape({4, 3, 32, 32}));
}

namespace {
struct Sines {
  std::int64_t size() const { return 1000; }
  Example get(std::int64_t i) const {
    const float x = 0.01f * static_cast<float>(i);
    return {Tensor::from({x}, {1}), Tensor::from({std::sin(x)}, {1})};
  }
};
}  // namespace

BOOST_AUTO_TEST_CASE(types_of_ones_own) {
  Dataset sines = Dataset::from(Sines{}, "sines");
  Dataset squares = Dataset::from(100, [](std::int64_t i) { return Example{Tensor::from({float(i)}, {1}), Tensor::from({float(i * i)}, {1})}; });
  BOOST_TEST(sines.size() == 1000);
  BOOST_TEST(squares.slice(3, 4).target().to_vector() == std::vector<float>({9.0f}));
  manual_seed(1);
  Sequential model{layers::Input{1}, layers::Dense{16}, layers::Tanh{}, layers::Dense{1}};
  model.compile(optim::Adam{.lr = 1e-2}, losses::MSE{});
  const History h = model.fit(sines, {.epochs = 3, .verbose = 0});
  BOOST_TEST(h.logs().back().at("loss") < h.logs().front().at("loss"));
}
