// The backend-facing half of collectives: what one device of a group asks
// the transport to do, and the group synchronisation the execution layer
// lends it. The CPU backend moves data through shared memory (each device
// reads its peers' buffers directly); a CUDA backend would map the same
// calls onto NCCL communicators.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/collective_kinds.hpp"
#include "base/shape.hpp"
#include "spmd/dtype.h"

namespace spmd {


// What each member of a group publishes at the start of a collective.
struct CollSlot {
  const void *in = nullptr;
  Shape in_shape;
  void *out = nullptr;  // all-reduce: peers read finished chunks from it
};

// The members of a group as one member sees them: every member's slot, as
// published before the call reached the backend.
class GroupView {
 public:
  virtual ~GroupView() = default;
  virtual size_t size() const = 0;
  virtual size_t rank() const = 0;
  virtual const CollSlot &slot(size_t member) const = 0;
};

// One member's view of its group for the duration of one collective, when
// each member runs on its own thread (shard_map). The execution layer
// implements it (rendezvous, timeouts, failure of peers).
class GroupSync : public GroupView {
 public:
  // Waits for every member of the group; throws if one never comes.
  virtual void barrier() = 0;
};

// One device's part of one collective, shapes and parameters already
// checked and normalised by the caller. Every member has published its slot
// (in, in_shape, and for all-reduce out) before the backend is called; the
// backend returns only once no peer will read this member's buffers again.
struct CollectiveCall {
  Transport kind = Transport::AllReduce;
  ReduceOp op = ReduceOp::Sum;
  spmd_dtype dtype = SPMD_F32;
  int device = 0;
  void *out = nullptr;
  Shape out_shape;
  int64_t axis = 0;         // gather axis, scatter dimension, split axis
  int64_t concat_axis = 0;  // all-to-all
  bool tiled = true;
  int64_t source = -1;      // permute: the member this one receives from, -1 none
  // All-reduce of at most kSmallAllReduceBytes whose inputs were copied into
  // storage the group keeps valid until its next collective: no member
  // reads another's buffers after the reduction, so no final barrier.
  bool inputs_staged = false;
};

// All-reduces of at most this many bytes are reduced whole by every member
// (one phase; every member folds the same inputs in the same order, so the
// results stay bit-identical).
inline constexpr size_t kSmallAllReduceBytes = 32 * 1024;

// A whole group's collective, every member's call and slot, for backends
// that can run all members of all groups from a few threads without a
// thread per device (the persistent collectives' path).
struct GroupCall {
  std::vector<CollectiveCall> calls;  // rank order
  std::vector<CollSlot> slots;        // rank order
};

// Runs fn(i) for i in [0, n) on the runtime's worker pool and returns when
// all are done.
using ParallelFor = std::function<void(size_t n, const std::function<void(size_t)> &fn)>;

}  // namespace spmd
