// Errors inside libspmd: C++ exceptions carrying a status code and a message
// that names the argument and the problem. They stop at src/capi/.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "spmd/status.h"

namespace spmd {

class Error : public std::runtime_error {
 public:
  Error(spmd_status status, std::string message)
      : std::runtime_error(std::move(message)), status_(status) {}
  spmd_status status() const noexcept { return status_; }

 private:
  spmd_status status_;
};

// Concatenates anything streamable: cat("axis '", name, "' of size ", n).
// A stream swallows a failed allocation and keeps what it had; this one
// throws it instead, so a message (or a signature compared across devices)
// is never silently cut short.
template <typename... Args>
std::string cat(Args &&...args) {
  std::ostringstream os;
  os.exceptions(std::ios::badbit);
  (os << ... << std::forward<Args>(args));
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(spmd_status status, Args &&...args) {
  throw Error(status, cat(std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void invalid(Args &&...args) {
  fail(SPMD_ERR_INVALID_ARGUMENT, std::forward<Args>(args)...);
}

}  // namespace spmd
