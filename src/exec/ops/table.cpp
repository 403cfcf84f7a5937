#include "exec/ops/table.hpp"

#include "spmd/ops.h"

namespace spmd::ops::table {

namespace {

// An enumerator's value and its name, written once.
#define C_ENUM(e) static_cast<int>(e), #e

constexpr Elementwise kUnary[] = {
    {C_ENUM(SPMD_UNARY_NEG), "neg", "jnp.negative", ew::Op::Neg, Result::Same},
    {C_ENUM(SPMD_UNARY_ABS), "abs", "jnp.abs", ew::Op::Abs, Result::Same},
    {C_ENUM(SPMD_UNARY_EXP), "exp", "jnp.exp", ew::Op::Exp, Result::Float},
    {C_ENUM(SPMD_UNARY_LOG), "log", "jnp.log", ew::Op::Log, Result::Float},
    {C_ENUM(SPMD_UNARY_SIN), "sin", "jnp.sin", ew::Op::Sin, Result::Float},
    {C_ENUM(SPMD_UNARY_COS), "cos", "jnp.cos", ew::Op::Cos, Result::Float},
    {C_ENUM(SPMD_UNARY_TANH), "tanh", "jnp.tanh", ew::Op::Tanh, Result::Float},
    {C_ENUM(SPMD_UNARY_SQRT), "sqrt", "jnp.sqrt", ew::Op::Sqrt, Result::Float},
    {C_ENUM(SPMD_UNARY_RSQRT), "rsqrt", "jax.lax.rsqrt", ew::Op::Rsqrt, Result::FloatOnly},
    {C_ENUM(SPMD_UNARY_RELU), "relu", "jax.nn.relu", ew::Op::Relu, Result::Same},
    {C_ENUM(SPMD_UNARY_LOGISTIC), "logistic", "jax.nn.sigmoid", ew::Op::Logistic, Result::FloatOnly},
    {C_ENUM(SPMD_UNARY_GELU_TANH), "gelu_tanh", "jax.nn.gelu(approximate=True)", ew::Op::GeluTanh,
     Result::Float},
    {C_ENUM(SPMD_UNARY_GELU_EXACT), "gelu_exact", "jax.nn.gelu(approximate=False)", ew::Op::GeluExact,
     Result::Float},
};

constexpr Elementwise kBinary[] = {
    {C_ENUM(SPMD_BINARY_ADD), "add", "jnp.add", ew::Op::Add, Result::Same},
    {C_ENUM(SPMD_BINARY_SUB), "sub", "jnp.subtract", ew::Op::Sub, Result::Same},
    {C_ENUM(SPMD_BINARY_MUL), "mul", "jnp.multiply", ew::Op::Mul, Result::Same},
    {C_ENUM(SPMD_BINARY_DIV), "div", "jnp.true_divide", ew::Op::Div, Result::Float},
    {C_ENUM(SPMD_BINARY_MAX), "max", "jnp.maximum", ew::Op::Max, Result::Same},
    {C_ENUM(SPMD_BINARY_MIN), "min", "jnp.minimum", ew::Op::Min, Result::Same},
    {C_ENUM(SPMD_BINARY_POW), "pow", "jnp.power", ew::Op::Pow, Result::Same},
    {C_ENUM(SPMD_BINARY_EQ), "eq", "jnp.equal", ew::Op::Eq, Result::Bool},
    {C_ENUM(SPMD_BINARY_NE), "ne", "jnp.not_equal", ew::Op::Ne, Result::Bool},
    {C_ENUM(SPMD_BINARY_LT), "lt", "jnp.less", ew::Op::Lt, Result::Bool},
    {C_ENUM(SPMD_BINARY_LE), "le", "jnp.less_equal", ew::Op::Le, Result::Bool},
    {C_ENUM(SPMD_BINARY_GT), "gt", "jnp.greater", ew::Op::Gt, Result::Bool},
    {C_ENUM(SPMD_BINARY_GE), "ge", "jnp.greater_equal", ew::Op::Ge, Result::Bool},
};

constexpr Reduction kReductions[] = {
    {C_ENUM(SPMD_REDUCE_SUM), "sum", "jnp.sum", ReduceKind::Sum, "psum (psum_scatter when asked)"},
    {C_ENUM(SPMD_REDUCE_MEAN), "mean", "jnp.mean", ReduceKind::Mean, "psum, then a scale"},
    {C_ENUM(SPMD_REDUCE_MAX), "max", "jnp.max", ReduceKind::Max, "pmax"},
    {C_ENUM(SPMD_REDUCE_MIN), "min", "jnp.min", ReduceKind::Min, "pmin"},
};

#undef C_ENUM

// Shardy writes a rule as factors: each letter one factor of a dimension,
// shared letters split alike, `{k: reduction}` a factor the result lacks
// (split, it leaves partial results to combine).
constexpr const char *kElementwiseKernel = "elementwise loop (SLEEF vector functions on CPU)";
constexpr Function kFunctions[] = {
    {"spmd_unary", "unary", "(the unary functions below)", 1, "([i, j]) -> ([i, j])", kElementwiseKernel},
    {"spmd_astype", "astype", "x.astype", 1, "([i, j]) -> ([i, j])", kElementwiseKernel},
    {"spmd_binary", "binary", "(the binary functions below)", 2,
     "([i, j], [i, j]) -> ([i, j]); a size-1 dimension broadcasts and does not vote; "
     "operands of the result's size decide, smaller ones only refine",
     kElementwiseKernel},
    {"spmd_binary_scalar", "binary_scalar", "(x op s, s a weakly typed scalar)", 1,
     "([i, j]) -> ([i, j])", kElementwiseKernel},
    {"spmd_scalar_binary", "scalar_binary", "(s op x, s a weakly typed scalar)", 1,
     "([i, j]) -> ([i, j])", kElementwiseKernel},
    {"spmd_where", "where", "jnp.where", 3,
     "([i, j], [i, j], [i, j]) -> ([i, j]); a size-1 dimension broadcasts and does not vote; "
     "operands of the result's size decide, smaller ones only refine",
     kElementwiseKernel},
    {"spmd_reduce", "reduce", "(the reductions below)", 1, "([i, j]) -> ([i]) {j: reduction}",
     "reduction over axes, then the row's collective"},
    {"spmd_argmax", "argmax", "jnp.argmax", 1, "([i, j]) -> ([i]) {j: replicated first}",
     "arg-reduction over one axis"},
    {"spmd_argmin", "argmin", "jnp.argmin", 1, "([i, j]) -> ([i]) {j: replicated first}",
     "arg-reduction over one axis"},
    {"spmd_cumsum", "cumsum", "jnp.cumsum", 1, "([i, j]) -> ([i, j]) {j: whole while summed}",
     "running sum over one axis, in XLA's order (CPU)"},
    {"spmd_take", "take", "jnp.take", 2, "([i, j, k], [m]) -> ([i, m, k]) {j: replicated first}",
     "a gather of whole rows along one axis"},
    {"spmd_scatter_add", "scatter_add", "x.at[indices].add", 3,
     "([i, j, k], [m], [i, m, k]) -> ([i, j, k]) {m: whole, in update order}",
     "each result element adds its updates in update order (XLA's CPU scatter)"},
    {"spmd_one_hot", "one_hot", "jax.nn.one_hot", 1,
     "([i, j]) -> ([i, j, c]) {c: new, whole}", "x expanded == an iota, then astype (elementwise)"},
    {"spmd_softmax", "softmax", "jax.nn.softmax, jax.nn.log_softmax", 1,
     "([i, j]) -> ([i, j]) {j: pmax and psum when split}", "max, sub, exp, sum, div (log, sub)"},
    {"spmd_dot_general", "dot_general", "jax.lax.dot_general", 2,
     "([b, m, k], [b, k, n]) -> ([b, m, n]) {k: reduction}", "GEMM (CBLAS on CPU)"},
    {"spmd_matmul", "matmul", "jnp.matmul", 2, "([b, m, k], [b, k, n]) -> ([b, m, n]) {k: reduction}",
     "GEMM (CBLAS on CPU)"},
    {"spmd_einsum", "einsum", "jnp.einsum", 2,
     "one factor per subscript letter; letters the output lacks: reduction", "GEMM (CBLAS on CPU)"},
    {"spmd_einsum_n", "einsum_n", "jnp.einsum (1 to 4 operands)", 0,
     "pairs in opt_einsum's optimal order, each as einsum's", "GEMM per pair (CBLAS on CPU)"},
    {"spmd_transpose", "transpose", "jnp.transpose", 1, "([i, j]) -> ([j, i])",
     "elementwise copy through permuted strides"},
    {"spmd_reshape", "reshape", "jnp.reshape", 1,
     "([i, j]) -> ([ij]): the dimensions as one stream of factors, regrouped", "none (buffers reused) or a reshard"},
    {"spmd_broadcast_to", "broadcast_to", "jnp.broadcast_to", 1, "([j]) -> ([i, j]) {i: replicated}",
     "elementwise copy through stride-0 dimensions"},
    {"spmd_slice", "slice", "x[a:b, c:d]", 1,
     "([i, j]) -> ([i', j']); axes that do not divide i', j' dropped", "box copies"},
    {"spmd_slice_strided", "slice_strided", "jax.lax.slice (strides), x[a:b:s]", 1,
     "([i, j]) -> ([i', j']); axes that do not divide i', j' dropped",
     "box copies of each block's window, then a strided copy on each device"},
    {"spmd_dynamic_slice", "dynamic_slice", "jax.lax.dynamic_slice", 1,
     "([i, j]) -> ([i', j']); axes that do not divide i', j' dropped (constant starts)", "box copies"},
    {"spmd_concatenate", "concatenate", "jnp.concatenate", 0,
     "([i, j], [i, k]) -> ([i, j+k]); the operands' splits of each dimension merged", "box copies"},
};

template <typename Row>
const Row *find(std::span<const Row> rows, int c_value) {
  for (const Row &r : rows)
    if (r.c_value == c_value) return &r;
  return nullptr;
}

}  // namespace

std::span<const Elementwise> unary() { return kUnary; }
std::span<const Elementwise> binary() { return kBinary; }
std::span<const Reduction> reductions() { return kReductions; }
std::span<const Function> functions() { return kFunctions; }

const Elementwise *find_unary(int c_value) { return find(unary(), c_value); }
const Elementwise *find_binary(int c_value) { return find(binary(), c_value); }
const Reduction *find_reduction(int c_value) { return find(reductions(), c_value); }

const Elementwise *find_kernel(ew::Op op) {
  for (auto rows : {unary(), binary()})
    for (const Elementwise &r : rows)
      if (r.kernel == op) return &r;
  return nullptr;
}

}  // namespace spmd::ops::table
