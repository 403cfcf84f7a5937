// The contract every platform implements, modelled on PJRT and CUDA
// streams. The layers above never touch device memory themselves: they
// allocate it, copy boxes into, out of and between it, run kernels on it
// and run collectives over it, all through this interface.
//
// Memory. DevicePtr addresses (backend/memory.hpp) are the backend's own;
// only the backend reads or writes through them. allocate never returns
// null for bytes > 0 (it throws OUT_OF_MEMORY).
//
// Asynchrony. Every call that touches memory takes `after`, the events its
// work must wait for, and returns an event for its own completion (null
// when the work is already done, as on the CPU platform). Errors of queued
// work are kept in its event; work whose `after` failed fails with the
// same error without running. The caller orders everything: it passes the
// producers of what a call reads, and the pending readers and writers of
// what it writes; deallocate is ordered after the users the caller names.
// A backend may run work on any thread it owns.
//
// Thread safety. All calls may be made from several threads at once;
// calls whose memory overlaps must be ordered by the caller with events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/collectives.hpp"
#include "backend/event.hpp"
#include "backend/kernel.hpp"
#include "backend/memory.hpp"
#include "base/shape.hpp"
#include "spmd/runtime.h"

namespace spmd {

// One side of a box copy: a dense row-major buffer of shape `shape` at
// `place`, and the corner of the box inside it.
struct CopyEndpoint {
  Place place;
  Shape shape;
  Shape offset;
};

// Copies a box of `extent` elements of `elem_size` bytes from src to dst.
struct BoxCopy {
  CopyEndpoint src;
  CopyEndpoint dst;
  Shape extent;
  size_t elem_size = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // ---- devices ----
  virtual spmd_platform platform() const = 0;
  virtual const char *platform_name() const = 0;  // "cpu", "sim", "cuda"
  virtual int device_count() const = 0;
  virtual const char *device_kind(int device) const = 0;
  // JAX's repr of the device: "CpuDevice(id=0)", "CudaDevice(id=0)". In a
  // runtime over several processes the id is global and may be another
  // process's device of the same platform: print it, never look it up.
  virtual std::string device_repr(int device) const = 0;
  // Upper-case platform label used in sharding pictures: "CPU", "GPU".
  virtual const char *picture_label() const = 0;
  // The memory of the device's GPU in bytes and its compute capability
  // (major * 10 + minor); 0 where there is no GPU.
  virtual int64_t device_memory_bytes(int /*device*/) const { return 0; }
  virtual int device_compute_capability(int /*device*/) const { return 0; }
  // Where another library finds the device's memory (DLPack's device):
  // Host memory the host addresses directly (the CPU platform), a CUDA
  // GPU's by its ordinal, or None where device memory cannot be shared
  // (the sim platform's).
  struct SharedMemoryDevice {
    enum class Kind { None, Host, Cuda } kind = Kind::None;
    int ordinal = 0;
  };
  virtual SharedMemoryDevice shared_memory_device(int /*device*/) const { return {}; }

  // ---- memory ----
  // Device or Mapped memory of `device`. Freed memory may be cached.
  virtual DevicePtr allocate(int device, size_t bytes, MemoryKind kind) = 0;
  // Returns memory once everything in `after` has finished (failed work
  // included). Never fails: it runs in destructors.
  virtual void deallocate(int device, DevicePtr ptr, size_t bytes, MemoryKind kind,
                          const EventList &after) = 0;
  // The kind of memory shard_map callbacks receive and hand back: Device
  // where host code may use device pointers as they are (the CPU platform,
  // or CUDA with its stream), Mapped where it may not (the sim platform).
  virtual MemoryKind callback_memory() const = 0;
  // The most steps a KernelKind::ElementwiseChain launch runs: a program
  // fuses elementwise ops only where it is more than 0.
  virtual size_t max_chain_steps() const { return 0; }
  // Whether it runs SoftmaxRows kernels (else softmax is five ops).
  virtual bool fused_softmax() const { return false; }
  // The queue a shard_map callback on `device` may put its own work on, so
  // that it is ordered with the backend's (a cudaStream_t), or null where
  // work is not queued (the CPU platform).
  virtual void *device_stream(int /*device*/) { return nullptr; }

  // ---- work ----
  // Copies a batch of boxes whose destinations do not overlap; either side
  // may be host memory. The backend schedules them (splits, spreads over
  // threads or queues) itself.
  virtual EventPtr copy_boxes(std::span<const BoxCopy> copies, const EventList &after) = 0;
  // Runs a batch of kernels (backend/kernel.hpp), each on its device. The
  // kernels of one batch are independent: they may run in any order, at
  // once.
  virtual EventPtr launch(std::span<const Kernel> kernels, const EventList &after) = 0;
  // Whether each device queues its work apart (a stream, a queue thread):
  // then a batch over several devices is launched device by device, each
  // waiting for its own kernels' blocks alone (ops::launch_batch), so
  // that no device's queue waits for another's. False where a launch runs
  // its batch at once (the CPU platform).
  virtual bool queues_per_device() const { return false; }
  // The part of `done`, an event launch() returned, that stands for its
  // kernels on `device`: what a buffer written by one of those kernels
  // keeps, so that its later users and its free wait for that device's
  // work alone rather than every device's. The whole event by default.
  virtual EventPtr part_on(const EventPtr &done, int /*device*/) { return done; }
  // An event for everything queued on `device` so far, by the backend or
  // by a callback on device_stream(device); null when that is all done.
  virtual EventPtr fence(int /*device*/) { return nullptr; }

  // ---- collectives (backend/collectives.hpp) ----
  // Before the member publishes its slot: the backend may move the input
  // into the group's member_storage and mark the call (for example to skip
  // a final barrier). The default does nothing.
  virtual void prepare_collective(CollectiveCall &call, CollSlot &slot, GroupSync &group);
  // One member's part, on that member's own thread; every member has
  // published its slot. Returns once no peer will read this member's
  // memory again (the event covers the member's own output). The default
  // throws UNSUPPORTED.
  virtual EventPtr run_collective(const CollectiveCall &call, GroupSync &group);
  // Every member of every group from one call, without a thread per
  // member. Returns false when the backend needs a thread per member
  // instead (the default); otherwise sets `done`.
  virtual bool run_collective_groups(const std::vector<GroupCall> &groups, EventPtr &done);
};

}  // namespace spmd
