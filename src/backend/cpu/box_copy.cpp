#include "backend/cpu/box_copy.hpp"

#include <cstring>

#include "spmd/sharding.h"

namespace spmd::cpu {

void copy_box_host(const BoxCopy &c) {
  const size_t nd = c.extent.size();
  for (int64_t e : c.extent)
    if (e <= 0) return;
  if (nd == 0) {
    std::memcpy(c.dst.base, c.src.base, c.elem_size);
    return;
  }
  // Element strides of both buffers.
  int64_t sstride[SPMD_MAX_NDIM], dstride[SPMD_MAX_NDIM];
  sstride[nd - 1] = dstride[nd - 1] = 1;
  for (size_t i = nd - 1; i > 0; --i) {
    sstride[i - 1] = sstride[i] * c.src.shape[i];
    dstride[i - 1] = dstride[i] * c.dst.shape[i];
  }
  int64_t soff = 0, doff = 0;
  for (size_t i = 0; i < nd; ++i) {
    soff += c.src.offset[i] * sstride[i];
    doff += c.dst.offset[i] * dstride[i];
  }
  // Merge trailing dimensions the box covers entirely in both buffers into
  // one contiguous run.
  size_t inner = nd - 1;
  int64_t run = c.extent[inner];
  while (inner > 0 && c.extent[inner] == c.src.shape[inner] &&
         c.extent[inner] == c.dst.shape[inner]) {
    --inner;
    run *= c.extent[inner];
  }
  const size_t es = c.elem_size;
  const size_t run_bytes = static_cast<size_t>(run) * es;
  auto *src = static_cast<const char *>(c.src.base) + soff * es;
  auto *dst = static_cast<char *>(c.dst.base) + doff * es;
  if (inner == 0) {
    std::memcpy(dst, src, run_bytes);
    return;
  }
  // Odometer over the outer dimensions [0, inner).
  int64_t idx[SPMD_MAX_NDIM] = {0};
  for (;;) {
    int64_t so = 0, dof = 0;
    for (size_t i = 0; i < inner; ++i) {
      so += idx[i] * sstride[i];
      dof += idx[i] * dstride[i];
    }
    std::memcpy(dst + dof * es, src + so * es, run_bytes);
    size_t k = inner;
    while (k > 0) {
      --k;
      if (++idx[k] < c.extent[k]) break;
      idx[k] = 0;
      if (k == 0) return;
    }
  }
}

}  // namespace spmd::cpu
