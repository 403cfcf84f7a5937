// Host memory for the CPU platform's virtual devices. Freed blocks are kept
// per device and size and handed out again, as XLA's and PyTorch's device
// allocators do, so repeated device_put/reshard of the same sizes does not
// pay for fresh pages (first-touch page faults cost more than the copy).
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace spmd::cpu {

class HostAllocator {
 public:
  HostAllocator(int devices, size_t cache_limit_bytes);
  ~HostAllocator();
  HostAllocator(const HostAllocator &) = delete;
  HostAllocator &operator=(const HostAllocator &) = delete;

  void *allocate(int device, size_t bytes);
  void deallocate(int device, void *ptr, size_t bytes);

 private:
  static size_t rounded(size_t bytes);
  void trim_locked(size_t keep);

  std::mutex mu_;
  // Per device: rounded size -> free blocks of that size. A size's list
  // stays when it empties, so that the blocks an op frees and the next op
  // takes back move in and out of lists that already have room, without
  // allocating.
  std::vector<std::map<size_t, std::vector<void *>>> free_;
  size_t cached_bytes_ = 0;
  size_t cache_limit_;
};

}  // namespace spmd::cpu
