// The C handles: thin structs around shared C++ objects, and a registry of
// live handles so a NULL, destroyed or wrong-kind handle is reported as
// SPMD_ERR_INVALID_ARGUMENT instead of being dereferenced.
#pragma once

#include <memory>

#include "runtime/array.hpp"
#include "base/error.hpp"
#include "core/mesh.hpp"
#include "core/partition_spec.hpp"
#include "runtime/runtime.hpp"
#include "core/sharding.hpp"
#include "spmd/sharding.h"

struct spmd_runtime {
  std::shared_ptr<spmd::Runtime> impl;
};
struct spmd_mesh {
  std::shared_ptr<const spmd::Mesh> impl;
};
struct spmd_spec {
  spmd::PartitionSpec impl;
};
struct spmd_sharding {
  spmd::ShardingPtr impl;
};
struct spmd_array {
  spmd::ArrayPtr impl;
};

namespace spmd::capi {

enum class HandleKind { Runtime, Mesh, Spec, Sharding, Array, Collective, Context };

template <typename H> struct KindOf;
template <> struct KindOf<spmd_runtime> {
  static constexpr HandleKind kind = HandleKind::Runtime;
  static constexpr const char *name = "spmd_runtime";
};
template <> struct KindOf<spmd_mesh> {
  static constexpr HandleKind kind = HandleKind::Mesh;
  static constexpr const char *name = "spmd_mesh";
};
template <> struct KindOf<spmd_spec> {
  static constexpr HandleKind kind = HandleKind::Spec;
  static constexpr const char *name = "spmd_spec";
};
template <> struct KindOf<spmd_sharding> {
  static constexpr HandleKind kind = HandleKind::Sharding;
  static constexpr const char *name = "spmd_sharding";
};
template <> struct KindOf<spmd_array> {
  static constexpr HandleKind kind = HandleKind::Array;
  static constexpr const char *name = "spmd_array";
};

void register_handle(const void *handle, HandleKind kind);
// Returns false (and does nothing) if the handle is not live.
bool unregister_handle(const void *handle, HandleKind kind);
bool is_live(const void *handle, HandleKind kind);

// Wraps a new C++ object in a registered handle the caller will own.
template <typename H, typename... Args>
H *new_handle(Args &&...args) {
  std::unique_ptr<H> h(new H{std::forward<Args>(args)...});
  register_handle(h.get(), KindOf<H>::kind);  // may throw; the handle is then freed
  return h.release();
}

// _destroy: NULL and already-destroyed handles are ignored.
template <typename H>
void destroy_handle(H *h) {
  if (h != nullptr && unregister_handle(h, KindOf<H>::kind)) delete h;
}

// Checks an input handle and returns it; throws INVALID_ARGUMENT naming `arg`.
template <typename H>
H &use(H *h, const char *arg) {
  if (h == nullptr) invalid(arg, ": NULL ", KindOf<H>::name, " handle");
  if (!is_live(h, KindOf<H>::kind))
    invalid(arg, ": not a live ", KindOf<H>::name, " (destroyed, or another kind of handle)");
  return *h;
}
template <typename H>
const H &use(const H *h, const char *arg) {
  return use(const_cast<H *>(h), arg);
}

// Fills a caller's spmd_shard_info (whose struct_size the caller set).
void write_shard_info(const ShardLayout &s, spmd_shard_info *out);

}  // namespace spmd::capi
