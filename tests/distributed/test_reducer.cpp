// The bucket logic of the gradient reduction (distributed/reducer.hpp), which does not depend on
// the backend: which parameters share a bucket, and that buckets start in the same order whatever
// order backward completes their gradients in. And the Reducer on a single-process communicator.

#include <accrue/framework/distributed/reducer.hpp>

#include "../test_util.hpp"

using namespace accrue;
using distributed::BucketPlan;
using distributed::BucketReadiness;

BOOST_AUTO_TEST_CASE(buckets_take_parameters_in_reverse_order_up_to_the_size) {
  // 4-byte elements, each parameter's place padded to 16 of them (64 bytes); buckets of 200 bytes
  // (50 elements).
  const BucketPlan plan{std::vector<std::int64_t>{10, 30, 5, 5, 20}, 4, 200};
  // Reverse order, in places of 32, 16, 16, 32 and 16: 20 and 5 (parameters 4, 3) fill one | 5 and
  // 30 (2, 1) the next | 10.
  const auto& b = plan.buckets();
  BOOST_REQUIRE_EQUAL(b.size(), 3u);
  BOOST_TEST(b[0].parameters == (std::vector<std::size_t>{4, 3}), boost::test_tools::per_element());
  BOOST_TEST(b[0].offsets == (std::vector<std::int64_t>{0, 32}), boost::test_tools::per_element());
  BOOST_TEST(b[0].elements == 48);
  BOOST_TEST(b[1].parameters == (std::vector<std::size_t>{2, 1}), boost::test_tools::per_element());
  BOOST_TEST(b[1].offsets == (std::vector<std::int64_t>{0, 16}), boost::test_tools::per_element());
  BOOST_TEST(b[2].parameters == (std::vector<std::size_t>{0}), boost::test_tools::per_element());
  BOOST_TEST(b[2].elements == 16);
  BOOST_TEST(plan.bucket_of(3) == 0u);
  BOOST_TEST(plan.slot_of(3) == 1u);
  BOOST_TEST(plan.bucket_of(1) == 1u);
  BOOST_TEST(plan.slot_of(1) == 1u);
  // A parameter larger than a bucket has one of its own.
  const BucketPlan large{std::vector<std::int64_t>{5, 100, 5}, 4, 200};
  BOOST_REQUIRE_EQUAL(large.buckets().size(), 3u);
  BOOST_TEST(large.buckets()[1].elements == 112);
  // 8-byte elements: places of 8.
  BOOST_TEST(BucketPlan(std::vector<std::int64_t>{3, 3}, 8, 1000).buckets()[0].offsets ==
                 (std::vector<std::int64_t>{0, 8}),
             boost::test_tools::per_element());
  // One large bucket holds everything.
  BOOST_TEST(BucketPlan(std::vector<std::int64_t>{10, 30, 5}, 4, 25u << 20).buckets().size() == 1u);
  BOOST_CHECK_THROW(BucketPlan(std::vector<std::int64_t>{1}, 4, 0), ValueError);
}

BOOST_AUTO_TEST_CASE(buckets_start_in_order_whatever_order_gradients_complete) {
  const BucketPlan plan{std::vector<std::int64_t>{10, 30, 5, 5, 20}, 4, 200};  // {4, 3} | {2, 1} | {0}
  BucketReadiness ready{plan};
  // Bucket 1 completes first, but waits for bucket 0.
  BOOST_TEST(ready.mark_ready(2).empty());
  BOOST_TEST(ready.mark_ready(1).empty());
  BOOST_TEST(ready.mark_ready(1).empty());  // twice: no effect
  BOOST_TEST(ready.mark_ready(3).empty());
  BOOST_TEST(ready.mark_ready(4) == (std::vector<std::size_t>{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(ready.mark_ready(0) == (std::vector<std::size_t>{2}), boost::test_tools::per_element());
  BOOST_TEST(ready.is_ready(1));
  ready.reset();
  BOOST_TEST(!ready.is_ready(1));
  // Bucket 2 completes before buckets 0 and 1.
  BOOST_TEST(ready.mark_ready(0).empty());
  BOOST_TEST(ready.mark_ready(4).empty());
  BOOST_TEST(ready.mark_ready(3) == (std::vector<std::size_t>{0}), boost::test_tools::per_element());
  BOOST_TEST(ready.mark_ready(2).empty());
  BOOST_TEST(ready.mark_ready(1) == (std::vector<std::size_t>{1, 2}), boost::test_tools::per_element());
  BOOST_CHECK_THROW(ready.mark_ready(5), ValueError);
}

BOOST_AUTO_TEST_CASE(a_reducer_alone_leaves_gradients_as_they_are_and_counts_its_buckets) {
  const auto alone = distributed::single_process();
  manual_seed(3);
  Sequential model{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dense{4}};
  model.build(Shape{6});
  const std::vector<Tensor> params = model.parameters();
  // Buckets of 100 bytes: the four parameters (96, 16, 64 and 4 floats, the last in a place of 16)
  // in four buckets.
  distributed::Reducer reducer{*alone, params, {.bucket_bytes = 100}};
  BOOST_TEST(reducer.plan().buckets().size() == 4u);
  BOOST_TEST(reducer.buffer_bytes() == (96 + 16 + 64 + 16 + 3) * sizeof(float));  // and the skip and request flags
  const Tensor x = test::random_tensor({5, 6}, 1);
  {
    const ObserveLeafGradients watching{reducer};
    ops::sum(model.forward(x)).backward();
  }
  std::vector<Tensor> before;
  for (const Tensor& p : params) before.push_back(p.grad().clone());
  BOOST_TEST(!reducer.finish(false));
  for (std::size_t i = 0; i < params.size(); ++i) test::check_close(params[i].grad(), before[i], 0, 0, "gradient");
  // The output layer's buckets start during backward; the last one (the first layer's weight,
  // which carries the skip flag) at finish.
  BOOST_TEST(reducer.stats().buckets_started_during_backward == 3);
  BOOST_TEST(reducer.stats().buckets_started == 4);
  BOOST_TEST(reducer.finish(true));  // a skipped window, without a backward pass
  BOOST_TEST(reducer.stats().windows == 2);
}

BOOST_AUTO_TEST_CASE(gradients_accumulate_in_the_buckets_themselves) {
  const auto alone = distributed::single_process();
  const auto make = [] {
    manual_seed(3);
    Sequential m{layers::Input{6}, layers::Dense{16}, layers::ReLU{}, layers::Dense{4}};
    m.build(Shape{6});
    return m;
  };
  Sequential plain = make(), bucketed = make();
  const std::vector<Tensor> params = bucketed.parameters();
  // Two buckets: the second layer's weight and bias and the first layer's bias, then its weight.
  std::optional<distributed::Reducer> owner{std::in_place, *alone, params, distributed::ReducerOptions{.bucket_bytes = 400}};
  distributed::Reducer& reducer = *owner;
  BOOST_TEST(reducer.plan().buckets().size() == 2u);
  for (const Tensor& p : params) BOOST_TEST(!p.grad().defined());
  // Two micro-batches accumulated, the second one watched.
  for (int k = 0; k < 2; ++k) {
    const Tensor x = test::random_tensor({5, 6}, 10 + static_cast<std::uint64_t>(k));
    ops::sum(plain.forward(x)).backward();
    std::optional<ObserveLeafGradients> watching;
    if (k == 1) watching.emplace(reducer);
    ops::sum(bucketed.forward(x)).backward();
  }
  // The first backward wrote each gradient into its bucket, the second added to it there, each on
  // a cache line of its own (the second layer's bias takes 4 floats of a place of 16).
  for (std::size_t i = 1; i < params.size(); ++i)
    BOOST_TEST((params[i].grad().storage() == params[0].grad().storage()) ==
               (reducer.plan().bucket_of(i) == reducer.plan().bucket_of(0)));
  for (const Tensor& p : params) BOOST_TEST(reinterpret_cast<std::uintptr_t>(p.grad().data_ptr()) % 64 == 0);
  BOOST_TEST(!reducer.finish(false));
  const auto a = bucketed.named_parameters(), b = plain.named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i)
    test::check_close(a[i].second.grad(), b[i].second.grad(), 1e-6, 1e-6, a[i].first);
  // Without the reducer, gradients have storage of their own again.
  owner.reset();
  for (Tensor p : params) p.set_grad(Tensor{});
  ops::sum(bucketed.forward(test::random_tensor({5, 6}, 12))).backward();
  BOOST_TEST(params[1].grad().storage() != params[3].grad().storage());
}
