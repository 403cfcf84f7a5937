// The CUDA platform: one device per visible GPU, one stream per device.
// This first cut keeps the contract for devices, memory (stream-ordered
// allocation and free), events (a CUDA event beside the host one, so work
// on another stream waits on the GPU, not the host), batched box copies
// between host and devices and between devices, and the fill kernel that
// makes arrays. Other kernels and the collectives (NCCL) report
// SPMD_ERR_UNSUPPORTED until they are written. CUDA types stay in the .cu
// file, so this header compiles without the toolkit.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace spmd::cuda {

class CudaBackend final : public Backend {
 public:
  // Throws UNSUPPORTED when no GPU is visible.
  CudaBackend();
  ~CudaBackend() override;

  spmd_platform platform() const override { return SPMD_PLATFORM_CUDA; }
  const char *platform_name() const override { return "cuda"; }
  int device_count() const override;
  const char *device_kind(int device) const override;
  std::string device_repr(int device) const override;
  const char *picture_label() const override { return "GPU"; }

  DevicePtr allocate(int device, size_t bytes, MemoryKind kind) override;
  void deallocate(int device, DevicePtr ptr, size_t bytes, MemoryKind kind,
                  const EventList &after) override;
  // Callbacks receive device pointers, as CUDA code expects.
  MemoryKind callback_memory() const override { return MemoryKind::Device; }

  EventPtr copy_boxes(std::span<const BoxCopy> copies, const EventList &after) override;
  EventPtr launch(std::span<const Kernel> kernels, const EventList &after) override;

  struct Device;  // a GPU and its stream (defined where CUDA's types are)

 private:
  std::vector<std::unique_ptr<Device>> devices_;
};

}  // namespace spmd::cuda
