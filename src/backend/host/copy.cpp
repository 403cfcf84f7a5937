#include "backend/host/copy.hpp"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "spmd/sharding.h"

namespace spmd::host {

namespace {
// Copies of a megabyte or more stream to memory with non-temporal stores:
// the destination is not read for ownership first and the caches are not
// flushed by data no one reads soon. memcpy takes that path only for much
// larger sizes, and is about 1.6 times slower below it.
constexpr size_t kStreamCopyBytes = size_t{1} << 20;

}  // namespace

void copy_bytes(void *dst_v, const void *src_v, size_t n) {
#if defined(__SSE2__)
  if (n >= kStreamCopyBytes) {
    auto *dst = static_cast<char *>(dst_v);
    const auto *src = static_cast<const char *>(src_v);
    const size_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
    std::memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
      _mm_prefetch(src + i + 512, _MM_HINT_NTA);
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 48), d);
    }
    _mm_sfence();
    std::memcpy(dst + i, src + i, n - i);
    return;
  }
#endif
  std::memcpy(dst_v, src_v, n);
}

Shape dense_strides(const Shape &shape) {
  Shape s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// Copies a logical block of extent `ext` between two strided views (strides
// in elements), merging the trailing dimensions contiguous in both into one
// memcpy run.
void strided_copy(const Shape &ext, const char *src, const Shape &ss, char *dst, const Shape &ds,
                  size_t es) {
  const size_t nd = ext.size();
  for (int64_t e : ext)
    if (e <= 0) return;
  if (nd == 0) {
    std::memcpy(dst, src, es);
    return;
  }
  size_t inner = nd;  // dimensions [inner, nd) form one contiguous run
  int64_t run = 1;
  while (inner > 0 && ss[inner - 1] == run && ds[inner - 1] == run) {
    --inner;
    run *= ext[inner];
  }
  const size_t run_bytes = static_cast<size_t>(run) * es;
  if (inner == 0) {
    copy_bytes(dst, src, run_bytes);
    return;
  }
  int64_t idx[SPMD_MAX_NDIM + 1] = {0};
  for (;;) {
    int64_t so = 0, dof = 0;
    for (size_t i = 0; i < inner; ++i) {
      so += idx[i] * ss[i];
      dof += idx[i] * ds[i];
    }
    copy_bytes(dst + dof * static_cast<int64_t>(es), src + so * static_cast<int64_t>(es),
               run_bytes);
    size_t k = inner;
    for (;;) {
      if (k == 0) return;
      --k;
      if (++idx[k] < ext[k]) break;
      idx[k] = 0;
    }
  }
}

void copy_box(const void *src_base, const Shape &src_shape, const Shape &src_offset,
              void *dst_base, const Shape &dst_shape, const Shape &dst_offset,
              const Shape &extent, size_t elem_size) {
  const size_t nd = extent.size();
  for (int64_t e : extent)
    if (e <= 0) return;
  if (nd == 0) {
    std::memcpy(dst_base, src_base, elem_size);
    return;
  }
  // Element strides of both buffers.
  int64_t sstride[SPMD_MAX_NDIM], dstride[SPMD_MAX_NDIM];
  sstride[nd - 1] = dstride[nd - 1] = 1;
  for (size_t i = nd - 1; i > 0; --i) {
    sstride[i - 1] = sstride[i] * src_shape[i];
    dstride[i - 1] = dstride[i] * dst_shape[i];
  }
  int64_t soff = 0, doff = 0;
  for (size_t i = 0; i < nd; ++i) {
    soff += src_offset[i] * sstride[i];
    doff += dst_offset[i] * dstride[i];
  }
  // Merge trailing dimensions the box covers entirely in both buffers into
  // one contiguous run.
  size_t inner = nd - 1;
  int64_t run = extent[inner];
  while (inner > 0 && extent[inner] == src_shape[inner] &&
         extent[inner] == dst_shape[inner]) {
    --inner;
    run *= extent[inner];
  }
  const size_t es = elem_size;
  const size_t run_bytes = static_cast<size_t>(run) * es;
  auto *src = static_cast<const char *>(src_base) + soff * es;
  auto *dst = static_cast<char *>(dst_base) + doff * es;
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
      if (++idx[k] < extent[k]) break;
      idx[k] = 0;
      if (k == 0) return;
    }
  }
}

}  // namespace spmd::host
