// The CUDA platform's collectives over NCCL (built when SPMD_HAVE_NCCL is
// defined). Each group of devices (GroupIdentity::devices, rank order) gets
// its communicators on first use, one per member, made together by
// ncclCommInitAll: every rank lives in this process, so no unique id has to
// travel, and each group's communicators stand alone, so a failed or
// aborted group leaves the others working (a split from one world
// communicator would tie every group to it and need every device at each
// split). A member's NCCL work runs on its logical device's own stream.
//
// Transports, where NCCL expresses them exactly (otherwise the call
// answers false and the native path runs the collective):
//   all-reduce      ncclAllReduce
//   all-gather      ncclAllGather when the blocks are equal, else pairs of
//                   ncclSend/ncclRecv; received straight into the output
//                   when it is the blocks in rank order (nothing before the
//                   gather axis), else into scratch and placed by the native
//                   gather's copies
//   reduce-scatter  ncclReduceScatter when nothing precedes the scatter
//                   dimension and it splits evenly; else native
//   all-to-all      ncclSend/ncclRecv pairs, pieces that are not one dense
//                   run packed into (or unpacked from) scratch
//   permute         ncclSend/ncclRecv, zeros where no member sends; only on
//                   the grouped path (a lone member does not know who
//                   receives from it), native from a member's own thread
// NCCL's max and min drop NaNs: for floats each member also reduces a
// byte per element saying "NaN here" (an NCCL max over uint8, in scratch),
// and a last kernel writes the quiet NaN where it is set. Sums are NCCL's
// (its order and accumulation): only the native path is bit-identical to
// the CPU platform.
//
// A watchdog thread, awake only while NCCL work is in flight, polls every
// communicator's asynchronous error every 100 ms; on an error it records it
// and aborts the group's communicators (in a thread it waits at most a few
// seconds for). A failed group stays failed: later collectives over it
// throw its error. Internal to backend/cuda.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backend/collectives.hpp"
#include "backend/cuda/device.hpp"

namespace spmd::cuda {

// Why NCCL cannot run a group whose members (rank order) are these logical
// devices, with the versions involved, or empty when it can. Several
// members on one GPU need NCCL 2.30 or newer and
// NCCL_MULTI_RANK_GPU_ENABLE=1; older NCCL refuses them.
std::string nccl_unusable_reason(const std::vector<const LogicalDevice *> &members);

// Whether NCCL runs this collective exactly; the same answer for every
// member of the group. false: run it on the native path.
bool nccl_expresses(const CollectiveCall &call, const GroupView &group);  // own thread
bool nccl_expresses(const GroupCall &group);                              // grouped

// Device memory a member needs for its NCCL part (staging, NaN flags), on
// its own device, valid from the call until its stream has passed the
// work; 0 when none. Any alignment: the call aligns it.
size_t nccl_scratch_bytes(const CollectiveCall &call, const GroupView &group);
size_t nccl_scratch_bytes(const GroupCall &group, size_t rank);

struct DeviceScratch {
  void *ptr = nullptr;
  size_t bytes = 0;
};

class NcclCollectives {
 public:
  // `devices`: the backend's logical devices, indexed by device id; they
  // outlive this object.
  explicit NcclCollectives(std::vector<LogicalDevice *> devices);
  // Destroys the communicators (aborting those whose work has not
  // finished); the caller has synchronised the streams.
  ~NcclCollectives();
  NcclCollectives(const NcclCollectives &) = delete;
  NcclCollectives &operator=(const NcclCollectives &) = delete;

  // Queues every member of every group, from this thread, in one NCCL group
  // (run_collective_groups). The caller holds every member device's lock
  // (taken in device order) and has made each member's stream wait for its
  // call's `after`; scratch[g][r] has nccl_scratch_bytes(groups[g], r)
  // bytes. Returns false, queuing nothing, when NCCL does not express one of
  // the collectives. Throws on an NCCL or CUDA error, and when a group's
  // communicators failed before; an error after some work was queued
  // aborts the groups involved, so no peer waits forever.
  bool queue_groups(const std::vector<GroupCall> &groups,
                    const std::vector<std::vector<DeviceScratch>> &scratch);

  // Queues member group.rank()'s part from its own thread (shard_map): the
  // other members call this on theirs, and the first to arrive makes the
  // group's communicators while the others wait. The caller holds the
  // member device's lock, its stream waits for call.after, and the group
  // has met (every member will queue its part). Otherwise as queue_groups.
  bool queue_member(const CollectiveCall &call, const GroupView &group, DeviceScratch scratch);

  // The error that failed the communicators of the group over `devices`
  // (GroupIdentity::devices), naming the device and the error, or empty.
  // Work of that group queued before the failure completes on the GPU with
  // undefined results: its events should fail with this message.
  std::string failure(const std::vector<int> &devices) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spmd::cuda
