// Persistent collectives: one collective planned once for a mesh, axes,
// dtype, global shape and input sharding (output sharding and every block
// shape worked out up front), then run many times on the device threads,
// reusing its rendezvous state and scratch buffers.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/array.hpp"
#include "exec/collective_ops.hpp"
#include "runtime/rendezvous.hpp"

namespace spmd {

class PersistentCollective : public std::enable_shared_from_this<PersistentCollective> {
 public:
  PersistentCollective(ShardingPtr input_sharding, Collective op, spmd_dtype dtype, Shape global,
                       std::chrono::milliseconds timeout);

  const ShardingPtr &output_sharding() const { return out_sharding_; }
  spmd_dtype output_dtype() const { return out_dtype_; }
  const Shape &output_shape() const { return out_global_; }

  // A new output array.
  ArrayPtr execute(const ArrayPtr &input);
  // Into an existing array of the output's sharding, dtype and shape.
  void execute_into(const ArrayPtr &input, Array &output);

 private:
  ArrayPtr prepare(const ArrayPtr &input) const;
  void run(const Array &input, const Array &output);
  // Every member of every group from one backend call; false if the
  // backend needs a thread per device.
  bool run_grouped(const Array &input, const Array &output);
  void run_on_device_threads(const Array &input, const Array &output);
  // Over several processes: every member of this process from the calling
  // thread, one exchange with the other processes (exec/across_processes.hpp).
  void run_across_processes(const Array &input, const Array &output);
  // pmean: the sums (in scratch slot 1 where the output type differs)
  // converted and divided by the group size into `output`, after `done`.
  void finish_means(const Array &output, const std::vector<size_t> &positions, EventPtr done);

  ShardingPtr in_sharding_;
  Runtime *runtime_;  // the mesh's, alive as long as the sharding
  ShardingPtr out_sharding_;
  Collective op_;
  spmd_dtype dtype_;
  spmd_dtype out_dtype_;
  Shape global_;
  Shape out_global_;
  std::vector<Shape> in_local_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;  // one execution at a time
  std::unique_ptr<Session> session_;
  // Per mesh position, two scratch buffers for dtype promotions.
  std::vector<std::array<BufferPtr, 2>> scratch_;
  Buffer &scratch(size_t position, int slot, size_t bytes);
  spmd_dtype sum_dtype_;
  // The plan of the grouped path: each position's group and rank, and every
  // group's calls with shapes and parameters filled in (buffers per run).
  struct Member {
    size_t group;
    size_t rank;
  };
  std::vector<Member> members_;
  std::vector<GroupCall> groups_;
  // Over several processes: each position's block of the output, and the
  // exchanged blocks, kept between runs.
  std::vector<Shape> out_local_;
  std::vector<std::byte> exchanged_;
};

}  // namespace spmd
