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
// and sets. The C API wraps it in the spmd_ctx handle.
struct ShardContext {
  ShardMapRun *run = nullptr;
  size_t position = 0;  // in mesh order
  int device = 0;
  std::vector<LocalBlock> inputs;
  std::vector<BufferPtr> owned;  // from spmd_ctx_alloc and collectives
  // [start, end) of every piece of memory above and of the inputs: memory
  // that lives until the run ends, so peers may read it directly.
  std::map<uintptr_t, uintptr_t> run_memory;
  void note_run_memory(const void *data, size_t bytes);
  bool is_run_memory(const void *data, size_t bytes) const;
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

  // A collective from inside a callback, into context-owned memory.
  LocalBlock collective(ShardContext &ctx, const Collective &op, const LocalBlock &in);
  // A zero-filled context-owned block.
  LocalBlock alloc(ShardContext &ctx, spmd_dtype dtype, const Shape &shape);
  void set_output(ShardContext &ctx, size_t index, const LocalBlock &block);

 private:
  std::vector<ArrayPtr> assemble(std::vector<ShardContext> &ctxs,
                                 const std::vector<ShardingPtr> &out_shardings);

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
