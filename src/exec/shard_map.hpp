// The shard_map driver: inputs laid out by in_specs, the callback run on
// every device of the mesh at once (one device thread each), collectives
// met in a per-run Session, and outputs assembled by out_specs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/array.hpp"
#include "core/mesh.hpp"
#include "core/sharding.hpp"
#include "exec/collective_ops.hpp"
#include "runtime/rendezvous.hpp"
#include "spmd/shard_map.h"

namespace spmd {

struct ShardMapOptions {
  bool check_rep = false;
  std::chrono::milliseconds timeout{60000};
  spmd_print_fn print_fn = nullptr;
  void *print_user_data = nullptr;
};

class ShardMapRun;

// One device's view of a shard_map run: what its callback reads, allocates
// and sets. The C API wraps it in the spmd_ctx handle. Blocks it hands the
// callback live in the backend's callback memory (Backend::callback_memory)
// and are ready when the callback sees them.
struct ShardContext {
  ShardMapRun *run = nullptr;
  size_t position = 0;  // in mesh order
  int device = 0;
  std::vector<LocalBlock> inputs;
  std::vector<BufferPtr> owned;  // inputs' staging, spmd_ctx_alloc and collectives
  // The input arrays' own buffers, where callbacks see them directly: never
  // written, so arrays made of those blocks may share them.
  std::vector<BufferPtr> input_buffers;
  // Every buffer above and every input's buffer, by address: memory that
  // lives until the run ends, so peers may read it directly.
  std::map<uintptr_t, Buffer *> run_memory;
  void note_run_memory(Buffer &buffer);
  // The run buffer holding [ptr, ptr + bytes), or null.
  Buffer *run_buffer(DevicePtr ptr, size_t bytes) const;
  struct Output {
    BufferPtr buffer;
    spmd_dtype dtype = SPMD_DTYPE_INVALID;
    Shape shape;
    bool set = false;
  };
  std::vector<Output> outputs;
  // What the callback reported (spmd_ctx_error) and the first failed
  // collective, which fails the shard_map even if the callback ignored it.
  std::string user_message;
  spmd_status collective_status = SPMD_OK;
  std::string collective_message;
  // Result of the callback, set by the runner.
  spmd_status status = SPMD_OK;
  std::string message;
};

class ShardMapRun {
 public:
  ShardMapRun(MeshPtr mesh, const ShardMapOptions &options);

  // Runs the shard_map. `call` runs the user's callback on one context and
  // fills ctx.status / ctx.message. Returns the assembled outputs.
  std::vector<ArrayPtr> run(const std::vector<ArrayPtr> &inputs,
                            const std::vector<PartitionSpec> &in_specs,
                            const std::vector<PartitionSpec> &out_specs,
                            const std::function<void(ShardContext &)> &call);

  const Mesh &mesh() const { return *mesh_; }
  Runtime &runtime() const { return Runtime::of(*mesh_->device_set()); }
  Backend &backend() const { return runtime().backend(); }
  Session &session() { return session_; }
  void print(int device, const char *text);

  // A collective from inside a callback, into context-owned memory; ready
  // when it returns.
  LocalBlock collective(ShardContext &ctx, const Collective &op, const LocalBlock &in);
  // A zero-filled context-owned block.
  LocalBlock alloc(ShardContext &ctx, spmd_dtype dtype, const Shape &shape);
  // A block as an array on the context's device alone (a single-device
  // sharding), for the global ops: an input's own buffer is shared, any
  // other block copied (the callback may change it afterwards).
  ArrayPtr block_array(ShardContext &ctx, const LocalBlock &block);
  // An array on the context's device as a context block, ready to read:
  // its buffer shared where callbacks see device memory and the array is
  // not an input (whose blocks are read-only), else a copy.
  LocalBlock array_block(ShardContext &ctx, const Array &array);
  // Sets output `index` to a block of callback memory (context-owned or
  // the callback's own), taken over or copied.
  void set_output(ShardContext &ctx, size_t index, const LocalBlock &block);

 private:
  // The callbacks' view of the laid-out inputs: the arrays' own buffers
  // where callbacks may use device memory, staged copies otherwise.
  void give_inputs(std::vector<ShardContext> &ctxs, const std::vector<ArrayPtr> &laid);
  // A buffer of callback memory on the context's device, owned by it.
  Buffer &take(ShardContext &ctx, size_t bytes);
  // Over several processes: every process of the mesh (`members`, ascending)
  // tells the others how its devices
  // ended (the first failure, a root cause before a failure caused by a
  // peer) and the dtype and shape of each output block, which fill the
  // contexts of their devices here. Throws the first failure of any
  // process, naming its device and process; `bad` is this process's.
  void share_outcome(std::vector<ShardContext> &ctxs, const std::vector<size_t> &local_positions,
                     const std::vector<int> &members, size_t outputs, const ShardContext *bad);
  std::vector<ArrayPtr> assemble(std::vector<ShardContext> &ctxs,
                                 const std::vector<ShardingPtr> &out_shardings);
  // check_rep: blocks along the mesh axes an out_spec leaves out must be
  // equal. Throws INVALID_ARGUMENT naming the first two that differ.
  void check_replicas(const Sharding &s, const std::vector<BufferPtr> &buffers,
                      const std::vector<Shape> &locals, spmd_dtype dtype,
                      const std::string &label);

  MeshPtr mesh_;
  ShardMapOptions options_;
  Session session_;
  std::mutex print_mu_;
};

// The global shape whose layout under `sharding` gives each mesh position
// the block shape `locals[p]`, or INVALID_ARGUMENT (prefixed by `label`).
Shape assemble_global(const Sharding &sharding, const std::vector<Shape> &locals,
                      const std::string &label);

}  // namespace spmd
