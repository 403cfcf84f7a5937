// Device memory owned by one shard, returned to the backend when released.
#pragma once

#include <cstddef>
#include <memory>

#include "backend/backend.hpp"

namespace spmd {

// Device memory owned by one shard, returned to the backend when released.
class Buffer {
 public:
  Buffer(std::shared_ptr<Backend> backend, int device, size_t bytes);
  ~Buffer();
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  int device() const { return device_; }
  void *data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<Backend> backend_;
  int device_;
  size_t bytes_;
  void *data_;
};

using BufferPtr = std::shared_ptr<Buffer>;

}  // namespace spmd
