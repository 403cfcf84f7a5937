// Copies between host-addressable buffers: the data-movement primitives of
// every backend whose memory the host can reach (the CPU platform directly,
// the sim platform after translating its addresses).
#pragma once

#include <cstddef>

#include "base/shape.hpp"

namespace spmd::host {

// memcpy, streaming large copies to memory with non-temporal stores where
// the machine has them.
void copy_bytes(void *dst, const void *src, size_t n);

// Copies a logical block of extent `ext` between two strided views
// (strides in elements), merging the trailing dimensions contiguous in
// both into one run.
void strided_copy(const Shape &ext, const char *src, const Shape &src_strides, char *dst,
                  const Shape &dst_strides, size_t elem_size);

// Copies `extent` elements from the box at `src_offset` of a dense
// row-major buffer of shape `src_shape` to the box at `dst_offset` of one
// of shape `dst_shape`.
void copy_box(const void *src, const Shape &src_shape, const Shape &src_offset, void *dst,
              const Shape &dst_shape, const Shape &dst_offset, const Shape &extent,
              size_t elem_size);

// Row-major strides (in elements) of a dense buffer of `shape`.
Shape dense_strides(const Shape &shape);

}  // namespace spmd::host
