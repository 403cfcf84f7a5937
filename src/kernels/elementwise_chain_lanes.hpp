// Float32 chains evaluated in blocks of 256 elements: every step of the
// chain applied to one block, a vector at a time (8 lanes on AVX2, 16 on
// AVX-512, kernels/elementwise_chain_simd.hpp), its results kept in
// the first-level cache for the next step, before the next block is read;
// so a chain such as 2 * sin(x) + 1 reads x and writes its result once,
// and each step's loop is one op's (no choice of op per element). Each
// step rounds exactly as its
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

// The same on one instruction set's vectors, for a CPU that has it and
// whose vector table (kernels/vector_math.hpp) is that set's.
bool run_chain_f32_avx2(const Chain &chain, size_t count, void *out, const void *const in[3]);
bool run_chain_f32_avx512(const Chain &chain, size_t count, void *out, const void *const in[3]);

}  // namespace spmd::ew::lanes
