// Where bytes live, as the code above the backends names them. Device
// memory is addressed by DevicePtr, which only backend/ reads or writes
// through: on the CPU platform it is a host address, on CUDA a device
// pointer, on the sim platform a value no host code may dereference. Code
// outside backend/ moves device memory with the backend's copies and
// changes it with the backend's kernels, never by itself.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spmd {

// An address in a backend's memory. Like a CUDA device pointer it may be
// offset, compared and handed back to the backend, never dereferenced.
struct DevicePtr {
  uintptr_t bits = 0;

  DevicePtr offset(size_t bytes) const { return {bits + bytes}; }
  explicit operator bool() const { return bits != 0; }
  bool operator==(const DevicePtr &) const = default;
};

enum class MemoryKind {
  // Memory of one device, allocated by its backend; only the backend
  // addresses it.
  Device,
  // Memory of one device that host code may also read and write (as CUDA's
  // mapped host memory): what shard_map callbacks receive on backends whose
  // device memory the host cannot touch.
  Mapped,
  // Host memory the caller owns (a user's buffer): a host pointer.
  Host,
};

// One place in memory: a kind, the device it belongs to (unused for Host)
// and the address.
struct Place {
  MemoryKind kind = MemoryKind::Device;
  int device = -1;
  DevicePtr ptr;

  static Place host(const void *p) {
    return {MemoryKind::Host, -1, {reinterpret_cast<uintptr_t>(p)}};
  }
  Place offset(size_t bytes) const { return {kind, device, ptr.offset(bytes)}; }
};

// The pointer a shard_map callback sees for callback memory, and back:
// backends define callback memory (Backend::callback_memory) so that the
// same bits serve both, as a CUDA device pointer does.
inline void *callback_pointer(DevicePtr p) { return reinterpret_cast<void *>(p.bits); }
inline DevicePtr from_callback_pointer(const void *p) { return {reinterpret_cast<uintptr_t>(p)}; }

}  // namespace spmd
