// The interface every platform implements: device memory, copies between
// host and device memory and between devices, and the few per-shard kernels
// that make arrays on a device. Core code reaches shard memory only through
// it, so a CUDA backend is a second implementation, not a rewrite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/shape.hpp"
#include "spmd/dtype.h"
#include "spmd/runtime.h"

namespace spmd {

struct CollectiveCall;
struct GroupCall;
class GroupSync;

namespace rng {
struct Request;
}  // namespace rng

// Marks host memory in a copy endpoint.
inline constexpr int kHostDevice = -1;

// One side of a box copy: a dense row-major buffer of shape `shape` on
// `device` (or the host), and the corner of the box inside it.
struct CopyEndpoint {
  int device = kHostDevice;
  void *base = nullptr;
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

  virtual spmd_platform platform() const = 0;
  virtual const char *platform_name() const = 0;  // "cpu", "cuda"
  virtual int device_count() const = 0;
  virtual const char *device_kind(int device) const = 0;
  // JAX's repr of the device: "CpuDevice(id=0)", "CudaDevice(id=0)".
  virtual std::string device_repr(int device) const = 0;
  // Upper-case platform label used in sharding pictures: "CPU", "GPU".
  virtual const char *picture_label() const = 0;

  // Device memory. allocate never returns null for bytes > 0 (throws
  // OUT_OF_MEMORY); freed memory may be cached and handed out again.
  virtual void *allocate(int device, size_t bytes) = 0;
  virtual void deallocate(int device, void *ptr, size_t bytes) = 0;

  // One box copy; either side may be host memory. Safe to call from several
  // threads at once for disjoint destinations.
  virtual void copy_box(const BoxCopy &copy) = 0;

  // Fills `count` elements of `elem_size` bytes at ptr with `pattern`.
  virtual void fill(int device, void *ptr, size_t count, const void *pattern,
                    size_t elem_size) = 0;

  // Writes start + i * step (converted to dtype) into a shard buffer of
  // local shape `box.extent()`, i being the row-major index in `global`.
  virtual void fill_arange(int device, void *ptr, spmd_dtype dtype,
                           const Shape &global, const Box &box, double start,
                           double step) = 0;

  // Writes random values into a shard buffer of local shape `box.extent()`:
  // the elements at `box` of a global array of shape `global` drawn as
  // `request` says (core/random.hpp). Each element depends only on the key
  // and its global index, so every shard is generated on its own device.
  virtual void fill_random(int device, void *ptr, const rng::Request &request,
                           const Shape &global, const Box &box) = 0;

  // Waits for all work queued on the device; rethrows its error.
  virtual void synchronize(int device) = 0;

  // One device's part of a collective over a group of devices (see
  // backend/collectives.hpp). The default throws UNSUPPORTED.
  virtual void run_collective(const CollectiveCall &call, GroupSync &group);
  // Every member of every group at once, from the worker pool: returns
  // false when the backend needs a thread per device instead (the default).
  virtual bool run_collective_groups(
      const std::vector<GroupCall> &groups,
      const std::function<void(size_t, const std::function<void(size_t)> &)> &parallel_for);
};

}  // namespace spmd
