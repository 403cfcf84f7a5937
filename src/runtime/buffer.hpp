// Memory owned by one shard (or by a shard_map context), with the readiness
// of its contents: the event of the last write queued on it, and the
// events of the reads queued since. Work that reads it waits for the write;
// work that writes it waits for both; freeing it is ordered after both.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>

#include "backend/backend.hpp"

namespace spmd {

class Buffer {
 public:
  // Allocates `bytes` of `kind` memory on `device` (nothing for 0 bytes).
  Buffer(std::shared_ptr<Backend> backend, int device, size_t bytes,
         MemoryKind kind = MemoryKind::Device);
  // Adopts `bytes` of another library's memory at `ptr`, Device memory of
  // `device` (a DLPack tensor's): `release` gives it back once the work
  // using it has finished, in place of the backend's free.
  Buffer(std::shared_ptr<Backend> backend, int device, size_t bytes, DevicePtr ptr,
         std::function<void()> release);
  ~Buffer();
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  int device() const { return device_; }
  size_t bytes() const { return bytes_; }
  MemoryKind kind() const { return kind_; }
  DevicePtr ptr() const { return ptr_; }
  Place place() const { return {kind_, device_, ptr_}; }
  // Whether `p` (a kernel's operand, say) lies in this buffer; a place at
  // its very end belongs to the next, but an empty buffer holds its start.
  bool holds(const Place &p) const {
    const uintptr_t lo = ptr_.bits;
    return p.kind == kind_ && p.device == device_ && p.ptr.bits >= lo &&
           (p.ptr.bits < lo + bytes_ || (bytes_ == 0 && p.ptr.bits == lo));
  }

  // What work reading the buffer must wait for: its last write.
  EventList before_read() const;
  // What work writing it must wait for: its last write and every read since.
  EventList before_write() const;
  // Records queued work: a read, or a write that waited for before_write().
  // Neither fails: work that is queued must be remembered.
  void add_read(const EventPtr &done) noexcept;
  void set_written(const EventPtr &done) noexcept;
  // Waits for the last write; throws its error.
  void wait() const;

  // Views of the memory held by other libraries (DLPack exports): while
  // any is open, nothing may take the buffer over to write it in place.
  void add_external_view() noexcept { external_views_.fetch_add(1); }
  void drop_external_view() noexcept { external_views_.fetch_sub(1); }
  bool viewed_externally() const noexcept { return external_views_.load() > 0; }
  long external_views() const noexcept { return external_views_.load(); }

 private:
  std::shared_ptr<Backend> backend_;
  int device_;
  size_t bytes_;
  MemoryKind kind_;
  DevicePtr ptr_;
  std::function<void()> release_;  // adopted memory's way back
  std::atomic<int> external_views_{0};
  // False until an event is first recorded: a buffer of a backend that
  // finishes its work before returning (the CPU platform) never takes the
  // lock.
  std::atomic<bool> has_events_{false};
  mutable std::mutex mu_;
  EventPtr written_;
  EventList reads_;
};

using BufferPtr = std::shared_ptr<Buffer>;

// How many arrays (and other owners inside libspmd) hold `b`: its owners
// less the DLPack exports, each an owner and an external view.
inline long array_holders(const BufferPtr &b) { return b.use_count() - b->external_views(); }

}  // namespace spmd
