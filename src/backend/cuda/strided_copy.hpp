// Strided block copies between device-addressable buffers (this GPU's
// memory, peers' memory, mapped host memory), queued on a stream: the
// device counterpart of host::strided_copy, for the collectives' gathers,
// all-to-alls and staging. Internal to backend/cuda.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "base/shape.hpp"

namespace spmd::cuda {

// Copies the block of extent `ext` from the view (src, src_strides) to the
// view (dst, dst_strides), strides in elements of `elem_size` bytes. Does
// nothing when an extent is 0. One cudaMemcpyAsync when the block is one
// run in both views, else one kernel. Never synchronises or allocates;
// throws on a launch error.
void queue_strided_copy(const Shape &ext, const void *src, const Shape &src_strides, void *dst,
                        const Shape &dst_strides, size_t elem_size, cudaStream_t stream);

// One strided copy of a batch.
struct StridedCopy {
  Shape ext;
  const void *src = nullptr;
  Shape src_strides;
  void *dst = nullptr;
  Shape dst_strides;
  size_t elem_size = 1;
};

// The copies in as few launches as the kernel's parameters allow (one for
// up to 12), so that a member's pieces of an all-to-all or gather cost one
// launch rather than one per peer; the copies' destinations do not
// overlap. Never synchronises or allocates; throws on a launch error.
// (box_copies.cu, beside the box copies it shares its kernel with.)
void queue_strided_copies(const StridedCopy *copies, size_t count, cudaStream_t stream);

}  // namespace spmd::cuda
