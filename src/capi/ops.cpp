// The global ops of spmd/ops.h: argument checks, then exec/ops.
#include "base/dtype.hpp"
#include "base/raw_enum.hpp"
#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "exec/ops/contraction.hpp"
#include "exec/ops/elementwise.hpp"
#include "exec/ops/indexing.hpp"
#include "exec/ops/reduction.hpp"
#include "exec/ops/shape_ops.hpp"
#include "exec/ops/table.hpp"
#include "spmd/ops.h"

using namespace spmd;
using namespace spmd::capi;

namespace {

// An op's array operands in order, each handle held once however often it
// is named, until the call returns: so a donation can tell the op's own
// hold from another call's (ArraySlot::consume).
class Operands {
 public:
  // Holds operand number size() and returns its array.
  const ArrayPtr &operator()(const spmd_array *a, const char *arg) {
    const size_t i = n_;
    size_t j = 0;
    while (j < i && handles_[j] != a) ++j;
    if (j == i) {
      holds_[i] = ArrayHold(a, arg);
      slots_[i] = holds_[i].slot();
    } else {
      slots_[i] = slots_[j];
    }
    handles_[i] = a;
    ++n_;
    return slots_[i]->array();
  }
  unsigned size() const { return n_; }
  ArraySlot *slot(size_t i) const { return slots_[i]; }

 private:
  const spmd_array *handles_[3] = {};
  ArraySlot *slots_[3] = {};
  ArrayHold holds_[3];
  unsigned n_ = 0;
};

// The options as exec/ops reads them, with the operands they may donate.
ops::OpOptions read_call(const spmd_op_options *given, const Operands &in, const char *function) {
  const auto o = read_options(given, spmd_op_options SPMD_OP_OPTIONS_INIT, "options");
  ops::OpOptions c;
  c.function = function;
  if (o.out_sharding != nullptr)
    c.out_sharding = use(o.out_sharding, "options->out_sharding").impl;
  const unsigned n = in.size();
  if (o.donate >> n)
    invalid("options->donate: bit ", 31 - __builtin_clz(o.donate), " is set but the op has ", n,
            n == 1 ? " operand" : " operands");
  for (unsigned i = 0; i < n; ++i) {
    if (o.donate & (1u << i)) {
      for (unsigned j = 0; j < i; ++j)
        if (c.donate[j] == in.slot(i))
          invalid("options->donate: operand ", i, " is operand ", j, " again");
      c.donate[i] = in.slot(i);
    }
  }
  return c;
}

// Retires donated operands, then hands the result to the caller. In that
// order: the result may already have written into a donated operand's
// buffers, so once the op has run those handles must not stay usable, even
// when making the result's handle runs out of memory. Calls still holding
// them finish with the values they started with (ops::take_donated).
void finish(const ops::OpOptions &c, ArrayPtr result, spmd_array **out) {
  for (ArraySlot *d : c.donate)
    if (d != nullptr) d->consume(c.function);
  *out = new_handle<spmd_array>(std::move(result));
}

// The tail of every op's entry point, once its own arguments are read:
// the output pointer and the options are checked, `make` runs the op, the
// result is handed out, and donated operands are retired.
template <typename Make>
void complete(const char *fn, const Operands &in, const spmd_op_options *options,
              spmd_array **out, Make &&make) {
  out_arg(out);
  const ops::OpOptions c = read_call(options, in, fn);
  finish(c, ops::as_jit_returns(make(c), c, in.size() ? in.slot(0)->array().get() : nullptr), out);
}

// The same for an op of a list of n arrays (xs[0] .. xs[n-1], n > 0),
// which takes no donations: `make` gets the arrays and the options.
template <typename Make>
void complete_list(const char *fn, size_t n, const spmd_array *const *xs, const spmd_op_options *options,
                   spmd_array **out, Make &&make) {
  if (xs == nullptr) invalid("xs: NULL with ", n, n == 1 ? " array" : " arrays");
  std::vector<ArrayHold> holds;
  std::vector<ArrayPtr> arrays;
  holds.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    holds.emplace_back(xs[k], cat("xs[", k, "]").c_str());
    arrays.push_back(holds.back().ptr());
  }
  out_arg(out);
  if (read_options(options, spmd_op_options SPMD_OP_OPTIONS_INIT, "options").donate != 0)
    invalid("options->donate: ", fn, " does not take donations");
  const ops::OpOptions c = read_call(options, Operands(), fn);
  finish(c, ops::as_jit_returns(make(arrays, c), c, arrays[0].get()), out);
}

// An enumerator's row of the op table (exec/ops/table.hpp).
ew::Op unary_op(const spmd_unary_op &op) {
  const auto *row = ops::table::find_unary(raw_enum(op));
  if (row == nullptr) invalid("op: ", raw_enum(op), " is not a spmd_unary_op");
  return row->kernel;
}

ew::Op binary_op(const spmd_binary_op &op) {
  const auto *row = ops::table::find_binary(raw_enum(op));
  if (row == nullptr) invalid("op: ", raw_enum(op), " is not a spmd_binary_op");
  return row->kernel;
}

ops::ReduceKind reduce_op(const spmd_reduce_op &op) {
  const auto *row = ops::table::find_reduction(raw_enum(op));
  if (row == nullptr) invalid("op: ", raw_enum(op), " is not a spmd_reduce_op");
  return row->kind;
}

std::vector<int64_t> int_list(const char *what, size_t n, const int64_t *values) {
  if (n > 0 && values == nullptr) invalid(what, ": NULL with ", n, " values");
  if (n > SPMD_MAX_NDIM) invalid(what, ": ", n, " values; arrays have at most ", SPMD_MAX_NDIM, " dimensions");
  return std::vector<int64_t>(values, values + n);
}

// An op of one array operand x: `make` gets x and the options (the
// other arguments are read inside it, so their errors come after x's).
template <typename Make>
spmd_status x_op(const char *fn, const spmd_array *x, const spmd_op_options *options, spmd_array **out,
                 Make make) {
  return guard(fn, [&] {
    Operands in;
    const auto &a = in(x, "x");
    complete(fn, in, options, out, [&](const ops::OpOptions &opts) { return make(a, opts); });
  });
}

// The ops of one operand and one axis (argmax, argmin, cumsum).
template <typename Op>
spmd_status axis_op(const char *fn, const spmd_array *x, int64_t axis, const spmd_op_options *options,
                    spmd_array **out, Op op) {
  return x_op(fn, x, options, out, [&](const ArrayPtr &a, const ops::OpOptions &opts) { return op(a, axis, opts); });
}

}  // namespace

extern "C" {

spmd_status spmd_op_options_init(spmd_op_options *options, size_t size) {
  return guard(__func__, [&] { init_struct(options, size, spmd_op_options SPMD_OP_OPTIONS_INIT, "options"); });
}

spmd_status spmd_dot_dims_init(spmd_dot_dims *dims, size_t size) {
  return guard(__func__, [&] { init_struct(dims, size, spmd_dot_dims SPMD_DOT_DIMS_INIT, "dims"); });
}

spmd_status spmd_unary(spmd_unary_op op, const spmd_array *x, const spmd_op_options *options,
                       spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const ew::Op o = unary_op(op);
    const auto &a = in(x, "x");
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::unary(o, a, opts); });
  });
}

spmd_status spmd_astype(const spmd_array *x, spmd_dtype dtype, const spmd_op_options *options,
                        spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const auto &a = in(x, "x");
    check_dtype("dtype", dtype);
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::astype(a, valid_dtype(dtype), opts); });
  });
}

spmd_status spmd_binary(spmd_binary_op op, const spmd_array *x, const spmd_array *y,
                        const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const ew::Op o = binary_op(op);
    const auto &a = in(x, "x");
    const auto &b = in(y, "y");
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::binary(o, a, b, opts); });
  });
}

spmd_status spmd_binary_scalar(spmd_binary_op op, const spmd_array *x, double s,
                               const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const ew::Op o = binary_op(op);
    const auto &a = in(x, "x");
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::binary_scalar(o, a, s, false, opts); });
  });
}

spmd_status spmd_scalar_binary(spmd_binary_op op, double s, const spmd_array *x,
                               const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const ew::Op o = binary_op(op);
    const auto &a = in(x, "x");
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::binary_scalar(o, a, s, true, opts); });
  });
}

spmd_status spmd_where(const spmd_array *cond, const spmd_array *x, const spmd_array *y,
                       const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const auto &c0 = in(cond, "cond");
    const auto &a = in(x, "x");
    const auto &b = in(y, "y");
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::where(c0, a, b, opts); });
  });
}

spmd_status spmd_reduce(spmd_reduce_op op, const spmd_array *x, size_t naxes, const int64_t *axes,
                        int keepdims, const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const ops::ReduceKind k = reduce_op(op);
    const auto &a = in(x, "x");
    const auto list = int_list("axes", naxes, axes);
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::reduce(k, a, list, axes == nullptr, keepdims != 0, opts); });
  });
}

spmd_status spmd_argmax(const spmd_array *x, int64_t axis, const spmd_op_options *options,
                        spmd_array **out) {
  return axis_op(__func__, x, axis, options, out, ops::argmax);
}

spmd_status spmd_argmin(const spmd_array *x, int64_t axis, const spmd_op_options *options,
                        spmd_array **out) {
  return axis_op(__func__, x, axis, options, out, ops::argmin);
}

spmd_status spmd_cumsum(const spmd_array *x, int64_t axis, const spmd_op_options *options,
                        spmd_array **out) {
  return axis_op(__func__, x, axis, options, out, ops::cumsum);
}

spmd_status spmd_take(const spmd_array *a, const spmd_array *indices, int64_t axis,
                      const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const auto &x = in(a, "a");
    const auto &i = in(indices, "indices");
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::take(x, i, axis, opts); });
  });
}

spmd_status spmd_scatter_add(const spmd_array *x, const spmd_array *indices,
                             const spmd_array *updates, int64_t axis,
                             const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const auto &a = in(x, "x");
    const auto &i = in(indices, "indices");
    const auto &u = in(updates, "updates");
    complete(fn, in, options, out, [&](const ops::OpOptions &opts) {
      return ops::scatter_add(a, i, u, axis, opts);
    });
  });
}

spmd_status spmd_one_hot(const spmd_array *x, int64_t num_classes, int64_t axis, spmd_dtype dtype,
                         const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const auto &a = in(x, "x");
    check_dtype("dtype", dtype);
    if (read_options(options, spmd_op_options SPMD_OP_OPTIONS_INIT, "options").donate != 0)
      invalid("options->donate: spmd_one_hot does not take donations");
    complete(fn, in, options, out, [&](const ops::OpOptions &opts) {
      return ops::one_hot(a, num_classes, axis, valid_dtype(dtype), opts);
    });
  });
}

spmd_status spmd_softmax(const spmd_array *x, int64_t axis, int log, const spmd_op_options *options,
                         spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const auto &a = in(x, "x");
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::softmax(a, axis, log != 0, opts); });
  });
}

spmd_status spmd_dot_general(const spmd_array *lhs, const spmd_array *rhs, const spmd_dot_dims *dims,
                             const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const auto &a = in(lhs, "lhs");
    const auto &b = in(rhs, "rhs");
    if (dims == nullptr) invalid("dims: NULL spmd_dot_dims pointer");
    const auto d = read_options(dims, spmd_dot_dims SPMD_DOT_DIMS_INIT, "dims");
    propagate::DotDims dd;
    dd.lhs_batch = int_list("dims->lhs_batch", d.nbatch, d.lhs_batch);
    dd.rhs_batch = int_list("dims->rhs_batch", d.nbatch, d.rhs_batch);
    dd.lhs_contract = int_list("dims->lhs_contract", d.ncontract, d.lhs_contract);
    dd.rhs_contract = int_list("dims->rhs_contract", d.ncontract, d.rhs_contract);
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::dot_general(a, b, std::move(dd), opts); });
  });
}

spmd_status spmd_matmul(const spmd_array *x, const spmd_array *y, const spmd_op_options *options,
                        spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const auto &a = in(x, "a");
    const auto &b = in(y, "b");
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::matmul(a, b, opts); });
  });
}

spmd_status spmd_einsum(const char *subscripts, const spmd_array *x, const spmd_array *y,
                        const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    if (subscripts == nullptr) invalid("subscripts: NULL string");
    const auto &a = in(x, "a");
    const auto &b = in(y, "b");
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::einsum(subscripts, a, b, opts); });
  });
}

spmd_status spmd_einsum_n(const char *subscripts, size_t n, const spmd_array *const *xs,
                          const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    if (subscripts == nullptr) invalid("subscripts: NULL string");
    if (n == 0) invalid("n: einsum needs at least one operand");
    complete_list(fn, n, xs, options, out, [&](const std::vector<ArrayPtr> &arrays, const ops::OpOptions &c) {
      return ops::einsum(subscripts, arrays, c);
    });
  });
}

spmd_status spmd_transpose(const spmd_array *x, size_t naxes, const int64_t *perm,
                           const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const auto &a = in(x, "x");
    auto p = int_list("perm", naxes, perm);
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::transpose(a, std::move(p), opts); });
  });
}

spmd_status spmd_reshape(const spmd_array *x, size_t ndim, const int64_t *shape,
                         const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const auto &a = in(x, "x");
    auto s = int_list("shape", ndim, shape);
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::reshape(a, std::move(s), opts); });
  });
}

spmd_status spmd_broadcast_to(const spmd_array *x, size_t ndim, const int64_t *shape,
                              const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const auto &a = in(x, "x");
    Shape s = checked_shape("shape", ndim, shape);
    complete(fn, in, options, out,
             [&](const ops::OpOptions &opts) { return ops::broadcast_to(a, s, opts); });
  });
}

spmd_status spmd_slice(const spmd_array *x, size_t ndim, const int64_t *start, const int64_t *stop,
                       const spmd_op_options *options, spmd_array **out) {
  return x_op(__func__, x, options, out, [&](const ArrayPtr &a, const ops::OpOptions &opts) {
    return ops::slice(a, int_list("start", ndim, start), int_list("stop", ndim, stop), opts);
  });
}

spmd_status spmd_slice_strided(const spmd_array *x, size_t ndim, const int64_t *start,
                               const int64_t *stop, const int64_t *strides,
                               const spmd_op_options *options, spmd_array **out) {
  return x_op(__func__, x, options, out, [&](const ArrayPtr &a, const ops::OpOptions &opts) {
    return ops::slice_strided(a, int_list("start", ndim, start), int_list("stop", ndim, stop),
                              int_list("strides", ndim, strides), opts);
  });
}

spmd_status spmd_dynamic_slice(const spmd_array *x, size_t ndim, const int64_t *start,
                               const int64_t *sizes, const spmd_op_options *options,
                               spmd_array **out) {
  return x_op(__func__, x, options, out, [&](const ArrayPtr &a, const ops::OpOptions &opts) {
    return ops::dynamic_slice(a, int_list("start", ndim, start), int_list("sizes", ndim, sizes), opts);
  });
}

spmd_status spmd_concatenate(size_t n, const spmd_array *const *xs, int64_t axis,
                             const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    if (n == 0) invalid("n: concatenate needs at least one array");
    complete_list(fn, n, xs, options, out, [&](const std::vector<ArrayPtr> &arrays, const ops::OpOptions &c) {
      return ops::concatenate(arrays, axis, c);
    });
  });
}

}  // extern "C"
