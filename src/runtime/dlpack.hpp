// Shards shared with other libraries through DLPack (spmd/dlpack.h): a
// shard's memory handed out as a DLManagedTensor without a copy, and other
// libraries' tensors adopted as an array's blocks without a copy.
#pragma once

#include <dlpack/dlpack.h>

#include <memory>
#include <vector>

#include "runtime/array.hpp"

namespace spmd {

// Shard `index` of `array` as a tensor viewing its memory, once its
// pending writes are done. The tensor holds the memory until its deleter
// runs. OUT_OF_RANGE past the last shard; UNSUPPORTED for another
// process's shard or a platform whose memory cannot be shared.
DLManagedTensor *export_shard(const Array &array, size_t index);

// The array of `shape` laid out by `sharding` whose block on devices[k] is
// tensors[k]'s memory, for each of this process's devices of the
// sharding. Every tensor is checked before any is adopted, and the
// deleters become the array's only when the caller says so (`own`, once
// nothing can fail any more): until then an error leaves every tensor with
// the caller. Afterwards each deleter runs once its block is no longer used.
struct AdoptedTensors {
  ArrayPtr array;
  std::shared_ptr<bool> own;  // set to true to hand the deleters to the array
};
AdoptedTensors adopt_tensors(ShardingPtr sharding, spmd_dtype dtype, Shape shape,
                             const std::vector<int> &devices,
                             const std::vector<DLManagedTensor *> &tensors);

}  // namespace spmd
