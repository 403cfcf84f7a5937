// What the CUDA platform's kernel files share: grid sizes, the check after
// a launch, and the entry points of each kind's file, which
// backend/cuda/kernels.cu dispatches to. Internal to backend/cuda.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels.hpp"
#include "base/error.hpp"

namespace spmd::cuda {

constexpr int kBlockThreads = 256;
// Blocks resident per SM at 256 threads (2048 threads per SM on sm_80 and
// sm_90): grid-stride loops need no more to keep every SM busy.
constexpr int kBlocksPerSm = 8;

// The blocks for `items` work items of which one block takes `per_block`
// at a time: no more than fill the GPU, never 0. Callers launch nothing
// for no work.
inline unsigned grid_for(int64_t items, int64_t per_block, const KernelEnv &env) {
  const int64_t want = (items + per_block - 1) / per_block;
  const int64_t most = static_cast<int64_t>(std::max(env.sm_count, 1)) * kBlocksPerSm;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(want, most)));
}

// Throws for a failed CUDA call that queued work.
inline void check_call(cudaError_t e, const char *device_label, const char *what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clears an error that is not sticky
  fail(SPMD_ERR_INTERNAL, device_label, ": ", what, ": ", cudaGetErrorName(e), " (",
       cudaGetErrorString(e), ")");
}

// Throws when the launch just queued failed (a bad configuration, or an
// earlier fault the context keeps).
inline void check_launch(const char *device_label, const char *what) {
  check_call(cudaGetLastError(), device_label, what);
}

template <typename T = unsigned char>
T *device_ptr(const Place &p) {
  return reinterpret_cast<T *>(p.ptr.bits);
}

// One file per kind of work.
void launch_elementwise(const Kernel &k, const KernelEnv &env);  // kernels_elementwise.cu
void launch_elementwise_chain(const Kernel &k, const KernelEnv &env);  // kernels_elementwise.cu
void launch_reduce(const Kernel &k, const KernelEnv &env);       // kernels_reduce.cu
void launch_random(const Kernel &k, const KernelEnv &env);       // kernels_random.cu
void launch_gemm(const Kernel &k, const KernelEnv &env);         // kernels_gemm.cu
void launch_take(const Kernel &k, const KernelEnv &env);         // kernels_take.cu
void launch_scatter_add(const Kernel &k, const KernelEnv &env);  // kernels_scatter_add.cu

}  // namespace spmd::cuda
