#include "runtime/runtime.hpp"

#include <typeinfo>

#include "base/error.hpp"
#include "runtime/device_threads.hpp"
#include "runtime/platforms.hpp"

namespace spmd {

Runtime::Runtime(std::shared_ptr<Backend> backend) : backend_(std::move(backend)) {}

std::shared_ptr<Runtime> Runtime::create(const spmd_runtime_options &o) {
  return std::make_shared<Runtime>(make_backend(o));
}

Runtime &Runtime::of(const DeviceSet &devices) {
  // Every DeviceSet a handle can reach is a Runtime (a final class, so the
  // type check is one comparison); anything else is a bug.
  if (typeid(devices) != typeid(Runtime))
    fail(SPMD_ERR_INTERNAL, "the mesh's devices do not belong to a runtime");
  return const_cast<Runtime &>(static_cast<const Runtime &>(devices));
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
  info.memory_bytes = backend_->device_memory_bytes(device);
  info.compute_capability = backend_->device_compute_capability(device);
  return info;
}

DeviceThreads &Runtime::device_threads() const {
  std::call_once(device_threads_once_,
                 [&] { device_threads_ = std::make_shared<DeviceThreads>(device_count()); });
  return *device_threads_;
}

}  // namespace spmd
