// Sharded arrays: a global shape and dtype, a sharding, and one buffer per
// device of the sharding holding that device's block (row-major). Work on
// them is queued on their backend; each buffer knows when its contents are
// ready (runtime/buffer.hpp).
//
// Over several processes an array holds buffers for its addressable shards
// only, those of this process's devices (jax.Array.addressable_shards);
// the layout of every shard is known everywhere. What moves blocks between
// shards goes through runtime/shard_moves.hpp, which crosses processes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/sharding.hpp"
#include "runtime/buffer.hpp"
#include "runtime/recording.hpp"
#include "runtime/runtime.hpp"
#include "spmd/dtype.h"

namespace spmd {

class Array;
using ArrayPtr = std::shared_ptr<Array>;

class Array {
 public:
  // Allocates one uninitialised buffer per device of this process in the
  // sharding; while a recording is current on the thread
  // (runtime/recording.hpp), none: the array is an abstract value of it.
  Array(ShardingPtr sharding, spmd_dtype dtype, Shape shape);

  // jax.device_put of a row-major host buffer of exactly nbytes. Returns
  // once the host buffer has been read.
  // Over several processes every process gives the whole array and keeps
  // its part.
  static ArrayPtr from_host(ShardingPtr sharding, spmd_dtype dtype, Shape shape,
                            const void *data, size_t nbytes);
  // jax.make_array_from_process_local_data: `data` is this process's part
  // (local_part's box), row-major, of exactly its bytes.
  static ArrayPtr from_process_local_data(ShardingPtr sharding, spmd_dtype dtype, Shape shape,
                                          const void *data, size_t nbytes);
  // jax.make_array_from_single_device_arrays: `blocks` holds one array per
  // device of this process in the sharding, each on that device alone and
  // holding its block; copied. INVALID_ARGUMENT naming "arrays[i]" for
  // one that does not fit.
  static ArrayPtr from_single_device_arrays(ShardingPtr sharding, spmd_dtype dtype, Shape shape,
                                            const std::vector<const Array *> &blocks);
  // The smallest box covering this process's blocks of `shape` laid out by
  // `sharding`; INVALID_ARGUMENT when they do not fill it, or none is here.
  static Box local_part(const Sharding &sharding, const Shape &shape);
  static ArrayPtr full(ShardingPtr sharding, spmd_dtype dtype, Shape shape, double value);
  static ArrayPtr arange(ShardingPtr sharding, spmd_dtype dtype, Shape shape, double start,
                         double step);
  // Adopts one buffer per device of the sharding (mesh order), each holding
  // (or about to hold, as its readiness says) that device's block; null
  // for the shards of other processes' devices.
  static ArrayPtr from_buffers(ShardingPtr sharding, spmd_dtype dtype, Shape shape,
                               std::vector<BufferPtr> buffers);

  const ShardingPtr &sharding() const { return sharding_; }
  spmd_dtype dtype() const { return dtype_; }
  size_t elem_size() const { return elem_size_; }
  const Shape &shape() const { return shape_; }
  int64_t size() const { return shape_elements(shape_); }
  size_t nbytes() const { return nbytes_; }
  Runtime &runtime() const { return *runtime_; }

  size_t shard_count() const { return shards_->size(); }
  const ShardLayout &shard(size_t i) const { return shards_->at(i); }
  const std::vector<ShardLayout> &shards() const { return *shards_; }
  // Whether shard i's device belongs to this process (it has a buffer).
  // No shard of an abstract array is.
  bool addressable(size_t i) const { return buffers_.at(i) != nullptr; }
  // Whether this is a value of a program being recorded: a shape, dtype
  // and sharding with no buffers and no values.
  bool abstract() const { return abstract_; }
  // The recording an abstract array belongs to; null once it is gone or
  // for a concrete array.
  std::shared_ptr<Recording> recording() const { return recording_.lock(); }
  // Whether every shard is addressable (jax.Array.is_fully_addressable).
  bool fully_addressable() const;
  // Whether another library holds a view of a shard's memory (a DLPack
  // export): then no op may take the buffers over to write in place.
  bool viewed_externally() const;
  // Whether another array (a reshape's view, a relabeled one) may hold one
  // of its buffers: then no op may write them in place either.
  bool shares_buffers() const;
  // Whether an op may write its buffers in place (given the array is
  // consumed): neither viewed by another library nor shared.
  bool writable_in_place() const { return !viewed_externally() && !shares_buffers(); }
  // Shard i's buffer; only for an addressable shard.
  Buffer &buffer(size_t i) const { return *buffers_.at(i); }
  const BufferPtr &buffer_ptr(size_t i) const { return buffers_.at(i); }
  size_t shard_bytes(size_t i) const;

  // np.asarray(a): the global array into a host buffer of exactly nbytes.
  // Waits for pending work and throws its error. Over several processes
  // only when this process holds every block (as JAX allows); otherwise
  // UNSUPPORTED naming spmd_array_process_allgather.
  void to_host(void *data, size_t nbytes) const;
  // multihost_utils.process_allgather(a, tiled=True): the global array in
  // every process; every process of the runtime calls it.
  void process_allgather(void *data, size_t nbytes) const;
  // Shard i's block; UNSUPPORTED for a shard of another process.
  void shard_read(size_t i, void *data, size_t nbytes) const;
  // Returns once the host data has been read. A buffer another array
  // shares is left to it: the shard gets a buffer of its own (copy on
  // write), so a view never changes with the array it was made from.
  void shard_write(size_t i, const void *data, size_t nbytes);

  // The same values laid out by `target`; moves only overlapping blocks,
  // across processes where their ends are in different ones.
  ArrayPtr reshard(const ShardingPtr &target) const;
  // The same array, its buffers shared, under another sharding that lays it
  // out exactly as its own (Sharding::equivalent: how a layout is named,
  // not where the data is).
  ArrayPtr relabeled(ShardingPtr sharding) const;
  // jax.device_put's answer: relabeled where `target` lays the array out as
  // it is (the blocks shared, nothing moved), else resharded.
  ArrayPtr laid_out_as(const ShardingPtr &target) const;

  // Waits for pending work on every shard; throws the first error.
  void block_until_ready() const;

  // What reading every addressable shard must wait for.
  EventList before_read() const;
  // Records a queued read of every addressable shard.
  void add_read(const EventPtr &done) const noexcept;
  // Queues kernels that each fill one whole shard (the pair's index; the
  // kernel's out is that shard's buffer) and records them as its contents.
  void write_shards(std::vector<std::pair<size_t, Kernel>> writes);

 private:
  struct Adopt {};
  Array(ShardingPtr sharding, spmd_dtype dtype, Shape shape, Adopt);
  bool check_shard_transfer(size_t i, const void *data, size_t nbytes) const;
  // Fills every addressable shard from row-major host data holding the box
  // `part` of the array, and returns once the data has been read.
  void write_from_host(const void *data, const Box &part);
  // For each block (replica 0's shards), an addressable shard holding it,
  // or npos where this process has none.
  std::vector<size_t> local_copy_of_each_block() const;

  ShardingPtr sharding_;
  Runtime *runtime_;
  spmd_dtype dtype_;
  size_t elem_size_;
  Shape shape_;
  size_t nbytes_;
  // Shared with every array of the same sharding and shape
  // (Sharding::shared_layout).
  std::shared_ptr<const std::vector<ShardLayout>> shards_;
  std::vector<BufferPtr> buffers_;
  bool abstract_ = false;
  std::weak_ptr<Recording> recording_;
};

// "float32[8,4]": an array's dtype and shape, for messages and texts.
std::string type_text(const Array &a);

// The array behind a caller's handle, the calls using it now, and the op
// that consumed it by donation (donate_argnums). Every call that uses the
// handle holds the slot while it runs; a donation marks it consumed, after
// which new holds are refused, and the last hold to end lets the array go.
// So an array outlives every call that started before its donation, and an
// op overwrites a donated array in place only when nothing else holds it.
// A hold costs one compare-and-swap and one subtraction: no lock.
class ArraySlot {
 public:
  explicit ArraySlot(ArrayPtr array) noexcept : array_(std::move(array)) {}
  ArraySlot(const ArraySlot &) = delete;
  ArraySlot &operator=(const ArraySlot &) = delete;

  // Starts a hold and returns null; or refuses it (nothing held) and
  // returns the name of the op that consumed the array.
  const char *hold() noexcept;
  // Ends a hold; the last one after a donation lets the array go.
  void release() noexcept;
  // The array; only between hold() and release().
  const ArrayPtr &array() const noexcept { return array_; }
  // Marks the array consumed by `op`, a call that holds it once (later
  // calls' messages name the first such op). True when that call may reuse
  // its buffers in place: no other call holds it, and no op consumed it
  // before.
  bool consume(const char *op) noexcept;

 private:
  static constexpr uint64_t kConsumed = uint64_t{1} << 63;
  std::atomic<uint64_t> state_{0};  // kConsumed | the number of holds
  std::atomic<const char *> consumer_{nullptr};
  ArrayPtr array_;
};

}  // namespace spmd
