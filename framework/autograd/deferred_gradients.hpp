#pragma once
// Weight gradients of linear maps multiplied once per accumulation window instead of once per
// micro-batch.
//
// Accumulating, each micro-batch adds dy^T x into the float32 .grad() of every Dense weight: on
// micro-batches of 8 or 16 rows that is a read and a write of the whole gradient for a product
// only 8 or 16 deep, which memory bounds. While a DeferredWeightGradients is open (fit opens one
// for WeightGradients::per_window), linear's backward copies its rows of x and dy aside instead,
// and the backward pass that closes the window multiplies all of them at once, still inside that
// pass, so everything after backward sees complete gradients. Where the GEMM adds into C in order
// (kernels::gemm_in_order_depth) the result has the bits of the per-micro-batch sums, so nothing
// else changes: checkpoints, resumes and comparisons with PyTorch stay exact.

#include <cstdint>
#include <functional>
#include <unordered_map>

#include "../core/non_copyable.hpp"
#include "autograd.hpp"

namespace accrue {

class DeferredWeightGradients : NonCopyable {
 public:
  /// Opens deferral on this thread (a fit inside a fit's callback opens its own for its time).
  DeferredWeightGradients();
  /// Closes it; rows still waiting are dropped (flush first to keep them).
  ~DeferredWeightGradients();

  /// Whether the next backward pass closes the window: there, waiting rows are multiplied.
  void set_closing(bool closing) { closing_ = closing; }
  /// Multiplies every waiting row into its weight's .grad(), for reading gradients inside a window
  /// (a checkpoint) or closing one whose last backward did not reach a layer.
  void flush();
  /// Drops the waiting rows, with the window's gradients.
  void discard();

  /// Rows a weight of `in` x `out` features keeps waiting on `device`: no more than the GEMM adds in
  /// order, and x's and dy's rows together at most half the weight's gradient; 0 (never deferred)
  /// when that is less than two micro-batches of `rows` rows. Its buffers of capacity x (in + out)
  /// floats count as gradients' memory; when the next micro-batch does not fit, what waits is
  /// multiplied first.
  static std::int64_t capacity_rows(Device device, std::int64_t rows, std::int64_t in, std::int64_t out);
  /// The bytes of those buffers, for memory plans.
  static std::size_t buffer_bytes(Device device, std::int64_t rows, std::int64_t in, std::int64_t out) {
    return static_cast<std::size_t>(capacity_rows(device, rows, in, out) * (in + out)) * sizeof(float);
  }

  /// For linear's backward: takes dW = dy^T x for the weight behind `weight` (x: rows x in, dy:
  /// rows x out, float32) when deferral is open on this thread and the weight qualifies, multiplying
  /// into `sink` whatever is due; false: the caller computes dW now.
  static bool take(const Edge& weight, const Tensor& x, const Tensor& dy, GradSink& sink, std::size_t input);

 private:
  struct Waiting {
    Edge weight;
    Tensor x, dy;  // capacity x in, capacity x out; 0 rows: never deferred
    std::int64_t capacity = 0, rows = 0;
  };
  static void multiply(Waiting& w, const std::function<GradSink::Target()>& target);

  DeferredWeightGradients* previous_;
  bool closing_ = false;
  std::unordered_map<const detail::TensorImpl*, Waiting> waiting_;
};

}  // namespace accrue
