#pragma once
// An owning pointer that copies what it points to by its clone(): the value types that hold a
// type-erased implementation (Metric, LrSchedule) copy as values without writing their copies.

#include <memory>
#include <utility>

namespace accrue {

/// Owns a T (a base class whose `std::unique_ptr<T> clone() const` copies the object behind it);
/// copying copies that object, moving moves the pointer.
template <class T>
class ClonedPtr {
 public:
  ClonedPtr() = default;
  explicit ClonedPtr(std::unique_ptr<T> owned) : owned_(std::move(owned)) {}
  ClonedPtr(const ClonedPtr& other) : owned_(other.owned_ ? other.owned_->clone() : nullptr) {}
  ClonedPtr& operator=(const ClonedPtr& other) {
    if (this != &other) owned_ = other.owned_ ? other.owned_->clone() : nullptr;
    return *this;
  }
  ClonedPtr(ClonedPtr&&) noexcept = default;
  ClonedPtr& operator=(ClonedPtr&&) noexcept = default;

  T* operator->() const { return owned_.get(); }
  T& operator*() const { return *owned_; }
  explicit operator bool() const { return owned_ != nullptr; }

 private:
  std::unique_ptr<T> owned_;
};

}  // namespace accrue
