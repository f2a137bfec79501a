#include "test_util.hpp"

using namespace accrue;
using accrue::test::message_has;

namespace {
std::size_t live(MemoryCategory c) { return memory_stats().live_of(c); }
}  // namespace

BOOST_AUTO_TEST_CASE(categories_count_live_and_peak) {
  const std::size_t before = live(MemoryCategory::temporaries);
  reset_peak_memory();
  {
    const Tensor t = Tensor::zeros({1000});
    BOOST_TEST(live(MemoryCategory::temporaries) == before + 4000);
    const Tensor p = Tensor::zeros({250}, {.category = MemoryCategory::parameters});
    BOOST_TEST(memory_stats().peak_of(MemoryCategory::parameters) >= 1000u);
  }
  BOOST_TEST(live(MemoryCategory::temporaries) == before);
  BOOST_TEST(memory_stats().peak_of(MemoryCategory::temporaries) >= before + 4000);
  reset_peak_memory();
  BOOST_TEST(memory_stats().peak_of(MemoryCategory::temporaries) == before);
}

BOOST_AUTO_TEST_CASE(saved_for_backward_counts_as_activations_and_grads_as_gradients) {
  const Tensor w = accrue::test::leaf(Tensor::ones({256, 256}, {.category = MemoryCategory::parameters}));
  const std::size_t act0 = live(MemoryCategory::activations), grad0 = live(MemoryCategory::gradients);
  {
    const Tensor x = Tensor::ones({8, 256});
    const Tensor h = ops::relu(ops::linear(x, w, Tensor()));  // relu keeps its output for backward
    BOOST_TEST(live(MemoryCategory::activations) >= act0 + 8 * 256 * 4);
    ops::sum(h).backward();
    BOOST_TEST(live(MemoryCategory::gradients) == grad0 + 256 * 256 * 4);
  }
  BOOST_TEST(live(MemoryCategory::activations) == act0);
}

BOOST_AUTO_TEST_CASE(limit_refuses_with_a_breakdown_and_keeps_state) {
  Allocator& cpu = allocator(Device::cpu());
  const Tensor keep = Tensor::full({100}, 3.0f);
  cpu.set_limit(memory_stats().live_total + 1024);
  BOOST_CHECK_EXCEPTION(Tensor::zeros({1 << 20}), OutOfMemory,
                        message_has({"out of memory on cpu", "4.00 MiB", "limit", "temporaries"}));
  cpu.set_limit(0);
  BOOST_TEST(keep.to_vector()[99] == 3.0f);
  BOOST_TEST(Tensor::zeros({1 << 20}).numel() == (1 << 20));
}

BOOST_AUTO_TEST_CASE(cache_reuses_blocks) {
  const std::size_t reserved0 = memory_stats().reserved;
  for (int i = 0; i < 10; ++i) Tensor::zeros({4096});
  BOOST_TEST(memory_stats().reserved <= reserved0 + 4096 * 4);
  allocator(Device::cpu()).empty_cache();
  BOOST_TEST(memory_stats().reserved <= reserved0 + 4096 * 4);
}

BOOST_AUTO_TEST_CASE(format_bytes_is_binary) {
  BOOST_TEST(format_bytes(512) == "512 B");
  BOOST_TEST(format_bytes(2048) == "2.00 KiB");
  BOOST_TEST(format_bytes(3u << 20) == "3.00 MiB");
}
