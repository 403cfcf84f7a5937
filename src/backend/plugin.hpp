// What a platform that lives in a plugin (libspmd_cuda.so) is asked to make:
// a Backend (backend/backend.hpp), through the entry point every plugin
// exports (base/plugin.hpp), with PluginKind::Platform and this
// configuration.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "base/plugin.hpp"

namespace spmd {

// What the runtime's options and environment ask of a plugin's platform.
struct PluginConfig {
  size_t struct_size = sizeof(PluginConfig);
  // Logical devices on each GPU (>= 1).
  int devices_per_gpu = 1;
  // Freed device memory kept per runtime for reuse; negative keeps all.
  int64_t cache_bytes = -1;
  // What shard_map callbacks receive: Device (device pointers and a
  // stream) or Mapped (host-mapped memory that host code may touch).
  MemoryKind callback_memory = MemoryKind::Device;
};

}  // namespace spmd
