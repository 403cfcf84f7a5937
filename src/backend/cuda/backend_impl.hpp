// The CUDA backend's state, shared by its files (cuda_backend.cu: devices,
// memory, copies, kernels; backend_collectives.cu: collectives). Internal
// to backend/cuda.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/check.hpp"
#include "backend/cuda/collective_path.hpp"
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/device.hpp"
#include "backend/cuda/host_memory.hpp"
#include "base/error.hpp"

#ifdef SPMD_HAVE_NCCL
#include "backend/cuda/nccl_collectives.hpp"
#endif

namespace spmd::cuda {

// cuBLAS's workspace per logical device (what it asks for on Hopper).
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;
// Pinned staging kept for host transfers, and mapped memory kept for
// callbacks, per runtime.
constexpr size_t kKeepStagingBytes = size_t{1} << 30;
constexpr size_t kKeepMappedBytes = size_t{1} << 30;

// The device address of a place (device memory, or mapped host memory).
inline void *address(const Place &p) { return reinterpret_cast<void *>(p.ptr.bits); }

struct CudaBackend::Impl {
  PluginConfig config;
  bool allow_tf32 = false;
  std::vector<std::unique_ptr<Gpu>> gpus;
  std::vector<std::unique_ptr<LogicalDevice>> devices;
  PinnedCache staging{false, kKeepStagingBytes};
  PinnedCache mapped{true, kKeepMappedBytes};
  CollectivesPolicy collectives = CollectivesPolicy::Auto;
#ifdef SPMD_HAVE_NCCL
  std::shared_ptr<NcclCollectives> nccl;
#endif

  ~Impl() {
    for (auto &d : devices) {
      if (d->stream == nullptr) continue;
      DeviceGuard guard(d->gpu->ordinal);
      cudaStreamSynchronize(d->stream);
    }
#ifdef SPMD_HAVE_NCCL
    nccl.reset();  // its communicators before the streams they run on
#endif
    for (auto &d : devices) {
      if (d->stream == nullptr) continue;
      DeviceGuard guard(d->gpu->ordinal);
      if (d->blas) cublasDestroy(d->blas);
      if (d->blas_workspace) cudaFree(d->blas_workspace);
      if (d->kernel_scratch) cudaFree(d->kernel_scratch);
      if (d->pool) cudaMemPoolDestroy(d->pool);
      cudaStreamDestroy(d->stream);
    }
    cudaGetLastError();
  }

  // The path of a group's collectives (collective_path.hpp); throws
  // UNSUPPORTED when none can run it.
  CollectivePath path_of(const std::vector<int> &ids) {
    std::vector<const LogicalDevice *> members;
    members.reserve(ids.size());
    for (int id : ids) members.push_back(&dev(id));
    return choose_collective_path(collectives, members);
  }

  // For a collective NCCL was chosen for but cannot express exactly.
  void require_native(const std::vector<int> &ids) {
    std::vector<const LogicalDevice *> members;
    for (int id : ids) members.push_back(&dev(id));
    const std::string why = native_unusable_reason(members);
    if (!why.empty())
      fail(SPMD_ERR_UNSUPPORTED, "a collective NCCL cannot express over ", ids.size(),
           " devices: ", why);
  }

  LogicalDevice &dev(int device) {
    if (device < 0 || static_cast<size_t>(device) >= devices.size())
      fail(SPMD_ERR_INTERNAL, "CUDA platform: device ", device, " does not exist (",
           devices.size(), " devices)");
    return *devices[static_cast<size_t>(device)];
  }

  // The failed call's error cleared, every stream of `gpu` drained, every
  // pool's free memory given back to the GPU and the kept pinned staging
  // released: what an allocation that failed (ours or cuBLAS's) tries
  // before it gives up.
  void release_cached(const Gpu &gpu) noexcept;

  // cuBLAS for `d`, made on first use: its handle on the device's stream,
  // its workspace, TF32 only when allowed.
  void ensure_blas(LogicalDevice &d);

  // The kernels' scratch for `d`, made on first use.
  void ensure_kernel_scratch(LogicalDevice &d);

  // Synchronous transfers between pageable host memory and one device,
  // through pinned staging: the host side is packed into (or unpacked from)
  // a dense block of the box, which the device copies in one go.
  void host_transfer(const BoxCopy &c, const EventList &after);
};

}  // namespace spmd::cuda
