// Float32 chains evaluated a vector at a time: every step of the chain
// applied to eight lanes held in registers before the next eight are read,
// so a chain such as 2 * sin(x) + 1 reads x and writes its result once,
// with no pass over intermediate tiles. Each step rounds exactly as its
// unfused kernel does (the same vector functions, the same IEEE operations
// in the same order), so the bits are those of the tiled path
// (kernels/elementwise_chain.hpp), which serves every chain this cannot.
#pragma once

#include <cstddef>

#include "kernels/elementwise_chain.hpp"

namespace spmd::ew::lanes {

// Runs `chain` over `count` elements and returns true, or returns false
// without touching `out` when the chain has a step this path does not
// evaluate (a type other than float32, an op without a vector form here)
// or the CPU's vector table is not AVX2's or AVX-512's.
bool run_chain_f32(const Chain &chain, size_t count, void *out, const void *const in[3]);

}  // namespace spmd::ew::lanes
