// The backend-facing half of collectives: what one member of a group asks
// its backend to do, the group's identity (enough for an NCCL backend to
// pick or split a communicator), and the synchronisation the runtime lends
// a member while it runs. The semantics of each jax.lax collective (shapes,
// dtypes, checks) live in core/collective.hpp; a backend only moves and
// combines data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/event.hpp"
#include "backend/memory.hpp"
#include "base/collective_kinds.hpp"
#include "base/shape.hpp"
#include "spmd/dtype.h"

namespace spmd {

// Which group a member belongs to: the mesh-axis group over `mesh_axes` of
// a mesh, `index` among that mesh's groups over those axes, its members'
// device ids in rank order. Groups with equal identities are the same set
// of devices in the same order.
struct GroupIdentity {
  std::vector<int> devices;
  std::vector<int> mesh_axes;
  size_t index = 0;
};

// What each member publishes at the start of a collective.
struct CollSlot {
  Place in;
  Shape in_shape;
  Place out;  // all-reduce: peers read finished chunks from it
};

// The members of a group as one member sees them: every member's slot, as
// published before the call reached the backend.
class GroupView {
 public:
  virtual ~GroupView() = default;
  virtual const GroupIdentity &identity() const = 0;
  virtual size_t size() const = 0;
  virtual size_t rank() const = 0;
  virtual const CollSlot &slot(size_t member) const = 0;
};

// One member's view of its group for the duration of one collective, when
// each member runs on its own thread (shard_map). The runtime implements it
// (rendezvous, timeouts, failure of peers).
class GroupSync : public GroupView {
 public:
  // Waits for every member of the group; throws if one never comes.
  virtual void barrier() = 0;
  // Host memory of `bytes` owned by the group for this member, valid until
  // the member's second collective after this one: two areas per member
  // alternate, and a member writes one again only after every member has
  // arrived at the collective in between, so no reader of it remains.
  virtual void *member_storage(size_t bytes) = 0;
};

// One member's part of one collective, shapes and parameters already
// checked by the caller. `after` holds what must finish before the member's
// input may be read and its output written. A member publishes its slot
// before its `after` has finished: a backend reads a peer's memory only once
// that peer's `after` is done too (a thread-per-member backend waits for
// its own `after`, then meets its group).
struct CollectiveCall {
  Transport kind = Transport::AllReduce;
  ReduceOp op = ReduceOp::Sum;
  spmd_dtype dtype = SPMD_F32;
  int device = 0;
  Place out;
  Shape out_shape;
  int64_t axis = 0;         // gather axis, scatter dimension, split axis
  int64_t concat_axis = 0;  // all-to-all
  bool tiled = true;
  int64_t source = -1;      // permute: the member this one receives from, -1 none
  EventList after;
  // Set by the backend's prepare_collective for its own run_collective.
  uint32_t backend_flags = 0;
};

// A whole group's collective, every member's call and slot, for backends
// that run all members of all groups from one call (the persistent
// collectives' path; NCCL's grouped calls).
struct GroupCall {
  GroupIdentity identity;
  std::vector<CollectiveCall> calls;  // rank order
  std::vector<CollSlot> slots;        // rank order
};

}  // namespace spmd
