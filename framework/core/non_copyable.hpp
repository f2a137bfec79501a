#pragma once
// The base of what must exist once: guards that change a thread's or the process's state while
// they live (a copy would restore it twice) and owners of a resource only they release.

namespace accrue {

class NonCopyable {
 public:
  NonCopyable(const NonCopyable&) = delete;
  NonCopyable& operator=(const NonCopyable&) = delete;

 protected:
  NonCopyable() = default;
  ~NonCopyable() = default;
};

}  // namespace accrue
