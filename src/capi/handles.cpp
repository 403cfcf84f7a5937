#include "capi/handles.hpp"

#include "capi/guard.hpp"
#include "spmd/handles.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace spmd::capi {

namespace {

// Ids look like addresses no process maps (the tag makes them
// non-canonical), 16 apart, and count up: an id is never handed out twice.
constexpr uintptr_t kIdTag = uintptr_t{0x5bd1} << 48;

struct Entry {
  HandleKind kind;
  void *object;
  void (*destroy)(void *);
};

struct Registry {
  std::shared_mutex mu;
  std::unordered_map<uintptr_t, Entry> live;
  std::atomic<uintptr_t> next{1};
};

Registry &registry() {
  static auto *r = new Registry();  // never freed: usable during exit
  return *r;
}

}  // namespace

uintptr_t register_object(void *object, HandleKind kind, void (*destroy)(void *)) {
  Registry &r = registry();
  const uintptr_t id = kIdTag | (r.next.fetch_add(1, std::memory_order_relaxed) << 4);
  std::unique_lock lock(r.mu);
  r.live.emplace(id, Entry{kind, object, destroy});  // may throw; nothing registered then
  return id;
}

void *lookup(uintptr_t id, HandleKind kind) {
  Registry &r = registry();
  std::shared_lock lock(r.mu);
  auto it = r.live.find(id);
  return it != r.live.end() && it->second.kind == kind ? it->second.object : nullptr;
}

bool release(uintptr_t id, HandleKind kind) {
  Registry &r = registry();
  Entry e;
  {
    std::unique_lock lock(r.mu);
    auto it = r.live.find(id);
    if (it == r.live.end() || it->second.kind != kind) return false;
    e = it->second;
    r.live.erase(it);
  }
  // Outside the lock: destroying an object may release others.
  if (e.destroy) e.destroy(e.object);
  return true;
}

ArrayHold::ArrayHold(const spmd_array *h, const char *arg, Abstract abstract) {
  ArraySlot &s = live(const_cast<spmd_array *>(h), arg).slot;
  if (const char *op = s.hold())
    invalid(arg, ": was donated to ", op, " and can no longer be used (only spmd_array_destroy)");
  slot_ = &s;
  if (abstract == Abstract::Refused && s.array()->abstract())
    invalid(arg, ": a value of a program being recorded, which has a type and a layout but no "
                 "values; ops record it, and spmd_x_program_run gives arrays with values");
}

void hand_out(std::vector<ArrayPtr> arrays, spmd_array **out) {
  std::vector<spmd_array *> handles;
  handles.reserve(arrays.size());  // so that no push_back throws once its handle exists
  try {
    for (ArrayPtr &a : arrays) handles.push_back(new_handle<spmd_array>(std::move(a)));
  } catch (...) {
    for (spmd_array *h : handles) destroy_handle(h);
    throw;
  }
  std::copy(handles.begin(), handles.end(), out);
}

size_t live_count() {
  Registry &r = registry();
  std::shared_lock lock(r.mu);
  return r.live.size();
}

}  // namespace spmd::capi

extern "C" spmd_status spmd_live_handles(size_t *out) {
  return spmd::capi::guard(__func__, [&] { *spmd::capi::out_arg(out) = spmd::capi::live_count(); });
}
