// The CUDA backend's index arithmetic and launch planning, run on the CPU: each GPU kernel's
// per-thread work is emulated element by element with the same kernels/common code the .cu files
// call, and compared with the CPU backend. What the GPU adds on top (block reductions, launches)
// is covered by the `gpu` suite on a machine with a device.

#include <accrue/kernels/amp_update.hpp>
#include <accrue/kernels/common/broadcast_index.hpp>
#include <accrue/kernels/common/row_sums.hpp>
#include <accrue/kernels/common/cross_entropy.hpp>
#include <accrue/kernels/common/dropout.hpp>
#include <accrue/kernels/dropout.hpp>
#include <accrue/kernels/common/algorithm_choice.hpp>
#include <accrue/kernels/common/conv_geometry.hpp>
#include <accrue/kernels/common/gemm_layout.hpp>
#include <accrue/kernels/common/multi_tensor.hpp>
#include <accrue/kernels/cross_entropy.hpp>
#include <accrue/kernels/elementwise.hpp>
#include <accrue/kernels/cpu/gemm.hpp>
#include <accrue/kernels/gemm.hpp>
#include <accrue/kernels/optimizer_update.hpp>
#include <accrue/kernels/reduce.hpp>
#include <limits>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

const std::vector<std::pair<Shape, Shape>> broadcast_cases = {
    {{4, 5}, {4, 5}},          {{4, 5}, {5}},       {{4, 5}, {4, 1}}, {{3, 1, 5}, {1, 4, 1}},
    {{2, 3, 4, 5}, {3, 1, 5}}, {{}, {2, 3}},        {{6}, {}},        {{2, 1, 3, 1}, {1, 5, 1, 4}},
    {{1}, {7, 1, 2}},          {{3, 4, 1}, {1, 1, 6}}, {{2, 0, 3}, {3}},
    {{2, 3, 4, 5}, {2, 3, 4, 5}}, {{6, 1, 4, 5}, {1, 7, 4, 5}}, {{2, 3, 1, 1}, {1, 1, 4, 5}},
};

// Column-major C (m x n, ldc) = op(first) op(second), written the obvious way.
void reference_column_major_gemm(const kernels::common::ColumnMajorGemm& g) {
  const auto* first = static_cast<const float*>(g.first);
  const auto* second = static_cast<const float*>(g.second);
  auto* c = static_cast<float*>(g.c);
  for (std::int64_t j = 0; j < g.n; ++j)
    for (std::int64_t i = 0; i < g.m; ++i) {
      double s = 0.0;
      for (std::int64_t p = 0; p < g.k; ++p) {
        const float f = g.trans_first ? first[p + i * g.ld_first] : first[i + p * g.ld_first];
        const float q = g.trans_second ? second[j + p * g.ld_second] : second[p + j * g.ld_second];
        s += static_cast<double>(f) * q;
      }
      c[i + j * g.ldc] = static_cast<float>(s);
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(broadcast_index_reads_what_the_cpu_kernel_reads) {
  std::uint64_t seed = 1;
  for (const auto& [as, bs] : broadcast_cases) {
    const Shape os = kernels::broadcast_shapes(as, bs, "test");
    const Tensor a = random_tensor(as, seed++), b = random_tensor(bs, seed++, 0.5f, 2.0f);
    const auto av = a.to_vector(), bv = b.to_vector();
    const kernels::common::BroadcastIndex index = kernels::common::broadcast_index(as, bs, os);
    // Operands of one shape merge into one dimension, which the GPU kernel maps without a division.
    if (as == bs) BOOST_TEST(index.rank <= 1, as.str() << " with itself keeps " << index.rank << " dimensions");
    for (auto op : {kernels::BinaryOp::add, kernels::BinaryOp::sub, kernels::BinaryOp::mul, kernels::BinaryOp::div}) {
      const Tensor cpu = Tensor::empty(os);
      kernels::binary_forward(op, a, b, cpu);
      // The GPU kernel's thread i.
      std::vector<float> emulated(static_cast<std::size_t>(os.numel()));
      for (std::int64_t i = 0; i < os.numel(); ++i) {
        std::int64_t oa = 0, ob = 0;
        index.offsets(i, &oa, &ob);
        const float x = av[static_cast<std::size_t>(oa)], y = bv[static_cast<std::size_t>(ob)];
        emulated[static_cast<std::size_t>(i)] = op == kernels::BinaryOp::add   ? x + y
                                                : op == kernels::BinaryOp::sub ? x - y
                                                : op == kernels::BinaryOp::mul ? x * y
                                                                               : x / y;
      }
      check_close(cpu, emulated, 0.0, 0.0, "broadcast " + as.str() + " with " + bs.str());
    }
  }
}

BOOST_AUTO_TEST_CASE(split_rows_cover_every_value_once) {
  for (const std::int64_t outer : {1, 3, 100, 1023, 1024, 5000})
    for (const std::int64_t D : {0, 1, 16383, 16384, 300000, 1000003, 50000000}) {
      const kernels::common::RowSplit s = kernels::common::split_rows(outer, D);
      BOOST_TEST_CONTEXT(outer << " rows of " << D) {
        BOOST_TEST(s.chunks >= 1);
        BOOST_TEST(s.chunks * s.chunk >= D);               // every value in a chunk
        BOOST_TEST((s.chunks - 1) * s.chunk < std::max<std::int64_t>(D, 1));  // no chunk empty
        BOOST_TEST(outer * s.chunks <= std::max<std::int64_t>(outer, 1024));  // within the blocks' target
        BOOST_TEST((s.chunks > 1) == (D >= 16384 && 2 * outer <= 1024));  // two chunks a row at least
      }
    }
}

BOOST_AUTO_TEST_CASE(sum_to_shape_index_gathers_what_the_cpu_kernel_sums) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{4, 5}, {5}},          {{4, 5}, {4, 1}},    {{4, 5}, {}},       {{3, 4, 5}, {4, 1}}, {{2, 3, 4, 5}, {3, 1, 5}},
      {{2, 3, 4, 5}, {1, 1}}, {{7, 1, 2}, {1, 2}}, {{6}, {6}},         {{2, 5, 1, 4}, {5, 1, 1}},
      {{300, 10}, {10}},      {{3000}, {}},        {{2, 0, 3}, {3}},
  };
  std::uint64_t seed = 100;
  for (const auto& [dys, ds] : cases) {
    const Tensor dy = random_tensor(dys, seed++);
    const auto dyv = dy.to_vector();
    const Tensor cpu = Tensor::empty(ds);
    kernels::sum_to_shape(dy, cpu, 0.5f, false);
    const kernels::common::SumToShapeIndex index = kernels::sum_to_shape_index(dys, ds);
    // The GPU kernels: thread (or block) j sums its reduced_count elements of dy.
    std::vector<float> emulated(static_cast<std::size_t>(ds.numel()));
    for (std::int64_t j = 0; j < ds.numel(); ++j) {
      double s = 0.0;
      for (std::int64_t r = 0; r < index.reduced_count; ++r)
        s += dyv[static_cast<std::size_t>(index.base(j) + index.reduced_offset(r))];
      emulated[static_cast<std::size_t>(j)] = static_cast<float>(0.5 * s);
    }
    BOOST_TEST(index.reduced_count * std::max<std::int64_t>(ds.numel(), 1) == (ds.numel() == 0 ? index.reduced_count : dys.numel()));
    check_close(cpu, emulated, 1e-5, 1e-5, "sum of " + dys.str() + " to " + ds.str());
  }
}

BOOST_AUTO_TEST_CASE(multi_tensor_plan_covers_every_element_once_within_the_limits) {
  const std::vector<std::vector<std::int64_t>> lists = {
      {10, 20, 30},
      {0, 5, 0, 7},
      {65536, 65537, 1},
      {1000000, 3, 4000000},  // one tensor longer than a launch's blocks
      std::vector<std::int64_t>(100, 1000),  // more tensors than a launch's table holds
      {},
  };
  const int max_tensors = 24, max_blocks = 320;
  const std::int64_t chunk = 65536;
  for (const auto& sizes : lists) {
    const auto launches = kernels::common::plan_multi_tensor(sizes, max_tensors, max_blocks, chunk);
    std::vector<std::vector<int>> seen(sizes.size());
    for (const auto& l : launches) {
      BOOST_TEST(static_cast<int>(l.tensors.size()) <= max_tensors);
      BOOST_TEST(static_cast<int>(l.block_slot.size()) <= max_blocks);
      BOOST_TEST(!l.block_slot.empty());
      BOOST_REQUIRE(l.block_slot.size() == l.block_chunk.size());
      for (std::size_t b = 0; b < l.block_slot.size(); ++b) {
        const int t = l.tensors.at(static_cast<std::size_t>(l.block_slot[b]));
        seen[static_cast<std::size_t>(t)].push_back(static_cast<int>(l.block_chunk[b]));
      }
    }
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      const std::int64_t chunks = (sizes[t] + chunk - 1) / chunk;
      std::vector<int> expected(static_cast<std::size_t>(chunks));
      for (std::int64_t c = 0; c < chunks; ++c) expected[static_cast<std::size_t>(c)] = static_cast<int>(c);
      BOOST_TEST(seen[t] == expected, "tensor " << t << " of " << sizes.size() << ": chunks covered once, in order");
    }
  }
}

BOOST_AUTO_TEST_CASE(column_major_mapping_of_row_major_gemm) {
  // cuBLAS is column-major; common::column_major_gemm gives it the swapped problem. A column-major
  // reference fed those arguments must reproduce the CPU's row-major GEMM, for every transpose and
  // with leading dimensions wider than the matrices.
  const std::int64_t M = 5, N = 7, K = 3, pad = 2;
  std::uint64_t seed = 7;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const std::int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
      const Tensor A = random_tensor({ta ? K : M, lda}, seed++), B = random_tensor({tb ? N : K, ldb}, seed++);
      std::vector<float> expected(static_cast<std::size_t>(M * ldc), 0.0f), got = expected;
      kernels::cpu::gemm(ta, tb, M, N, K, 1.0f, A.data<float>(), lda, B.data<float>(), ldb, 0.0f, expected.data(), ldc);
      reference_column_major_gemm(
          kernels::common::column_major_gemm(ta, tb, M, N, K, A.data<float>(), lda, B.data<float>(), ldb, got.data(), ldc));
      check_close(got, expected, 1e-5, 1e-5, std::string("gemm trans_a=") + (ta ? "1" : "0") + " trans_b=" + (tb ? "1" : "0"));
    }
}

BOOST_AUTO_TEST_CASE(cross_entropy_pieces_match_the_row_kernel) {
  // The GPU forward reduces max, sum of exp and sum of logits across a block, then calls
  // cross_entropy_loss; backward calls cross_entropy_grad per element.
  const std::int64_t B = 6, C = 11;
  const Tensor logits = random_tensor({B, C}, 3, -4.0f, 4.0f);
  const Tensor labels = Tensor::from(std::vector<std::int32_t>{0, 10, 3, 3, 7, 1}, {B});
  for (float smoothing : {0.0f, 0.1f}) {
    const Tensor loss = Tensor::empty({B}), lse = Tensor::empty({B});
    kernels::cross_entropy_forward(logits, labels, smoothing, kernels::common::no_ignored_label, loss, lse);
    const Tensor g = random_tensor({B}, 4), dlogits = Tensor::empty({B, C});
    kernels::cross_entropy_backward(logits, labels, smoothing, kernels::common::no_ignored_label, lse, g, dlogits, false);
    const std::vector<float> x = logits.to_vector(), gv = g.to_vector();
    const std::vector<std::int32_t> y = labels.to_vector<std::int32_t>();
    std::vector<float> loss_e(B), lse_e(B), grad_e(static_cast<std::size_t>(B * C));
    for (std::int64_t b = 0; b < B; ++b) {
      const float* row = x.data() + b * C;
      float m = -std::numeric_limits<float>::infinity(), s = 0.0f, sum = 0.0f;
      for (std::int64_t j = 0; j < C; ++j) m = std::max(m, row[j]);
      for (std::int64_t j = 0; j < C; ++j) s += std::exp(row[j] - m);
      for (std::int64_t j = 0; j < C; ++j) sum += row[j];
      lse_e[b] = m + std::log(s);
      loss_e[b] = kernels::common::cross_entropy_loss(lse_e[b], row[y[b]], sum, C, smoothing);
      for (std::int64_t j = 0; j < C; ++j)
        grad_e[static_cast<std::size_t>(b * C + j)] =
            gv[b] * kernels::common::cross_entropy_grad(row[j], lse_e[b], j == y[b], C, smoothing);
    }
    check_close(lse, lse_e, 1e-5, 1e-5, "log-sum-exp");
    check_close(loss, loss_e, 1e-5, 1e-5, "loss");
    check_close(dlogits, grad_e, 1e-6, 1e-5, "gradient");
  }
}

BOOST_AUTO_TEST_CASE(list_forms_equal_one_tensor_at_a_time) {
  // The optimizer, norm, unscale and clip kernels take all tensors at once (one launch on a GPU);
  // on the CPU the list form must equal the per-tensor form exactly.
  const std::vector<Shape> shapes = {{7, 3}, {3}, {100}, {2, 2, 2}};
  std::vector<Tensor> p1, p2, g, m1, m2, v1, v2;
  std::uint64_t seed = 50;
  for (const Shape& s : shapes) {
    const Tensor p = random_tensor(s, seed++);
    p1.push_back(p.clone());
    p2.push_back(p.clone());
    g.push_back(random_tensor(s, seed++));
    m1.push_back(Tensor::zeros(s));
    m2.push_back(Tensor::zeros(s));
    v1.push_back(Tensor::zeros(s));
    v2.push_back(Tensor::zeros(s));
  }
  const kernels::common::AdamRule::Hyper h{1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f, true, false, false, 1.0f - 1e-4f, 1e-2f / 0.1f,
                                     std::sqrt(0.001f)};
  using kernels::common::AdamRule;
  std::vector<kernels::UpdateSlot<AdamRule::states>> slots;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    kernels::optimizer_update<AdamRule>({p1[i], g[i], {m1[i], v1[i], Tensor{}}}, h);
    slots.push_back({p2[i], g[i], {m2[i], v2[i], Tensor{}}});
  }
  kernels::optimizer_update<AdamRule>(slots, h);
  for (std::size_t i = 0; i < shapes.size(); ++i) check_close(p2[i], p1[i], 0.0, 0.0, "adam list form");

  double one_by_one = 0.0;
  for (const Tensor& t : g) one_by_one += kernels::sum_of_squares(t);
  BOOST_TEST(kernels::sum_of_squares(std::span<const Tensor>(g)) == one_by_one);

  std::vector<Tensor> scaled;
  for (const Tensor& t : g) scaled.push_back(t.clone());
  BOOST_TEST(!kernels::unscale_and_check(scaled, 0.25f));
  for (std::size_t i = 0; i < g.size(); ++i) check_close(scaled[i], (g[i] * 0.25f), 0.0, 0.0, "unscaled");
  scaled[2].narrow(5, 6).fill_(std::numeric_limits<float>::infinity());
  BOOST_TEST(kernels::unscale_and_check(scaled, 1.0f), "an inf in the third tensor is found");

  kernels::unary_in_place(kernels::UnaryOp::clamp, {-0.5f, 0.5f}, g);
  for (const Tensor& t : g)
    for (float x : t.to_vector()) BOOST_TEST((x >= -0.5f && x <= 0.5f));
}

BOOST_AUTO_TEST_CASE(zero_sized_gemms_come_to_beta_c) {
  using kernels::common::GemmWork;
  using kernels::common::gemm_work;
  BOOST_TEST((gemm_work(0, 4, 3, 0.0f) == GemmWork::nothing));
  BOOST_TEST((gemm_work(4, 0, 3, 0.5f) == GemmWork::nothing));
  BOOST_TEST((gemm_work(4, 5, 0, 1.0f) == GemmWork::nothing));
  BOOST_TEST((gemm_work(4, 5, 0, 0.0f) == GemmWork::zero_c));
  BOOST_TEST((gemm_work(4, 5, 0, 0.5f) == GemmWork::scale_c));
  BOOST_TEST((gemm_work(4, 5, 3, 0.0f) == GemmWork::gemm));
  // The CPU backend's answer, which the GPU suite compares the CUDA one with: C = beta C.
  for (float beta : {0.0f, 1.0f, 0.5f}) {
    const Tensor a = Tensor::empty({4, 0}), b = Tensor::empty({0, 5});
    const Tensor c = random_tensor({4, 5}, 3);
    const std::vector<float> before = c.to_vector();
    kernels::gemm(false, false, 1.0f, a, b, beta, c);
    std::vector<float> want = before;
    for (float& v : want) v *= beta;
    check_close(c, want, 0, 0, fmt::format("K = 0, beta {}", beta));
  }
}

BOOST_AUTO_TEST_CASE(zero_sized_convolutions_are_said_before_cudnn_is_called) {
  using kernels::ConvPass;
  using kernels::ConvWork;
  using kernels::conv_work;
  const kernels::Window2d base{.N = 2, .C = 3, .H = 5, .W = 5, .R = 3, .S = 3, .K = 4};
  for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_filter, ConvPass::backward_bias})
    BOOST_TEST((conv_work(pass, base) == ConvWork::convolve));
  kernels::Window2d empty_batch = base;
  empty_batch.N = 0;  // no output, no input gradient, and weight and bias gradients of no term: zero
  BOOST_TEST((conv_work(ConvPass::forward, empty_batch) == ConvWork::nothing));
  BOOST_TEST((conv_work(ConvPass::backward_data, empty_batch) == ConvWork::nothing));
  BOOST_TEST((conv_work(ConvPass::backward_filter, empty_batch) == ConvWork::no_terms));
  BOOST_TEST((conv_work(ConvPass::backward_bias, empty_batch) == ConvWork::no_terms));
  kernels::Window2d small = base;
  small.H = 2;  // a 3x3 window fits nowhere in 2 rows: no output positions
  BOOST_TEST((conv_work(ConvPass::forward, small) == ConvWork::nothing));
  BOOST_TEST((conv_work(ConvPass::backward_data, small) == ConvWork::no_terms));
  BOOST_TEST((conv_work(ConvPass::backward_filter, small) == ConvWork::no_terms));
  kernels::Window2d no_channels = base;
  no_channels.C = 0;  // every output is the bias alone
  BOOST_TEST((conv_work(ConvPass::forward, no_channels) == ConvWork::no_terms));
  BOOST_TEST((conv_work(ConvPass::backward_filter, no_channels) == ConvWork::nothing));

  // The CPU backend on an empty batch: an empty output, and zero weight and bias gradients.
  const Tensor x = accrue::test::leaf(Tensor::empty({0, 3, 5, 5}));
  const Tensor w = accrue::test::leaf(random_tensor({4, 3, 3, 3}, 1));
  const Tensor bias = accrue::test::leaf(random_tensor({4}, 2));
  const Tensor y = ops::conv2d(x, w, bias);
  BOOST_TEST(y.shape() == (Shape{0, 4, 3, 3}));
  ops::sum(y).backward();
  check_close(w.grad(), std::vector<float>(4 * 27, 0.0f), 0, 0, "weight gradient of an empty batch");
  check_close(bias.grad(), std::vector<float>(4, 0.0f), 0, 0, "bias gradient of an empty batch");
}

BOOST_AUTO_TEST_CASE(convolution_algorithms_are_chosen_by_real_workspace_and_plain_math) {
  using kernels::common::AlgorithmCandidate;
  using kernels::common::choose_algorithm;
  constexpr int plain[] = {0, 1}, tensor_op = 2, fallback = 0;
  const std::size_t cap = 1000;
  // What the library answers when asked for an algorithm's workspace: 7 is refused.
  const auto workspace = [](int algo) -> std::optional<std::size_t> {
    switch (algo) {
      case 0: return 0;
      case 3: return 5000;  // estimated at 10, needs more than the cap
      case 4: return 600;
      case 7: return std::nullopt;
      default: return 100;
    }
  };
  const std::vector<AlgorithmCandidate> ranked = {
      {5, false, 1},         // not supported here
      {6, true, tensor_op},  // TF32 math
      {3, true, 1},          // cuDNN estimates 10 bytes, but asked, needs more than the cap
      {7, true, 1},          // the library refuses to size it
      {4, true, 0},          // estimated at 2000, asked, fits
      {8, true, 1}};
  const auto choice = choose_algorithm(std::span{ranked}, std::span{plain}, cap, fallback, workspace);
  BOOST_REQUIRE(choice.has_value());
  BOOST_TEST(choice->algorithm == 4);
  BOOST_TEST(choice->workspace == 600u);
  // None fits: the algorithm without a workspace.
  const std::vector<AlgorithmCandidate> none = {{6, true, tensor_op}, {3, true, 1}};
  const auto fallen = choose_algorithm(std::span{none}, std::span{plain}, cap, fallback, workspace);
  BOOST_REQUIRE(fallen.has_value());
  BOOST_TEST(fallen->algorithm == fallback);
  BOOST_TEST(!choose_algorithm(std::span{none}, std::span{plain}, cap, 7, workspace).has_value());
}

BOOST_AUTO_TEST_CASE(the_cpu_dropout_draws_the_shared_mask) {
  // The CPU computes sixteen Philox blocks side by side; each element's factor must be the one
  // common::dropout_factor (which the GPU runs) gives, also at uneven sizes and offsets.
  for (const std::int64_t n : {1, 3, 63, 64, 65, 1000}) {
    const std::uint64_t seed = 0x1234567890abcdefull, offset = 77;
    const Tensor ones = Tensor::ones({n}), out = Tensor::empty({n});
    kernels::dropout_forward(ones, out, 0.3f, seed, offset);
    const std::vector<float> got = out.to_vector();
    for (std::int64_t i = 0; i < n; ++i)
      BOOST_TEST(got[static_cast<std::size_t>(i)] ==
                 kernels::common::dropout_factor(seed, offset, static_cast<std::uint64_t>(i), 0.3f, 1.0f / 0.7f));
  }
}
