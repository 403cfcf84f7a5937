// The CUDA platform: logical devices on GPUs (N per GPU, each with its own
// stream, memory pool and cuBLAS handle), stream-ordered memory, box copies
// (host transfers through pinned staging), every kernel kind of the CPU
// platform, and collectives over the logical devices of one GPU and across
// GPUs. It is built into a plugin (libspmd_cuda.so) that libspmd loads at
// run time (backend/plugin.hpp). CUDA's types stay in the .cu files, so
// this header compiles without the toolkit.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "backend/plugin.hpp"

namespace spmd::cuda {

class CudaBackend final : public Backend {
 public:
  // Throws UNSUPPORTED when no GPU is usable (no driver, no device), with
  // CUDA's reason.
  explicit CudaBackend(const PluginConfig &config);
  ~CudaBackend() override;

  spmd_platform platform() const override { return SPMD_PLATFORM_CUDA; }
  const char *platform_name() const override { return "cuda"; }
  int device_count() const override;
  const char *device_kind(int device) const override;
  std::string device_repr(int device) const override;
  const char *picture_label() const override { return "GPU"; }
  int64_t device_memory_bytes(int device) const override;
  int device_compute_capability(int device) const override;
  SharedMemoryDevice shared_memory_device(int device) const override;

  DevicePtr allocate(int device, size_t bytes, MemoryKind kind) override;
  void deallocate(int device, DevicePtr ptr, size_t bytes, MemoryKind kind,
                  const EventList &after) override;
  MemoryKind callback_memory() const override;
  size_t max_chain_steps() const override;
  bool queues_per_device() const override { return true; }  // a stream each
  void *device_stream(int device) override;

  EventPtr copy_boxes(std::span<const BoxCopy> copies, const EventList &after) override;
  EventPtr launch(std::span<const Kernel> kernels, const EventList &after) override;
  EventPtr fence(int device) override;
  EventPtr part_on(const EventPtr &done, int device) override;

  EventPtr run_collective(const CollectiveCall &call, GroupSync &group) override;
  bool run_collective_groups(const std::vector<GroupCall> &groups, EventPtr &done) override;

  struct Impl;  // the GPUs and logical devices (defined where CUDA's types are)

 private:
  // The NCCL path (when the plugin has NCCL).
  static EventPtr run_nccl_member(CudaBackend &self, Impl &m, const CollectiveCall &call,
                                  GroupSync &group);
  static EventPtr run_nccl_groups(CudaBackend &self, Impl &m, const std::vector<GroupCall> &groups,
                                  const EventList &after);

  std::unique_ptr<Impl> impl_;
};

}  // namespace spmd::cuda
