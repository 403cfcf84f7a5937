// Elementwise kernels over one device's blocks: up to three operands, each
// read through its own element strides (0 along broadcast dimensions, any
// permutation for a transpose), converted to the type the op computes in,
// combined, and stored converted to the result's type in a dense row-major
// block. One loop serves unary and binary ops, comparisons, where,
// astype, broadcast_to and transpose.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/shape.hpp"
#include "spmd/dtype.h"

namespace spmd::ew {

// Every kernel op once: its name in messages and its number of operands.
// The enum, op_name and arity all come from this list.
#define SPMD_EW_OPS(X)                                                                        \
  X(Copy, "copy", 1) /* the operand converted to the result's type (astype, transpose, ...) */ \
  X(Neg, "neg", 1) X(Abs, "abs", 1) X(Exp, "exp", 1) X(Log, "log", 1) X(Sin, "sin", 1)         \
  X(Cos, "cos", 1) X(Tanh, "tanh", 1) X(Sqrt, "sqrt", 1) X(Rsqrt, "rsqrt", 1)                  \
  X(Relu, "relu", 1) X(Logistic, "logistic", 1) X(GeluTanh, "gelu_tanh", 1)                    \
  X(GeluExact, "gelu_exact", 1)                                                                \
  X(Add, "add", 2) X(Sub, "sub", 2) X(Mul, "mul", 2) X(Div, "div", 2) X(Max, "max", 2)         \
  X(Min, "min", 2) X(Pow, "pow", 2)                                                            \
  X(Eq, "eq", 2) X(Ne, "ne", 2) X(Lt, "lt", 2) X(Le, "le", 2) X(Gt, "gt", 2) X(Ge, "ge", 2)    \
  X(Select, "select", 3) /* in[0] ? in[1] : in[2], in[0] bool */

enum class Op : uint8_t {
#define SPMD_EW_ENUM(op, name, n) op,
  SPMD_EW_OPS(SPMD_EW_ENUM)
#undef SPMD_EW_ENUM
};

int arity(Op op);
const char *op_name(Op op);  // "add", "sin", ...
bool is_comparison(Op op);  // eq ... ge: results are bool

struct Operand {
  spmd_dtype dtype = SPMD_F32;
  Shape strides;  // elements, one per result dimension; 0 where broadcast
  // A scalar held here rather than in memory (strides all 0), already
  // rounded to `dtype`.
  bool scalar = false;
  double value = 0;
};

struct Params {
  Op op = Op::Copy;
  spmd_dtype out = SPMD_F32;      // the result's type
  spmd_dtype compute = SPMD_F32;  // the operands' common type (f32 for f16 and bf16)
  Shape shape;                    // the result block
  int nin = 1;
  Operand in[3];
};

// Elements of operand i's memory the kernel reads (its extent).
size_t input_elements(const Params &p, int i);

void run(const Params &p, void *out, const void *const in[3]);

}  // namespace spmd::ew
