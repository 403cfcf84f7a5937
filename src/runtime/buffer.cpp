#include "runtime/buffer.hpp"

namespace spmd {

Buffer::Buffer(std::shared_ptr<Backend> backend, int device, size_t bytes, MemoryKind kind)
    : backend_(std::move(backend)), device_(device), bytes_(bytes), kind_(kind),
      ptr_(bytes ? backend_->allocate(device, bytes, kind) : DevicePtr{}) {}

Buffer::Buffer(std::shared_ptr<Backend> backend, int device, size_t bytes, DevicePtr ptr,
               std::function<void()> release)
    : backend_(std::move(backend)), device_(device), bytes_(bytes), kind_(MemoryKind::Device),
      ptr_(ptr), release_(std::move(release)) {}

Buffer::~Buffer() {
  if (release_) {
    // Another library's memory: given back once every user has finished,
    // failed ones included, whatever the backend still has queued.
    if (written_) written_->wait_status();
    for (const auto &e : reads_.events()) e->wait_status();
    release_();
    return;
  }
  if (!ptr_) return;
  // Ordered after every pending user; a failed write does not keep the
  // memory alive. Should there be no room for the list of users, they are
  // waited for here instead: a destructor must not fail.
  EventList after;
  try {
    after = before_write();
  } catch (...) {
    if (written_) written_->wait_status();
    for (const auto &e : reads_.events()) e->wait_status();
  }
  backend_->deallocate(device_, ptr_, bytes_, kind_, after);
}

EventList Buffer::before_read() const {
  if (!has_events_.load(std::memory_order_acquire)) return {};
  std::lock_guard<std::mutex> lock(mu_);
  return EventList{written_};
}

EventList Buffer::before_write() const {
  if (!has_events_.load(std::memory_order_acquire)) return {};
  std::lock_guard<std::mutex> lock(mu_);
  EventList e = reads_;
  e.add(written_);
  return e;
}

void Buffer::add_read(const EventPtr &done) noexcept {
  if (!done) return;
  std::lock_guard<std::mutex> lock(mu_);
  try {
    reads_.add(done);
    has_events_.store(true, std::memory_order_release);
  } catch (...) {
    // No room to remember the read: let it finish now, so nothing written
    // or freed later can overtake it.
    done->wait_status();
  }
}

void Buffer::set_written(const EventPtr &done) noexcept {
  if (!done && !has_events_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mu_);
  has_events_.store(true, std::memory_order_release);
  // The write waited for every earlier read and write, so its own event
  // stands for all of them from now on.
  written_ = done;
  reads_ = EventList{};
}

void Buffer::wait() const {
  if (!has_events_.load(std::memory_order_acquire)) return;
  EventPtr w;
  {
    std::lock_guard<std::mutex> lock(mu_);
    w = written_;
  }
  if (w) w->wait();
}

}  // namespace spmd
