#include "runtime/runtime.hpp"

#include "base/error.hpp"
#include "runtime/device_threads.hpp"
#include "runtime/platforms.hpp"

namespace spmd {

Runtime::Runtime(std::shared_ptr<Backend> backend, int worker_threads)
    : backend_(std::move(backend)), pool_(std::make_unique<WorkerPool>(worker_threads)) {}

std::shared_ptr<Runtime> Runtime::create(const spmd_runtime_options &o) {
  if (o.worker_threads < 0)
    invalid("options->worker_threads: ", o.worker_threads, " is negative");
  return std::make_shared<Runtime>(make_backend(o), o.worker_threads);
}

Runtime &Runtime::of(const DeviceSet &devices) {
  // Every DeviceSet a handle can reach is a Runtime; anything else is a bug.
  auto *rt = dynamic_cast<const Runtime *>(&devices);
  if (rt == nullptr) fail(SPMD_ERR_INTERNAL, "the mesh's devices do not belong to a runtime");
  return const_cast<Runtime &>(*rt);
}

DeviceInfo Runtime::device_info(int device) const {
  check_device("device_id", device);
  DeviceInfo info;
  info.id = device;
  info.platform = backend_->platform();
  info.platform_name = backend_->platform_name();
  info.kind = backend_->device_kind(device);
  // One process holds every device until multi-process meshes exist.
  info.process_index = 0;
  info.local_index = device;
  return info;
}

DeviceThreads &Runtime::device_threads() const {
  std::call_once(device_threads_once_,
                 [&] { device_threads_ = std::make_shared<DeviceThreads>(device_count()); });
  return *device_threads_;
}

}  // namespace spmd
