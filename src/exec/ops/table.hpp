// The op table: what is known of each global op of spmd/ops.h, in one
// place and one row per op, grouped by family. The C entry points map
// their enumerators through it, the executor reads an op's result type
// from it, docs/ops.md is printed from it (tools/spmd-op-table), and a
// test checks ops.h and the Go, Rust and Julia op lists against it. The
// sharding rules themselves live in core/propagation (no arrays there);
// a row names its rule in Shardy's factor notation for people.
//
// Adding an op: its line in ops.h, its row here, its kernel.
#pragma once

#include <cstdint>
#include <span>

#include "exec/ops/reduction.hpp"
#include "kernels/elementwise.hpp"

namespace spmd::ops::table {

// The type an elementwise op gives, from its operands' promoted type.
enum class Result : uint8_t {
  Same,       // the promoted type: add of int32 is int32
  Float,      // a float whatever the operands: exp of int32 is float32
  FloatOnly,  // floats only: integers refused, as JAX refuses them (lax.rsqrt)
  Bool,       // comparisons
};

// A function of one array (spmd_unary_op) or of two (spmd_binary_op).
struct Elementwise {
  int c_value;         // the enumerator's value
  const char *c_name;  // "SPMD_UNARY_TANH"
  const char *name;    // "tanh"
  const char *jax;     // "jnp.tanh"
  ew::Op kernel;
  Result result;
};

// A reduction over axes (spmd_reduce_op).
struct Reduction {
  int c_value;
  const char *c_name;
  const char *name;
  const char *jax;
  ReduceKind kind;
  const char *collective;  // what combines the partial results over split axes
};

// An op with an entry point of its own.
struct Function {
  const char *c_name;  // "spmd_matmul"
  const char *name;
  const char *jax;
  int arity;           // array operands; 0: any number (concatenate)
  const char *rule;    // Shardy-style factors: "([b, m, k], [b, k, n]) -> ([b, m, n]) {k: sum}"
  const char *kernel;  // what runs on each device
};

std::span<const Elementwise> unary();
std::span<const Elementwise> binary();
std::span<const Reduction> reductions();
std::span<const Function> functions();

// The row of an enumerator value, or null when none has it.
const Elementwise *find_unary(int c_value);
const Elementwise *find_binary(int c_value);
const Reduction *find_reduction(int c_value);

// The unary or binary row whose kernel is `op`, or null (Copy, Select).
const Elementwise *find_kernel(ew::Op op);

}  // namespace spmd::ops::table
