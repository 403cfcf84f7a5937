#include "exec/ops/reduction.hpp"

#include <limits>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "base/promotion.hpp"
#include "runtime/recording.hpp"
#include "exec/ops/elementwise.hpp"
#include "exec/ops/partial_sums.hpp"
#include "kernels/reduce_axes.hpp"

namespace spmd::ops {

namespace {

const char *kind_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Mean: return "mean";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
  }
  return "?";
}

// Each device's reduction of its block, laid out as the result's block.
ArrayPtr local_reduce(red::Op op, const ArrayPtr &x, const std::vector<bool> &reduced,
                      spmd_dtype out_dtype, const MeshPtr &mesh, const Shape &out_shape,
                      const propagate::Dims &out_dims) {
  auto partials = std::make_shared<Array>(sharding_of(mesh, out_dims), out_dtype, out_shape);
  std::vector<std::pair<size_t, Kernel>> kernels;
  kernels.reserve(partials->shard_count());
  for (size_t i = 0; i < partials->shard_count(); ++i) {
    if (partials->shard(i).box.empty() || !partials->addressable(i)) continue;
    red::Params p;
    p.op = op;
    p.in = x->dtype();
    p.out = out_dtype;
    p.shape = x->shard(i).box.extent();
    p.reduced = reduced;
    kernels.emplace_back(i, Kernel::reduction(partials->buffer(i).place(), x->buffer(i).place(),
                                              std::move(p), partials->shard(i).device));
  }
  launch_per_shard(*partials, {x.get()}, std::move(kernels));
  return partials;
}

// Softmax along the last axis of f32 or f64 blocks that each hold whole
// rows (the axis unsplit), as one kernel a block with the ops' bits
// (red::softmax_rows), on backends that run it; else null, and the ops
// one after another. The seed Layer's attention softmax: five passes, two
// broadcasting through the strided kernel, took 0.41 ms of its 17.
ArrayPtr softmax_in_one_pass(const ArrayPtr &x, size_t axis, bool log) {
  const size_t nd = x->shape().size();
  if ((x->dtype() != SPMD_F32 && x->dtype() != SPMD_F64) || !x->runtime().backend().fused_softmax())
    return nullptr;
  for (size_t d = axis + 1; d < nd; ++d)
    if (x->shape()[d] != 1) return nullptr;
  if (!propagate::padded(x->sharding()->spec(), nd)[axis].empty()) return nullptr;
  auto out = std::make_shared<Array>(x->sharding(), x->dtype(), x->shape());
  std::vector<std::pair<size_t, Kernel>> kernels;
  kernels.reserve(out->shard_count());
  for (size_t i = 0; i < out->shard_count(); ++i) {
    const ShardLayout &s = out->shard(i);
    if (s.box.empty() || !out->addressable(i)) continue;
    red::SoftmaxParams p;
    p.dtype = x->dtype();
    p.cols = x->shape()[axis];
    p.rows = s.box.elements() / p.cols;
    p.log = log;
    kernels.emplace_back(i, Kernel::softmax_rows(out->buffer(i).place(), x->buffer(i).place(), p, s.device));
  }
  launch_per_shard(*out, {x.get()}, std::move(kernels));
  return out;
}

}  // namespace

ArrayPtr reduce(ReduceKind kind, const ArrayPtr &x_in, const std::vector<int64_t> &axes, bool all,
                bool keepdims, const OpOptions &options) {
  const size_t nd = x_in->shape().size();
  std::vector<bool> reduced(nd, all);
  if (!all)
    for (size_t k = 0; k < axes.size(); ++k) {
      const std::string what = cat("axes[", k, "]");
      const size_t a = checked_axis(axes[k], nd, what.c_str());
      if (reduced[a]) invalid("axes: dimension ", a, " appears twice");
      reduced[a] = true;
    }
  ArrayPtr x = x_in;
  int64_t count = 1;
  for (size_t d = 0; d < nd; ++d)
    if (reduced[d]) {
      count *= x->shape()[d];
      if (x->shape()[d] == 0 && (kind == ReduceKind::Max || kind == ReduceKind::Min))
        invalid("axes: ", kind_name(kind), " over dimension ", d,
                " of size 0 has no identity (JAX raises ValueError)");
    }
  const MeshPtr mesh = x->sharding()->mesh();
  const propagate::Dims in_dims = propagate::padded(x->sharding()->spec(), nd);
  const propagate::Reduction r = propagate::reduce(in_dims, reduced, keepdims);
  Shape out_shape;
  for (size_t d = 0; d < nd; ++d)
    if (!reduced[d]) out_shape.push_back(x->shape()[d]);
    else if (keepdims) out_shape.push_back(1);
  const bool sum = kind == ReduceKind::Sum || kind == ReduceKind::Mean;
  const spmd_dtype in_dtype =
      kind == ReduceKind::Mean && !dtype_is_float(x->dtype()) ? float_result(x->dtype()) : x->dtype();
  const spmd_dtype result = sum ? sum_result(in_dtype) : in_dtype;
  check_result("x", out_shape, result);
  const ShardingPtr requested = requested_sharding(options, mesh, out_shape.size());
  if (Recording *rec = current_recording()) {
    // One factor per dimension of x; the reduced ones reach no result
    // dimension (kept ones of size 1 run over none).
    Recording::Factors f;
    f.kind = propagate::ProgramOp::Kind::Reduction;
    f.operands = {x_in.get()};
    f.sizes = x_in->shape();
    f.summed = reduced;
    f.operand_factors = {std::vector<int>(nd)};
    for (size_t d = 0; d < nd; ++d) {
      f.operand_factors[0][d] = static_cast<int>(d);
      if (!reduced[d]) f.result_factors.push_back(static_cast<int>(d));
      else if (keepdims) f.result_factors.push_back(-1);
    }
    rec->note_factors(std::move(f));
  }
  // The mean of nothing is NaN, of no element at all: made directly, since
  // converting an empty x of huge dimensions to a float could not be held.
  if (kind == ReduceKind::Mean && x->size() == 0) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return honour(Array::full(sharding_of(mesh, r.out), result, out_shape, count == 0 ? nan : 0.0),
                  requested);
  }
  if (in_dtype != x->dtype()) x = astype(x, in_dtype, {});

  // 16-bit floats reduce in f32 and round once at the end (a mean after
  // its division, as jnp.mean computes in f32).
  const spmd_dtype partial = (result == SPMD_F16 || result == SPMD_BF16) ? SPMD_F32 : result;
  const red::Op op = sum ? red::Op::Sum : kind == ReduceKind::Max ? red::Op::Max : red::Op::Min;
  ArrayPtr out = local_reduce(op, x, reduced, partial, mesh, out_shape, r.out);
  const int64_t scatter =
      on_mesh(requested, mesh) && sum ? scatter_dimension(r.out, propagate::padded(requested->spec(), out_shape.size()),
                                           r.summed, out_shape, *mesh)
                       : -1;
  out = combine_partials(mesh, out, out_shape, r.out, r.summed,
                         sum ? Combine::Sum : kind == ReduceKind::Max ? Combine::Max : Combine::Min,
                         scatter);
  if (kind == ReduceKind::Mean) {
    std::vector<std::pair<size_t, Kernel>> kernels;
    kernels.reserve(out->shard_count());
    for (size_t i = 0; i < out->shard_count(); ++i) {
      if (!out->addressable(i)) continue;
      const Buffer &b = out->buffer(i);
      const auto n = static_cast<size_t>(out->shard(i).box.elements());
      if (n) kernels.emplace_back(i, Kernel::scale_by_reciprocal(b.place(), b.place(), partial, n,
                                                                 static_cast<double>(count)));
    }
    launch_per_shard(*out, {}, std::move(kernels));
  }
  if (partial != result) out = astype(out, result, {});
  return honour(out, requested);
}

namespace {

// argmax and argmin. The axis is gathered first: the first index of the
// largest (smallest) value is then a local question.
ArrayPtr arg_reduce(red::Op op, const ArrayPtr &x_in, int64_t axis, const OpOptions &options) {
  const size_t nd = x_in->shape().size();
  const size_t a = checked_axis(axis, nd, "axis");
  if (x_in->shape()[a] == 0)
    invalid("axis: ", red::op_name(op), " over dimension ", a, " of size 0 (JAX raises ValueError)");
  if (Recording *rec = current_recording()) {
    // jax.jit's arg-reduction is a reduction (of the values and their
    // indices): the axis reaches no result dimension.
    Recording::Factors f = Recording::Factors::per_dimension(propagate::ProgramOp::Kind::Reduction, *x_in);
    f.summed[a] = true;
    f.result_factors.erase(f.result_factors.begin() + static_cast<int64_t>(a));
    rec->note_factors(std::move(f));
  }
  const MeshPtr mesh = x_in->sharding()->mesh();
  propagate::Dims dims = propagate::padded(x_in->sharding()->spec(), nd);
  dims[a].clear();  // the axis whole on every device
  const ArrayPtr x = laid_out(x_in, mesh, dims);
  std::vector<bool> reduced(nd, false);
  reduced[a] = true;
  const propagate::Reduction r = propagate::reduce(dims, reduced, false);
  Shape out_shape = x->shape();
  out_shape.erase(out_shape.begin() + static_cast<int64_t>(a));
  check_result("x", out_shape, SPMD_I32);
  const ShardingPtr requested = requested_sharding(options, mesh, out_shape.size());
  return honour(local_reduce(op, x, reduced, SPMD_I32, mesh, out_shape, r.out), requested);
}

}  // namespace

ArrayPtr argmax(const ArrayPtr &x, int64_t axis, const OpOptions &options) {
  return arg_reduce(red::Op::ArgMax, x, axis, options);
}

ArrayPtr argmin(const ArrayPtr &x, int64_t axis, const OpOptions &options) {
  return arg_reduce(red::Op::ArgMin, x, axis, options);
}

ArrayPtr cumsum(const ArrayPtr &x_in, int64_t axis, const OpOptions &options) {
  // Each line is summed whole on one device (split, the axis is gathered
  // first), then the result goes back to x's layout, as jax.jit keeps it.
  const size_t nd = x_in->shape().size();
  const size_t a = checked_axis(axis, nd, "axis");
  const spmd_dtype out_dtype = x_in->dtype() == SPMD_BOOL ? SPMD_I32 : x_in->dtype();
  if (Recording *rec = current_recording()) {
    // jax.jit's cumulative sum is a reduce-window: a factor per dimension,
    // the summed one's elements moving between devices (as a slice's).
    Recording::Factors f = Recording::Factors::per_dimension(propagate::ProgramOp::Kind::Slice, *x_in);
    f.permuted.assign(nd, false);
    f.permuted[a] = true;
    rec->note_factors(std::move(f));
  }
  const MeshPtr mesh = x_in->sharding()->mesh();
  const ShardingPtr requested = requested_sharding(options, mesh, nd);
  const propagate::Dims dims = propagate::padded(x_in->sharding()->spec(), nd);
  propagate::Dims whole = dims;
  whole[a].clear();
  const ArrayPtr x = laid_out(x_in, mesh, whole);
  std::vector<bool> reduced(nd, false);
  reduced[a] = true;
  const ArrayPtr sums = local_reduce(red::Op::CumSum, x, reduced, out_dtype, mesh, x->shape(), whole);
  if (requested) return honour(sums, requested);
  return laid_out(sums, mesh, dims);
}

ArrayPtr softmax(const ArrayPtr &x_in, int64_t axis, bool log, const OpOptions &options) {
  const size_t nd = x_in->shape().size();
  const size_t a = checked_axis(axis, nd, "axis");
  const MeshPtr mesh = x_in->sharding()->mesh();
  requested_sharding(options, mesh, nd);
  // jax.nn.softmax: exp(x - max) / sum(exp(x - max)); log_softmax:
  // (x - max) - log(sum(exp(x - max))). Written with the ops, so the
  // result keeps x's sharding as under jit: over a split axis the max and
  // the sum become a pmax and a psum.
  if (x_in->dtype() == SPMD_BOOL)
    invalid("x: softmax is not defined for bool (JAX raises TypeError: its x - max(x) is a "
            "bool subtraction)");
  if (Recording *rec = current_recording()) {
    // One factor per dimension of x, the axis summed (and reaching the
    // result too): placing a program expands it into jax.jit's ops.
    Recording::Factors f = Recording::Factors::per_dimension(propagate::ProgramOp::Kind::Softmax, *x_in);
    f.summed[a] = true;
    f.logarithm = log;
    rec->note_factors(std::move(f));
  }
  // Over an empty axis there is nothing to normalise: JAX's max starts
  // from -inf there, and the result is as empty as x.
  if (x_in->shape()[a] == 0)
    return honour(astype(x_in, dtype_is_float(x_in->dtype()) ? x_in->dtype()
                                                              : float_result(x_in->dtype()), {}),
                  options.out_sharding);
  if (ArrayPtr fused = softmax_in_one_pass(x_in, a, log)) return honour(fused, options.out_sharding);
  // x - max(x) in x's own type, as JAX subtracts integers before exp makes
  // them floats (int32 16777217 - 16777216 is 1, not 0 in f32).
  const ArrayPtr &x = x_in;
  const std::vector<int64_t> ax{static_cast<int64_t>(a)};
  const ArrayPtr m = reduce(ReduceKind::Max, x, ax, false, true, {});
  const ArrayPtr shifted = binary(ew::Op::Sub, x, m, {});
  const ArrayPtr e = unary(ew::Op::Exp, shifted, {});
  const ArrayPtr s = reduce(ReduceKind::Sum, e, ax, false, true, {});
  ArrayPtr out = log ? binary(ew::Op::Sub, shifted, unary(ew::Op::Log, s, {}), {})
                     : binary(ew::Op::Div, e, s, {});
  return honour(out, options.out_sharding);
}

}  // namespace spmd::ops
