// The backend's door in a runtime over several processes: the code above
// the runtime names devices by their global ids (process-major,
// docs/distributed.md), while a process's backend serves its local devices
// only, numbered from 0. This Backend stands in front of the platform's and
// translates every id it passes on (devices of calls, copies' and kernels'
// places, collectives' calls, slots and group identities), and refuses
// other processes' devices with INTERNAL (nothing above asks for them),
// naming the device and its process.
//
// A runtime of one process holds its platform's backend itself, so its
// calls pay nothing for this.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.hpp"

namespace spmd {

class LocalDevices final : public Backend {
 public:
  // `platform` serves devices first .. first + platform->device_count() - 1
  // of the runtime, those of process `process`.
  LocalDevices(std::shared_ptr<Backend> platform, int process);

  spmd_platform platform() const override { return platform_->platform(); }
  const char *platform_name() const override { return platform_->platform_name(); }
  int device_count() const override { return count_; }
  const char *device_kind(int device) const override;
  // Global ids are what JAX prints, and a platform prints the id it is
  // given without looking the device up, so this passes it on unchanged.
  std::string device_repr(int device) const override { return platform_->device_repr(device); }
  const char *picture_label() const override { return platform_->picture_label(); }
  int64_t device_memory_bytes(int device) const override;
  int device_compute_capability(int device) const override;

  DevicePtr allocate(int device, size_t bytes, MemoryKind kind) override;
  void deallocate(int device, DevicePtr ptr, size_t bytes, MemoryKind kind,
                  const EventList &after) override;
  MemoryKind callback_memory() const override { return platform_->callback_memory(); }
  void *device_stream(int device) override;

  EventPtr copy_boxes(std::span<const BoxCopy> copies, const EventList &after) override;
  EventPtr launch(std::span<const Kernel> kernels, const EventList &after) override;
  EventPtr fence(int device) override;

  void prepare_collective(CollectiveCall &call, CollSlot &slot, GroupSync &group) override;
  EventPtr run_collective(const CollectiveCall &call, GroupSync &group) override;
  bool run_collective_groups(const std::vector<GroupCall> &groups, EventPtr &done) override;

  // The platform's id of global device `device`; throws INTERNAL for
  // another process's device.
  int local(int device) const;
  // The global id of the platform's device `device`.
  int global(int device) const { return device + first_; }
  // Places, calls and slots as the platform names them, and back. Host
  // places and unused ones (device -1) name no device and pass unchanged.
  Place local(Place place) const;
  Place global(Place place) const;
  CollectiveCall local(const CollectiveCall &call) const;
  CollSlot local(const CollSlot &slot) const;

 private:
  std::shared_ptr<Backend> platform_;
  int process_;
  int count_;
  int first_;
};

}  // namespace spmd
