// The runtime: one platform's devices (a backend) and the worker pool that
// runs the per-shard pieces of global operations.
#pragma once

#include <memory>
#include <mutex>

#include "backend/backend.hpp"
#include "exec/worker_pool.hpp"
#include "spmd/runtime.h"

namespace spmd {

class DeviceThreads;

class Runtime {
 public:
  Runtime(std::shared_ptr<Backend> backend, int worker_threads);

  // Builds the runtime the options ask for (options already validated).
  static std::shared_ptr<Runtime> create(const spmd_runtime_options &options);

  Backend &backend() const { return *backend_; }
  const std::shared_ptr<Backend> &backend_ptr() const { return backend_; }
  WorkerPool &pool() const { return *pool_; }
  // One thread per device for shard_map callbacks, started on first use.
  DeviceThreads &device_threads() const;
  int device_count() const { return backend_->device_count(); }

  // Throws OUT_OF_RANGE naming `what` unless 0 <= device < device_count().
  void check_device(const char *what, int device) const;

 private:
  std::shared_ptr<Backend> backend_;
  std::unique_ptr<WorkerPool> pool_;
  mutable std::once_flag device_threads_once_;
  mutable std::shared_ptr<DeviceThreads> device_threads_;
};

}  // namespace spmd
