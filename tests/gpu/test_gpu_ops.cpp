// Every op and kernel of the CUDA backend against the CPU backend: forward values and gradients.
// A table, as ggml's test-backend-ops: each GPU_OP_CASE names the kernels' Ops it runs on both
// devices, and `test_gpu_ops --table` (ctest's test_gpu_op_table, which needs no GPU) fails when an
// Op the CPU backend supports has no case.

#include <accrue/kernels/amp_update.hpp>
#include <accrue/kernels/cast.hpp>
#include <accrue/framework/core/device_query.hpp>
#include <accrue/kernels/dispatch.hpp>
#include <accrue/kernels/elementwise.hpp>
#include <accrue/kernels/gemm.hpp>
#include <accrue/kernels/optimizer_update.hpp>
#include <accrue/kernels/reduce.hpp>
#include <functional>
#include <limits>

#include "gpu_test.hpp"

using namespace accrue;
using namespace accrue::test;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Runs f on leaves on the CPU and on their copies on the GPU; compares the outputs and, through a
// fixed random weighting of the output, every input's gradient.
void compare(const std::string& name, const std::vector<Tensor>& inputs, const Fn& f, double tol = 1e-5) {
  std::vector<Tensor> cpu_in, gpu_in;
  for (const Tensor& t : inputs) {
    cpu_in.push_back(leaf(t.clone().detach()));
    gpu_in.push_back(on_gpu(cpu_in.back()));
  }
  const Tensor y_cpu = f(cpu_in);
  const Tensor y_gpu = f(gpu_in);
  check_gpu_close(y_gpu, y_cpu, tol, tol, name + " forward");
  const Tensor w = random_tensor(y_cpu.shape(), 99);
  ops::sum(ops::mul(ops::float32(y_cpu), w)).backward();
  ops::sum(ops::mul(ops::float32(y_gpu), w.to(gpu()))).backward();
  for (std::size_t i = 0; i < inputs.size(); ++i)
    check_gpu_close(gpu_in[i].grad(), cpu_in[i].grad(), tol, tol, name + " gradient of input " + std::to_string(i));
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_gpu_runs_every_op_the_cpu_runs) {
  // What the other tests here exercise, asked of the table rather than found by a failing call.
  for (const kernels::Op op : kernels::all_ops())
    for (const DType t : {DType::f32, DType::f16, DType::bf16, DType::i32})
      BOOST_TEST(kernels::supports(op, gpu(), t) == kernels::supports(op, Device::cpu(), t),
                 kernels::op_name(op) << " in " << dtype_name(t));
}

GPU_OP_CASE(tensors_move_between_devices_exactly, kernels::Op::copy) {
  const Tensor a = random_tensor({17, 33}, 1);
  const Tensor g = a.to(gpu());
  BOOST_TEST(g.device() == gpu());
  BOOST_TEST(g.to(Device::cpu()).to_vector() == a.to_vector());
  const Tensor labels = Tensor::from(std::vector<std::int32_t>{3, 1, 4, 1, 5}, {5});
  BOOST_TEST(labels.to(gpu()).to_vector<std::int32_t>() == labels.to_vector<std::int32_t>());
  BOOST_TEST(Tensor::full({3}, 2.0f, {.dtype = DType::i32, .device = gpu()}).to_vector<std::int32_t>() ==
             std::vector<std::int32_t>({2, 2, 2}));
  BOOST_CHECK_EXCEPTION(g.data<float>(), ValueError, message_has({"cuda:0", "to(Device::cpu())"}));
}

GPU_OP_CASE(random_fills_match_the_cpu, kernels::Op::random_fill) {
  // Philox is counter-based: the same seed and offset give the same numbers on both devices.
  Generator a{5}, b{5};
  // low + (high - low) u: nvcc may fuse it into one FMA, which rounds once where the CPU rounds twice.
  check_gpu_close(Tensor::uniform({1000}, -2.0f, 3.0f, &b, {.device = gpu()}), Tensor::uniform({1000}, -2.0f, 3.0f, &a),
                  1e-6, 1e-6, "uniform");
  check_gpu_close(Tensor::normal({1001}, 1.0f, 2.0f, &b, {.device = gpu()}), Tensor::normal({1001}, 1.0f, 2.0f, &a), 1e-5,
                  1e-5, "normal");
}

GPU_OP_CASE(unary_ops, kernels::Op::unary) {
  const Tensor x = away_from_zero({37, 29}, 2);
  const Tensor positive = random_tensor({37, 29}, 3, 0.1f, 3.0f);
  const std::vector<std::pair<std::string, Fn>> ops_list = {
      {"relu", [](auto& v) { return ops::relu(v[0]); }},
      {"gelu", [](auto& v) { return ops::gelu(v[0]); }},
      {"gelu_tanh", [](auto& v) { return ops::gelu(v[0], true); }},
      {"sigmoid", [](auto& v) { return ops::sigmoid(v[0]); }},
      {"tanh", [](auto& v) { return ops::tanh(v[0]); }},
      {"exp", [](auto& v) { return ops::exp(v[0]); }},
      {"neg", [](auto& v) { return ops::neg(v[0]); }},
      {"square", [](auto& v) { return ops::square(v[0]); }},
      {"abs", [](auto& v) { return ops::abs(v[0]); }},
      {"affine", [](auto& v) { return ops::affine(v[0], 2.5f, -1.0f); }},
      {"clamp", [](auto& v) { return ops::clamp(v[0], -0.5f, 0.7f); }},
  };
  for (const auto& [name, f] : ops_list) compare(name, {x}, f);
  compare("log", {positive}, [](auto& v) { return ops::log(v[0]); });
  compare("sqrt", {positive}, [](auto& v) { return ops::sqrt(v[0]); });
  compare("pow", {positive}, [](auto& v) { return ops::pow(v[0], 1.7f); });
}

GPU_OP_CASE(unary_ops_in_low_precision, kernels::Op::unary) {
  for (DType t : {DType::f16, DType::bf16}) {
    BOOST_TEST_REQUIRE(kernels::supports(kernels::Op::unary, gpu(), t), dtype_name(t));
    const Tensor x = ops::cast(away_from_zero({64, 33}, 4), t);
    for (auto op : {kernels::UnaryOp::relu, kernels::UnaryOp::gelu, kernels::UnaryOp::tanh}) {
      const Tensor y_cpu = Tensor::empty(x.shape(), {.dtype = t});
      kernels::unary_forward(op, {}, x, y_cpu);
      const Tensor xg = x.to(gpu());
      const Tensor y_gpu = Tensor::empty(x.shape(), {.dtype = t, .device = gpu()});
      kernels::unary_forward(op, {}, xg, y_gpu);
      // One rounding of float32 math that may differ by an ulp: within one unit of the type.
      check_gpu_close(y_gpu, y_cpu, 1e-2, 1e-2, std::string(dtype_name(t)) + " unary");
    }
  }
}

GPU_OP_CASE(binary_ops_with_broadcasting, kernels::Op::binary, kernels::Op::sum_to_shape) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{8, 5}, {8, 5}}, {{8, 5}, {5}}, {{8, 5}, {8, 1}}, {{3, 1, 5}, {1, 4, 1}}, {{2, 3, 4, 5}, {3, 1, 5}}, {{}, {6, 2}},
      {{2000, 10}, {10}},  // a bias gradient summed over many rows (the block-reduction path)
  };
  std::uint64_t seed = 10;
  for (const auto& [as, bs] : shapes) {
    const Tensor a = random_tensor(as, seed++), b = random_tensor(bs, seed++, 0.5f, 2.0f);
    compare("add " + as.str() + bs.str(), {a, b}, [](auto& v) { return ops::add(v[0], v[1]); }, 1e-4);
    compare("sub " + as.str() + bs.str(), {a, b}, [](auto& v) { return ops::sub(v[0], v[1]); }, 1e-4);
    compare("mul " + as.str() + bs.str(), {a, b}, [](auto& v) { return ops::mul(v[0], v[1]); }, 1e-4);
    compare("div " + as.str() + bs.str(), {a, b}, [](auto& v) { return ops::div(v[0], v[1]); }, 1e-4);
  }
}

GPU_OP_CASE(reductions, kernels::Op::sum_dim, kernels::Op::expand_dim, kernels::Op::argmax_rows,
            kernels::Op::sum_of_squares) {
  const Tensor x = random_tensor({6, 7, 8}, 20);
  compare("sum", {x}, [](auto& v) { return ops::sum(v[0]); }, 1e-4);
  compare("mean", {x}, [](auto& v) { return ops::mean(v[0]); }, 1e-5);
  for (int dim : {0, 1, 2, -1})
    for (bool keep : {false, true}) {
      compare("sum dim " + std::to_string(dim), {x}, [=](auto& v) { return ops::sum(v[0], dim, keep); }, 1e-4);
      compare("mean dim " + std::to_string(dim), {x}, [=](auto& v) { return ops::mean(v[0], dim, keep); }, 1e-5);
    }
  const Tensor big = random_tensor({300000}, 21);
  compare("sum of 300000", {big}, [](auto& v) { return ops::sum(v[0]); }, 1e-3);
  // Few long rows split across blocks (common::split_rows).
  const Tensor rows = random_tensor({3, 100000}, 23);
  compare("mean of 3 rows of 100000", {rows}, [](auto& v) { return ops::mean(v[0], 1, false); }, 1e-5);
  const Tensor logits = random_tensor({50, 13}, 22);
  BOOST_TEST(ops::argmax(logits.to(gpu())).to_vector<std::int32_t>() == ops::argmax(logits).to_vector<std::int32_t>());
  double cpu_sq = kernels::sum_of_squares(big);
  double gpu_sq = kernels::sum_of_squares(big.to(gpu()));
  BOOST_TEST(std::abs(gpu_sq - cpu_sq) <= 1e-9 * cpu_sq);
}

GPU_OP_CASE(shape_ops_and_matmul, kernels::Op::gemm, kernels::Op::permute, kernels::Op::copy_columns,
            kernels::Op::gather_rows, kernels::Op::scatter_add_rows, kernels::Op::add_into) {
  const Tensor x = random_tensor({4, 3, 5}, 30), w = random_tensor({6, 15}, 31), b = random_tensor({6}, 32);
  compare("reshape+linear", {x, w, b},
          [](auto& v) { return ops::linear(ops::reshape(v[0], {4, 15}), v[1], v[2]); }, 1e-4);
  compare("narrow", {x}, [](auto& v) { return ops::narrow(v[0], 1, 3); });
  compare("flatten", {x}, [](auto& v) { return ops::flatten(v[0]); });
  compare("permute", {x}, [](auto& v) { return ops::permute(v[0], {2, 0, 1}); });
  compare("transpose used twice", {x},
          [](auto& v) { return ops::add(ops::transpose(v[0], 0, 1), ops::transpose(v[0], 0, 1)); });
  const Tensor a = random_tensor({33, 17}, 33), c = random_tensor({17, 9}, 34);
  compare("matmul", {a, c}, [](auto& v) { return ops::matmul(v[0], v[1]); }, 1e-4);
  compare("slice", {x}, [](auto& v) { return ops::slice(v[0], 1, 1, 3); });
  compare("cat", {x, random_tensor({4, 2, 5}, 38)}, [](auto& v) {
    const std::vector<Tensor> parts = {v[0], v[1], v[0]};
    return ops::cat(parts, 1);
  });
  const Tensor tokens = Tensor::from(std::vector<std::int32_t>{5, 0, 5, 9, 2, 5, 7, 0}, {2, 4});
  compare("embedding", {random_tensor({10, 6}, 37)},
          [&](auto& v) { return ops::embedding(v[0], tokens.to(v[0].device()), 2); });
  const Tensor q = random_tensor({2, 3, 17, 8}, 35), k = random_tensor({2, 3, 19, 8}, 36);
  compare("bmm q k^T", {q, k}, [](auto& v) { return ops::bmm(v[0], v[1], {.transpose_b = true}); }, 1e-4);
  compare("bmm q^T k^T", {ops::transpose(q, -1, -2), k},
          [](auto& v) { return ops::bmm(v[0], v[1], {.transpose_a = true, .transpose_b = true}); }, 1e-4);
}

GPU_OP_CASE(gemm_every_transpose_and_low_precision, kernels::Op::gemm, kernels::Op::fill) {
  const std::int64_t M = 37, N = 21, K = 45;
  std::uint64_t seed = 40;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const Tensor A = random_tensor(ta ? Shape{K, M} : Shape{M, K}, seed++);
      const Tensor B = random_tensor(tb ? Shape{N, K} : Shape{K, N}, seed++);
      const Tensor C = random_tensor({M, N}, seed++);
      const Tensor c_cpu = C.clone(), c_gpu = C.to(gpu());
      kernels::gemm(ta, tb, 0.5f, A, B, 0.25f, c_cpu);
      kernels::gemm(ta, tb, 0.5f, A.to(gpu()), B.to(gpu()), 0.25f, c_gpu);
      check_gpu_close(c_gpu, c_cpu, 1e-4, 1e-4, "sgemm");
      for (DType low : {DType::f16, DType::bf16}) {
        BOOST_TEST_REQUIRE(kernels::supports(kernels::Op::gemm, gpu(), low), dtype_name(low));
        const Tensor l_cpu = Tensor::zeros({M, N}), l_gpu = Tensor::zeros({M, N}, {.device = gpu()});
        kernels::gemm(ta, tb, 1.0f, A, B, 0.0f, l_cpu, low);
        kernels::gemm(ta, tb, 1.0f, A.to(gpu()), B.to(gpu()), 0.0f, l_gpu, low);
        // Same rounded inputs, float32 accumulation in another order.
        check_gpu_close(l_gpu, l_cpu, 1e-3, 1e-3, std::string("gemm in ") + std::string(dtype_name(low)));
      }
    }
}

GPU_OP_CASE(softmax_and_log_softmax_over_cudnn, kernels::Op::softmax) {
  const Tensor x = random_tensor({5, 7, 3}, 50, -3.0f, 3.0f);
  for (int dim : {0, 1, 2}) {
    compare("softmax dim " + std::to_string(dim), {x}, [=](auto& v) { return ops::softmax(v[0], dim); });
    compare("log_softmax dim " + std::to_string(dim), {x}, [=](auto& v) { return ops::log_softmax(v[0], dim); });
  }
}

GPU_OP_CASE(masked_softmax_matches_the_cpu, kernels::Op::masked_softmax) {
  const Tensor scores = random_tensor({2, 4, 7, 9}, 60, -3, 3);
  const Tensor mask = random_tensor({7, 9}, 61);
  compare("masked_softmax causal", {scores}, [](auto& v) { return ops::masked_softmax(v[0], {.scale = 0.5f, .causal = true}); });
  compare("masked_softmax with a mask", {scores},
          [&](auto& v) { return ops::masked_softmax(v[0], {.scale = 0.5f, .mask = mask.to(v[0].device())}); });
}

GPU_OP_CASE(attention_matches_the_cpu, kernels::Op::attention) {
  const Tensor q = random_tensor({2, 4, 7, 8}, 62, -1, 1), k = random_tensor({2, 4, 9, 8}, 63, -1, 1);
  const Tensor v = random_tensor({2, 4, 9, 5}, 64, -1, 1), mask = random_tensor({7, 9}, 65);
  const Tensor padding = Tensor::from(std::vector<std::int32_t>(18, 0), {2, 9});
  compare("attention causal", {q, k, v},
          [](auto& in) { return ops::scaled_dot_product_attention(in[0], in[1], in[2], {.causal = true}); });
  compare("attention masked, padded", {q, k, v}, [&](auto& in) {
    return ops::scaled_dot_product_attention(
        in[0], in[1], in[2], {.mask = mask.to(in[0].device()), .key_padding = padding.to(in[0].device())});
  });
  compare("attention dropout", {q, k, v}, [](auto& in) {
    Generator generator{5};
    return ops::scaled_dot_product_attention(in[0], in[1], in[2], {.dropout = 0.25f, .generator = &generator});
  });
  compare("attention token-major", {ops::transpose(q, 1, 2), ops::transpose(k, 1, 2), ops::transpose(v, 1, 2)},
          [](auto& in) {
            return ops::scaled_dot_product_attention(in[0], in[1], in[2], {.causal = true, .token_major = true});
          });
}

GPU_OP_CASE(cross_entropy_fused, kernels::Op::cross_entropy) {
  const Tensor logits = random_tensor({64, 10}, 60, -5.0f, 5.0f);
  Generator gen{61};
  std::vector<std::int32_t> y(64);
  for (auto& v : y) v = static_cast<std::int32_t>(gen.below(10));
  const Tensor labels = Tensor::from(y, {64});
  for (auto r : {Reduction::mean, Reduction::sum}) {
    std::vector<Tensor> cpu_in{leaf(logits.clone().detach())};
    const Tensor g_in = on_gpu(cpu_in[0]);
    const Tensor l_cpu = ops::cross_entropy(cpu_in[0], labels, r);
    const Tensor l_gpu = ops::cross_entropy(g_in, labels.to(gpu()), r);
    check_gpu_close(l_gpu, l_cpu, 1e-5, 1e-5, "cross-entropy");
    l_cpu.backward();
    l_gpu.backward();
    check_gpu_close(g_in.grad(), cpu_in[0].grad(), 1e-6, 1e-5, "cross-entropy gradient");
  }
  // A wide row (a vocabulary) exercises the block reductions with many elements per thread.
  const Tensor wide = random_tensor({3, 5000}, 62, -5.0f, 5.0f);
  const Tensor wl = Tensor::from(std::vector<std::int32_t>{0, 4999, 1234}, {3});
  check_gpu_close(ops::cross_entropy(wide.to(gpu()), wl.to(gpu())), ops::cross_entropy(wide, wl), 1e-5, 1e-5,
                  "cross-entropy over 5000 classes");
  // A bad label is refused, naming it, on the GPU as on the CPU.
  const Tensor bad = Tensor::from(std::vector<std::int32_t>{1, 12, 3}, {3});
  BOOST_CHECK_EXCEPTION(ops::cross_entropy(random_tensor({3, 10}, 63).to(gpu()), bad.to(gpu())), ValueError,
                        message_has({"label 12", "sample 1"}));
}

GPU_OP_CASE(dropout_draws_the_cpu_mask, kernels::Op::dropout) {
  const Tensor x = random_tensor({40, 50}, 70);
  Generator a{71}, b{71};
  std::vector<Tensor> cpu_in{leaf(x.clone().detach())};
  const Tensor g_in = on_gpu(cpu_in[0]);
  const Tensor y_cpu = ops::dropout(cpu_in[0], 0.3f, true, &a);
  const Tensor y_gpu = ops::dropout(g_in, 0.3f, true, &b);
  check_gpu_close(y_gpu, y_cpu, 0.0, 1e-6, "dropout");
  ops::sum(y_cpu).backward();
  ops::sum(y_gpu).backward();
  check_gpu_close(g_in.grad(), cpu_in[0].grad(), 0.0, 1e-6, "dropout gradient");
}

GPU_OP_CASE(casts_round_as_on_the_cpu, kernels::Op::cast) {
  std::vector<float> v = random_tensor({1000}, 80, -70000.0f, 70000.0f).to_vector();
  const float inf = std::numeric_limits<float>::infinity();
  v.insert(v.end(), {0.0f, -0.0f, 1e-8f, -6e-8f, 65504.0f, 65520.0f, inf, -inf, std::nanf(""), 1.0f + 1.0f / 2048});
  const Tensor x = Tensor::from(v, {static_cast<std::int64_t>(v.size())});
  for (DType t : {DType::f16, DType::bf16}) {
    BOOST_TEST_REQUIRE(kernels::supports(kernels::Op::cast, gpu(), t), dtype_name(t));
    const Tensor c = ops::cast(x, t);
    const Tensor g = ops::cast(x.to(gpu()), t).to(Device::cpu());
    const std::vector<float> back_cpu = ops::float32(c).to_vector(), back_gpu = ops::float32(g).to_vector();
    for (std::size_t i = 0; i < v.size(); ++i) {
      const bool both_nan = std::isnan(back_cpu[i]) && std::isnan(back_gpu[i]);
      BOOST_TEST((both_nan || back_cpu[i] == back_gpu[i]), dtype_name(t) << " element " << i << " (" << v[i] << ")");
    }
  }
}

GPU_OP_CASE(optimizer_updates_over_many_tensors, kernels::Op::sgd_update, kernels::Op::adam_update) {
  // More tensors than one launch's table and more chunks than one launch's blocks.
  std::vector<Shape> shapes;
  for (int i = 0; i < 30; ++i) shapes.push_back({(i % 7) + 1, 13});
  shapes.push_back({5000, 5000});
  shapes.push_back({1});
  auto run = [&](Device device, bool adam, const kernels::common::AdamRule::Hyper& ah, const kernels::common::SgdRule::Hyper& sh) {
    std::vector<Tensor> params;
    std::vector<kernels::UpdateSlot<3>> aslots;
    std::vector<kernels::UpdateSlot<1>> sslots;
    std::uint64_t seed = 90;
    for (const Shape& s : shapes) {
      const Tensor p = random_tensor(s, seed++).to(device), g = random_tensor(s, seed++).to(device);
      params.push_back(p);
      aslots.push_back({p, g, {random_tensor(s, seed++, 0.0f, 0.1f).to(device), random_tensor(s, seed++, 0.0f, 0.1f).to(device),
                               random_tensor(s, seed++, 0.0f, 0.1f).to(device)}});
      sslots.push_back({p, g, {random_tensor(s, seed++).to(device)}});
    }
    if (adam) kernels::optimizer_update<kernels::common::AdamRule>(aslots, ah);
    else kernels::optimizer_update<kernels::common::SgdRule>(sslots, sh);
    return params;
  };
  for (bool decoupled : {false, true})
    for (bool amsgrad : {false, true}) {
      const kernels::common::AdamRule::Hyper ah{1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, decoupled, amsgrad, false, 1.0f - 1e-5f,
                                          1e-3f / 0.1f, std::sqrt(1.0f - 0.999f)};
      const auto c = run(Device::cpu(), true, ah, {}), g = run(gpu(), true, ah, {});
      for (std::size_t i = 0; i < c.size(); ++i) check_gpu_close(g[i], c[i], 1e-6, 1e-5, "adam tensor " + std::to_string(i));
    }
  for (bool first : {false, true})
    for (bool nesterov : {false, true}) {
      const kernels::common::SgdRule::Hyper sh{0.1f, 0.9f, 0.0f, 1e-4f, nesterov, false, first};
      const auto c = run(Device::cpu(), false, {}, sh), g = run(gpu(), false, {}, sh);
      for (std::size_t i = 0; i < c.size(); ++i) check_gpu_close(g[i], c[i], 1e-6, 1e-5, "sgd tensor " + std::to_string(i));
    }
}

GPU_OP_CASE(layerwise_and_adaptive_optimizers, kernels::Op::rmsprop_update, kernels::Op::adagrad_update,
            kernels::Op::lion_update, kernels::Op::lars_update, kernels::Op::lamb_moments, kernels::Op::average_update) {
  // Three steps of each optimizer over more tensors than one multi-tensor launch holds, a vector
  // (excluded from trust ratios) and a zero weight, on the CPU and on the GPU; then the parameters
  // and their moving average are compared.
  std::vector<Shape> shapes{{40, 30}, {30}, {3, 3}};
  for (int i = 0; i < 26; ++i) shapes.push_back({(i % 5) + 1, 7});
  const auto run = [&](Device device, const optim::AnyOptimizer& config) {
    std::vector<Tensor> params;
    std::uint64_t seed = 300;
    for (const Shape& s : shapes) {
      Tensor p = (params.size() == 2 ? Tensor::zeros(s) : random_tensor(s, seed++)).to(device);
      p.set_requires_grad(true);
      params.push_back(p);
    }
    const auto opt = config.create(params);
    opt->keep_average({.decay = 0.9});
    for (int step = 0; step < 3; ++step) {
      for (Tensor& p : params) p.set_grad(random_tensor(p.shape(), seed++).to(device));
      opt->step();
    }
    params.insert(params.end(), opt->average().begin(), opt->average().end());
    return params;
  };
  for (const optim::AnyOptimizer& config :
       {optim::AnyOptimizer{optim::RMSprop{.weight_decay = 0.01, .momentum = 0.9, .centered = true}},
        optim::AnyOptimizer{optim::Adagrad{.lr = 0.1, .lr_decay = 0.01, .weight_decay = 0.01}},
        optim::AnyOptimizer{optim::Lion{.lr = 1e-3, .weight_decay = 0.1}},
        optim::AnyOptimizer{optim::LARS{.lr = 0.5, .weight_decay = 1e-4, .trust_coefficient = 0.02}},
        optim::AnyOptimizer{optim::LAMB{.lr = 1e-2}}}) {
    const auto c = run(Device::cpu(), config), g = run(gpu(), config);
    for (std::size_t i = 0; i < c.size(); ++i) check_gpu_close(g[i], c[i], 1e-6, 1e-5, config.str() + " tensor " + std::to_string(i));
  }
}

GPU_OP_CASE(global_norm_unscale_and_clip_over_many_tensors, kernels::Op::sum_of_squares,
            kernels::Op::unscale_and_check, kernels::Op::unary_in_place) {
  std::vector<Tensor> cpu, dev;
  for (int i = 0; i < 40; ++i) {
    cpu.push_back(random_tensor({(i % 5) * 1000 + 3}, 100 + static_cast<std::uint64_t>(i)));
    dev.push_back(cpu.back().to(gpu()));
  }
  const double n_cpu = kernels::sum_of_squares(std::span<const Tensor>(cpu));
  const double n_gpu = kernels::sum_of_squares(std::span<const Tensor>(dev));
  BOOST_TEST(std::abs(n_gpu - n_cpu) <= 1e-9 * n_cpu);
  BOOST_TEST(!kernels::unscale_and_check(std::span<const Tensor>(cpu), 0.125f));
  BOOST_TEST(!kernels::unscale_and_check(std::span<const Tensor>(dev), 0.125f));
  for (std::size_t i = 0; i < cpu.size(); ++i) check_gpu_close(dev[i], cpu[i], 0.0, 0.0, "unscaled");
  kernels::unary_in_place(kernels::UnaryOp::clamp, {-0.05f, 0.05f}, dev);
  kernels::unary_in_place(kernels::UnaryOp::clamp, {-0.05f, 0.05f}, cpu);
  for (std::size_t i = 0; i < cpu.size(); ++i) check_gpu_close(dev[i], cpu[i], 0.0, 0.0, "clamped");
  // An overflow in one element of the 37th tensor is found by the one launch.
  dev[36].narrow(2, 3).fill_(std::numeric_limits<float>::infinity());
  BOOST_TEST(kernels::unscale_and_check(std::span<const Tensor>(dev), 1.0f));
  dev[36].narrow(2, 3).fill_(std::nanf(""));
  BOOST_TEST(kernels::unscale_and_check(std::span<const Tensor>(dev), 1.0f));
}

BOOST_AUTO_TEST_CASE(device_memory_is_counted_and_capped) {
  Allocator& a = allocator(gpu());
  const MemoryStats before = a.stats();
  {
    const Tensor p = Tensor::zeros({1000, 1000}, {.device = gpu(), .category = MemoryCategory::parameters});
    BOOST_TEST(a.stats().live_of(MemoryCategory::parameters) == before.live_of(MemoryCategory::parameters) + 4000000u);
  }
  BOOST_TEST(a.stats().live_of(MemoryCategory::parameters) == before.live_of(MemoryCategory::parameters));
  a.set_limit(a.stats().live_total + (1u << 20));
  BOOST_CHECK_EXCEPTION(Tensor::empty({1 << 20}, {.device = gpu()}), OutOfMemory,
                        message_has({"cuda:0", "limit", "temporaries"}));
  a.set_limit(0);
}

GPU_OP_CASE(convolution_pooling_and_normalization_match_the_cpu, kernels::Op::conv2d, kernels::Op::pool2d,
            kernels::Op::batch_norm, kernels::Op::group_norm) {
  // cuDNN's convolution, pooling and batch normalization, and the own group/layer-norm kernels.
  const std::vector<std::pair<std::string, ops::Conv2dOptions>> convs = {
      {"3x3 padding 1", {.padding = 1}},
      {"stride 2 dilation 2", {.stride = 2, .padding = 2, .dilation = 2}},
      {"groups 2", {.padding = 1, .groups = 2}},
  };
  for (const auto& [name, o] : convs)
    compare("conv2d " + name, {random_tensor({3, 4, 9, 8}, 1), random_tensor({6, 4 / o.groups, 3, 3}, 2), random_tensor({6}, 3)},
            [o](const auto& in) { return ops::conv2d(in[0], in[1], in[2], o); }, 1e-4);
  compare("conv2d 1x1 no bias", {random_tensor({2, 8, 5, 5}, 4), random_tensor({3, 8, 1, 1}, 5)},
          [](const auto& in) { return ops::conv2d(in[0], in[1], Tensor()); }, 1e-4);
  compare("max_pool2d 2x2", {random_tensor({2, 3, 8, 7}, 6)}, [](const auto& in) { return ops::max_pool2d(in[0]); });
  compare("max_pool2d 3 stride 2 padding 1", {random_tensor({2, 3, 8, 7}, 7)},
          [](const auto& in) { return ops::max_pool2d(in[0], {.kernel = 3, .stride = 2, .padding = 1}); });
  for (bool include : {true, false})
    compare(std::string("avg_pool2d count_include_pad ") + (include ? "on" : "off"), {random_tensor({2, 3, 8, 7}, 8)},
            [include](const auto& in) {
              return ops::avg_pool2d(in[0], {.kernel = 3, .stride = 2, .padding = 1, .count_include_pad = include});
            });
  compare("batch_norm training", {random_tensor({4, 3, 5, 5}, 9, -2, 3), random_tensor({3}, 10), random_tensor({3}, 11)},
          [](const auto& in) { return ops::batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true); }, 1e-4);
  compare("group_norm", {random_tensor({2, 6, 4, 4}, 12, -2, 3), random_tensor({6}, 13), random_tensor({6}, 14)},
          [](const auto& in) { return ops::group_norm(in[0], 3, in[1], in[2]); }, 1e-4);
  compare("layer_norm", {random_tensor({3, 4, 5}, 15, -2, 3), random_tensor({4, 5}, 16), random_tensor({4, 5}, 17)},
          [](const auto& in) { return ops::layer_norm(in[0], {4, 5}, in[1], in[2]); }, 1e-4);
  // Parameter gradients over more rows and channels than one block of the row kernel takes.
  compare("layer_norm 300 x 70", {random_tensor({300, 70}, 18, -2, 3), random_tensor({70}, 19), random_tensor({70}, 24)},
          [](const auto& in) { return ops::layer_norm(in[0], {70}, in[1], in[2]); }, 1e-4);
  // Running statistics move the same on both devices.
  Tensor rm = Tensor::zeros({3}), rv = Tensor::ones({3});
  Tensor rm_g = rm.to(gpu()), rv_g = rv.to(gpu());
  const Tensor x = random_tensor({4, 3, 5, 5}, 18, -1, 2);
  ops::batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.1f);
  ops::batch_norm(x.to(gpu()), rm_g, rv_g, Tensor(), Tensor(), true, 0.1f);
  check_gpu_close(rm_g, rm, 1e-5, 1e-5, "running_mean");
  check_gpu_close(rv_g, rv, 1e-5, 1e-5, "running_var");
}

GPU_OP_CASE(what_a_first_gpu_run_must_check, kernels::Op::conv2d, kernels::Op::pool2d, kernels::Op::batch_norm) {
  // The convolution algorithm cuDNN's heuristics give for the shapes the examples use, each pass.
  compare("conv2d 3x3, a batch of 64", {random_tensor({64, 1, 28, 28}, 20), random_tensor({32, 1, 3, 3}, 21), random_tensor({32}, 22)},
          [](const auto& in) { return ops::conv2d(in[0], in[1], in[2], {.padding = 1}); }, 1e-4);
  compare("conv2d 1x1 stride 2", {random_tensor({4, 8, 9, 9}, 23), random_tensor({16, 8, 1, 1}, 24), random_tensor({16}, 25)},
          [](const auto& in) { return ops::conv2d(in[0], in[1], in[2], {.stride = 2}); }, 1e-4);
  compare("conv2d depthwise", {random_tensor({4, 8, 9, 9}, 26), random_tensor({8, 1, 3, 3}, 27), random_tensor({8}, 28)},
          [](const auto& in) { return ops::conv2d(in[0], in[1], in[2], {.padding = 1, .groups = 8}); }, 1e-4);
  // x feeding two convolutions: its gradient accumulates into the first's (cuDNN's beta = 1).
  compare("conv2d gradients accumulated", {random_tensor({3, 4, 9, 8}, 29), random_tensor({6, 4, 3, 3}, 30), random_tensor({6, 4, 1, 1}, 31)},
          [](const auto& in) {
            return ops::add(ops::conv2d(in[0], in[1], Tensor(), {.padding = 1}), ops::conv2d(in[0], in[2], Tensor()));
          }, 1e-4);
  // Max pooling's ties: the CPU routes the gradient to the first maximum of a window; cuDNN must too.
  compare("max_pool2d of a constant", {Tensor::full({2, 3, 6, 6}, 0.5f)}, [](const auto& in) { return ops::max_pool2d(in[0]); });
  compare("max_pool2d of a negative constant, padded", {Tensor::full({2, 3, 7, 7}, -2.0f)},
          [](const auto& in) { return ops::max_pool2d(in[0], {.kernel = 3, .stride = 2, .padding = 1}); });
  // A constant channel: its variance is 0, and backward divides by sqrt(eps) (the forward's eps).
  std::vector<float> values = random_tensor({4, 3, 5, 5}, 32).to_vector();
  for (std::size_t i = 0; i < values.size(); ++i)
    if ((i / 25) % 3 == 1) values[i] = 0.75f;
  compare("batch_norm with a constant channel", {Tensor::from(values, {4, 3, 5, 5}), random_tensor({3}, 33), random_tensor({3}, 34)},
          [](const auto& in) { return ops::batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true, 0.1f, 1e-3f); }, 1e-3);
}

GPU_OP_CASE(empty_sizes_come_to_what_the_cpu_gives, kernels::Op::conv2d, kernels::Op::gemm) {
  // A batch of 0: no output, and weight and bias gradients of no term (zero), as on the CPU.
  compare("conv2d of an empty batch", {Tensor::empty({0, 3, 5, 5}), random_tensor({4, 3, 3, 3}, 40), random_tensor({4}, 41)},
          [](const auto& in) { return ops::conv2d(in[0], in[1], in[2], {.padding = 1}); });
  compare("dense of an empty batch", {Tensor::empty({0, 6}), random_tensor({5, 6}, 42), random_tensor({5}, 43)},
          [](const auto& in) { return ops::linear(in[0], in[1], in[2]); });
  // K = 0: C = beta C (cuBLAS refuses k = 0).
  for (float beta : {0.0f, 1.0f, 0.5f}) {
    const Tensor c = random_tensor({4, 5}, 44);
    const Tensor c_gpu = c.to(gpu());
    kernels::gemm(false, false, 1.0f, Tensor::empty({4, 0}), Tensor::empty({0, 5}), beta, c);
    kernels::gemm(false, false, 1.0f, Tensor::empty({4, 0}, {.device = gpu()}), Tensor::empty({0, 5}, {.device = gpu()}),
                  beta, c_gpu);
    check_gpu_close(c_gpu, c, 0, 0, fmt::format("gemm with K = 0, beta {}", beta));
  }
}
