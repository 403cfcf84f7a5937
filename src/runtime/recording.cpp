#include "runtime/recording.hpp"

#include <utility>

namespace spmd {

namespace {
thread_local std::shared_ptr<Recording> t_current;
thread_local WorkLog *t_work = nullptr;
}  // namespace

WorkLog::WorkLog() noexcept : previous_(std::exchange(t_work, this)) {}
WorkLog::~WorkLog() { t_work = previous_; }

WorkLog *note_device_work() noexcept {
  if (t_work) ++t_work->count_;
  return t_work;
}

Recording *current_recording() noexcept { return t_current.get(); }

const std::shared_ptr<Recording> &RecordingScope::current_owner() noexcept { return t_current; }

RecordingScope::RecordingScope(std::shared_ptr<Recording> r) noexcept
    : previous_(std::exchange(t_current, std::move(r))) {}

RecordingScope::~RecordingScope() { t_current = std::move(previous_); }

}  // namespace spmd
