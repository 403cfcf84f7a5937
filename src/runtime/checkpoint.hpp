// Saving an array to a directory and restoring it into any sharding, on any
// mesh and process count (docs/distributed.md, "Checkpoints"): each process
// writes the blocks its devices hold (one file per block, the first replica
// of each), process 0 an index naming every block; a restore reads, in each
// process, the parts of the saved blocks its devices need.
//
// The layout, version 1:
//   DIR/index.txt       "libspmd checkpoint 1", then lines
//                         dtype float32
//                         shape 8 12
//                         blocks N
//                         block FILE START... STOP...   (N lines, global box)
//   DIR/block-K.bin     block K's elements, row-major, little-endian as
//                       the host holds them
// The index is written last, once every process has written its blocks: a
// directory with an index holds a whole checkpoint.
#pragma once

#include <string>

#include "runtime/array.hpp"

namespace spmd {

// Writes `array` to `directory` (made if missing; it must hold no index
// yet). Every process of the runtime calls it; returns once the whole
// checkpoint is written.
void save_array(const Array &array, const std::string &directory);

// The array saved in `directory`, laid out by `sharding` (whose mesh, of any
// runtime and process count, must suit the saved shape's rank).
ArrayPtr load_array(const ShardingPtr &sharding, const std::string &directory);

}  // namespace spmd
