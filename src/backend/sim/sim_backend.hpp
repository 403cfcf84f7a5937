// The sim platform: N simulated devices that keep the backend contract the
// way a GPU would, so code above the backends is tested against it on any
// machine. Its device memory is not host-addressable: a DevicePtr is a
// tagged value that faults if host code dereferences it, translated to the
// real bytes only inside the backend's own copies, kernels and collectives.
// Its work completes later, on one queue thread per device (a stream),
// after a random short delay, so work that skips a readiness wait reads
// stale data. Addresses are never reused, and every access checks the
// allocation it touches: memory used after it was freed, freed while a
// task still uses it, or used on the wrong device stops the process with a
// message naming the task. shard_map callbacks receive Mapped memory, host
// memory of the device, as a CUDA callback receives device pointers.
//
// Environment: SPMD_SIM_DELAY_US (the largest delay before a task, default
// 50; 0 for none) and SPMD_SIM_FAIL_KERNEL (a kernel kind, or "copy",
// whose every run fails: the hook that tests how asynchronous errors
// surface).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <list>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.hpp"

namespace spmd::sim {

struct GroupRun;

class SimBackend final : public Backend {
 public:
  explicit SimBackend(int devices);
  ~SimBackend() override;

  spmd_platform platform() const override { return SPMD_PLATFORM_SIM; }
  const char *platform_name() const override { return "sim"; }
  int device_count() const override { return devices_; }
  const char *device_kind(int) const override { return "sim"; }
  // The sim stands in for the CPU devices of JAX's references: its devices
  // print as JAX prints CPU devices, so every reference applies unchanged.
  std::string device_repr(int device) const override;
  const char *picture_label() const override { return "CPU"; }

  DevicePtr allocate(int device, size_t bytes, MemoryKind kind) override;
  void deallocate(int device, DevicePtr ptr, size_t bytes, MemoryKind kind,
                  const EventList &after) override;
  MemoryKind callback_memory() const override { return MemoryKind::Mapped; }
  // As the CUDA platform's chain kernel (its plan is a kernel parameter),
  // so that programs cut long chains here too.
  size_t max_chain_steps() const override { return 16; }
  bool fused_softmax() const override { return true; }
  bool queues_per_device() const override { return true; }  // a queue thread each

  EventPtr copy_boxes(std::span<const BoxCopy> copies, const EventList &after) override;
  EventPtr launch(std::span<const Kernel> kernels, const EventList &after) override;

  EventPtr run_collective(const CollectiveCall &call, GroupSync &group) override;
  bool run_collective_groups(const std::vector<GroupCall> &groups, EventPtr &done) override;

 private:
  struct Allocation {
    uintptr_t base;  // the DevicePtr bits (Device) or the host address (Mapped)
    size_t bytes;
    int device;
    MemoryKind kind;
    void *host;
    bool live;
    int pins;  // tasks using it now
  };
  struct Task {
    EventList after;
    std::string name;
    std::function<void()> run;
    EventPtr done;
    std::shared_ptr<JoinedEvent> join;  // told too, when the task is one part of a batch
  };
  struct Queue {
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    std::list<Task> tasks;  // a list: a task made elsewhere joins it without allocating
    bool stop = false;
    uint64_t rng = 0;
  };
  class Pins;

  void stop_queues();
  // A task is made (which may fail) apart from being queued (which cannot),
  // so a batch of tasks is queued whole or not at all.
  using Made = std::pair<int, std::list<Task>>;
  Made make_task(int device, const EventList &after, std::string name,
                 std::function<void()> run, std::shared_ptr<JoinedEvent> join = nullptr);
  EventPtr queue(Made task) noexcept;
  EventPtr enqueue(int device, const EventList &after, std::string name,
                   std::function<void()> run, std::shared_ptr<JoinedEvent> join = nullptr);
  void queue_loop(int device);
  void delay(Queue &q);
  void check_injected_fault(const char *what, int device) const;
  void free_memory(int device, DevicePtr ptr, size_t bytes, MemoryKind kind);
  // One member's part of a grouped collective, on its queue thread.
  void run_group_member(GroupRun &run, const GroupCall &call, size_t rank, int device);

  // The host bytes behind `place` for `bytes` bytes, pinned until `pins`
  // ends; stops the process when the place is not live memory of its device.
  void *host_of(const Place &place, size_t bytes, const std::string &task, Pins &pins);
  [[noreturn]] void violation(const std::string &message) const;

  int devices_;
  int delay_us_;
  std::string fail_kernel_;
  std::mutex arena_mu_;
  uintptr_t next_address_;
  std::map<uintptr_t, Allocation> device_memory_;  // by base address
  std::map<uintptr_t, Allocation> mapped_memory_;  // by host address
  std::vector<std::unique_ptr<Queue>> queues_;
  // Whole group calls enqueue under this, so every queue sees them in the
  // same order and the members of one call meet.
  std::mutex group_enqueue_mu_;
};

}  // namespace spmd::sim
