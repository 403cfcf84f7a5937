// The runtime: one platform's devices (a backend) and the device threads of
// shard_map. It is the DeviceSet that meshes name.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "backend/backend.hpp"
#include "core/device_set.hpp"
#include "core/sharding.hpp"
#include "spmd/runtime.h"

namespace spmd {

class DeviceThreads;

// What spmd_device_info reports about one device.
struct DeviceInfo {
  int id = 0;
  spmd_platform platform = SPMD_PLATFORM_DEFAULT;
  const char *platform_name = nullptr;
  const char *kind = nullptr;
  int process_index = 0;
  int local_index = 0;
  int64_t memory_bytes = 0;
  int compute_capability = 0;
};

class Runtime final : public DeviceSet {
 public:
  explicit Runtime(std::shared_ptr<Backend> backend);

  // Builds the runtime the options ask for (options already read).
  static std::shared_ptr<Runtime> create(const spmd_runtime_options &options);

  // The runtime whose devices a mesh or sharding names.
  static Runtime &of(const DeviceSet &devices);
  static Runtime &of(const Sharding &sharding) { return of(*sharding.device_set()); }

  int device_count() const override { return backend_->device_count(); }
  std::string device_repr(int device) const override { return backend_->device_repr(device); }
  const char *picture_label() const override { return backend_->picture_label(); }
  // Throws OUT_OF_RANGE for an unknown device id.
  DeviceInfo device_info(int device) const;
  spmd_platform platform() const { return backend_->platform(); }

  Backend &backend() const { return *backend_; }
  const std::shared_ptr<Backend> &backend_ptr() const { return backend_; }
  // One thread per device for shard_map callbacks, started on first use.
  DeviceThreads &device_threads() const;

 private:
  std::shared_ptr<Backend> backend_;
  mutable std::once_flag device_threads_once_;
  mutable std::shared_ptr<DeviceThreads> device_threads_;
};

}  // namespace spmd
