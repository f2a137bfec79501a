#pragma once
// Batches over a Dataset: in order or shuffled per epoch from a seed, keeping or dropping a short
// last batch. A DataLoader is a random-access range of Batch values, so range-v3 views compose
// with it: `for (auto [i, b] : loader | ranges::views::enumerate | ranges::views::take(10))`.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include "dataset.hpp"

namespace accrue {

struct LoaderOptions {
  std::int64_t batch_size = 32;
  bool shuffle = false;
  /// Shuffling seed; epoch e uses a permutation derived from (seed, e). Transforms draw their
  /// randomness from it too (transforms.hpp).
  std::uint64_t seed = 0;
  /// Leave out the last batch when it is short.
  bool drop_last = false;
  /// Data parallelism: batch i is this shard's part of the global batch i of batch_size x shards
  /// samples. The epoch's shuffled order is the same for every shard; each global batch is split
  /// into `shards` contiguous parts as evenly as possible (a short last one may leave a shard
  /// none), so every sample is used once per epoch and none is repeated.
  int shard = 0;
  int shards = 1;
};

/// Part `shard` of `shards` of a global batch of `count` samples, as positions [first, end) in it:
/// contiguous and as even as possible, the larger parts last.
std::pair<std::int64_t, std::int64_t> shard_of_batch(std::int64_t count, int shard, int shards);

/// A batch of samples: its inputs and targets (one of each, or several as the dataset's layout
/// has them), where it stands in its epoch and which samples it holds.
struct Batch {
  std::vector<Tensor> inputs;
  std::vector<Tensor> targets;
  /// Position of the batch in its epoch.
  std::int64_t index = 0;
  /// The dataset indices of its samples, in its order (this process's share).
  std::vector<std::int64_t> samples;
  std::int64_t size() const { return inputs.empty() ? 0 : inputs[0].size(0); }
  /// The one input (target); throws ValueError when there are several or none.
  const Tensor& input() const;
  const Tensor& target() const;
};

class DataLoader {
 public:
  /// Throws ValueError for a batch size below 1.
  DataLoader(Dataset dataset, LoaderOptions options);

  /// Batches per epoch: ceil(N / (batch_size x shards)), or floor with drop_last.
  std::int64_t size() const;
  /// Chooses the sample order of `epoch` (the same for the same seed and epoch).
  void set_epoch(std::int64_t epoch);
  std::int64_t epoch() const { return epoch_; }
  /// Batch i of the current epoch: views of data in memory taken in order, else a batch gathered
  /// or read (transformed as sample index, seed and epoch say).
  Batch operator[](std::int64_t i) const;
  /// The dataset indices of batch i's samples, in order: this shard's, or with `all_shards` those
  /// of every shard's part of global batch i.
  std::vector<std::int64_t> sample_indices(std::int64_t i, bool all_shards = false) const;

  /// What the current epoch's samples depend on besides their index: the seed and the epoch, from
  /// which transforms draw (transforms.hpp).
  ReadContext context() const { return {options_.seed, epoch_}; }

  const Dataset& dataset() const { return dataset_; }
  const LoaderOptions& options() const { return options_; }

  class iterator {
   public:
    using iterator_concept = std::random_access_iterator_tag;
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using reference = Batch;
    using difference_type = std::ptrdiff_t;

    iterator() = default;
    iterator(const DataLoader* loader, std::int64_t i) : loader_(loader), i_(i) {}
    Batch operator*() const { return (*loader_)[i_]; }
    Batch operator[](difference_type n) const { return (*loader_)[i_ + n]; }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    iterator operator++(int) {
      iterator t = *this;
      ++i_;
      return t;
    }
    iterator& operator--() {
      --i_;
      return *this;
    }
    iterator operator--(int) {
      iterator t = *this;
      --i_;
      return t;
    }
    iterator& operator+=(difference_type n) {
      i_ += n;
      return *this;
    }
    iterator& operator-=(difference_type n) {
      i_ -= n;
      return *this;
    }
    friend iterator operator+(iterator it, difference_type n) { return it += n; }
    friend iterator operator+(difference_type n, iterator it) { return it += n; }
    friend iterator operator-(iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const iterator& a, const iterator& b) { return a.i_ - b.i_; }
    friend bool operator==(const iterator& a, const iterator& b) { return a.i_ == b.i_; }
    friend auto operator<=>(const iterator& a, const iterator& b) { return a.i_ <=> b.i_; }

   private:
    const DataLoader* loader_ = nullptr;
    std::int64_t i_ = 0;
  };

  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size()}; }

 private:
  Dataset dataset_;
  LoaderOptions options_;
  std::int64_t epoch_ = 0;
  std::vector<std::int64_t> order_;  // empty when not shuffling

  // Positions [begin, end) in the epoch's order of batch i: this shard's part, or all of it.
  std::pair<std::int64_t, std::int64_t> positions(std::int64_t i, bool all_shards) const;
};

}  // namespace accrue
