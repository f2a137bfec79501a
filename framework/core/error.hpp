#pragma once
// The errors Accrue throws. Library code never exits or aborts: a user recovers, a test asserts.
//
// ACCRUE_CHECK(cond, fmt, args...)        user-facing precondition; throws ValueError with the message.
// ACCRUE_CHECK_SHAPE(cond, fmt, args...)  same, throws ShapeError.
// ACCRUE_ASSERT(cond)                     internal invariant; a failure is a bug in Accrue and says so.

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace accrue {

/// Base of every error Accrue throws. The message names what was wrong and where.
class Error : public std::exception {
 public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& message() const noexcept { return message_; }
  /// Adds where the error happened ("epoch 2, batch 17: ") in front of the message.
  void prepend(const std::string& context) { message_ = context + message_; }
  /// Adds advice after the message (what to change so that it works).
  void append(const std::string& advice) { message_ += advice; }

 private:
  std::string message_;
};

/// A bad argument or configuration.
class ValueError : public Error {
  using Error::Error;
};
/// Shapes that do not fit together; the message names the layer or op and both shapes.
class ShapeError : public Error {
  using Error::Error;
};
/// A file that is missing, truncated or malformed; the message names the file.
class IoError : public Error {
  using Error::Error;
};
/// A device that is absent or a backend that was not built.
class DeviceError : public Error {
  using Error::Error;
};
/// A call into the CUDA runtime, cuBLAS or cuDNN that returned an error. The message gives the
/// call as written, the library's error name and description, and the file and line of the call.
class CudaError : public DeviceError {
 public:
  CudaError(std::string message, std::string library, std::string call, int status)
      : DeviceError(std::move(message)), library_(std::move(library)), call_(std::move(call)), status_(status) {}
  /// "CUDA runtime", "cuBLAS" or "cuDNN".
  const std::string& library() const noexcept { return library_; }
  /// The failing call as written in the source: "cudaMalloc(&ptr, bytes)".
  const std::string& call() const noexcept { return call_; }
  /// The library's status code.
  int status() const noexcept { return status_; }

 private:
  std::string library_, call_;
  int status_;
};
/// An op or dtype a backend does not implement.
class NotSupported : public Error {
  using Error::Error;
};
/// A loss or gradient that became inf or NaN.
class NonFiniteError : public Error {
  using Error::Error;
};
/// An allocation beyond a device's memory limit; the message gives the request, the limit and the
/// live bytes by category.
class OutOfMemory : public Error {
  using Error::Error;
};
/// Training stopped by SIGINT or SIGTERM (see FitOptions::stop_on_signal). The message says where
/// it stopped and how to continue; a program ends with exit_status() (128 + the signal, as a shell
/// reports a process that the signal ended).
class Interrupted : public Error {
 public:
  Interrupted(std::string message, int signal) : Error(std::move(message)), signal_(signal) {}
  int signal() const noexcept { return signal_; }
  int exit_status() const noexcept { return 128 + signal_; }

 private:
  int signal_;
};
/// A collective call between the processes of a data-parallel run failed (another rank died or
/// reported an error); the message names the rank and the call.
class CommunicationError : public Error {
  using Error::Error;
};
/// An invariant of Accrue itself failed: a bug to report, not a usage mistake.
class InternalError : public Error {
  using Error::Error;
};

}  // namespace accrue

#define ACCRUE_CHECK(cond, ...)                                         \
  do {                                                                  \
    if (!(cond)) throw ::accrue::ValueError(fmt::format(__VA_ARGS__));  \
  } while (0)

#define ACCRUE_CHECK_SHAPE(cond, ...)                                   \
  do {                                                                  \
    if (!(cond)) throw ::accrue::ShapeError(fmt::format(__VA_ARGS__));  \
  } while (0)

#define ACCRUE_ASSERT(cond)                                                                     \
  do {                                                                                          \
    if (!(cond))                                                                                \
      throw ::accrue::InternalError(fmt::format("internal error (a bug in Accrue): {} at {}:{}", \
                                                #cond, __FILE__, __LINE__));                    \
  } while (0)
