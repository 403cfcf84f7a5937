// The runtime: one platform's devices (a backend) and the device threads of
// shard_map. It is the DeviceSet that meshes name.
//
// Over several processes (runtime/processes.hpp) it names every process's
// devices by global id, while its backend serves the local ones only,
// behind the door that translates ids (runtime/local_devices.hpp). Meshes
// may name other processes' devices; arrays hold buffers for this
// process's only (runtime/array.hpp).
#pragma once

#include <atomic>
#include <map>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/device_set.hpp"
#include "core/sharding.hpp"
#include "dist/transport.hpp"
#include "runtime/processes.hpp"
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
  // One process holding every device of `backend`.
  explicit Runtime(std::shared_ptr<Backend> backend);
  // `local` serves this process's devices among those of `processes`.
  Runtime(std::shared_ptr<Backend> local, Processes processes);

  // Builds the runtime the options ask for (options already read).
  static std::shared_ptr<Runtime> create(const spmd_runtime_options &options);

  // The runtime whose devices a mesh or sharding names.
  static Runtime &of(const DeviceSet &devices);
  static Runtime &of(const Sharding &sharding) { return of(*sharding.device_set()); }

  // Every process's devices (jax.device_count()).
  int device_count() const override { return device_count_; }
  // Platforms print the global id they are given, local or not.
  std::string device_repr(int device) const override { return backend_->device_repr(device); }
  const char *picture_label() const override { return backend_->picture_label(); }
  // Throws OUT_OF_RANGE for an unknown device id.
  DeviceInfo device_info(int device) const;
  spmd_platform platform() const { return backend_->platform(); }

  int process_index() const { return processes_.index; }
  int process_count() const { return processes_.count; }
  int local_device_count() const { return processes_.local_devices; }
  bool is_local(int device) const override {
    return device >= first_local_ && device < first_local_ + processes_.local_devices;
  }
  // Whether reductions across processes keep one process's order
  // (spmd_runtime_options.exact_reductions).
  bool exact_reductions() const { return processes_.exact_reductions; }
  // The process owning global device `device`.
  int process_of(int device) const { return processes_.process_of(device); }
  // How the processes reach each other; null for one process.
  dist::Transport *transport() const { return processes_.transport.get(); }
  // The processes owning `devices`, ascending, each once.
  std::vector<int> processes_of(std::span<const int> devices) const;
  // The tag of the next exchange among `processes` (ascending): every one
  // of them draws one per call that involves them all, in the same order,
  // so the tags agree. Each set of processes counts on its own (processes
  // outside it make other calls meanwhile), from a start of its own, so
  // that the messages of one failed call are not taken for another's; the
  // tags wrap within the transport's bound.
  int next_exchange_tag(const std::vector<int> &processes);

  Backend &backend() const { return *backend_; }
  const std::shared_ptr<Backend> &backend_ptr() const { return backend_; }
  // One thread per device for shard_map callbacks, started on first use.
  DeviceThreads &device_threads() const;

 private:
  std::shared_ptr<Backend> backend_;
  Processes processes_;
  int device_count_ = 0;
  int first_local_ = 0;
  std::mutex exchanges_mu_;
  std::map<std::vector<int>, uint64_t> exchanges_;  // per set of processes
  mutable std::once_flag device_threads_once_;
  mutable std::shared_ptr<DeviceThreads> device_threads_;
};

}  // namespace spmd
