#include "backend/cuda/host_memory.hpp"

#include <cuda_runtime.h>

#include "base/error.hpp"

namespace spmd::cuda {

PinnedCache::~PinnedCache() { trim(); }

size_t PinnedCache::size_class(size_t bytes) {
  // Powers of two from 64 KiB: a block serves any request of its class.
  size_t c = size_t{1} << 16;
  while (c < bytes) c <<= 1;
  return c;
}

void *PinnedCache::take(size_t bytes) {
  const size_t c = size_class(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(c);
    if (it != free_.end()) {
      void *p = it->second;
      free_.erase(it);
      cached_bytes_ -= c;
      return p;
    }
  }
  void *p = nullptr;
  const unsigned flags = cudaHostAllocPortable | (mapped_ ? cudaHostAllocMapped : 0u);
  cudaError_t st = cudaHostAlloc(&p, c, flags);
  if (st != cudaSuccess) {
    cudaGetLastError();
    trim();
    st = cudaHostAlloc(&p, c, flags);
  }
  if (st != cudaSuccess) {
    cudaGetLastError();
    fail(SPMD_ERR_OUT_OF_MEMORY, "CUDA: cannot allocate ", c, " bytes of ",
         mapped_ ? "mapped" : "pinned", " host memory: ", cudaGetErrorString(st));
  }
  return p;
}

void PinnedCache::give_back(void *p, size_t bytes) noexcept {
  if (p == nullptr) return;
  const size_t c = size_class(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_bytes_ + c <= keep_bytes_) {
      try {
        free_.emplace(c, p);
        cached_bytes_ += c;
        return;
      } catch (...) {
      }
    }
  }
  cudaFreeHost(p);
}

void PinnedCache::trim() noexcept {
  std::multimap<size_t, void *> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocks.swap(free_);
    cached_bytes_ = 0;
  }
  for (auto &[c, p] : blocks) cudaFreeHost(p);
}

}  // namespace spmd::cuda
