// sync_batch_norm and the allreduce_sum it is written with. Alone (ctest runs this without mpirun
// too) it is ops::batch_norm, with finite-difference gradients; under mpirun with 2 and 3
// processes (label mpi) each process holds a contiguous share of one global batch, some of them
// none, and outputs, input gradients, summed weight gradients and running statistics must be
// those of ops::batch_norm over the whole batch in one process.

#include <accrue/framework/distributed/sync_batch_norm.hpp>

#include "../test_util.hpp"

using namespace accrue;
using namespace accrue::test;

BOOST_AUTO_TEST_CASE(alone_it_is_batch_norm_with_its_gradients) {
  const auto alone = distributed::single_process();
  const Tensor x = leaf(random_tensor({4, 3, 2, 2}, 1, -2, 3));
  const Tensor w = leaf(random_tensor({3}, 2, 0.5f, 1.5f)), b = leaf(random_tensor({3}, 3));
  Tensor rm = Tensor::zeros({3}), rv = Tensor::ones({3}), rm_ref = Tensor::zeros({3}), rv_ref = Tensor::ones({3});
  const Tensor weights = random_tensor({4, 3, 2, 2}, 4);
  const Tensor y = distributed::sync_batch_norm(x, rm, rv, w, b, 0.1f, 1e-5f, *alone);
  ops::sum(y * weights).backward();
  const Tensor dx = x.grad().detach(), dw = w.grad().detach(), db = b.grad().detach();
  Tensor{x}.set_grad(Tensor()), Tensor{w}.set_grad(Tensor()), Tensor{b}.set_grad(Tensor());
  const Tensor y_ref = ops::batch_norm(x, rm_ref, rv_ref, w, b, true, 0.1f, 1e-5f);
  ops::sum(y_ref * weights).backward();
  test::check_close(y, y_ref, 1e-5, 1e-5, "output");
  test::check_close(dx, x.grad(), 1e-5, 1e-4, "dx");
  test::check_close(dw, w.grad(), 1e-5, 1e-4, "dweight");
  test::check_close(db, b.grad(), 1e-5, 1e-4, "dbias");
  test::check_close(rm, rm_ref, 1e-6, 1e-5, "running_mean");
  test::check_close(rv, rv_ref, 1e-6, 1e-5, "running_var");

  const auto f = [&](const std::vector<Tensor>& in) {
    return distributed::sync_batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], 0.1f, 1e-5f, *alone);
  };
  const GradcheckResult r = gradcheck(f, {x, w, b}, {.eps = 1e-2, .atol = 5e-3, .rtol = 2e-2, .max_elements = 300});
  BOOST_CHECK_MESSAGE(r.ok, "sync_batch_norm: gradients differ from finite differences (max error "
                                << r.max_abs_error << ")\n" << r.report);
  const GradcheckResult s = gradcheck([&](const std::vector<Tensor>& in) { return distributed::allreduce_sum(in[0], *alone); },
                                      {leaf(random_tensor({5}, 5))});
  BOOST_CHECK_MESSAGE(s.ok, "allreduce_sum: " << s.report);
}

BOOST_AUTO_TEST_CASE(over_processes_it_is_batch_norm_of_the_global_batch) {
  distributed::Communicator& world = distributed::world();
  const std::int64_t n = world.size(), r = world.rank();
  // 7 samples: uneven shares; n - 1 samples of 4 values: one process has none (and n = 2 leaves
  // one sample, whose 4 values per channel still have a variance).
  for (const std::int64_t total : {std::int64_t{7}, n == 1 ? std::int64_t{1} : n - 1}) {
    const Tensor global = random_tensor({total, 3, 2, 2}, 10 + total, -2, 3);
    const Tensor weights = random_tensor({total, 3, 2, 2}, 20 + total);
    const std::int64_t begin = total * r / n, end = total * (r + 1) / n;
    const Tensor x = leaf(ops::clone(ops::narrow(global, begin, end)));
    const Tensor w = leaf(random_tensor({3}, 2, 0.5f, 1.5f)), b = leaf(random_tensor({3}, 3));
    Tensor rm = Tensor::zeros({3}), rv = Tensor::ones({3});
    const Tensor y = distributed::sync_batch_norm(x, rm, rv, w, b, 0.1f, 1e-5f, world);
    ops::sum(y * ops::narrow(weights, begin, end)).backward();

    const Tensor xg = leaf(ops::clone(global));
    const Tensor wg = leaf(random_tensor({3}, 2, 0.5f, 1.5f)), bg = leaf(random_tensor({3}, 3));
    Tensor rmg = Tensor::zeros({3}), rvg = Tensor::ones({3});
    const Tensor yg = ops::batch_norm(xg, rmg, rvg, wg, bg, true, 0.1f, 1e-5f);
    ops::sum(yg * weights).backward();

    const std::string what = fmt::format("{} samples, rank {} of {} holds {}..{}", total, r, n, begin, end);
    test::check_close(y, ops::narrow(yg, begin, end), 1e-5, 1e-4, what + ": output");
    test::check_close(x.grad(), ops::narrow(xg.grad(), begin, end), 1e-5, 1e-4, what + ": dx");
    // The weight's gradient is each process's part, summed as the reducer sums it.
    Tensor dw = ops::clone(w.grad()), db = ops::clone(b.grad());
    world.allreduce_sum(dw);
    world.allreduce_sum(db);
    test::check_close(dw, wg.grad(), 1e-5, 1e-4, what + ": dweight");
    test::check_close(db, bg.grad(), 1e-5, 1e-4, what + ": dbias");
    test::check_close(rm, rmg, 1e-6, 1e-5, what + ": running_mean");
    test::check_close(rv, rvg, 1e-6, 1e-5, what + ": running_var");
  }
}

BOOST_AUTO_TEST_CASE(one_value_per_channel_over_all_processes_is_refused) {
  distributed::Communicator& world = distributed::world();
  const Tensor x = Tensor::zeros({world.rank() == 0 ? 1 : 0, 3});
  BOOST_CHECK_EXCEPTION(distributed::sync_batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), 0.1f, 1e-5f, world),
                        ShapeError, test::message_has({"more than one value per channel", "1 values in all"}));
}
