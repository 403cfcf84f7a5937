#include "capi/handles.hpp"

#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace spmd::capi {

namespace {
std::shared_mutex &registry_mutex() {
  static std::shared_mutex mu;
  return mu;
}
std::unordered_map<const void *, HandleKind> &registry() {
  static auto *live = new std::unordered_map<const void *, HandleKind>();  // never freed: usable during exit
  return *live;
}
}  // namespace

void register_handle(const void *handle, HandleKind kind) {
  std::unique_lock lock(registry_mutex());
  registry()[handle] = kind;
}

bool unregister_handle(const void *handle, HandleKind kind) {
  std::unique_lock lock(registry_mutex());
  auto it = registry().find(handle);
  if (it == registry().end() || it->second != kind) return false;
  registry().erase(it);
  return true;
}

bool is_live(const void *handle, HandleKind kind) {
  std::shared_lock lock(registry_mutex());
  auto it = registry().find(handle);
  return it != registry().end() && it->second == kind;
}

}  // namespace spmd::capi
