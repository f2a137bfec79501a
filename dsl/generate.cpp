// Model::generate: sampling from a causal language model, one token at a time.

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model.hpp"
#include "../framework/autograd/autograd.hpp"
#include "../framework/core/random.hpp"

namespace accrue {
namespace {

// A token drawn from `logits` as the options say.
std::int32_t pick(std::vector<float> logits, const GenerateOptions& options, Generator& generator) {
  const auto V = static_cast<std::int64_t>(logits.size());
  if (options.temperature == 0.0f)
    return static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  std::vector<std::int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  const std::int64_t k = options.top_k > 0 ? std::min(options.top_k, V) : V;
  // The k largest first; ties keep the smaller token first, so the draw depends on nothing else.
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](std::int32_t a, std::int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  const double top = logits[order[0]];
  std::vector<double> weights(static_cast<std::size_t>(k));
  double total = 0.0;
  for (std::int64_t i = 0; i < k; ++i)
    total += weights[i] = std::exp((logits[order[i]] - top) / static_cast<double>(options.temperature));
  double u = generator.next_double() * total;
  for (std::int64_t i = 0; i < k; ++i)
    if ((u -= weights[i]) < 0.0) return order[i];
  return order[k - 1];
}

}  // namespace

std::vector<std::int32_t> Model::generate(const std::vector<std::int32_t>& prompt, const GenerateOptions& options) {
  ACCRUE_CHECK(built_ && input_shape()->rank() == 1,
               "generate: model '{}' must be built for samples of T tokens (layers::Input{{T}}), got {}", name_,
               built_ ? input_shape()->str() : std::string("an unbuilt model"));
  const Shape out = output_shape();
  const std::int64_t T = (*input_shape())[0];
  ACCRUE_CHECK_SHAPE(out.rank() == 2 && out[0] == T,
                     "generate: model '{}' gives samples of shape {}; a language model gives (T, vocabulary) = ({}, V)",
                     name_, out, T);
  ACCRUE_CHECK(!prompt.empty(), "generate: the prompt is empty; give at least one token");
  ACCRUE_CHECK(options.max_tokens >= 0 && options.temperature >= 0.0f && options.top_k >= 0,
               "generate: max_tokens, temperature and top_k must not be negative, got {}, {} and {}",
               options.max_tokens, options.temperature, options.top_k);
  const EvaluationScope evaluation;
  const NoGradGuard no_grad;
  Generator generator{options.seed};
  std::vector<std::int32_t> tokens = prompt, added;
  for (std::int64_t n = 0; n < options.max_tokens; ++n) {
    const std::int64_t length = std::min<std::int64_t>(static_cast<std::int64_t>(tokens.size()), T);
    std::vector<std::int32_t> window(static_cast<std::size_t>(T), 0);
    std::copy(tokens.end() - length, tokens.end(), window.begin());
    const Tensor logits = forward(Tensor::from(window, {1, T}).to(device_));
    const Tensor last = logits.detach().view_as_shape({T, out[1]}).narrow(length - 1, length);
    const std::int32_t next = pick(last.to(Device::cpu()).to_vector(), options, generator);
    tokens.push_back(next);
    added.push_back(next);
  }
  return added;
}

}  // namespace accrue
