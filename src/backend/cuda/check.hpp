// CUDA calls checked into spmd errors, and the current device kept as the
// caller had it. Internal to backend/cuda (CUDA's types appear here).
#pragma once

#include <cuda_runtime.h>

#include "base/error.hpp"

namespace spmd::cuda {

// The status a CUDA error maps to: out of memory as such, everything else
// internal (a fault of the device or of this library, never of the caller).
inline spmd_status status_of(cudaError_t e) {
  return e == cudaErrorMemoryAllocation ? SPMD_ERR_OUT_OF_MEMORY : SPMD_ERR_INTERNAL;
}

// Throws for a failed CUDA call, naming the call and what it served:
// check(cudaMemcpyAsync(...), "device 3: copy").
inline void check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clears an error that is not sticky
  fail(status_of(e), "CUDA: ", what, ": ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
}

// Makes `gpu` current for the guard's life and gives the caller's current
// device back after: the library never changes it behind the caller's back.
class DeviceGuard {
 public:
  explicit DeviceGuard(int gpu) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != gpu) check(cudaSetDevice(gpu), "cudaSetDevice");
  }
  ~DeviceGuard() {
    int now = -1;
    if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_)
      cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

 private:
  int previous_ = -1;
};

}  // namespace spmd::cuda
