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

std::string_view sharding_name(Sharding s) {
  switch (s) {
    case Sharding::none: return "none";
    case Sharding::optimizer_state: return "optimizer state";
    case Sharding::gradients_at_window_close: return "gradients at the window's close";
    case Sharding::gradients_each_micro_batch: return "gradients each micro-batch";
  }
  return "?";
}

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
  const TensorOptions gradients{.device = device(), .category = MemoryCategory::gradients};
  buffers_.resize(plan_.buckets().size());
  if (!shards_gradients()) {
    // The last bucket also carries each rank's "skip this window" flag and requests (sharded, the
    // buckets are reduce-scattered, and the flags go in a call of their own).
    for (std::size_t b = 0; b < buffers_.size(); ++b) buffers_[b] = Tensor::zeros({bucket_elements(b)}, gradients);
    for (std::size_t p = 0; p < parameters_.size(); ++p) parameters_[p].set_grad_place(slot(p));
  }
  if (sharded()) flags_ = Tensor::zeros({kFlags}, gradients);
  else if (buffers_.empty()) buffers_.push_back(Tensor::zeros({kFlags}, gradients));
}

Reducer::~Reducer() {
  for (Tensor& p : parameters_) p.set_grad_place(Tensor{});
}

std::size_t Reducer::buffer_bytes() const {
  std::size_t bytes = (part_.defined() ? part_.nbytes() : 0) + (flags_.defined() ? flags_.nbytes() : 0);
  for (const Tensor& b : buffers_)
    if (b.defined()) bytes += b.nbytes();
  return bytes;
}

// Bucket b's elements: its gradients and, unsharded, after the last bucket's the flags.
std::int64_t Reducer::bucket_elements(std::size_t b) const {
  return plan_.buckets()[b].elements + (b + 1 == plan_.buckets().size() && !sharded() ? kFlags : 0);
}

Tensor Reducer::owned_part(std::size_t b) const {
  const int rank = communicator_.rank();
  const std::int64_t count = shards_.bucket_counts(b)[static_cast<std::size_t>(rank)];
  if (!shards_gradients()) {
    const std::int64_t at = shards_.bucket_offset(b, rank);
    return buffers_[b].narrow(at, at + count);
  }
  if (count == 0) return part_.narrow(0, 0);
  const std::int64_t at = std::max(shards_.bucket_start(b), shards_.begin(rank)) - shards_.begin(rank);
  return part_.narrow(at, at + count);
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

void Reducer::begin_backward() {
  if (options_.sharding != Sharding::gradients_at_window_close) return;
  // The window's gradients accumulate in buckets made for it, freed at its close (keep_part).
  for (std::size_t b = 0; b < buffers_.size(); ++b) make_bucket(b);
}

// Reduced every micro-batch, a bucket is made when backward reaches its first parameter, and the
// buckets started before it are first waited for, kept and freed: whole gradients then take the
// buckets backward is filling, not those of the layers it has not reached yet or has left (the
// least memory, for less overlap of communication with backward).
void Reducer::before_first_gradient(detail::TensorImpl& leaf) {
  if (!reduces_each_micro_batch()) return;
  const auto it = index_.find(&leaf);
  if (it == index_.end() || buffers_[plan_.bucket_of(it->second)].defined()) return;
  const NoGradGuard no_grad;
  for (; kept_ < started_.size(); ++kept_) {
    wait(kept_);
    keep_part(kept_);
  }
  make_bucket(plan_.bucket_of(it->second));
}

void Reducer::make_bucket(std::size_t b) {
  if (buffers_[b].defined()) return;
  buffers_[b] = Tensor::zeros({bucket_elements(b)}, {.device = device(), .category = MemoryCategory::gradients});
  for (const std::size_t p : plan_.buckets()[b].parameters) parameters_[p].set_grad_place(slot(p));
}

bool Reducer::in_bucket(std::size_t p) const {
  const Tensor grad = parameters_[p].grad();
  return grad.defined() && buffers_[plan_.bucket_of(p)].defined() && grad.data_ptr() == slot(p).data_ptr();
}

void Reducer::copy_in(std::size_t p) {
  if (in_bucket(p)) return;  // backward accumulated into the bucket itself
  make_bucket(plan_.bucket_of(p));  // stage 2: a bucket no gradient of this pass reached yet
  Tensor param = parameters_[p];
  const Tensor grad = param.grad();
  if (grad.defined())
    kernels::copy(grad, slot(p));
  else
    kernels::fill(slot(p), 0.0f);  // a parameter this window did not reach
  // Stage 2 frees a whole gradient kept elsewhere as soon as its bucket holds it.
  if (shards_gradients()) param.set_grad(Tensor{});
}

void Reducer::start(std::size_t bucket) {
  if (sharded()) started_.push_back(communicator_.start_reduce_scatter_sum(buffers_[bucket], shards_.bucket_counts(bucket)));
  else started_.push_back(communicator_.start_allreduce_sum(buffers_[bucket]));
  ++stats_.buckets_started;
}

bool Reducer::finish(bool skip_window) {
  const NoGradGuard no_grad;
  const std::int64_t end = sharded() ? kFlags : buffers_.back().numel();
  const Tensor flags = (sharded() ? flags_ : buffers_.back()).narrow(end - kFlags, end);  // on the buffers' device
  Tensor{flags}.copy_(Tensor::from({skip_window ? 1.0f : 0.0f, requested_.stop ? 1.0f : 0.0f,
                                    requested_.checkpoint ? 1.0f : 0.0f},
                                   {kFlags}));
  requested_ = {};
  start_rest();
  if (sharded()) started_.push_back(communicator_.start_allreduce_sum(flags_));
  end_pass();
  ++stats_.windows;
  window_passes_ = 0;
  const std::vector<float> raised = flags.to_vector<float>();
  agreed_ = {.stop = raised[1] > 0.0f, .checkpoint = raised[2] > 0.0f};
  if (raised[0] > 0.0f) return true;
  if (sharded()) return false;  // each rank's sums stay in its parts (owned_part)
  for (std::size_t p = 0; p < parameters_.size(); ++p) {
    if (in_bucket(p)) continue;  // the sum is already where the optimizer reads it
    const Tensor& param = parameters_[p];
    if (!param.grad().defined())
      Tensor{param}.set_grad(Tensor::empty(param.shape(), {.device = param.device(), .category = MemoryCategory::gradients}));
    kernels::copy(slot(p), param.grad());
  }
  return false;
}

void Reducer::release_part() { part_ = Tensor{}; }

Device Reducer::device() const { return parameters_.empty() ? Device::cpu() : parameters_.front().device(); }

void Reducer::end_micro_batch() {
  if (!reduces_each_micro_batch()) return;
  const NoGradGuard no_grad;
  start_rest();
  end_pass();
}

void Reducer::start_rest() {
  for (std::size_t b = started_.size(); b < buffers_.size(); ++b) {
    if (b < plan_.buckets().size())
      for (const std::size_t p : plan_.buckets()[b].parameters)
        if (!readiness_.is_ready(p)) copy_in(p);  // the rank's backward did not run, or did not reach it
    start(b);
  }
}

void Reducer::wait(std::size_t started) {
  const auto waiting = std::chrono::steady_clock::now();
  started_[started]->wait();
  stats_.waited_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting).count();
}

void Reducer::end_pass() {
  for (std::size_t w = kept_; w < started_.size(); ++w) wait(w);
  if (shards_gradients())
    for (std::size_t b = kept_; b < buffers_.size(); ++b) keep_part(b);
  started_.clear();
  kept_ = 0;
  readiness_.reset();
  ++window_passes_;
}

void Reducer::keep_part(std::size_t b) {
  if (!part_.defined()) {
    const int rank = communicator_.rank();
    part_ = Tensor::zeros({shards_.end(rank) - shards_.begin(rank)}, {.device = device(), .category = MemoryCategory::gradients});
  }
  const Tensor mine = owned_part(b);
  const std::int64_t at = shards_.bucket_offset(b, communicator_.rank());
  const Tensor summed = buffers_[b].narrow(at, at + mine.numel());
  if (window_passes_ == 0) kernels::copy(summed, mine);
  else kernels::add_into(mine, summed);  // micro-batches in order, each the processes' sum
  for (const std::size_t p : plan_.buckets()[b].parameters) {
    Tensor param = parameters_[p];
    if (in_bucket(p)) param.set_grad(Tensor{});
    param.set_grad_place(Tensor{});
  }
  buffers_[b] = Tensor{};
}

Tensor Reducer::slot(std::size_t p) const {
  const std::size_t b = plan_.bucket_of(p);
  const std::int64_t offset = plan_.buckets()[b].offsets[plan_.slot_of(p)];
  const Tensor& param = parameters_[p];
  return buffers_[b].narrow(offset, offset + param.numel()).reshape(param.shape());
}

}  // namespace accrue::distributed
