#include "../test_util.hpp"

#include <range/v3/view/enumerate.hpp>
#include <range/v3/view/take.hpp>
#include <range/v3/view/transform.hpp>
#include <set>

using namespace accrue;
using namespace accrue::test;

namespace {
Dataset numbered(std::int64_t n) {
  std::vector<float> x(static_cast<std::size_t>(n));
  std::vector<std::int32_t> y(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    x[static_cast<std::size_t>(i)] = static_cast<float>(i);
    y[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
  }
  return Dataset{Tensor::from(x, {n, 1}), Tensor::from(y, {n}), "numbered"};
}
}  // namespace

BOOST_AUTO_TEST_CASE(batches_in_order_keep_or_drop_the_last) {
  const Dataset d = numbered(10);
  DataLoader keep{d, {.batch_size = 4}};
  BOOST_TEST(keep.size() == 3);
  BOOST_TEST(keep[2].size() == 2);
  BOOST_TEST(keep[1].target().to_vector<std::int32_t>()[0] == 4);
  DataLoader drop{d, {.batch_size = 4, .drop_last = true}};
  BOOST_TEST(drop.size() == 2);
  BOOST_CHECK_EXCEPTION(DataLoader(d, {.batch_size = 0}), ValueError, message_has({"batch_size", "0"}));
  BOOST_CHECK_EXCEPTION(keep[3], ValueError, message_has({"batch 3"}));
}

BOOST_AUTO_TEST_CASE(shuffling_is_a_seeded_permutation_per_epoch) {
  const Dataset d = numbered(100);
  DataLoader a{d, {.batch_size = 7, .shuffle = true, .seed = 5}};
  DataLoader b{d, {.batch_size = 7, .shuffle = true, .seed = 5}};
  std::vector<std::int32_t> first, again, other;
  for (const Batch& batch : a)
    for (auto v : batch.target().to_vector<std::int32_t>()) first.push_back(v);
  for (const Batch& batch : b)
    for (auto v : batch.target().to_vector<std::int32_t>()) again.push_back(v);
  a.set_epoch(1);
  for (const Batch& batch : a)
    for (auto v : batch.target().to_vector<std::int32_t>()) other.push_back(v);
  BOOST_TEST(first == again, boost::test_tools::per_element());
  BOOST_TEST(first != other);
  BOOST_TEST(std::set<std::int32_t>(first.begin(), first.end()).size() == 100u);  // every sample once
  // Inputs travel with their targets.
  const Batch batch = a[3];
  const auto x = batch.input().to_vector();
  const auto y = batch.target().to_vector<std::int32_t>();
  for (std::size_t i = 0; i < y.size(); ++i) BOOST_TEST(x[i] == static_cast<float>(y[i]));
}

BOOST_AUTO_TEST_CASE(composes_with_range_v3) {
  const DataLoader loader{numbered(50), {.batch_size = 8}};
  std::int64_t seen = 0;
  for (auto [i, batch] : loader | ranges::views::enumerate | ranges::views::take(3)) {
    BOOST_TEST(batch.index == static_cast<std::int64_t>(i));
    ++seen;
  }
  BOOST_TEST(seen == 3);
  std::vector<std::int64_t> sizes;
  for (std::int64_t s : loader | ranges::views::transform([](const Batch& b) { return b.size(); })) sizes.push_back(s);
  BOOST_TEST(sizes == (std::vector<std::int64_t>{8, 8, 8, 8, 8, 8, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(dataset_checks_and_views) {
  BOOST_CHECK_EXCEPTION(Dataset(Tensor::zeros({5, 2}), Tensor::zeros({4}), "bad"), ShapeError,
                        message_has({"'bad'", "5 samples in input 0", "4 in target 0"}));
  const Dataset d = numbered(10);
  BOOST_TEST(d.take(3).size() == 3);
  BOOST_TEST(d.subset(2, 5).targets().to_vector<std::int32_t>()[0] == 2);
  const auto [a, b] = d.split(0.7, 1);
  BOOST_TEST(a.size() == 7);
  BOOST_TEST(b.size() == 3);
  std::set<std::int32_t> all;
  for (auto v : a.targets().to_vector<std::int32_t>()) all.insert(v);
  for (auto v : b.targets().to_vector<std::int32_t>()) all.insert(v);
  BOOST_TEST(all.size() == 10u);
}
