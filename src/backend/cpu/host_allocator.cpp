#include "backend/cpu/host_allocator.hpp"

#include <sys/mman.h>

#include <new>

#include "base/error.hpp"

namespace spmd::cpu {

namespace {
constexpr size_t kSmallAlign = 64;          // a cache line
constexpr size_t kPageAlign = 4096;
constexpr size_t kHugeAlign = 2u << 20;     // 2 MiB: transparent huge pages
constexpr size_t kHugeThreshold = 4u << 20; // blocks this big ask for THP

size_t alignment_of(size_t rounded) {
  return rounded >= kHugeThreshold ? kHugeAlign : rounded >= kPageAlign ? kPageAlign : kSmallAlign;
}

// Through operator new, so a test that fails allocations on purpose
// reaches device memory too.
void *take(size_t size) {
  return ::operator new(size, std::align_val_t{alignment_of(size)}, std::nothrow);
}
void give_back(void *p, size_t size) {
  ::operator delete(p, std::align_val_t{alignment_of(size)});
}
}  // namespace

HostAllocator::HostAllocator(int devices, size_t cache_limit_bytes)
    : free_(static_cast<size_t>(devices)), cache_limit_(cache_limit_bytes) {}

HostAllocator::~HostAllocator() { trim_locked(0); }

size_t HostAllocator::rounded(size_t bytes) {
  // bytes is at most 2^62 (base/checked.hpp), so rounding up cannot wrap.
  if (bytes >= kHugeThreshold) return (bytes + kHugeAlign - 1) & ~(kHugeAlign - 1);
  if (bytes >= kPageAlign) return (bytes + kPageAlign - 1) & ~(kPageAlign - 1);
  return (bytes + kSmallAlign - 1) & ~(kSmallAlign - 1);
}

void *HostAllocator::allocate(int device, size_t bytes) {
  const size_t size = rounded(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto &bins = free_[static_cast<size_t>(device)];
    auto it = bins.find(size);
    if (it != bins.end() && !it->second.empty()) {
      void *p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= size;
      return p;
    }
  }
  void *p = take(size);
  if (p == nullptr) {
    // Blocks kept for reuse may be what stands in the way: give them all
    // back and try once more before reporting.
    {
      std::lock_guard<std::mutex> lock(mu_);
      trim_locked(0);
    }
    p = take(size);
  }
  if (p == nullptr)
    fail(SPMD_ERR_OUT_OF_MEMORY, "device ", device, ": cannot allocate ", bytes, " bytes");
#ifdef MADV_HUGEPAGE
  if (size >= kHugeThreshold) madvise(p, size, MADV_HUGEPAGE);
#endif
  return p;
}

void HostAllocator::deallocate(int device, void *ptr, size_t bytes) {
  if (!ptr) return;
  const size_t size = rounded(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (size > cache_limit_) {
    give_back(ptr, size);
    return;
  }
  try {
    free_[static_cast<size_t>(device)][size].push_back(ptr);
  } catch (const std::bad_alloc &) {
    give_back(ptr, size);  // no room to remember it: not cached
    return;
  }
  cached_bytes_ += size;
  if (cached_bytes_ > cache_limit_) trim_locked(cache_limit_ / 2);
}

// Releases cached blocks, largest first, until at most `keep` bytes remain.
void HostAllocator::trim_locked(size_t keep) {
  while (cached_bytes_ > keep) {
    // The largest size any device holds blocks of (empty lists go as met).
    size_t best_dev = 0, best_size = 0;
    for (size_t d = 0; d < free_.size(); ++d) {
      auto &bins = free_[d];
      while (!bins.empty() && bins.rbegin()->second.empty()) bins.erase(std::prev(bins.end()));
      if (!bins.empty() && bins.rbegin()->first > best_size) {
        best_size = bins.rbegin()->first;
        best_dev = d;
      }
    }
    if (best_size == 0) break;
    std::vector<void *> &blocks = std::prev(free_[best_dev].end())->second;
    give_back(blocks.back(), best_size);
    blocks.pop_back();
    cached_bytes_ -= best_size;
  }
}

}  // namespace spmd::cpu
