#include "runtime/local_devices.hpp"

#include <vector>

#include "base/error.hpp"

namespace spmd {

namespace {

// One member's group as the platform sees it: the runtime's GroupSync with
// every device id and place translated. Slots are translated when asked
// for, since peers publish theirs while the member runs.
class LocalGroupSync final : public GroupSync {
 public:
  LocalGroupSync(GroupSync &group, const LocalDevices &door)
      : group_(group), door_(door), identity_(group.identity()), slots_(group.size()) {
    for (int &d : identity_.devices) d = door.local(d);
  }

  const GroupIdentity &identity() const override { return identity_; }
  size_t size() const override { return group_.size(); }
  size_t rank() const override { return group_.rank(); }
  const CollSlot &slot(size_t member) const override {
    slots_.at(member) = door_.local(group_.slot(member));
    return slots_[member];
  }
  void barrier() override { group_.barrier(); }
  void *member_storage(size_t bytes) override { return group_.member_storage(bytes); }

 private:
  GroupSync &group_;
  const LocalDevices &door_;
  GroupIdentity identity_;
  mutable std::vector<CollSlot> slots_;
};

}  // namespace

LocalDevices::LocalDevices(std::shared_ptr<Backend> platform, int process)
    : platform_(std::move(platform)),
      process_(process),
      count_(platform_->device_count()),
      first_(process * count_) {}

int LocalDevices::local(int device) const {
  if (device < first_ || device >= first_ + count_)
    // Everything above the runtime works only on this process's devices'
    // memory (arrays hold their addressable shards): reaching here is a bug.
    fail(SPMD_ERR_INTERNAL, "device ", device, " belongs to process ",
         device < 0 ? -1 : device / count_, ", not to this process (", process_,
         "), yet its memory was asked of this process's backend");
  return device - first_;
}

Place LocalDevices::local(Place place) const {
  if (place.kind != MemoryKind::Host && place.device >= 0) place.device = local(place.device);
  return place;
}

Place LocalDevices::global(Place place) const {
  if (place.kind != MemoryKind::Host && place.device >= 0) place.device = global(place.device);
  return place;
}

CollectiveCall LocalDevices::local(const CollectiveCall &call) const {
  CollectiveCall c = call;
  c.device = local(call.device);
  c.out = local(call.out);
  return c;
}

CollSlot LocalDevices::local(const CollSlot &slot) const {
  CollSlot s = slot;
  s.in = local(slot.in);
  s.out = local(slot.out);
  return s;
}

const char *LocalDevices::device_kind(int device) const {
  return platform_->device_kind(local(device));
}

int64_t LocalDevices::device_memory_bytes(int device) const {
  return platform_->device_memory_bytes(local(device));
}

int LocalDevices::device_compute_capability(int device) const {
  return platform_->device_compute_capability(local(device));
}

DevicePtr LocalDevices::allocate(int device, size_t bytes, MemoryKind kind) {
  return platform_->allocate(local(device), bytes, kind);
}

void LocalDevices::deallocate(int device, DevicePtr ptr, size_t bytes, MemoryKind kind,
                              const EventList &after) {
  // Only memory allocate gave comes back, so the device is local.
  platform_->deallocate(device - first_, ptr, bytes, kind, after);
}

void *LocalDevices::device_stream(int device) { return platform_->device_stream(local(device)); }

EventPtr LocalDevices::copy_boxes(std::span<const BoxCopy> copies, const EventList &after) {
  std::vector<BoxCopy> translated(copies.begin(), copies.end());
  for (BoxCopy &c : translated) {
    c.src.place = local(c.src.place);
    c.dst.place = local(c.dst.place);
  }
  return platform_->copy_boxes(translated, after);
}

EventPtr LocalDevices::launch(std::span<const Kernel> kernels, const EventList &after) {
  std::vector<Kernel> translated(kernels.begin(), kernels.end());
  for (Kernel &k : translated) {
    k.device = local(k.device);
    k.out = local(k.out);
    k.in0 = local(k.in0);
    k.in1 = local(k.in1);
    k.in2 = local(k.in2);
  }
  return platform_->launch(translated, after);
}

EventPtr LocalDevices::fence(int device) { return platform_->fence(local(device)); }

void LocalDevices::prepare_collective(CollectiveCall &call, CollSlot &slot, GroupSync &group) {
  CollectiveCall c = local(call);
  CollSlot s = local(slot);
  LocalGroupSync g(group, *this);
  platform_->prepare_collective(c, s, g);
  // The platform may have moved the input and marked the call.
  c.device = call.device;
  c.out = global(c.out);
  call = std::move(c);
  s.in = global(s.in);
  s.out = global(s.out);
  slot = std::move(s);
}

EventPtr LocalDevices::run_collective(const CollectiveCall &call, GroupSync &group) {
  LocalGroupSync g(group, *this);
  return platform_->run_collective(local(call), g);
}

bool LocalDevices::run_collective_groups(const std::vector<GroupCall> &groups, EventPtr &done) {
  std::vector<GroupCall> translated = groups;
  for (GroupCall &g : translated) {
    for (int &d : g.identity.devices) d = local(d);
    for (CollectiveCall &c : g.calls) c = local(c);
    for (CollSlot &s : g.slots) s = local(s);
  }
  return platform_->run_collective_groups(translated, done);
}

}  // namespace spmd
