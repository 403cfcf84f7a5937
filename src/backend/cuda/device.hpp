// The CUDA platform's devices: GPUs, and the logical devices placed on
// them. A logical device is what the layers above call a device: its own
// stream, memory pool, cuBLAS handle and workspace, so that N of them on one
// GPU behave as N devices (the suites' 8-device meshes on one GPU), and one
// per GPU is the ordinary case. Internal to backend/cuda.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace spmd::cuda {

// CUDA events for ordering and completion, reused: creating one costs more
// than the work of a tiny op. Shared with the events that hold them, so a
// pool outlives its backend while an event is still referenced.
class EventPool {
 public:
  explicit EventPool(int gpu) : gpu_(gpu) {}
  ~EventPool();
  EventPool(const EventPool &) = delete;
  EventPool &operator=(const EventPool &) = delete;

  // An event of the pool's GPU (made current by the caller).
  cudaEvent_t take();
  void give_back(cudaEvent_t event) noexcept;

 private:
  int gpu_;
  std::mutex mu_;
  std::vector<cudaEvent_t> free_;
};

struct Gpu {
  int ordinal = 0;
  std::string name;
  size_t memory_bytes = 0;
  int compute_capability = 0;  // 90 for 9.0
  int sm_count = 0;
  std::shared_ptr<EventPool> events;
};

struct LogicalDevice {
  int id = 0;           // global id among the backend's devices
  Gpu *gpu = nullptr;
  int index_on_gpu = 0;
  cudaStream_t stream = nullptr;
  cudaMemPool_t pool = nullptr;
  // cuBLAS, made on first use.
  cublasHandle_t blas = nullptr;
  void *blas_workspace = nullptr;
  size_t blas_workspace_bytes = 0;
  // The kernels' scratch (kernels.hpp), made on first use.
  void *kernel_scratch = nullptr;
  // Held while work is queued on the stream: the stream's order and the
  // cuBLAS handle are the device's, whichever thread queues.
  std::mutex mu;
  // Events recorded on the stream are numbered (under mu); the highest
  // number seen finished is kept, and every event numbered below it has
  // finished too (a stream finishes in order): asking CUDA about those
  // would cost a call each (cudaEventQuery, over a microsecond).
  uint64_t records_issued = 0;
  std::atomic<uint64_t> records_finished{0};

  // "device 3 (GPU 0)": how messages name the device. Made once, by
  // name(), when id and gpu are set: a launch names every device it runs
  // on, and formatting it each time cost 0.4 us a device.
  const std::string &label() const { return label_; }
  void name();

 private:
  std::string label_;
};

}  // namespace spmd::cuda
