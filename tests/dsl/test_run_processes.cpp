// RunProcesses (dsl/fit/run_processes.hpp), the processes of a run: alone (ctest's plain run) and
// under mpirun (test_run_processes_np2, label mpi), where every case checks what the processes
// agree on, each rank with its own values.

#include <accrue/dsl/fit/run_processes.hpp>

#include "../test_util.hpp"

using namespace accrue;
using accrue::detail::RunProcesses;
using accrue::detail::RunSignature;
using namespace accrue::test;

namespace {

Sequential model(bool sync) {
  Sequential m{layers::Input{6}, layers::Dense{4}, layers::BatchNorm1d{{.sync = sync}}};
  m.build(Shape{6});
  return m;
}

std::vector<Tensor> parameters(const Sequential& m) {
  std::vector<Tensor> p;
  for (auto& [name, t] : m.trainable_parameters()) p.push_back(t);
  return p;
}

}  // namespace

BOOST_AUTO_TEST_CASE(alone_is_one_process_that_shares_nothing) {
  const RunProcesses alone{false};
  BOOST_TEST(alone.size() == 1);
  BOOST_TEST(alone.rank() == 0);
  BOOST_TEST(alone.all().backend() == "single process");
  RunProcesses distributed{true};
  BOOST_TEST(distributed.size() == distributed::world().size());
  BOOST_TEST(&distributed.all() == &distributed::world());
  Sequential m = model(true);
  RunProcesses single{false};
  single.share_gradients(m, parameters(m), 1 << 20);
  BOOST_TEST(!single.reducer());
  BOOST_TEST(!single.statistics_group());
}

BOOST_AUTO_TEST_CASE(several_processes_reduce_gradients_and_share_statistics_only_where_asked) {
  const int n = distributed::world().size();
  for (bool sync : {false, true}) {
    Sequential m = model(sync);
    RunProcesses p{true};
    p.share_gradients(m, parameters(m), 1 << 20);
    BOOST_TEST((p.reducer() != nullptr) == (n > 1));
    BOOST_TEST((p.statistics_group() != nullptr) == (n > 1 && sync));
  }
}

BOOST_AUTO_TEST_CASE(one_failure_stops_every_process) {
  const RunProcesses p{true};
  const int n = p.size(), last = n - 1;
  p.agree_on_failure(nullptr);  // none failed: all go on
  const std::exception_ptr failed = p.rank() == last ? std::make_exception_ptr(ValueError("no such file")) : nullptr;
  if (p.rank() == last)  // its own error, with its rank
    BOOST_CHECK_EXCEPTION(p.agree_on_failure(failed), ValueError,
                          message_has({"rank " + std::to_string(last) + ": ", "no such file"}));
  else  // the others name it
    BOOST_CHECK_EXCEPTION(p.agree_on_failure(failed), CommunicationError,
                          message_has({"rank " + std::to_string(last) + " could not start training", "no such file"}));
}

BOOST_AUTO_TEST_CASE(a_run_that_differs_on_one_process_is_refused_everywhere) {
  const RunProcesses p{true};
  const int n = p.size(), last = n - 1;
  const RunSignature same{{"epochs", "3"}, {"layer 0 'dense' (Dense)", "units=4\nbias=true\n"}};
  p.agree_on(same, 1, 2);
  const RunSignature epochs{{"epochs", p.rank() == last ? "4" : "3"}, same[1]};
  const RunSignature layer{same[0], {same[1].first, p.rank() == last ? "units=4\nbias=false\n" : same[1].second}};
  if (n == 1) {
    p.agree_on(epochs, 1, 2);
    p.agree_on(layer, 1, 2);
    BOOST_TEST_MESSAGE("one process: a difference needs mpirun (test_run_processes_np2)");
    return;
  }
  const std::string rank = "rank " + std::to_string(last);
  BOOST_CHECK_EXCEPTION(p.agree_on(epochs, 1, 2), ValueError, message_has({"the epochs is '3' on rank 0 and '4' on " + rank}));
  BOOST_CHECK_EXCEPTION(p.agree_on(layer, 1, 2), ValueError,
                        message_has({"layer 0 'dense' (Dense) has bias=true on rank 0 and bias=false on " + rank}));
}

BOOST_AUTO_TEST_CASE(buffers_become_rank_0s_and_replicas_that_drift_are_found) {
  const RunProcesses p{true};
  const int n = p.size();
  const std::string last = "rank " + std::to_string(n - 1);
  Sequential m = model(false);  // the same seed: the same parameters on every rank
  p.check_replicas(m, 0);
  // Running statistics each process kept from its own samples: replicas apart until shared.
  for (auto& [name, t] : m.named_buffers())
    if (t.dtype() == DType::f32) t.fill_(static_cast<float>(p.rank() + 1));
  if (n > 1)
    BOOST_CHECK_EXCEPTION(p.check_replicas(m, 0), CommunicationError,
                          message_has({"after epoch 1 the parameters on rank 1 differ from rank 0's"}));  // the first that differs
  p.take_rank_0s(m.named_buffers());
  for (auto& [name, t] : m.named_buffers())
    if (t.dtype() == DType::f32)
      for (float v : t.to_vector<float>()) BOOST_REQUIRE_EQUAL(v, 1.0f);
  p.check_replicas(m, 1);
  // A parameter that drifted on one process.
  if (p.rank() == n - 1) m.trainable_parameters().front().second.fill_(0.5f);
  if (n > 1)
    BOOST_CHECK_EXCEPTION(p.check_replicas(m, 2), CommunicationError, message_has({"after epoch 3", last}));
  else
    p.check_replicas(m, 2);
}

BOOST_AUTO_TEST_CASE(the_epochs_metrics_count_every_process) {
  const RunProcesses p{true};
  metrics::MeanLoss loss;
  loss.add(static_cast<double>(p.rank() + 1) * 10.0, 10);  // a mean of rank + 1 over 10 samples
  Logs logs;
  logs.set("loss", 123.0);
  p.aggregate_metrics(loss, {}, logs);
  const int n = p.size();
  // Alone the logs are left as they were; together the loss is the mean over all n * 10 samples.
  BOOST_TEST(logs.at("loss") == (n == 1 ? 123.0 : (n + 1) / 2.0), boost::test_tools::tolerance(1e-12));
}
