// The native collectives of the CUDA platform as steps: reductions of the
// members' buffers, strided copies and fills, planned apart from the kernels
// that run them (collective_kernels.cu), so that a test can run the same
// plan on the host and compare it with host::run_phase bit for bit. Each
// step mirrors one call of host/collective_phases.cpp: the same elements,
// the same member order, the same treatment of uneven and empty blocks.
// Pure C++ (no CUDA types). Internal to backend/cuda.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/collectives.hpp"
#include "backend/host/copy.hpp"

namespace spmd::cuda {

// A member's slot with addresses the steps' runner can use.
struct MemberSlot {
  const void *in = nullptr;
  const Shape *in_shape = nullptr;
  void *out = nullptr;
};

// Runs (or queues) the steps.
class StepSink {
 public:
  virtual ~StepSink() = default;
  // out[k] for k in [0, count), with o = k / row and i = k % row:
  // srcs[0][o * src_stride + i] op srcs[1][...] op ... op srcs[n-1][...],
  // combined in that order as device/collective_reduce.hpp's bodies do. Sources and
  // output are arrays of `dtype`; count > 0.
  virtual void reduce(spmd_dtype dtype, ReduceOp op, const void *const *srcs, size_t n, void *out,
                      int64_t count, int64_t row, int64_t src_stride) = 0;
  // The block of extent `ext` between two strided views (strides in
  // elements of `elem_size` bytes); every extent > 0.
  virtual void copy(const Shape &ext, const void *src, const Shape &src_strides, void *dst,
                    const Shape &dst_strides, size_t elem_size) = 0;
  // `bytes` > 0 zero bytes at dst.
  virtual void zero(void *dst, size_t bytes) = 0;
};

// Steps of `call`'s phases: 2 for an all-reduce reduced by chunks, else 1.
int native_step_phases(const CollectiveCall &call, bool reduce_whole);

// Member `rank`'s part of phase `phase`, writing `out`, as steps.
void plan_native_phase(const CollectiveCall &call, void *out, const std::vector<MemberSlot> &slots,
                       size_t rank, int phase, bool reduce_whole, StepSink &sink);

// ---- all-to-all geometry, shared with the NCCL path ----

// A strided view into a dense buffer, in elements.
struct StridedView {
  int64_t offset = 0;
  Shape strides;
};

// One piece of an all-to-all: its extent, where it lies in the sender's
// input and where it lands in the receiver's output.
struct AllToAllPiece {
  Shape ext;
  StridedView from;
  StridedView to;
};

// The piece a member whose input has `sender_shape` sends member `receiver`
// of a group of n (`to` left empty: it depends on the receiver's output).
AllToAllPiece all_to_all_send(const CollectiveCall &call, const Shape &sender_shape, size_t n,
                              size_t receiver);

// Calls f(j, piece) for each member j in rank order with the piece member
// `me` receives from it, placed in me's output (call.out_shape):
// host::all_to_all's loop. shape_of(j) is member j's input shape.
template <typename ShapeOf, typename F>
void for_each_all_to_all_receive(const CollectiveCall &call, size_t n, size_t me,
                                 ShapeOf &&shape_of, F &&f) {
  const Shape ostr = host::dense_strides(call.out_shape);
  const size_t ca = static_cast<size_t>(call.concat_axis);
  int64_t offset = 0;  // along the concat axis, tiled
  for (size_t j = 0; j < n; ++j) {
    AllToAllPiece p = all_to_all_send(call, shape_of(j), n, me);
    if (call.tiled) {
      p.to = {offset * ostr[ca], ostr};
      offset += p.ext[ca];
    } else {
      p.to.offset = static_cast<int64_t>(j) * ostr[ca];
      p.to.strides = ostr;
      p.to.strides.erase(p.to.strides.begin() + static_cast<ptrdiff_t>(ca));
    }
    f(j, p);
  }
}

// Whether a view of extent `ext` with these strides is one dense run.
bool dense_view(const Shape &ext, const Shape &strides);

}  // namespace spmd::cuda
