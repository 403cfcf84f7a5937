// Events of the CUDA platform. Work queued on streams is stood for by CUDA
// events recorded behind it: later work on any stream waits for them on the
// GPU, and the host event completes itself from them when someone asks
// (done, wait), on the asker's thread. No stream callback completes it, so
// no CUDA call ever runs inside one, and an asynchronous fault (an illegal
// address, a failed launch) comes back from cudaEventSynchronize as the
// event's error, naming the device and the work. Internal to backend/cuda.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/event.hpp"
#include "backend/cuda/device.hpp"

namespace spmd::cuda {

class StreamEvent final : public Event {
 public:
  struct Record {
    LogicalDevice *device;
    cudaEvent_t event;
    uint64_t number;  // on the device's stream (LogicalDevice::records_issued)
  };
  explicit StreamEvent(std::string what) : what_(std::move(what)) {}
  ~StreamEvent() override;

  // The CUDA events later work waits for, one per stream the work went to.
  const std::vector<Record> &records() const { return records_; }

  // The event of the work on `device`'s stream alone (its record, the
  // whole's dependencies and verdict), holding `whole` (this event) so
  // that the CUDA event stays out of its pool while the part lives; null
  // when no work went to that device.
  EventPtr part(std::shared_ptr<const StreamEvent> whole, const LogicalDevice *device) const;

 protected:
  void try_settle() const override;
  void settle() const override;

 private:
  friend class EventBuilder;
  // Completes the event from the device's answer and from the dependencies.
  void finish(cudaError_t device_status, bool block) const;

  std::string what_;
  // Asked once the streams have passed the work: a failure the GPU does
  // not see (an NCCL communicator aborted under it), or empty.
  std::function<std::string()> verdict_;
  std::vector<Record> records_;
  // The owners of records_' events, given back when this event goes; empty
  // for a part, whose record its whole owns.
  std::vector<std::shared_ptr<EventPool>> pools_;
  std::shared_ptr<const StreamEvent> whole_;  // a part's whole
  // Dependencies that were still open when the work was queued: their
  // failure is this work's failure (it ran on what they left). Let go once
  // the event completes, so chains of events do not pile up.
  mutable std::mutex mu_;
  mutable EventList deps_;
};

// Builds the event of work queued on one or more streams: add(device)
// right after the work is queued there (the device's lock still held, so
// the event covers that work and nothing queued later by others), then
// finish with the work's dependencies.
class EventBuilder {
 public:
  explicit EventBuilder(std::string what);
  void add(LogicalDevice &device);
  // A failure the streams cannot show (see StreamEvent::verdict_).
  void set_verdict(std::function<std::string()> verdict);
  // Null when no stream was added and every dependency is done.
  EventPtr finish(const EventList &after);

 private:
  std::shared_ptr<StreamEvent> event_;
};

// The event of everything queued so far on `device`'s stream (its lock
// held by the caller).
EventPtr record(LogicalDevice &device, const EventList &after, std::string what);

// Makes `device`'s stream wait for `after`: this platform's events on the
// GPU, any other on the host. Throws the error of a dependency that failed.
void wait_on(LogicalDevice &device, const EventList &after);

// The same for work that must run whatever its dependencies did (freeing
// memory): errors are ignored.
void wait_on_quietly(LogicalDevice &device, const EventList &after) noexcept;

// A dependency in `after` that has already failed, as a completed event
// carrying its error (work depending on it is not queued), or null.
EventPtr failed_dependency(const EventList &after);

}  // namespace spmd::cuda
