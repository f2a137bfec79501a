#pragma once
// Double-buffered prefetching of batches: the order of its steps, apart from CUDA, so that tests
// without a GPU check it (tests/datasets/test_prefetch.cpp). DeviceBatches runs it with a copier
// over pinned memory, a copy stream and events.
//
// Two hazards decide the order. A prefetched batch's device memory is written by a copy that may
// still run; the caching allocator hands a freed block to the next allocation on the compute
// stream at once, so before a prefetched batch is used or dropped the compute stream must wait for
// its copy. And a slot's pinned staging memory is the source of that copy, so before the slot is
// filled again or freed the host must wait for it.
//
// A Copier provides:
//   using Item = ...;                           a batch on the device
//   Item start(const Batch& host, int slot);    begins moving `host` through slot `slot`
//   void before_compute(int slot) noexcept;     compute work queued from now on runs after slot's copy
//   void finish(int slot) noexcept;             the host waits until slot's copy is done
// (noexcept: they run while dropping, in destructors too).

#include <cstdint>
#include <optional>
#include <utility>

#include "loader.hpp"

namespace accrue {

template <class Copier>
class Prefetch {
 public:
  using Item = typename Copier::Item;

  /// The copier is made in place from `args` (it holds events and pinned memory, which do not move).
  template <class... Args>
  explicit Prefetch(Args&&... args) : copier_(std::forward<Args>(args)...) {}
  /// Drops what is in flight and waits for both slots, so their staging memory can go.
  ~Prefetch() {
    drop();
    for (int slot = 0; slot < 2; ++slot)
      if (used_[slot]) copier_.finish(slot);
  }
  Prefetch(const Prefetch&) = delete;
  Prefetch& operator=(const Prefetch&) = delete;

  /// The prefetched batch if it is batch `index` (ready for compute work queued after this call);
  /// else nothing, and a batch prefetched for another index is dropped.
  std::optional<Item> take(std::int64_t index) {
    if (!pending_ || pending_index_ != index) {
      drop();
      return std::nullopt;
    }
    copier_.before_compute(pending_slot_);
    std::optional<Item> item = std::move(pending_);
    pending_.reset();
    return item;
  }

  /// Starts moving `host` into the next slot, to be taken by take(host.index).
  void start(const Batch& host) {
    drop();
    const int slot = next_slot_;
    next_slot_ ^= 1;
    if (used_[slot]) copier_.finish(slot);  // its staging memory may still be the source of its last copy
    used_[slot] = true;
    pending_.emplace(copier_.start(host, slot));
    pending_index_ = host.index;
    pending_slot_ = slot;
  }

  /// Drops a prefetched batch (its memory goes back to the allocator once compute waits for its copy).
  void drop() {
    if (!pending_) return;
    copier_.before_compute(pending_slot_);
    pending_.reset();
  }

 private:
  Copier copier_;
  std::optional<Item> pending_;
  std::int64_t pending_index_ = -1;
  int pending_slot_ = 0;
  int next_slot_ = 0;
  bool used_[2] = {false, false};
};

}  // namespace accrue
