#include "../test_util.hpp"
#include <accrue/framework/autograd/deferred_gradients.hpp>

using namespace accrue;
using namespace accrue::test;

BOOST_AUTO_TEST_CASE(backward_adds_into_grad) {
  Tensor x = leaf(Tensor::from({1, 2, 3}, {3}));
  ops::sum(x * x).backward();
  check_close(x.grad(), {2, 4, 6});
  // A second backward adds to the first, as PyTorch does: what gradient accumulation relies on.
  ops::sum(x * 3.0f).backward();
  check_close(x.grad(), {5, 7, 9});
  x.set_grad(Tensor());
  ops::sum(x).backward();
  check_close(x.grad(), {1, 1, 1});
}

BOOST_AUTO_TEST_CASE(a_tensor_used_twice_gets_both_gradients) {
  Tensor x = leaf(Tensor::from({2}, {1}));
  Tensor y = x * x + x;  // dy/dx = 2x + 1
  ops::sum(y).backward();
  check_close(x.grad(), {5});
  Tensor a = leaf(Tensor::from({1, -2}, {2}));
  Tensor h = ops::relu(a);
  ops::sum(h + h * h).backward();  // diamond through relu: 1 + 2h where a > 0
  check_close(a.grad(), {3, 0});
}

BOOST_AUTO_TEST_CASE(no_grad_records_nothing) {
  Tensor x = leaf(Tensor::ones({2}));
  {
    const NoGradGuard guard;
    const Tensor y = x * 2.0f;
    BOOST_TEST(!y.requires_grad());
    BOOST_TEST(y.is_leaf());
  }
  BOOST_TEST((x * 2.0f).requires_grad());
  BOOST_TEST(!(x.detach() * 2.0f).requires_grad());
  BOOST_CHECK_EXCEPTION(ops::sum(x.detach()).backward(), ValueError, message_has({"does not require grad"}));
}

BOOST_AUTO_TEST_CASE(graph_is_freed_unless_retained) {
  Tensor x = leaf(Tensor::ones({3}));
  Tensor loss = ops::sum(ops::exp(x));
  loss.backward();
  BOOST_CHECK_EXCEPTION(loss.backward(), ValueError, message_has({"second time", "retain_graph"}));
  Tensor loss2 = ops::sum(ops::exp(x));
  x.set_grad(Tensor());
  loss2.backward(true);
  loss2.backward();
  check_close(x.grad(), std::vector<float>(3, 2 * std::exp(1.0f)), 1e-5, 1e-5);
}

BOOST_AUTO_TEST_CASE(in_place_change_of_a_saved_tensor_is_reported) {
  Tensor w = leaf(Tensor::ones({2, 2}));
  Tensor x = Tensor::ones({1, 2});
  Tensor loss = ops::sum(ops::matmul(x, w));  // matmul keeps x for w's gradient
  x.fill_(5.0f);
  BOOST_CHECK_EXCEPTION(loss.backward(), ValueError, message_has({"matmul", "modified in place"}));
}

BOOST_AUTO_TEST_CASE(custom_loss_from_ops_needs_no_backward_code) {
  // Cross-entropy written by hand from log_softmax and one_hot matches the fused op.
  const Tensor logits_value = accrue::test::random_tensor({4, 5}, 3, -2, 2);
  const Tensor labels = Tensor::from(std::vector<std::int32_t>{0, 4, 2, 2}, {4});
  Tensor a = leaf(logits_value.clone());
  Tensor b = leaf(logits_value.clone());
  const Tensor manual = -ops::mean(ops::sum(ops::one_hot(labels, 5) * ops::log_softmax(a), 1));
  const Tensor fused = ops::cross_entropy(b, labels);
  BOOST_TEST(manual.item() == fused.item(), boost::test_tools::tolerance(1e-5f));
  manual.backward();
  fused.backward();
  check_close(a.grad(), b.grad(), 1e-6, 1e-5);
}

BOOST_AUTO_TEST_CASE(non_scalar_backward_needs_a_gradient) {
  Tensor x = leaf(Tensor::ones({2}));
  Tensor y = x * 3.0f;
  BOOST_CHECK_EXCEPTION(y.backward(), ValueError, message_has({"one-element", "(2,)"}));
  y.backward(Tensor::from({1, 2}, {2}));
  check_close(x.grad(), {3, 6});
}

BOOST_AUTO_TEST_CASE(a_graph_never_differentiated_is_freed) {
  // ReLU keeps its own output for backward; if that kept its grad_fn alive, a forward pass that
  // is never differentiated (an exception, predictions with grad mode on) would leak its graph.
  const std::size_t before = memory_stats().live_total;
  {
    Tensor w = Tensor::ones({256, 256});
    w.set_requires_grad(true);
    const Tensor y = ops::relu(ops::matmul(Tensor::ones({64, 256}), w));
    BOOST_TEST(memory_stats().live_of(MemoryCategory::activations) > 0u);
  }
  BOOST_TEST(memory_stats().live_total == before);
}

// With WeightGradients::per_window, fit multiplies float32 Dense weights' gradients once per window
// (DeferredWeightGradients). No bit of .grad() changes, whether the rows wait for the window's
// close, overflow the buffer (21 rows here: the third micro-batch of 8 multiplies what waits
// first), are multiplied early by a flush (a checkpoint inside the window), or by the flush at the
// close when the last backward pass did not reach the layer.
BOOST_AUTO_TEST_CASE(deferred_weight_gradients_equal_per_micro_batch_sums_bit_for_bit) {
  const std::int64_t in = 96, out = 80, micro_batches = 5;
  if (DeferredWeightGradients::capacity_rows(Device::cpu(), 8, in, out) == 0) {
    BOOST_TEST_MESSAGE("skipped: this processor's GEMM does not add in order (no AVX-512), so nothing is deferred");
    return;
  }
  enum class Mode { now, at_close, flushed_after_2, flushed_at_end };
  const auto gradients = [&](Mode mode) {
    Tensor w = leaf(test::random_tensor({out, in}, 1)), b = leaf(test::random_tensor({out}, 2));
    std::optional<DeferredWeightGradients> deferred;
    if (mode != Mode::now) deferred.emplace();
    for (int i = 0; i < micro_batches; ++i) {
      if (deferred) deferred->set_closing(mode != Mode::flushed_at_end && i == micro_batches - 1);
      const Tensor x = test::random_tensor({2, 4, in}, 10 + i), r = test::random_tensor({2, 4, out}, 20 + i);
      ops::sum(ops::mul(ops::linear(x, w, b), r)).backward();
      if (mode == Mode::at_close && i == 0) {
        BOOST_TEST(!w.grad().defined());  // the rows wait
        BOOST_TEST(b.grad().defined());
      }
      if (mode == Mode::flushed_after_2 && i == 1) deferred->flush();
    }
    if (mode == Mode::flushed_at_end) deferred->flush();
    return std::pair{w.grad().to_vector(), b.grad().to_vector()};
  };
  const auto expected = gradients(Mode::now);
  for (Mode mode : {Mode::at_close, Mode::flushed_after_2, Mode::flushed_at_end}) {
    const auto got = gradients(mode);
    BOOST_TEST((got.first == expected.first), "weight gradient, mode " << static_cast<int>(mode));
    BOOST_TEST((got.second == expected.second), "bias gradient, mode " << static_cast<int>(mode));
  }
  // Discarded rows are gone: the next window starts from nothing.
  Tensor w = leaf(test::random_tensor({out, in}, 1));
  DeferredWeightGradients deferred;
  ops::sum(ops::linear(test::random_tensor({8, in}, 3), w, Tensor())).backward();
  deferred.discard();
  deferred.flush();
  BOOST_TEST(!w.grad().defined());
}
