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

}  // namespace spmd::cuda
