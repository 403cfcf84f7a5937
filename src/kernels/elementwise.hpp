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

enum class Op : uint8_t {
  Copy,  // the operand converted to the result's type (astype, transpose, broadcast)
  Neg, Abs, Exp, Log, Sin, Cos, Tanh, Sqrt, Rsqrt, Relu, Logistic, GeluTanh, GeluExact,
  Add, Sub, Mul, Div, Max, Min, Pow,
  Eq, Ne, Lt, Le, Gt, Ge,  // results are bool
  Select,                  // in[0] ? in[1] : in[2], in[0] bool
};

int arity(Op op);
const char *op_name(Op op);  // "add", "sin", ...
bool is_comparison(Op op);

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
