#include "reducer.hpp"

#include <algorithm>
#include <chrono>

#include "../core/error.hpp"
#include "../../kernels/elementwise.hpp"

namespace accrue::distributed {

namespace {

// The skip flag and the two requests, after the last bucket's gradients.
constexpr std::int64_t kFlags = 3;

std::vector<std::int64_t> element_counts(const std::vector<Tensor>& parameters) {
  std::vector<std::int64_t> n;
  n.reserve(parameters.size());
  for (const Tensor& p : parameters) n.push_back(p.numel());
  return n;
}

}  // namespace

Reducer::Reducer(Communicator& communicator, std::vector<Tensor> parameters, ReducerOptions options)
    : communicator_(communicator),
      parameters_(std::move(parameters)),
      options_(options),
      plan_(element_counts(parameters_), sizeof(float), options.bucket_bytes),
      readiness_(plan_),
      shards_(plan_, communicator.size()) {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& p = parameters_[i];
    ACCRUE_CHECK(p.dtype() == DType::f32, "data-parallel training reduces float32 gradients; parameter {} is {}", i,
                 dtype_name(p.dtype()));
    ACCRUE_CHECK(p.device() == parameters_.front().device(), "parameter {} is on {}, parameter 0 on {}", i, p.device(),
                 parameters_.front().device());
    index_.emplace(p.impl().get(), i);
  }
  const Device device = parameters_.empty() ? Device::cpu() : parameters_.front().device();
  for (std::size_t b = 0; b < plan_.buckets().size(); ++b) {
    // The last bucket also carries each rank's "skip this window" flag and requests (sharded, the
    // buckets are reduce-scattered, and the flags go in a call of their own).
    const std::int64_t extra = b + 1 == plan_.buckets().size() && !options_.shard ? kFlags : 0;
    buffers_.push_back(
        Tensor::zeros({plan_.buckets()[b].elements + extra}, {.device = device, .category = MemoryCategory::gradients}));
  }
  if (options_.shard) flags_ = Tensor::zeros({kFlags}, {.device = device, .category = MemoryCategory::gradients});
  else if (buffers_.empty()) buffers_.push_back(Tensor::zeros({kFlags}, {.device = device, .category = MemoryCategory::gradients}));
  for (std::size_t p = 0; p < parameters_.size(); ++p) parameters_[p].set_grad_place(slot(p));
}

Reducer::~Reducer() {
  for (Tensor& p : parameters_) p.set_grad_place(Tensor{});
}

std::size_t Reducer::buffer_bytes() const {
  std::size_t bytes = 0;
  for (const Tensor& b : buffers_) bytes += b.nbytes();
  return bytes;
}

// Starts the buckets this parameter completes, in order, unless an earlier one waits for finish().
// The last bucket always waits: it carries the skip flag, known only at the window's end (and
// backward is over by the time the first layers' gradients that fill it are complete).
void Reducer::on_leaf_gradient_ready(const detail::TensorImpl& leaf) {
  const auto it = index_.find(&leaf);
  if (it == index_.end()) return;  // not a parameter of this model
  copy_in(it->second);
  for (const std::size_t b : readiness_.mark_ready(it->second))
    if (options_.overlap && b + 1 < plan_.buckets().size() && b == started_.size()) {
      start(b);
      ++stats_.buckets_started_during_backward;
    }
}

bool Reducer::in_bucket(std::size_t p) const {
  const Tensor grad = parameters_[p].grad();
  return grad.defined() && grad.data_ptr() == slot(p).data_ptr();
}

void Reducer::copy_in(std::size_t p) {
  if (in_bucket(p)) return;  // backward accumulated into the bucket itself
  const Tensor grad = parameters_[p].grad();
  if (grad.defined())
    kernels::copy(grad, slot(p));
  else
    kernels::fill(slot(p), 0.0f);  // a parameter this window did not reach
}

void Reducer::start(std::size_t bucket) {
  if (options_.shard) started_.push_back(communicator_.start_reduce_scatter_sum(buffers_[bucket], shards_.bucket_counts(bucket)));
  else started_.push_back(communicator_.start_allreduce_sum(buffers_[bucket]));
  ++stats_.buckets_started;
}

bool Reducer::finish(bool skip_window) {
  const NoGradGuard no_grad;
  const std::int64_t end = options_.shard ? kFlags : buffers_.back().numel();
  const Tensor flags = (options_.shard ? flags_ : buffers_.back()).narrow(end - kFlags, end);  // on the buffers' device
  Tensor{flags}.copy_(Tensor::from({skip_window ? 1.0f : 0.0f, requested_.stop ? 1.0f : 0.0f,
                                    requested_.checkpoint ? 1.0f : 0.0f},
                                   {kFlags}));
  requested_ = {};
  for (std::size_t b = started_.size(); b < buffers_.size(); ++b) {
    if (b < plan_.buckets().size())
      for (const std::size_t p : plan_.buckets()[b].parameters)
        if (!readiness_.is_ready(p)) copy_in(p);  // the rank's backward did not run, or did not reach it
    start(b);
  }
  if (options_.shard) started_.push_back(communicator_.start_allreduce_sum(flags_));
  const auto waiting = std::chrono::steady_clock::now();
  for (const std::unique_ptr<Work>& w : started_) w->wait();
  stats_.waited_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting).count();
  started_.clear();
  readiness_.reset();
  ++stats_.windows;
  const std::vector<float> raised = flags.to_vector<float>();
  agreed_ = {.stop = raised[1] > 0.0f, .checkpoint = raised[2] > 0.0f};
  if (raised[0] > 0.0f) return true;
  if (options_.shard) return false;  // each rank's sums stay in its parts of the buckets
  for (std::size_t p = 0; p < parameters_.size(); ++p) {
    if (in_bucket(p)) continue;  // the sum is already where the optimizer reads it
    const Tensor& param = parameters_[p];
    if (!param.grad().defined())
      Tensor{param}.set_grad(Tensor::empty(param.shape(), {.device = param.device(), .category = MemoryCategory::gradients}));
    kernels::copy(slot(p), param.grad());
  }
  return false;
}

Tensor Reducer::slot(std::size_t p) const {
  const std::size_t b = plan_.bucket_of(p);
  const std::int64_t offset = plan_.buckets()[b].offsets[plan_.slot_of(p)];
  const Tensor& param = parameters_[p];
  return buffers_[b].narrow(offset, offset + param.numel()).reshape(param.shape());
}

}  // namespace accrue::distributed
