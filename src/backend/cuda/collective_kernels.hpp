// The native collectives of the CUDA platform: each member reads its
// peers' buffers directly (logical devices of one GPU share its memory;
// GPUs with peer access read each other's), as the CPU platform's threads
// do, with copy and reduce kernels queued on the member's own stream. The
// caller orders everything: a phase is queued once every buffer it reads is
// ready on the GPU, and the next phase (or any later writer of those
// buffers) waits for every member's phase. Internal to backend/cuda.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "backend/collectives.hpp"

namespace spmd::cuda {

// A member's slot with device addresses.
struct DeviceSlot {
  const void *in = nullptr;
  const Shape *in_shape = nullptr;
  void *out = nullptr;
};

// Phases of `call`: 2 for an all-reduce reduced by chunks (reduce-scatter
// then all-gather of the reduced chunks), else 1. `reduce_whole` makes every
// member reduce all inputs itself (one phase).
int native_phase_count(const CollectiveCall &call, bool reduce_whole);

// Queues member `rank`'s part of phase `phase` on `stream`, writing `out`
// (the member's own output). Results are bit-identical to the CPU
// platform's (host::run_phase): the same elements are combined in the same
// order (members in rank order), NaN winning max and min.
void queue_native_phase(const CollectiveCall &call, void *out,
                        const std::vector<DeviceSlot> &slots, size_t rank, int phase,
                        bool reduce_whole, cudaStream_t stream);

}  // namespace spmd::cuda
