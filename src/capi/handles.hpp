// The C handles: thin structs around shared C++ objects, reached only
// through a registry. A handle the caller holds is not the struct's address
// but an id the registry hands out once and never again, so a NULL,
// destroyed or wrong-kind handle, or one destroyed and then seemingly
// reborn at the same address, is reported as SPMD_ERR_INVALID_ARGUMENT
// instead of being dereferenced. Not detected: a handle destroyed by one
// thread while another still uses it (the API says which calls may run at
// once).
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "core/mesh.hpp"
#include "core/partition_spec.hpp"
#include "core/sharding.hpp"
#include "runtime/array.hpp"
#include "runtime/runtime.hpp"
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
// Reached only through spmd::capi::ArrayHold, never use(): a donation may
// let the array go while another call runs.
struct spmd_array {
  explicit spmd_array(spmd::ArrayPtr array) noexcept : slot(std::move(array)) {}
  spmd::ArraySlot slot;
};

namespace spmd::capi {

enum class HandleKind { Runtime, Mesh, Spec, Sharding, Array, Collective, Context, Program };

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

// Registers `object` under a new id; `destroy` (may be null for objects
// the registry does not own) runs when the id is released.
uintptr_t register_object(void *object, HandleKind kind, void (*destroy)(void *));
// The object of a live id of `kind`, or null.
void *lookup(uintptr_t id, HandleKind kind);
// Forgets a live id of `kind` and destroys its object; false (doing
// nothing) if the id is not live.
bool release(uintptr_t id, HandleKind kind);

// Number of live ids of every kind.
size_t live_count();

inline uintptr_t id_of(const void *handle) { return reinterpret_cast<uintptr_t>(handle); }

// Wraps a new C++ object in a registered handle the caller will own.
template <typename H, typename... Args>
H *new_handle(Args &&...args) {
  std::unique_ptr<H> h(new H{std::forward<Args>(args)...});
  const uintptr_t id = register_object(h.get(), KindOf<H>::kind,
                                       [](void *p) { delete static_cast<H *>(p); });
  h.release();  // the registry owns it now
  return reinterpret_cast<H *>(id);
}

// _destroy: NULL and already-destroyed handles are ignored.
template <typename H>
void destroy_handle(H *h) {
  if (h != nullptr) release(id_of(h), KindOf<H>::kind);
}

// The struct of a live handle of H's kind; throws INVALID_ARGUMENT naming
// `arg`.
template <typename H>
H &live(H *h, const char *arg) {
  if (h == nullptr) invalid(arg, ": NULL ", KindOf<H>::name, " handle");
  void *object = lookup(id_of(h), KindOf<H>::kind);
  if (object == nullptr)
    invalid(arg, ": not a live ", KindOf<H>::name, " (destroyed, or another kind of handle)");
  return *static_cast<H *>(object);
}

// Checks an input handle and returns its struct; throws INVALID_ARGUMENT
// naming `arg`. Arrays are held instead (ArrayHold).
template <typename H>
H &use(H *h, const char *arg) {
  static_assert(!std::is_same_v<H, spmd_array>, "hold an array handle: ArrayHold");
  return live(h, arg);
}
template <typename H>
const H &use(const H *h, const char *arg) {
  return use(const_cast<H *>(h), arg);
}

// Whether a call takes a value of a program being recorded (an abstract
// array, runtime/recording.hpp): the ops, which record it, and the calls
// that read only its type and layout. Every other call needs values.
enum class Abstract { Refused, Allowed };

// A call's hold on an array handle (ArraySlot) from the argument check to
// the end of the call: its array stays alive, and an op consuming it by
// donation meanwhile leaves its buffers as they are. Throws
// INVALID_ARGUMENT naming `arg` for a NULL, destroyed, wrong-kind or
// donated handle, and for a program's value unless `abstract` allows it.
class ArrayHold {
 public:
  ArrayHold() = default;
  ArrayHold(const spmd_array *h, const char *arg, Abstract abstract = Abstract::Refused);
  ArrayHold(ArrayHold &&o) noexcept : slot_(o.slot_) { o.slot_ = nullptr; }
  ArrayHold &operator=(ArrayHold &&o) noexcept {
    std::swap(slot_, o.slot_);
    return *this;
  }
  ~ArrayHold() {
    if (slot_) slot_->release();
  }

  ArraySlot *slot() const { return slot_; }
  const ArrayPtr &ptr() const { return slot_->array(); }
  Array &operator*() const { return *ptr(); }
  Array *operator->() const { return ptr().get(); }

 private:
  ArraySlot *slot_ = nullptr;
};

// Hands arrays[i] out as out[i], all or none: a handle that cannot be made
// releases those made before it, and out is written only once all exist.
void hand_out(std::vector<ArrayPtr> arrays, spmd_array **out);

// Fills a caller's spmd_shard_info (whose struct_size the caller set).
void write_shard_info(const ShardLayout &s, spmd_shard_info *out);

}  // namespace spmd::capi
