#include "runtime/buffer.hpp"

namespace spmd {

Buffer::Buffer(std::shared_ptr<Backend> backend, int device, size_t bytes)
    : backend_(std::move(backend)), device_(device), bytes_(bytes),
      data_(bytes ? backend_->allocate(device, bytes) : nullptr) {}

Buffer::~Buffer() {
  if (data_) backend_->deallocate(device_, data_, bytes_);
}

}  // namespace spmd
