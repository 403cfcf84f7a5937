// The boundary between libspmd and a platform that lives in a plugin
// (libspmd_cuda.so), loaded at run time as PJRT loads its plugins, so that
// one libspmd.so runs its CPU platform on machines without the plugin's
// libraries (CUDA, cuBLAS, NCCL) and says why the platform is unavailable.
//
// The plugin is built from the same tree by the same compiler as libspmd:
// the object it returns is a Backend (backend/backend.hpp), called through
// its virtual functions, and the exceptions it throws (spmd::Error) are
// caught by libspmd as its own (libstdc++ matches exception types across
// libraries by name). The interface string guards that assumption: it
// carries the version and a digest of the headers that define the
// boundary, and a plugin built from other headers is refused.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"

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

// Defined by the build for libspmd and its plugins alike.
#ifndef SPMD_PLUGIN_INTERFACE
#error "SPMD_PLUGIN_INTERFACE is defined by the build (src/CMakeLists.txt)"
#endif
inline constexpr const char *kPluginInterface = SPMD_PLUGIN_INTERFACE;

// The plugin's one entry point, exported unmangled as
// spmd_plugin_create_<platform>. Returns an spmd_status; on failure writes a
// message (NUL-terminated, cut to message_size) and leaves *out untouched.
// `interface` is the caller's kPluginInterface; a plugin refuses another.
extern "C" {
typedef int (*PluginCreateFn)(const char *interface, const PluginConfig *config, Backend **out,
                              char *message, size_t message_size);
}

}  // namespace spmd
