// Contractions as global ops: lax.dot_general, jnp.matmul and jnp.einsum. Operands are brought to the layouts propagate::dot_general
// chooses, each device multiplies its blocks (CBLAS), and partial products
// over split contracting dimensions are summed across their axes (for bool,
// an OR of ANDs as JAX computes it, combined with an OR).
#pragma once

#include <string>

#include "core/propagation.hpp"
#include "exec/ops/op_support.hpp"

namespace spmd::ops {

// `names` are the operands' names in messages: {"lhs", "rhs"} for
// spmd_dot_general, {"a", "b"} for matmul and einsum.
struct OperandNames {
  const char *lhs = "lhs";
  const char *rhs = "rhs";
  const char *result = "dims";  // what the result's shape comes from
};

ArrayPtr dot_general(const ArrayPtr &lhs, const ArrayPtr &rhs, propagate::DotDims dims,
                     const OpOptions &options, OperandNames names = {});
ArrayPtr matmul(const ArrayPtr &a, const ArrayPtr &b, const OpOptions &options);
ArrayPtr einsum(const std::string &subscripts, const ArrayPtr &a, const ArrayPtr &b,
                const OpOptions &options);
// An einsum of two as a step of an einsum of several (a_is_lhs: a is the
// operand of the higher id there, as jnp.einsum takes them).
ArrayPtr einsum_pair(const std::string &subscripts, const ArrayPtr &a, const ArrayPtr &b,
                     const OpOptions &options, bool a_is_lhs);
// jnp.einsum of one to four operands (two: the function above), the pairs
// contracted in jnp.einsum's order (einsum_path.hpp).
ArrayPtr einsum(const std::string &subscripts, const std::vector<ArrayPtr> &xs, const OpOptions &options);

}  // namespace spmd::ops
