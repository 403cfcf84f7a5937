#include "backend/cpu/cpu_backend.hpp"

#include <cstring>

#include "backend/cpu/box_copy.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "kernels/random.hpp"

namespace spmd::cpu {

namespace {
// Freed device memory kept for reuse, across all virtual devices.
constexpr size_t kCacheLimit = size_t{4} << 30;
}  // namespace

CpuBackend::CpuBackend(int devices) : devices_(devices), allocator_(devices, kCacheLimit) {}

std::string CpuBackend::device_repr(int device) const {
  return cat("CpuDevice(id=", device, ")");
}

void *CpuBackend::allocate(int device, size_t bytes) {
  return allocator_.allocate(device, bytes);
}

void CpuBackend::deallocate(int device, void *ptr, size_t bytes) {
  allocator_.deallocate(device, ptr, bytes);
}

void CpuBackend::copy_box(const BoxCopy &copy) { copy_box_host(copy); }

void CpuBackend::fill(int, void *ptr, size_t count, const void *pattern,
                      size_t elem_size) {
  auto *p = static_cast<unsigned char *>(ptr);
  bool all_zero = true;
  for (size_t i = 0; i < elem_size; ++i)
    all_zero = all_zero && static_cast<const unsigned char *>(pattern)[i] == 0;
  if (all_zero || elem_size == 1) {
    std::memset(p, all_zero ? 0 : *static_cast<const unsigned char *>(pattern),
                count * elem_size);
    return;
  }
  for (size_t i = 0; i < count; ++i) std::memcpy(p + i * elem_size, pattern, elem_size);
}

void CpuBackend::fill_arange(int, void *ptr, spmd_dtype dtype, const Shape &global,
                             const Box &box, double start, double step) {
  const size_t nd = global.size();
  const size_t es = dtype_size(dtype);
  const int64_t n = box.elements();
  if (n <= 0) return;
  auto *out = static_cast<unsigned char *>(ptr);
  Shape idx(box.start);
  for (int64_t i = 0; i < n; ++i) {
    int64_t flat = 0;
    for (size_t d = 0; d < nd; ++d) flat = flat * global[d] + idx[d];
    store_from_double(dtype, start + static_cast<double>(flat) * step, out + i * es);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < box.stop[d]) break;
      idx[d] = box.start[d];
    }
  }
}

// The generator is plain scalar code; the threefry hash of each element is
// the whole cost.
void CpuBackend::fill_random(int, void *ptr, const rng::Request &request, const Shape &global,
                             const Box &box) {
  rng::generate_box(request, global, box, ptr);
}

}  // namespace spmd::cpu
