#pragma once
// A block of device memory owned by one or more tensors (views share it).

#include <cstddef>
#include <cstdint>

#include "memory.hpp"
#include "non_copyable.hpp"

namespace accrue {

class Storage : NonCopyable {
 public:
  /// Allocates `bytes` on `device`, counted under `category`.
  Storage(std::size_t bytes, Device device, MemoryCategory category);
  ~Storage();

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return allocator_->device(); }
  MemoryCategory category() const { return category_; }
  /// Counts this storage under another category from now on.
  void set_category(MemoryCategory category);

  /// Bumped by every in-place write, so that backward can tell when a tensor it saved changed.
  std::uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  Allocator* allocator_;
  void* data_;
  std::size_t bytes_;
  MemoryCategory category_;
  std::uint64_t version_ = 0;
};

}  // namespace accrue
