// The CPU platform: N virtual devices in this process, each with its own
// buffers in host memory (like --xla_force_host_platform_device_count). Its
// work runs before each call returns, spread over a worker pool sized to
// the cores, so it never makes an event.
#pragma once

#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cpu/host_allocator.hpp"
#include "base/worker_pool.hpp"

namespace spmd::cpu {

class CpuBackend final : public Backend {
 public:
  // worker_threads: threads of the pool, the caller included; 0 = the
  // cores. cache_bytes: freed memory kept for reuse.
  CpuBackend(int devices, int worker_threads, size_t cache_bytes);

  spmd_platform platform() const override { return SPMD_PLATFORM_CPU; }
  const char *platform_name() const override { return "cpu"; }
  int device_count() const override { return devices_; }
  const char *device_kind(int) const override { return "cpu"; }
  SharedMemoryDevice shared_memory_device(int) const override {
    return {SharedMemoryDevice::Kind::Host, 0};
  }
  std::string device_repr(int device) const override;
  const char *picture_label() const override { return "CPU"; }

  DevicePtr allocate(int device, size_t bytes, MemoryKind kind) override;
  void deallocate(int device, DevicePtr ptr, size_t bytes, MemoryKind kind,
                  const EventList &after) override;
  MemoryKind callback_memory() const override { return MemoryKind::Device; }
  size_t max_chain_steps() const override { return SIZE_MAX; }
  bool fused_softmax() const override { return true; }

  EventPtr copy_boxes(std::span<const BoxCopy> copies, const EventList &after) override;
  EventPtr launch(std::span<const Kernel> kernels, const EventList &after) override;

  void prepare_collective(CollectiveCall &call, CollSlot &slot, GroupSync &group) override;
  EventPtr run_collective(const CollectiveCall &call, GroupSync &group) override;
  bool run_collective_groups(const std::vector<GroupCall> &groups, EventPtr &done) override;

 private:
  // Whether the calling thread runs beside as many others as the host has
  // cores (side_by_side): then its work runs on it alone.
  bool cores_taken() const;
  // Runs fn(i) for i < n on the pool, or on the calling thread when the
  // work is too small to be worth waking a worker or the cores are taken.
  void parallel_for(size_t n, size_t bytes, const std::function<void(size_t)> &fn);
  // Runs a launch holding matrix products (run(i) runs kernel i): side by
  // side on the pool, or one after another on every core.
  void run_products(std::span<const Kernel> kernels, const std::function<void(size_t)> &run);

  int devices_;
  HostAllocator allocator_;
  WorkerPool pool_;
};

}  // namespace spmd::cpu
