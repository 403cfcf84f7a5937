#include "backend/event.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace spmd {

void Event::complete(spmd_status status, std::string message) noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    done_ = true;
    status_ = status;
    message_ = std::move(message);
  }
  cv_.notify_all();
}

bool Event::completed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

bool Event::done() const {
  if (completed()) return true;
  try_settle();
  return completed();
}

spmd_status Event::wait_status(std::string *message) const {
  if (!completed()) settle();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  if (message) *message = message_;
  return status_;
}

void Event::wait() const {
  std::string message;
  const spmd_status status = wait_status(&message);
  if (status != SPMD_OK) throw Error(status, message);
}

EventList::EventList(std::initializer_list<EventPtr> events) {
  for (const auto &e : events) add(e);
}

void EventList::add(const EventPtr &event) {
  if (!event || holds(event)) return;
  if (event->completed() && event->wait_status() == SPMD_OK) return;
  push(event);
}

bool EventList::holds(const EventPtr &event) const {
  for (const auto &e : events_)
    if (e == event) return true;
  return false;
}

void EventList::push(const EventPtr &event) {
  if (events_.size() >= prune_at_) {
    // Events finish about in the order they were added, so the finished
    // ones are found asking few of them (a CUDA event's answer costs a
    // call, and tells of every earlier record on its stream): the first
    // not finished by doubling steps from the oldest, then by halving.
    // Only those before it are dropped, asked again where they have not
    // answered yet.
    const size_t n = events_.size();
    size_t lo = 0, hi = n;  // [0, lo) finished, hi not (or the end)
    for (size_t i = 0; i < n; i = 2 * i + 1) {
      if (!events_[i]->done()) {
        hi = i;
        break;
      }
      lo = i + 1;
    }
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (events_[mid]->done()) lo = mid + 1;
      else hi = mid;
    }
    const auto end = events_.begin() + static_cast<std::ptrdiff_t>(lo);
    events_.erase(std::remove_if(events_.begin(), end,
                                 [](const EventPtr &e) { return e->done() && e->wait_status() == SPMD_OK; }),
                  end);
    prune_at_ = std::max(kPruneAt, 2 * events_.size());
  }
  events_.push_back(event);
}

void EventList::add(const EventList &other) {
  for (const auto &e : other.events_) add(e);
}

void EventList::wait() const {
  for (const auto &e : events_) e->wait();
}

JoinedEvent::JoinedEvent(size_t count) : event_(std::make_shared<Event>()), left_(count) {
  if (count == 0) event_->complete();
}

void JoinedEvent::part_done(spmd_status status, const std::string &message) noexcept {
  bool last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status != SPMD_OK && status_ == SPMD_OK) {
      status_ = status;
      try {
        message_ = message;
      } catch (...) {  // the status says enough
      }
    }
    last = --left_ == 0;
  }
  // The last part is the only one left to touch the message.
  if (last) event_->complete(status_, std::move(message_));
}

}  // namespace spmd
