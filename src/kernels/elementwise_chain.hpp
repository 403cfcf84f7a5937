// Chains of elementwise passes run as one pass (a program's fused group):
// every step reads the chain's inputs, earlier steps' results or a scalar,
// all dense blocks of one shape, and the last step's result is the output.
// The block is walked a tile at a time, each step running over the tile
// with the kernel one pass would run (kernels/elementwise.hpp), so each
// value rounds to its step's type exactly as it would unfused, while the
// intermediate tiles stay in cache and only the inputs and the output
// touch memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/elementwise.hpp"

namespace spmd::ew {

struct ChainStep {
  // The pass: op, types and scalars; its shape and strides are the tile's.
  Params params;
  // Where operand k comes from: >= 0, the chain's input from[k]; < 0, the
  // result of the earlier step -from[k] - 1. Unused for scalars.
  int from[3] = {0, 0, 0};
};

struct Chain {
  std::vector<ChainStep> steps;
  int nin = 0;  // the chain's inputs, at most 3
  spmd_dtype in_dtype[3] = {SPMD_DTYPE_INVALID, SPMD_DTYPE_INVALID, SPMD_DTYPE_INVALID};
};

// Elements per tile: long enough that each step's loop runs long (a call
// costs about as much as a hundred elements of sin), short enough that the
// tiles of a few steps stay in L2.
inline constexpr size_t kChainTile = 8192;

// Runs the chain over `count` elements of each input (row-major, dense),
// writing the last step's result to out.
void run_chain(const Chain &chain, size_t count, void *out, const void *const in[3]);

}  // namespace spmd::ew
