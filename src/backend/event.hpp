// Completion of work a backend has queued, as a CUDA event or a PJRT
// future: later work waits on it, and an error of the work it stands for
// is kept in it and rethrown to whoever waits. A null EventPtr means "done":
// a backend that finishes its work before returning (the CPU platform)
// never makes one, so the synchronous path costs nothing.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "spmd/status.h"

namespace spmd {

class Event {
 public:
  Event() = default;
  // Backends may derive their own: a CUDA event that completes itself from
  // the device's state when asked (settle, try_settle) instead of a thread
  // completing it.
  virtual ~Event() = default;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  // Marks the work done, with an error when status is not SPMD_OK. The
  // first call wins; later ones are ignored.
  void complete(spmd_status status = SPMD_OK, std::string message = {}) noexcept;

  bool done() const;
  // Whether the event is known to be complete, without asking the device
  // (done() asks: a call per open CUDA event).
  bool completed() const;
  // Blocks until done; throws the work's error (an Error with its status).
  void wait() const;
  // Blocks until done; returns the status without throwing.
  spmd_status wait_status(std::string *message = nullptr) const;

 protected:
  // Called by done() while the event is open: completes it if the work it
  // stands for has finished, without blocking. The default does nothing
  // (someone else completes the event).
  virtual void try_settle() const {}
  // Called by wait_status() while the event is open: blocks until the work
  // has finished and completes the event. The default does nothing.
  virtual void settle() const {}

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  spmd_status status_ = SPMD_OK;
  std::string message_;
};

using EventPtr = std::shared_ptr<Event>;

// The events one piece of work must wait for. Null and finished-without-
// error events are not kept, so on a synchronous backend the list stays
// empty and allocates nothing.
class EventList {
 public:
  EventList() = default;
  EventList(std::initializer_list<EventPtr> events);

  // Keeps `event` unless it is null, already kept, or known to have
  // finished without error. Known, not asked: asking a device whether work
  // is done costs a call (over a microsecond for a CUDA event), more than
  // waiting for a finished event does.
  void add(const EventPtr &event);
  void add(const EventList &other);
  bool empty() const { return events_.empty(); }
  const std::vector<EventPtr> &events() const { return events_; }

  // Waits for every event; throws the first error found.
  void wait() const;

 private:
  bool holds(const EventPtr &event) const;
  // Appends; first, when the list has grown to prune_at_, drops the events
  // finished without error: the readers a long-lived buffer (weights read
  // every step) remembers stay as many as are still running, and each
  // event is asked O(1) times on average.
  void push(const EventPtr &event);

  static constexpr size_t kPruneAt = 16;
  std::vector<EventPtr> events_;
  size_t prune_at_ = kPruneAt;
};

// An event that completes when `count` parts have (with the first error any
// part reported), for work a backend splits over several queues.
class JoinedEvent {
 public:
  explicit JoinedEvent(size_t count);
  const EventPtr &event() const { return event_; }
  // Never fails: a part that cannot be told of would leave the event open.
  void part_done(spmd_status status = SPMD_OK, const std::string &message = {}) noexcept;

 private:
  EventPtr event_;
  std::mutex mu_;
  size_t left_;
  spmd_status status_ = SPMD_OK;
  std::string message_;
};

}  // namespace spmd
