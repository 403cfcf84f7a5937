// Page-locked host memory of the CUDA platform, cached: staging buffers for
// transfers between pageable host memory and the GPU (DMA needs pinned
// pages), and the mapped memory shard_map callbacks receive when they ask
// for host-addressable blocks. cudaHostAlloc and cudaFreeHost cost far more
// than a small transfer (and freeing may synchronise the device), so freed
// blocks are kept, up to a bound. Internal to backend/cuda.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>

namespace spmd::cuda {

class PinnedCache {
 public:
  // mapped: cudaHostAllocMapped (device code may address it too).
  PinnedCache(bool mapped, size_t keep_bytes) : mapped_(mapped), keep_bytes_(keep_bytes) {}
  ~PinnedCache();
  PinnedCache(const PinnedCache &) = delete;
  PinnedCache &operator=(const PinnedCache &) = delete;

  // At least `bytes` (> 0) of pinned memory; throws OUT_OF_MEMORY.
  void *take(size_t bytes);
  // Returns a block taken with the same `bytes`.
  void give_back(void *p, size_t bytes) noexcept;
  // Frees every cached block.
  void trim() noexcept;

 private:
  static size_t size_class(size_t bytes);

  bool mapped_;
  size_t keep_bytes_;
  std::mutex mu_;
  std::multimap<size_t, void *> free_;  // by size class
  size_t cached_bytes_ = 0;
};

}  // namespace spmd::cuda
