// The global ops of spmd/ops.h: argument checks, then exec/ops.
#include <algorithm>

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
#include "exec/program/program.hpp"
#include "spmd/ops.h"

using namespace spmd;
using namespace spmd::capi;

namespace {

using Arrays = std::vector<ArrayPtr>;

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
      holds_[i] = ArrayHold(a, arg, Abstract::Allowed);
      slots_[i] = holds_[i].slot();
    } else {
      slots_[i] = slots_[j];
    }
    handles_[i] = a;
    names_[i] = arg;
    ++n_;
    return slots_[i]->array();
  }
  unsigned size() const { return n_; }
  ArraySlot *slot(size_t i) const { return slots_[i]; }
  // The operands' arrays and argument names, in order.
  Arrays arrays() const {
    Arrays xs;
    for (unsigned i = 0; i < n_; ++i) xs.push_back(slots_[i]->array());
    return xs;
  }
  std::vector<std::string> names() const { return std::vector<std::string>(names_, names_ + n_); }

 private:
  const spmd_array *handles_[3] = {};
  const char *names_[3] = {};
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

// Runs the op `make(operands, options)` and names its result as jax.jit
// does; or, when an operand is a value of a program being recorded,
// records it there (exec/program). `make` holds the op's other arguments
// by value: a program replays it on each run's arrays. `names()` gives the
// operands' argument names, asked for only when one is a program's value.
template <typename Make, typename Names>
ArrayPtr run_or_record(const char *fn, const Arrays &xs, Names &&names, const ops::OpOptions &c,
                       Make &&make) {
  auto named = [make](const Arrays &a, const ops::OpOptions &o) {
    return ops::as_jit_returns(make(a, o), o, a.empty() ? nullptr : a[0].get());
  };
  if (std::none_of(xs.begin(), xs.end(), [](const ArrayPtr &a) { return a->abstract(); }))
    return named(xs, c);
  return Program::of(xs, names())->record(fn, xs, c, std::move(named));
}

// The tail of every op's entry point, once its own arguments are read:
// the output pointer and the options are checked, `make` runs the op (or
// records it), the result is handed out, and donated operands are retired.
template <typename Make>
void complete(const char *fn, const Operands &in, const spmd_op_options *options,
              spmd_array **out, Make &&make, const char *label = nullptr) {
  out_arg(out);
  ops::OpOptions c = read_call(options, in, fn);
  c.label = label;
  finish(c, run_or_record(fn, in.arrays(), [&] { return in.names(); }, c, std::forward<Make>(make)),
         out);
}

// The same for an op of a list of n arrays (xs[0] .. xs[n-1], n > 0),
// which takes no donations: `make` gets the arrays and the options.
template <typename Make>
void complete_list(const char *fn, size_t n, const spmd_array *const *xs, const spmd_op_options *options,
                   spmd_array **out, Make &&make) {
  if (xs == nullptr) invalid("xs: NULL with ", n, n == 1 ? " array" : " arrays");
  std::vector<ArrayHold> holds;
  Arrays arrays;
  holds.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    holds.emplace_back(xs[k], cat("xs[", k, "]").c_str(), Abstract::Allowed);
    arrays.push_back(holds.back().ptr());
  }
  out_arg(out);
  if (read_options(options, spmd_op_options SPMD_OP_OPTIONS_INIT, "options").donate != 0)
    invalid("options->donate: ", fn, " does not take donations");
  const ops::OpOptions c = read_call(options, Operands(), fn);
  auto names = [n] {
    std::vector<std::string> v;
    for (size_t k = 0; k < n; ++k) v.push_back(cat("xs[", k, "]"));
    return v;
  };
  finish(c, run_or_record(fn, arrays, names, c, std::forward<Make>(make)), out);
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

const ops::table::Reduction &reduce_op(const spmd_reduce_op &op) {
  const auto *row = ops::table::find_reduction(raw_enum(op));
  if (row == nullptr) invalid("op: ", raw_enum(op), " is not a spmd_reduce_op");
  return *row;
}

std::vector<int64_t> int_list(const char *what, size_t n, const int64_t *values) {
  if (n > 0 && values == nullptr) invalid(what, ": NULL with ", n, " values");
  if (n > SPMD_MAX_NDIM) invalid(what, ": ", n, " values; arrays have at most ", SPMD_MAX_NDIM, " dimensions");
  return std::vector<int64_t>(values, values + n);
}

// An op of one array operand x: `bind()`, called once x is checked (so
// errors in the other arguments come after x's), reads the op's other
// arguments and returns the op, a function of the operands (x) and the
// options holding those arguments by value.
template <typename Bind>
spmd_status x_op(const char *fn, const spmd_array *x, const spmd_op_options *options, spmd_array **out,
                 Bind bind) {
  return guard(fn, [&] {
    Operands in;
    in(x, "x");
    complete(fn, in, options, out, bind());
  });
}

// The ops of one operand and one axis (argmax, argmin, cumsum).
template <typename Op>
spmd_status axis_op(const char *fn, const spmd_array *x, int64_t axis, const spmd_op_options *options,
                    spmd_array **out, Op op) {
  return x_op(fn, x, options, out, [&] {
    return [op, axis](const Arrays &a, const ops::OpOptions &opts) { return op(a[0], axis, opts); };
  });
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
    in(x, "x");
    complete(fn, in, options, out,
             [o](const Arrays &x, const ops::OpOptions &opts) { return ops::unary(o, x[0], opts); });
  });
}

spmd_status spmd_astype(const spmd_array *x, spmd_dtype dtype, const spmd_op_options *options,
                        spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    in(x, "x");
    check_dtype("dtype", dtype);
    complete(fn, in, options, out,
             [t = valid_dtype(dtype)](const Arrays &x, const ops::OpOptions &opts) { return ops::astype(x[0], t, opts); });
  });
}

spmd_status spmd_binary(spmd_binary_op op, const spmd_array *x, const spmd_array *y,
                        const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const ew::Op o = binary_op(op);
    in(x, "x");
    in(y, "y");
    complete(fn, in, options, out,
             [o](const Arrays &x, const ops::OpOptions &opts) { return ops::binary(o, x[0], x[1], opts); });
  });
}

spmd_status spmd_binary_scalar(spmd_binary_op op, const spmd_array *x, double s,
                               const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const ew::Op o = binary_op(op);
    in(x, "x");
    complete(fn, in, options, out,
             [o, s](const Arrays &x, const ops::OpOptions &opts) { return ops::binary_scalar(o, x[0], s, false, opts); });
  });
}

spmd_status spmd_scalar_binary(spmd_binary_op op, double s, const spmd_array *x,
                               const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const ew::Op o = binary_op(op);
    in(x, "x");
    complete(fn, in, options, out,
             [o, s](const Arrays &x, const ops::OpOptions &opts) { return ops::binary_scalar(o, x[0], s, true, opts); });
  });
}

spmd_status spmd_where(const spmd_array *cond, const spmd_array *x, const spmd_array *y,
                       const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    in(cond, "cond");
    in(x, "x");
    in(y, "y");
    complete(fn, in, options, out,
             [](const Arrays &x, const ops::OpOptions &opts) { return ops::where(x[0], x[1], x[2], opts); });
  });
}

spmd_status spmd_reduce(spmd_reduce_op op, const spmd_array *x, size_t naxes, const int64_t *axes,
                        int keepdims, const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    const auto &row = reduce_op(op);
    const ops::ReduceKind k = row.kind;
    in(x, "x");
    const auto list = int_list("axes", naxes, axes);
    complete(fn, in, options, out,
             [k, list, all = axes == nullptr, keep = keepdims != 0](const Arrays &x, const ops::OpOptions &opts) {
               return ops::reduce(k, x[0], list, all, keep, opts);
             },
             row.name);
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
    in(a, "a");
    in(indices, "indices");
    complete(fn, in, options, out,
             [axis](const Arrays &x, const ops::OpOptions &opts) { return ops::take(x[0], x[1], axis, opts); });
  });
}

spmd_status spmd_scatter_add(const spmd_array *x, const spmd_array *indices,
                             const spmd_array *updates, int64_t axis,
                             const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    in(x, "x");
    in(indices, "indices");
    in(updates, "updates");
    complete(fn, in, options, out, [axis](const Arrays &x, const ops::OpOptions &opts) {
      return ops::scatter_add(x[0], x[1], x[2], axis, opts);
    });
  });
}

spmd_status spmd_one_hot(const spmd_array *x, int64_t num_classes, int64_t axis, spmd_dtype dtype,
                         const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    in(x, "x");
    check_dtype("dtype", dtype);
    if (read_options(options, spmd_op_options SPMD_OP_OPTIONS_INIT, "options").donate != 0)
      invalid("options->donate: spmd_one_hot does not take donations");
    complete(fn, in, options, out, [num_classes, axis, t = valid_dtype(dtype)](const Arrays &x, const ops::OpOptions &opts) {
      return ops::one_hot(x[0], num_classes, axis, t, opts);
    });
  });
}

spmd_status spmd_softmax(const spmd_array *x, int64_t axis, int log, const spmd_op_options *options,
                         spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    in(x, "x");
    complete(fn, in, options, out,
             [axis, lg = log != 0](const Arrays &x, const ops::OpOptions &opts) { return ops::softmax(x[0], axis, lg, opts); });
  });
}

spmd_status spmd_dot_general(const spmd_array *lhs, const spmd_array *rhs, const spmd_dot_dims *dims,
                             const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    in(lhs, "lhs");
    in(rhs, "rhs");
    if (dims == nullptr) invalid("dims: NULL spmd_dot_dims pointer");
    const auto d = read_options(dims, spmd_dot_dims SPMD_DOT_DIMS_INIT, "dims");
    propagate::DotDims dd;
    dd.lhs_batch = int_list("dims->lhs_batch", d.nbatch, d.lhs_batch);
    dd.rhs_batch = int_list("dims->rhs_batch", d.nbatch, d.rhs_batch);
    dd.lhs_contract = int_list("dims->lhs_contract", d.ncontract, d.lhs_contract);
    dd.rhs_contract = int_list("dims->rhs_contract", d.ncontract, d.rhs_contract);
    complete(fn, in, options, out,
             [dd](const Arrays &x, const ops::OpOptions &opts) { return ops::dot_general(x[0], x[1], dd, opts); });
  });
}

spmd_status spmd_matmul(const spmd_array *x, const spmd_array *y, const spmd_op_options *options,
                        spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    in(x, "a");
    in(y, "b");
    complete(fn, in, options, out,
             [](const Arrays &x, const ops::OpOptions &opts) { return ops::matmul(x[0], x[1], opts); });
  });
}

spmd_status spmd_einsum(const char *subscripts, const spmd_array *x, const spmd_array *y,
                        const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    if (subscripts == nullptr) invalid("subscripts: NULL string");
    in(x, "a");
    in(y, "b");
    complete(fn, in, options, out,
             [sub = std::string(subscripts)](const Arrays &x, const ops::OpOptions &opts) {
               return ops::einsum(sub, x[0], x[1], opts);
             });
  });
}

spmd_status spmd_einsum_n(const char *subscripts, size_t n, const spmd_array *const *xs,
                          const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    if (subscripts == nullptr) invalid("subscripts: NULL string");
    if (n == 0) invalid("n: einsum needs at least one operand");
    complete_list(fn, n, xs, options, out, [sub = std::string(subscripts)](const Arrays &arrays, const ops::OpOptions &c) {
      return ops::einsum(sub, arrays, c);
    });
  });
}

spmd_status spmd_transpose(const spmd_array *x, size_t naxes, const int64_t *perm,
                           const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    in(x, "x");
    auto p = int_list("perm", naxes, perm);
    complete(fn, in, options, out,
             [p](const Arrays &x, const ops::OpOptions &opts) { return ops::transpose(x[0], p, opts); });
  });
}

spmd_status spmd_reshape(const spmd_array *x, size_t ndim, const int64_t *shape,
                         const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    in(x, "x");
    auto s = int_list("shape", ndim, shape);
    complete(fn, in, options, out,
             [s](const Arrays &x, const ops::OpOptions &opts) { return ops::reshape(x[0], s, opts); });
  });
}

spmd_status spmd_broadcast_to(const spmd_array *x, size_t ndim, const int64_t *shape,
                              const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    Operands in;
    in(x, "x");
    Shape s = checked_shape("shape", ndim, shape);
    complete(fn, in, options, out,
             [s](const Arrays &x, const ops::OpOptions &opts) { return ops::broadcast_to(x[0], s, opts); });
  });
}

spmd_status spmd_slice(const spmd_array *x, size_t ndim, const int64_t *start, const int64_t *stop,
                       const spmd_op_options *options, spmd_array **out) {
  return x_op(__func__, x, options, out, [&] {
    return [b = int_list("start", ndim, start), e = int_list("stop", ndim, stop)](
               const Arrays &a, const ops::OpOptions &opts) { return ops::slice(a[0], b, e, opts); };
  });
}

spmd_status spmd_slice_strided(const spmd_array *x, size_t ndim, const int64_t *start,
                               const int64_t *stop, const int64_t *strides,
                               const spmd_op_options *options, spmd_array **out) {
  return x_op(__func__, x, options, out, [&] {
    return [b = int_list("start", ndim, start), e = int_list("stop", ndim, stop),
            st = int_list("strides", ndim, strides)](const Arrays &a, const ops::OpOptions &opts) {
      return ops::slice_strided(a[0], b, e, st, opts);
    };
  });
}

spmd_status spmd_dynamic_slice(const spmd_array *x, size_t ndim, const int64_t *start,
                               const int64_t *sizes, const spmd_op_options *options,
                               spmd_array **out) {
  return x_op(__func__, x, options, out, [&] {
    return [b = int_list("start", ndim, start), n = int_list("sizes", ndim, sizes)](
               const Arrays &a, const ops::OpOptions &opts) { return ops::dynamic_slice(a[0], b, n, opts); };
  });
}

spmd_status spmd_concatenate(size_t n, const spmd_array *const *xs, int64_t axis,
                             const spmd_op_options *options, spmd_array **out) {
  const char *fn = __func__;
  return guard(fn, [&] {
    if (n == 0) invalid("n: concatenate needs at least one array");
    complete_list(fn, n, xs, options, out, [axis](const Arrays &arrays, const ops::OpOptions &c) {
      return ops::concatenate(arrays, axis, c);
    });
  });
}

}  // extern "C"
