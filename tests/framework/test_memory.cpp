#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

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

namespace {

// Writes `text` to `root`/`path`, making its folders.
void put(const std::filesystem::path& root, const std::string& path, const std::string& text) {
  std::filesystem::create_directories((root / path).parent_path());
  std::ofstream(root / path) << text;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_room_is_the_least_limit_on_the_way_up_the_control_groups) {
  // cgroup v1, a group below the root (Docker on older hosts, Slurm): its own limit binds, not the
  // root's (which the check used to read alone, so a 2 GiB container was OOM-killed).
  test::TempDir v1{"cgroup_v1"};
  put(v1.path, "memory/memory.limit_in_bytes", "9223372036854771712\n");
  put(v1.path, "memory/memory.usage_in_bytes", "4000000000\n");
  put(v1.path, "memory/docker/abc/memory.limit_in_bytes", "2147483648\n");
  put(v1.path, "memory/docker/abc/memory.usage_in_bytes", "147483648\n");
  const std::string self_v1 = "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n";
  BOOST_TEST(detail::cgroup_room(self_v1, v1.path.string()).value() == 2000000000u);
  // The same inside the container, which sees the host's path but has its own group mounted at the
  // root: the walk up finds the root's files.
  test::TempDir inside{"cgroup_v1_inside"};
  put(inside.path, "memory/memory.limit_in_bytes", "2147483648\n");
  put(inside.path, "memory/memory.usage_in_bytes", "1147483648\n");
  BOOST_TEST(detail::cgroup_room(self_v1, inside.path.string()).value() == 1000000000u);
  // cgroup v2: a parent's memory.max binds its children; a leaf without a limit ("max") counts none.
  test::TempDir v2{"cgroup_v2"};
  put(v2.path, "jobs/memory.max", "1073741824\n");
  put(v2.path, "jobs/memory.current", "73741824\n");
  put(v2.path, "jobs/student/memory.max", "max\n");
  put(v2.path, "jobs/student/memory.current", "50000000\n");
  BOOST_TEST(detail::cgroup_room("0::/jobs/student\n", v2.path.string()).value() == 1000000000u);
  // v2 beside v1 hierarchies (hybrid), under /sys/fs/cgroup/unified.
  test::TempDir hybrid{"cgroup_hybrid"};
  put(hybrid.path, "unified/lab/memory.max", "600000000\n");
  put(hybrid.path, "unified/lab/memory.current", "100000000\n");
  BOOST_TEST(detail::cgroup_room("0::/lab\n", hybrid.path.string()).value() == 500000000u);
  // No limit anywhere: nothing known.
  BOOST_TEST(!detail::cgroup_room("0::/\n", v2.path.string() + "/none").has_value());
}

BOOST_AUTO_TEST_CASE(a_file_that_asks_for_more_than_the_room_is_refused_naming_it) {
  set_memory_limit(Device::cpu(), std::size_t{64} << 20);
  BOOST_CHECK_EXCEPTION(require_memory_for_file(std::size_t{1} << 30, "x.npz (2 arrays)"), IoError,
                        message_has({"x.npz (2 arrays) needs 1.00 GiB once read", "under its memory limit of 64.00 MiB"}));
  require_memory_for_file(std::size_t{1} << 20, "small");
  set_memory_limit(Device::cpu(), 0);
}
