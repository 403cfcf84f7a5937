#include "backend/cuda/stream_event.hpp"

#include "backend/cuda/check.hpp"
#include "backend/cuda/host_times.hpp"
#include "base/error.hpp"

namespace spmd::cuda {

EventPool::~EventPool() {
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(gpu_);
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
  if (previous >= 0) cudaSetDevice(previous);
}

cudaEvent_t EventPool::take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
  }
  cudaEvent_t e = nullptr;
  // Blocking sync: a waiting host thread sleeps instead of spinning on a
  // core the other devices' threads need.
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync),
        "cudaEventCreate");
  return e;
}

void EventPool::give_back(cudaEvent_t event) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    free_.push_back(event);
  } catch (...) {
    cudaEventDestroy(event);
  }
}

void LogicalDevice::name() { label_ = cat("device ", id, " (GPU ", gpu->ordinal, ")"); }

StreamEvent::~StreamEvent() {
  for (size_t i = 0; i < pools_.size(); ++i) pools_[i]->give_back(records_[i].event);
}

EventPtr StreamEvent::part(std::shared_ptr<const StreamEvent> whole,
                           const LogicalDevice *device) const {
  for (const auto &r : records_) {
    if (r.device != device) continue;
    auto p = std::make_shared<StreamEvent>(what_);
    p->records_.push_back(r);
    p->verdict_ = verdict_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      p->deps_ = deps_;
    }
    p->whole_ = std::move(whole);
    return p;
  }
  return nullptr;
}

void StreamEvent::finish(cudaError_t device_status, bool block) const {
  auto *self = const_cast<StreamEvent *>(this);
  if (device_status != cudaSuccess) {
    // Sticky faults (an illegal address) end the CUDA context: every later
    // call fails too, and says so.
    std::string message;
    try {
      message = cat(what_, " failed on the GPU: ", cudaGetErrorName(device_status), " (",
                    cudaGetErrorString(device_status), ")");
    } catch (...) {
    }
    self->complete(SPMD_ERR_INTERNAL, std::move(message));
    return;
  }
  if (verdict_) {
    std::string failure;
    try {
      failure = verdict_();
    } catch (...) {
      failure = cat(what_, ": its outcome could not be read");
    }
    if (!failure.empty()) {
      self->complete(SPMD_ERR_INTERNAL, std::move(failure));
      return;
    }
  }
  EventList deps;
  {
    std::lock_guard<std::mutex> lock(mu_);
    deps = deps_;
  }
  for (const auto &d : deps.events()) {
    if (!block && !d->done()) return;  // not yet: asked again later
    std::string message;
    const spmd_status st = d->wait_status(&message);
    if (st != SPMD_OK) {
      self->complete(st, std::move(message));
      break;
    }
  }
  self->complete();
  std::lock_guard<std::mutex> lock(mu_);
  deps_ = EventList{};
}

namespace {
// Whether a record is known finished: at or below its stream's highest
// record seen finished.
bool known_finished(const StreamEvent::Record &r) {
  return r.number <= r.device->records_finished.load(std::memory_order_acquire);
}
void note_finished(const StreamEvent::Record &r) {
  uint64_t seen = r.device->records_finished.load(std::memory_order_relaxed);
  while (seen < r.number &&
         !r.device->records_finished.compare_exchange_weak(seen, r.number,
                                                          std::memory_order_acq_rel)) {
  }
}
}  // namespace

void StreamEvent::try_settle() const {
  for (const auto &r : records_) {
    if (known_finished(r)) continue;
    cudaError_t e;
    {
      host_times::Scope timed(host_times::Kind::EventQuery);
      e = cudaEventQuery(r.event);
    }
    if (e == cudaErrorNotReady) return;
    if (e != cudaSuccess) return finish(e, false);
    note_finished(r);
  }
  finish(cudaSuccess, false);
}

void StreamEvent::settle() const {
  for (const auto &r : records_) {
    if (known_finished(r)) continue;
    const cudaError_t e = cudaEventSynchronize(r.event);
    if (e != cudaSuccess) return finish(e, true);
    note_finished(r);
  }
  finish(cudaSuccess, true);
}

EventBuilder::EventBuilder(std::string what)
    : event_(std::make_shared<StreamEvent>(std::move(what))) {}

void EventBuilder::add(LogicalDevice &d) {
  for (const auto &r : event_->records_)
    if (r.device == &d) return;  // one record per stream covers it
  event_->records_.reserve(event_->records_.size() + 1);
  event_->pools_.reserve(event_->pools_.size() + 1);
  DeviceGuard guard(d.gpu->ordinal);
  cudaEvent_t ev = d.gpu->events->take();
  cudaError_t st;
  {
    host_times::Scope timed(host_times::Kind::EventRecord);
    st = cudaEventRecord(ev, d.stream);
  }
  if (st != cudaSuccess) {
    d.gpu->events->give_back(ev);
    check(st, "cudaEventRecord");
  }
  event_->records_.push_back({&d, ev, ++d.records_issued});
  event_->pools_.push_back(d.gpu->events);
}

void EventBuilder::set_verdict(std::function<std::string()> verdict) {
  event_->verdict_ = std::move(verdict);
}

EventPtr EventBuilder::finish(const EventList &after) {
  for (const auto &dep : after.events())
    event_->deps_.add(dep);  // kept unless known finished without error
  if (event_->records_.empty() && event_->deps_.empty()) return nullptr;
  return std::move(event_);
}

EventPtr record(LogicalDevice &device, const EventList &after, std::string what) {
  EventBuilder b(std::move(what));
  b.add(device);
  return b.finish(after);
}

EventPtr failed_dependency(const EventList &after) {
  for (const auto &dep : after.events()) {
    if (!dep->done()) continue;
    std::string message;
    const spmd_status st = dep->wait_status(&message);
    if (st == SPMD_OK) continue;
    auto failed = std::make_shared<Event>();
    failed->complete(st, std::move(message));
    return failed;
  }
  return nullptr;
}

// A record on the waiting device's own stream is behind everything queued
// there already: stream order covers it without a call.
void wait_on(LogicalDevice &device, const EventList &after) {
  for (const auto &e : after.events()) {
    if (auto *se = dynamic_cast<const StreamEvent *>(e.get())) {
      for (const auto &r : se->records())
        if (r.device != &device) {
          host_times::Scope timed(host_times::Kind::StreamWait);
          check(cudaStreamWaitEvent(device.stream, r.event, 0), "cudaStreamWaitEvent");
        }
    } else {
      e->wait();
    }
  }
}

void wait_on_quietly(LogicalDevice &device, const EventList &after) noexcept {
  for (const auto &e : after.events()) {
    if (auto *se = dynamic_cast<const StreamEvent *>(e.get())) {
      for (const auto &r : se->records())
        if (r.device != &device && cudaStreamWaitEvent(device.stream, r.event, 0) != cudaSuccess) {
          cudaGetLastError();
          e->wait_status();  // the device refused to wait: the host does
          break;
        }
    } else {
      e->wait_status();
    }
  }
}

}  // namespace spmd::cuda
