#include "layer_check.hpp"

#include <algorithm>
#include <cmath>

#include "../framework/autograd/autograd.hpp"
#include "../framework/ops/ops.hpp"
#include "../framework/optim/sgd.hpp"

namespace accrue {

namespace {
Tensor sample_input(const Shape& shape, const LayerCheckOptions& o) {
  Generator gen{o.seed};
  std::vector<float> v = Tensor::uniform(shape, o.low, o.high, &gen).to_vector<float>();
  if (o.distinct) {
    // The draws' ranks, spread evenly around zero.
    std::vector<std::size_t> order(v.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
    const float spacing = 3.0f * static_cast<float>(o.gradcheck.eps);
    for (std::size_t rank = 0; rank < order.size(); ++rank)
      v[order[rank]] = (static_cast<float>(rank) - static_cast<float>(order.size() - 1) / 2.0f) * spacing;
    return Tensor::from(v, shape);
  }
  for (float& x : v)
    if (std::abs(x) < o.gap) x = x < 0 ? -o.gap : o.gap;
  return Tensor::from(v, shape);
}

// A copy of `layer` computes the same function, and one small SGD step on its parameters lowers the
// sum of squared outputs. `run` is the layer's forward with its random numbers restarted.
void check_copy_and_step(Layer& layer, const Tensor& x, const std::function<Tensor(const Tensor&)>& run,
                         Generator& forward_gen, std::uint64_t seed, const std::function<void(const std::string&)>& fail) {
  const std::unique_ptr<Layer> copy = layer.clone();
  copy->set_generator(&forward_gen);
  {
    const NoGradGuard no_grad;
    forward_gen.set_state(seed + 2, 0);
    const std::vector<float> a = copy->forward(x).to_vector<float>();
    const std::vector<float> b = run(x).to_vector<float>();
    if (a != b) fail("clone() computes a different output");
  }
  if (layer.named_parameters().empty()) return;
  std::vector<Tensor> params;
  for (const auto& p : layer.named_parameters()) params.push_back(p.second);
  auto opt = optim::SGD{.lr = 1e-3}.create(params);
  opt->zero_grad();
  const Tensor loss = ops::sum(ops::square(run(x)));
  const float before = loss.item();
  loss.backward();
  opt->step();
  const NoGradGuard no_grad;
  const float after = ops::sum(ops::square(run(x))).item();
  if (!(after < before)) fail(fmt::format("an SGD step did not lower sum(y^2): {} then {}", before, after));
}
}  // namespace

LayerCheckResult check_layer(const Layer& prototype, const Shape& sample_shape, const LayerCheckOptions& options) {
  LayerCheckResult result;
  auto fail = [&](const std::string& line) {
    result.ok = false;
    result.report += line + "\n";
  };
  const std::unique_ptr<Layer> layer = prototype.clone();
  Generator init{options.seed + 1};
  // Random numbers the layer draws in forward (dropout) restart at every call, so that the layer is
  // one fixed function for the finite differences.
  Generator forward_gen{options.seed + 2};
  layer->set_generator(&forward_gen);
  try {
    layer->ensure_built(sample_shape, init);
  } catch (const Error& e) {
    fail(fmt::format("build: {}", e.what()));
    return result;
  }
  const Shape batch_shape = sample_shape.prepend(options.batch);
  Tensor x = sample_input(batch_shape, options);
  const auto run = [&](const Tensor& in) {
    forward_gen.set_state(options.seed + 2, 0);
    return layer->forward(in);
  };

  const Tensor y = run(x);
  if (!(y.shape().drop_front() == layer->output_shape()))
    fail(fmt::format("forward gives samples of shape {}, build announced {}", y.shape().drop_front(),
                     layer->output_shape()));
  if (y.size(0) != options.batch) fail(fmt::format("forward changed the batch from {} to {}", options.batch, y.size(0)));

  std::int64_t counted = 0;
  for (const auto& [name, p] : layer->named_parameters()) {
    counted += p.numel();
    if (!p.requires_grad()) fail(fmt::format("parameter {} does not require grad", name));
    if (p.category() != MemoryCategory::parameters) fail(fmt::format("parameter {} is not counted as parameter memory", name));
  }
  if (counted != layer->parameter_count()) fail("parameter_count() disagrees with the parameters");

  // Gradients of the input and of every parameter.
  x.set_requires_grad(true);
  std::vector<Tensor> inputs{x};
  for (const auto& p : layer->named_parameters()) inputs.push_back(p.second);
  const GradcheckResult g = gradcheck([&](const std::vector<Tensor>& in) { return run(in[0]); }, inputs, options.gradcheck);
  if (!g.ok) fail(fmt::format("gradients differ from finite differences (input 0 is x, then the parameters):\n{}", g.report));

  check_copy_and_step(*layer, x.detach(), run, forward_gen, options.seed, fail);
  return result;
}

}  // namespace accrue
