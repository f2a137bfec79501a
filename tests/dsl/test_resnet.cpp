// models::resnet18/34/50 against torchvision's: a state_dict as torch.save writes it (what
// torchvision downloads) and as safetensors loads under torchvision's names; in evaluation the
// logits equal torchvision's on the same batch, and two steps of SGD with momentum in training give
// its weights, BatchNorm statistics and counts (from zero_init_residual's start, made alike). tests/data/pytorch_resnet.py is the PyTorch side,
// run here with seeded models (there is no network to download the ImageNet weights). Without
// Debian's python3-torch and python3-torchvision the test is reported as skipped, with the reason.

#include <boost/test/unit_test.hpp>
#include <boost/test/data/test_case.hpp>

#include <accrue/accrue.hpp>
#include <accrue/framework/serialization/pytorch_file.hpp>
#include <accrue/models.hpp>

#include "../python_side.hpp"
#include "../test_util.hpp"

using namespace accrue;
namespace bdata = boost::unit_test::data;

namespace {

void run_python(const std::string& args) { test::run_python_script("pytorch_resnet.py", args); }

Model made(const std::string& arch, const models::ResNetOptions& options) {
  if (arch == "resnet18") return models::resnet18(options);
  if (arch == "resnet34") return models::resnet34(options);
  return models::resnet50(options);
}

const Tensor& tensor_in(const serialization::NamedTensors& tensors, const std::string& name) {
  const Tensor* t = serialization::find_tensor(tensors, name);
  BOOST_REQUIRE_MESSAGE(t != nullptr, "no tensor " << name);
  return *t;
}

// The eight images and labels both sides run on, and the files PyTorch writes for them.
struct Reference {
  test::TempDir dir;
  Tensor x, y;
  explicit Reference(const std::string& arch) : dir{"resnet_" + arch} {
    Generator gen{11};
    x = Tensor::uniform({8, 3, 64, 64}, -1, 1, &gen);
    std::vector<std::int32_t> labels(8);
    for (auto& l : labels) l = static_cast<std::int32_t>(gen.below(1000));
    y = Tensor::from(labels, {8});
    serialization::save_safetensors(dir.file("in.safetensors"), {{"x", x}, {"y", y}});
    run_python(fmt::format("reference {} 3 {} {}", arch, dir.file("in.safetensors"), dir.path.string()));
  }
};

}  // namespace

BOOST_DATA_TEST_CASE(torchvision_weights_give_its_logits_and_its_training_step,
                     bdata::make(std::vector<std::string>{"resnet18", "resnet50"}), arch) {
  const Reference ref{arch};
  Model model = made(arch, {.input_shape = {3, 64, 64}});
  const LoadReport report = model.load_weights(ref.dir.file(arch + ".pth"));
  BOOST_TEST(report.complete(), report.str());
  const auto& bn1 = dynamic_cast<const layers::BatchNorm&>(model.layer("bn1"));
  BOOST_TEST(bn1.batches_tracked() == 3);  // num_batches_tracked, read into the counter
  const Tensor logits = tensor_in(serialization::load_safetensors(ref.dir.file(arch + "_eval.safetensors")).tensors, "logits");
  const Tensor ours = model.predict(ref.x);
  test::check_close(ours, logits, 1e-4, 1e-4, arch + " logits in evaluation");

  // The same weights through safetensors, num_batches_tracked as I64.
  Model again = made(arch, {.input_shape = {3, 64, 64}});
  BOOST_TEST(again.load_weights(ref.dir.file(arch + ".safetensors")).complete());
  test::check_close(again.predict(ref.x), ours, 0.0, 0.0, arch + " from safetensors");


  // Training steps from torchvision's zero_init_residual start (pytorch_resnet.py says why): Accrue's
  // option zeroes the same BatchNorm weights, and SGD with momentum gives PyTorch's state.
  Model trained = made(arch, {.zero_init_residual = true, .input_shape = {3, 64, 64}});
  const serialization::NamedTensors zero = serialization::load_pytorch(ref.dir.file(arch + "_zero.pth"));
  for (const auto& [name, t] : trained.named_parameters())
    if (name.ends_with("weight") && name.find("bn") != std::string::npos)
      BOOST_TEST((tensor_in(zero, name).template to_vector<float>().front() == 0.0f) == (t.template to_vector<float>().front() == 0.0f), name);
  BOOST_TEST(trained.load_weights(ref.dir.file(arch + "_zero.pth")).complete());
  trained.compile(optim::SGD{.lr = 0.05, .momentum = 0.9}, losses::CrossEntropy{});
  trained.fit(Dataset{ref.x, ref.y}, {.epochs = 1, .batch_size = 4, .shuffle = false, .verbose = 0});
  const serialization::NamedTensors stepped = serialization::load_safetensors(ref.dir.file(arch + "_step.safetensors")).tensors;
  for (const auto& [name, t] : trained.named_state()) test::check_close(t, tensor_in(stepped, name), 1e-4, 1e-4, arch + " " + name);
  const auto& counted = dynamic_cast<const layers::BatchNorm&>(trained.layer("layer1.0.bn1"));
  BOOST_TEST(counted.batches_tracked() == tensor_in(stepped, "layer1.0.bn1.num_batches_tracked").to_vector<std::int32_t>().front());
}

BOOST_AUTO_TEST_CASE(a_backbone_loads_into_a_model_of_another_head_when_not_strict) {
  const test::TempDir dir{"resnet_backbone"};
  run_python(fmt::format("weights resnet18 4 {}", dir.file("r18.pth")));
  Model five = models::resnet18({.num_classes = 5, .input_shape = {3, 64, 64}});
  BOOST_CHECK_EXCEPTION(five.load_weights(dir.file("r18.pth")), ValueError,
                        test::message_has({"r18.pth", "(2 problems)", "nothing was loaded",
                                           "'fc.weight' is float32 (1000, 512) in the file but float32 (5, 512) in the model",
                                           "strict = false"}));
  const Tensor head_before = five.layer("fc").named_parameters().at(0).second.clone();
  const LoadReport report = five.load_weights(dir.file("r18.pth"), {.strict = false});
  BOOST_TEST(report.mismatched.size() == 2u);
  BOOST_TEST(report.missing.empty());
  BOOST_TEST(report.unexpected.empty());
  BOOST_TEST(report.loaded.size() == 122u - 2u);  // 62 parameters and 60 buffers (20 BatchNorms' three)
  test::check_close(five.layer("fc").named_parameters().at(0).second, head_before, 0.0, 0.0, "the new head is left as it was");
  // The features of the headless model are the backbone's: the same with either head.
  Model features = models::resnet18({.include_top = false, .input_shape = {3, 64, 64}});
  const LoadReport headless = features.load_weights(dir.file("r18.pth"), {.strict = false});
  BOOST_TEST(headless.unexpected.size() == 2u);  // fc.weight and fc.bias
  BOOST_TEST(features.output(0).shape() == Shape({512}));
}

int main(int argc, char* argv[]) {
  return test::main_with_python(argc, argv, "test_resnet", "torch, torchvision", "python3-torch and python3-torchvision");
}
