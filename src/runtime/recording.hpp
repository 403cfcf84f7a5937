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
#include <functional>
#include <memory>
#include <string>

#include <utility>
#include <vector>

#include "backend/kernel.hpp"
#include "core/program_placement.hpp"
#include "core/sharding.hpp"
#include "kernels/elementwise.hpp"
#include "runtime/buffer.hpp"

namespace spmd {

class Array;

class Recording {
 public:
  virtual ~Recording() = default;

  // One elementwise kernel pass the op would run over every shard of
  // `out`, reading `in[k]` (null for a scalar operand) as laid out;
  // `direct` when each is the op's operand itself (no reshard) of out's
  // shape (no broadcast). The step's strides are left empty.
  struct ElementwiseStep {
    ew::Params params;
    const Array *in[3] = {nullptr, nullptr, nullptr};
    const Array *out = nullptr;
    bool direct = true;
  };
  virtual void note_elementwise(const ElementwiseStep &step) = 0;

  // Data the op would move between devices: `what` for people ("reshard",
  // "psum over 'x'"), `bytes` the bytes that cross from one device to
  // another.
  virtual void note_transfer(std::string what, int64_t bytes) = 0;

  // Work the op would do, in floating-point operations (matrix products).
  virtual void note_flops(int64_t flops) = 0;

  // The factors of an op that is one op of jax.jit's placement (a
  // transpose, a reduction, a contraction, a reshape, a slice; see
  // core/program_placement.hpp) or a softmax, over the arrays it reads:
  // what placing a whole program propagates through. An op noted by the
  // ops it is made of (an einsum's transposes) is told apart by its
  // operands, which are not the recorded op's.
  struct Factors {
    propagate::ProgramOp::Kind kind = propagate::ProgramOp::Kind::Elementwise;
    std::vector<const Array *> operands;
    std::vector<int64_t> sizes;
    std::vector<bool> summed;
    std::vector<bool> permuted;  // empty, or per factor (ProgramOp::permuted)
    bool logarithm = false;      // a softmax's: a log-softmax
    std::vector<std::vector<int>> operand_factors;
    std::vector<int> result_factors;

    // One factor per dimension of x, none summed, and the result's
    // dimensions x's in order.
    static Factors per_dimension(propagate::ProgramOp::Kind kind, const Array &x);
  };
  virtual void note_factors(Factors factors) = 0;

  // Of an op made of several of jax.jit's ops, each noted in turn (an
  // einsum of three or more operands, pairwise): the array the one noted
  // last made, which a later one may read.
  virtual void note_part_made(const Array &result) = 0;
};

// The device work (kernel launches, copies between shards, collectives)
// this thread queues while a log is open on it, counted, with each kept: a
// program's first run learns which of its ops queue that work and nothing
// else, and replays just that work on later runs.
class WorkLog {
 public:
  // What a logged entry other than kernels is.
  enum class Rerun { None, Collective, Copy };
  struct Launch {
    std::vector<BufferPtr> out;  // the buffers written, per shard of out
    std::vector<std::pair<size_t, Kernel>> kernels;
    // What out is: a later run makes an array of it where the launch wrote
    // one the op did not return (an intermediate of a softmax, say).
    ShardingPtr sharding;
    spmd_dtype dtype = SPMD_DTYPE_INVALID;
    Shape shape;
    // A planned collective or a copy between shards instead of kernels
    // (`kind`, None for kernels): rerun(input, output) does it again, from an
    // input of these buffers (per shard), laid out so, into a fresh output
    // laid out as out is.
    std::function<void(const std::shared_ptr<Array> &input, Array &output)> rerun;
    Rerun kind = Rerun::None;
    std::vector<BufferPtr> in;
    ShardingPtr in_sharding;
    spmd_dtype in_dtype = SPMD_DTYPE_INVALID;
    Shape in_shape;
  };

  WorkLog() noexcept;
  ~WorkLog();
  WorkLog(const WorkLog &) = delete;
  WorkLog &operator=(const WorkLog &) = delete;

  int count() const noexcept { return count_; }
  const std::vector<Launch> &launches() const noexcept { return launches_; }
  void add_launch(Launch l) { launches_.push_back(std::move(l)); }
  // A collective or copy (`kind`) from `in` into the fresh `out`, which
  // rerun(input, output) does again.
  void add_rerun(const Array &in, const Array &out,
                 std::function<void(const std::shared_ptr<Array> &input, Array &output)> rerun,
                 Rerun kind);

 private:
  friend WorkLog *note_device_work() noexcept;
  WorkLog *previous_;
  int count_ = 0;
  std::vector<Launch> launches_;
};

// Called by every path that queues device work for an op; returns the
// thread's open log (which a launch then adds itself to), or null.
WorkLog *note_device_work() noexcept;

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
