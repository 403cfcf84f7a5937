// Where the host's time goes in the CUDA platform (SPMD_CUDA_HOST_TIMES=1):
// each kind of CUDA call the backend makes, and the backend's own entry
// points around them, timed and counted while a runtime lives and printed
// to stderr when it goes. The calls' own prices (spmd-gpu-bench -o api) are
// those of an idle stream; these are the prices paid inside real work,
// which is what an op's dispatch time is made of. Off, a timed scope costs
// one relaxed load. Internal to backend/cuda.
#pragma once

#include <chrono>
#include <cstdio>

namespace spmd::cuda::host_times {

enum class Kind {
  LaunchEntry,    // CudaBackend::launch, whole
  KernelLaunch,   // a kernel (or cuBLAS call) queued
  EventRecord,    // cudaEventRecord of an op's event
  StreamWait,     // cudaStreamWaitEvent for a dependency
  EventQuery,     // cudaEventQuery asking whether work has finished
  AllocateEntry,  // CudaBackend::allocate, whole
  PoolAllocate,   // cudaMallocFromPoolAsync
  FreeEntry,      // CudaBackend::deallocate, whole
  PoolFree,       // cudaFreeAsync
  CopyEntry,      // CudaBackend::copy_boxes, whole
  Count
};

// Turned on (for the process) by a backend made with SPMD_CUDA_HOST_TIMES=1.
void enable();
bool enabled();

// Adds one call of `kind` that took `ns`.
void add(Kind kind, long long ns);

// Prints the table of every kind called since the last report, and starts
// counting afresh.
void report(std::FILE *to);

// Times its scope as one call of `kind`, when enabled.
class Scope {
 public:
  explicit Scope(Kind kind) : kind_(kind), on_(enabled()) {
    if (on_) start_ = std::chrono::steady_clock::now();
  }
  ~Scope() {
    if (on_)
      add(kind_, std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start_)
                     .count());
  }
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;

 private:
  Kind kind_;
  bool on_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace spmd::cuda::host_times
