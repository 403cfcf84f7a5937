// The CUDA platform's kernels: one entry point queues any kernel
// descriptor (backend/kernel.hpp) on a stream. Internal to backend/cuda.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "backend/backend.hpp"
#include "backend/kernel.hpp"

namespace spmd::cuda {

// Scratch per logical device for the kernels (kernels_reduce.cu's partials).
constexpr size_t kKernelScratchBytes = size_t{128} << 10;

// What a kernel runs with: the logical device's stream and cuBLAS handle
// (already bound to that stream and its workspace), its scratch, and the
// GPU's shape.
struct KernelEnv {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  bool allow_tf32 = false;  // f32 products on TF32 tensor cores
  int sm_count = 1;
  const char *device_label = "";  // for messages: "device 3 (GPU 0)"
  // The logical device's scratch, free between kernels on its stream: what
  // a reduction cut into parts keeps its partials in.
  void *scratch = nullptr;
  size_t scratch_bytes = 0;
};

// Queues `k` on env.stream. Its places are device pointers: Device memory
// of any logical device of the backend, or Mapped host memory. Never
// synchronises; throws an Error when the kernel cannot be queued (a launch
// failure, a dtype the kernel does not take).
void launch_kernel(const Kernel &k, const KernelEnv &env);

// Copies many boxes between device-addressable memory in one launch on
// `stream` (every endpoint Device or Mapped memory). The boxes'
// destinations do not overlap.
void launch_box_copies(const BoxCopy *copies, size_t count, cudaStream_t stream);

}  // namespace spmd::cuda
