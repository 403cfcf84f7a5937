// Recording a program: while a recording is current on a thread, the
// arrays that thread makes hold no buffers. They are abstract values, the
// shape, dtype and sharding of what the op would have made, as jax.jit's
// tracers are; the op's own checks, promotion and placement run unchanged,
// but nothing is allocated, copied or computed. So a recorded op's result
// is by construction the eager op's, and a program of one op places its
// result as the eager op does.
//
// The recording itself (exec/program) sees what the op would have done
// through the notes below: each elementwise kernel it would have run (what
// fusion merges) and each transfer between devices (what the program's
// text reports).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/elementwise.hpp"

namespace spmd {

class Array;

class Recording {
 public:
  virtual ~Recording() = default;

  // One elementwise kernel pass the op would run over every shard of
  // `out`, reading `in[k]` (null for a scalar operand) as laid out, each of
  // out's shape unless `broadcast`; the step's strides are left empty.
  struct ElementwiseStep {
    ew::Params params;
    const Array *in[3] = {nullptr, nullptr, nullptr};
    const Array *out = nullptr;
    bool broadcast = false;
  };
  virtual void note_elementwise(const ElementwiseStep &step) = 0;

  // Data the op would move between devices: `what` for people ("reshard",
  // "psum over ('x',)"), `bytes` the bytes that cross from one device to
  // another.
  virtual void note_transfer(std::string what, int64_t bytes) = 0;

  // Work the op would do, in floating-point operations (matrix products).
  virtual void note_flops(int64_t flops) = 0;
};

// Counts the device work (kernel launches, copies between shards,
// collectives) this thread queues while a count is open on it: a program's
// first run learns which of its ops queue exactly one launch of kernels and
// nothing else, and replays just those kernels on later runs.
class WorkCount {
 public:
  WorkCount() noexcept;
  ~WorkCount();
  WorkCount(const WorkCount &) = delete;
  WorkCount &operator=(const WorkCount &) = delete;
  int count() const noexcept { return count_; }

 private:
  friend void note_device_work() noexcept;
  WorkCount *previous_;
  int count_ = 0;
};

// Called by every path that queues device work for an op.
void note_device_work() noexcept;

// The recording current on this thread, or null (eager).
Recording *current_recording() noexcept;

// Makes `r` the thread's current recording for the scope's life.
class RecordingScope {
 public:
  explicit RecordingScope(std::shared_ptr<Recording> r) noexcept;
  ~RecordingScope();
  RecordingScope(const RecordingScope &) = delete;
  RecordingScope &operator=(const RecordingScope &) = delete;

  // The shared owner of the current recording (abstract arrays keep a weak
  // reference to it, to say which program they belong to).
  static const std::shared_ptr<Recording> &current_owner() noexcept;

 private:
  std::shared_ptr<Recording> previous_;
};

}  // namespace spmd
