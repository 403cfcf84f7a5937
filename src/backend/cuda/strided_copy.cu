// Strided block copies on the GPU (see the header).
#include "backend/cuda/strided_copy.hpp"

#include <cstdint>

#include "backend/cuda/check.hpp"
#include "base/error.hpp"
#include "spmd/sharding.h"

namespace spmd::cuda {

namespace {

constexpr int kMaxOuter = SPMD_MAX_NDIM;
constexpr int kThreads = 256;

// The block as rows of `run` units, the rows walked over `nd` outer
// dimensions (innermost last), strides in bytes.
struct CopyArgs {
  const char *src;
  char *dst;
  int64_t rows;
  int64_t run;
  int nd;
  int64_t ext[kMaxOuter];
  int64_t src_stride[kMaxOuter];
  int64_t dst_stride[kMaxOuter];
};

__device__ inline void row_offsets(const CopyArgs &a, int64_t row, int64_t &so, int64_t &dof) {
  so = 0;
  dof = 0;
  for (int d = a.nd - 1; d >= 0; --d) {
    const int64_t i = row % a.ext[d];
    row /= a.ext[d];
    so += i * a.src_stride[d];
    dof += i * a.dst_stride[d];
  }
}

// Long rows: blocks along y take rows, threads along x share a row, so the
// row's offsets are worked out once per thread and row.
template <typename U>
__global__ void copy_rows_kernel(const __grid_constant__ CopyArgs a) {
  for (int64_t row = blockIdx.y; row < a.rows; row += gridDim.y) {
    int64_t so, dof;
    row_offsets(a, row, so, dof);
    const U *s = reinterpret_cast<const U *>(a.src + so);
    U *t = reinterpret_cast<U *>(a.dst + dof);
    for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < a.run;
         k += int64_t(gridDim.x) * blockDim.x)
      t[k] = s[k];
  }
}

// Short rows: one unit per thread over the whole block.
template <typename U>
__global__ void copy_flat_kernel(const __grid_constant__ CopyArgs a) {
  const int64_t total = a.rows * a.run;
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < total;
       u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = u / a.run, k = u - row * a.run;
    int64_t so, dof;
    row_offsets(a, row, so, dof);
    reinterpret_cast<U *>(a.dst + dof)[k] = reinterpret_cast<const U *>(a.src + so)[k];
  }
}

template <typename U>
void launch_copy(CopyArgs &a, cudaStream_t stream) {
  a.run /= static_cast<int64_t>(sizeof(U));
  if (a.run >= 128) {
    const int64_t bx = (a.run + kThreads - 1) / kThreads;
    const unsigned gx = static_cast<unsigned>(bx < 1024 ? bx : 1024);
    const int64_t by = 8192 / gx;
    const int64_t gy = a.rows < by ? a.rows : by < 65535 ? by : 65535;
    copy_rows_kernel<U>
        <<<dim3(gx, static_cast<unsigned>(gy > 0 ? gy : 1)), kThreads, 0, stream>>>(a);
  } else {
    const int64_t blocks = (a.rows * a.run + kThreads - 1) / kThreads;
    copy_flat_kernel<U>
        <<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), kThreads, 0, stream>>>(a);
  }
  check(cudaGetLastError(), "strided copy kernel");
}

}  // namespace

void queue_strided_copy(const Shape &ext, const void *src, const Shape &src_strides, void *dst,
                        const Shape &dst_strides, size_t es, cudaStream_t stream) {
  for (int64_t e : ext)
    if (e <= 0) return;
  // Dimensions of extent 1 move nothing; the innermost dimensions dense in
  // both views form one run (as host::strided_copy merges them).
  struct Dim {
    int64_t ext, s, d;
  };
  Dim dims[SPMD_MAX_NDIM + 1];
  int nd = 0;
  for (size_t i = 0; i < ext.size(); ++i)
    if (ext[i] != 1) {
      if (nd == SPMD_MAX_NDIM + 1) fail(SPMD_ERR_INTERNAL, "strided copy of too many dimensions");
      dims[nd++] = {ext[i], src_strides[i], dst_strides[i]};
    }
  int64_t run = 1;
  while (nd > 0 && dims[nd - 1].s == run && dims[nd - 1].d == run) run *= dims[--nd].ext;
  const int64_t es64 = static_cast<int64_t>(es);
  if (nd == 0) {
    check(cudaMemcpyAsync(dst, src, static_cast<size_t>(run * es64), cudaMemcpyDefault, stream),
          "cudaMemcpyAsync (collective)");
    return;
  }
  // Neighbouring outer dimensions that step through both views as one
  // dimension become one.
  CopyArgs a{};
  a.src = static_cast<const char *>(src);
  a.dst = static_cast<char *>(dst);
  a.rows = 1;
  for (int i = 0; i < nd; ++i) {
    const Dim &x = dims[i];
    if (a.nd > 0 && a.src_stride[a.nd - 1] == x.s * x.ext * es64 &&
        a.dst_stride[a.nd - 1] == x.d * x.ext * es64) {
      a.ext[a.nd - 1] *= x.ext;
      a.src_stride[a.nd - 1] = x.s * es64;
      a.dst_stride[a.nd - 1] = x.d * es64;
    } else {
      if (a.nd == kMaxOuter) fail(SPMD_ERR_INTERNAL, "strided copy of too many dimensions");
      a.ext[a.nd] = x.ext;
      a.src_stride[a.nd] = x.s * es64;
      a.dst_stride[a.nd] = x.d * es64;
      ++a.nd;
    }
    a.rows *= x.ext;
  }
  a.run = run * es64;  // bytes, divided into units by launch_copy
  // The widest unit that every row start and the run length are multiples of.
  uint64_t align = static_cast<uint64_t>(a.run) | reinterpret_cast<uintptr_t>(src) |
                   reinterpret_cast<uintptr_t>(dst);
  for (int i = 0; i < a.nd; ++i)
    align |= static_cast<uint64_t>(a.src_stride[i]) | static_cast<uint64_t>(a.dst_stride[i]);
  if (align % 16 == 0)
    launch_copy<uint4>(a, stream);
  else if (align % 8 == 0)
    launch_copy<uint2>(a, stream);
  else if (align % 4 == 0)
    launch_copy<uint32_t>(a, stream);
  else if (align % 2 == 0)
    launch_copy<uint16_t>(a, stream);
  else
    launch_copy<uint8_t>(a, stream);
}

}  // namespace spmd::cuda
