#include "exec/ops/indexing.hpp"

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "exec/ops/elementwise.hpp"
#include "exec/ops/shape_ops.hpp"
#include "base/promotion.hpp"
#include "kernels/scatter_add.hpp"
#include "kernels/take.hpp"
#include "runtime/recording.hpp"

namespace spmd::ops {

namespace {

// `v` with its elements [at, at + remove) replaced by `insert`: the shapes
// and layouts on either side of indexing along an axis.
template <typename V>
V splice(const V &v, size_t at, size_t remove, const V &insert) {
  V out(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(at));
  out.insert(out.end(), insert.begin(), insert.end());
  out.insert(out.end(), v.begin() + static_cast<std::ptrdiff_t>(at + remove), v.end());
  return out;
}

// A block as pre x block[axis] x post.
void split_at(const Shape &block, size_t axis, int64_t &pre, int64_t &len, int64_t &post) {
  pre = 1;
  post = 1;
  for (size_t d = 0; d < axis; ++d) pre *= block[d];
  len = block[axis];
  for (size_t d = axis + 1; d < block.size(); ++d) post *= block[d];
}

void check_index_dtype(spmd_dtype it, const char *op) {
  if (!dtype_is_integer(it))
    invalid("indices: ", dtype_name(it), " indices; ", op,
            " takes integers (int8, int16, int32, int64, uint8, uint16, uint32)");
}

}  // namespace

ArrayPtr one_hot(const ArrayPtr &x, int64_t num_classes, int64_t axis, spmd_dtype dtype,
                 const OpOptions &options) {
  if (num_classes < 0) invalid("num_classes: ", num_classes, " is negative");
  if (x->dtype() == SPMD_BOOL)
    invalid("x: bool indices (JAX raises TypeError: iota does not accept dtype bool)");
  const Shape &in = x->shape();
  const size_t a = checked_axis(axis, in.size() + 1, "axis");
  Shape expanded = in, classes(in.size() + 1, 1);
  expanded.insert(expanded.begin() + static_cast<int64_t>(a), 1);
  classes[a] = num_classes;
  Shape out_shape = in;
  out_shape.insert(out_shape.begin() + static_cast<int64_t>(a), num_classes);
  check_result("num_classes", out_shape, dtype);
  Recording *rec = current_recording();
  if (rec && shape_elements(out_shape) > 0) {
    // jax.nn.one_hot compares x, broadcast along the classes' dimension,
    // with an iota: x's dimensions run over the result's others. (An empty
    // result is a constant to jax.jit, laid out as the eager op lays it.)
    Recording::Factors f;
    f.kind = propagate::ProgramOp::Kind::Broadcast;
    f.operands = {x.get()};
    f.sizes = out_shape;
    f.summed.assign(out_shape.size(), false);
    f.operand_factors = {std::vector<int>(in.size())};
    for (size_t d = 0; d < in.size(); ++d) f.operand_factors[0][d] = static_cast<int>(d < a ? d : d + 1);
    for (size_t d = 0; d < out_shape.size(); ++d) f.result_factors.push_back(static_cast<int>(d));
    rec->note_factors(std::move(f));
  }
  const MeshPtr mesh = x->sharding()->mesh();
  const ArrayPtr lhs = reshape(x, expanded, {});
  const ArrayPtr rhs = Array::arange(sharding_of(mesh, propagate::Dims(classes.size())), x->dtype(),
                                     classes, 0, 1);
  return astype(binary(ew::Op::Eq, lhs, rhs, {}), dtype, options);
}

ArrayPtr take(const ArrayPtr &a_in, const ArrayPtr &indices_in, int64_t axis,
              const OpOptions &options) {
  const spmd_dtype it = indices_in->dtype();
  check_index_dtype(it, "jnp.take");
  const MeshPtr mesh = common_mesh({{a_in, "a"}, {indices_in, "indices"}});
  const Shape &as = a_in->shape(), &is = indices_in->shape();
  const size_t ax = checked_axis(axis, as.size(), "axis");
  const Shape out_shape = splice(as, ax, 1, is);
  check_result("indices", out_shape, a_in->dtype());
  Recording *rec = current_recording();
  if (rec && shape_elements(out_shape) > 0) {
    // A factor per result dimension, which a's other dimensions and the
    // indices' run over, and a's indexed dimension summed (Shardy's gather
    // rule: kept split, the result would be a psum of masked blocks).
    // (An empty result is a constant to jax.jit, laid out as the eager op
    // lays it.)
    Recording::Factors f;
    f.kind = propagate::ProgramOp::Kind::Gather;
    f.operands = {a_in.get(), indices_in.get()};
    f.sizes = out_shape;
    f.sizes.push_back(as[ax]);
    f.summed.assign(out_shape.size(), false);
    f.summed.push_back(true);
    const int indexed = static_cast<int>(out_shape.size()), ni = static_cast<int>(is.size());
    std::vector<int> of_a(as.size()), of_indices(is.size());
    for (size_t d = 0; d < as.size(); ++d)
      of_a[d] = d < ax ? static_cast<int>(d) : d == ax ? indexed : static_cast<int>(d) - 1 + ni;
    for (size_t j = 0; j < is.size(); ++j) of_indices[j] = static_cast<int>(ax + j);
    f.operand_factors = {std::move(of_a), std::move(of_indices)};
    for (size_t d = 0; d < out_shape.size(); ++d) f.result_factors.push_back(static_cast<int>(d));
    rec->note_factors(std::move(f));
  }
  const ShardingPtr requested = requested_sharding(options, mesh, out_shape.size());
  const propagate::Dims a_dims = propagate::padded(a_in->sharding()->spec(), as.size());
  const propagate::Dims out_dims =
      on_mesh(requested, mesh)
          ? propagate::padded(requested->spec(), out_shape.size())
          : result_sharding(mesh, propagate::take(a_dims, ax, propagate::padded(indices_in->sharding()->spec(), is.size())),
                            out_shape)
                ->spec()
                .dims();
  // Each device's result block needs a's block over the same ranges of
  // a's other dimensions with the axis whole, and the indices' block over
  // the same ranges of the index dimensions: both laid out by out_dims.
  const propagate::Dims a_layout = splice(out_dims, ax, is.size(), propagate::Dims(1));
  const propagate::Dims i_layout(out_dims.begin() + static_cast<std::ptrdiff_t>(ax),
                                 out_dims.begin() + static_cast<std::ptrdiff_t>(ax + is.size()));
  const ArrayPtr a = laid_out(a_in, mesh, a_layout), indices = laid_out(indices_in, mesh, i_layout);
  auto out = std::make_shared<Array>(sharding_of(mesh, out_dims), a->dtype(), out_shape);
  std::vector<std::pair<size_t, Kernel>> kernels;
  kernels.reserve(out->shard_count());
  for (size_t i = 0; i < out->shard_count(); ++i) {
    if (out->shard(i).box.empty() || !out->addressable(i)) continue;
    take::Params p;
    p.dtype = a->dtype();
    p.index_dtype = it;
    split_at(a->shard(i).box.extent(), ax, p.pre, p.len, p.post);
    p.count = indices->shard(i).box.elements();
    kernels.emplace_back(i, Kernel::take_along(out->buffer(i).place(), a->buffer(i).place(),
                                               indices->buffer(i).place(), p, out->shard(i).device));
  }
  launch_per_shard(*out, {a.get(), indices.get()}, std::move(kernels));
  return honour(out, requested);
}

ArrayPtr scatter_add(const ArrayPtr &x_in, const ArrayPtr &indices_in, const ArrayPtr &updates_in,
                     int64_t axis, const OpOptions &options) {
  const spmd_dtype it = indices_in->dtype();
  check_index_dtype(it, "x.at[indices].add");
  const MeshPtr mesh =
      common_mesh({{x_in, "x"}, {indices_in, "indices"}, {updates_in, "updates"}});
  const Shape &xs = x_in->shape(), &is = indices_in->shape(), &us = updates_in->shape();
  const size_t ax = checked_axis(axis, xs.size(), "axis");
  const Shape want = splice(xs, ax, 1, is);
  if (us != want)
    invalid("updates: shape ", shape_to_string(us), " is not x.shape[:axis] + indices.shape + ",
            "x.shape[axis+1:] = ", shape_to_string(want));
  // JAX adds in the operands' promoted type and converts the sum back to x's.
  const spmd_dtype t = promote_types(x_in->dtype(), updates_in->dtype());
  if (t == SPMD_BOOL)
    invalid("x and updates: both bool; JAX's add does not accept bool");
  Recording *rec = current_recording();
  if (rec && shape_elements(xs) > 0 && shape_elements(is) > 0) {
    // Shardy's scatter rule: x's dimensions run over the result's, the
    // indexed one too; the updates' others over the same; the updates'
    // index dimensions and the indices' are summed together (updates
    // spread over devices would be added up by a psum). (With no indices
    // it is x, placed as the eager op places it.)
    Recording::Factors f;
    f.kind = propagate::ProgramOp::Kind::Gather;
    f.operands = {x_in.get(), indices_in.get(), updates_in.get()};
    f.sizes = xs;
    f.sizes.insert(f.sizes.end(), is.begin(), is.end());
    f.summed.assign(xs.size(), false);
    f.summed.resize(f.sizes.size(), true);
    const int nx = static_cast<int>(xs.size()), ni = static_cast<int>(is.size());
    std::vector<int> of_x(xs.size()), of_indices(is.size()), of_updates(us.size());
    for (size_t d = 0; d < xs.size(); ++d) of_x[d] = static_cast<int>(d);
    for (size_t j = 0; j < is.size(); ++j) of_indices[j] = nx + static_cast<int>(j);
    for (size_t d = 0; d < us.size(); ++d)
      of_updates[d] = d < ax ? static_cast<int>(d)
                    : d < ax + is.size() ? nx + static_cast<int>(d - ax)
                                         : static_cast<int>(d) - ni + 1;
    f.operand_factors = {std::move(of_x), std::move(of_indices), std::move(of_updates)};
    f.result_factors = f.operand_factors[0];
    rec->note_factors(std::move(f));
  }
  const ShardingPtr requested = requested_sharding(options, mesh, xs.size());
  const propagate::Dims out_dims =
      on_mesh(requested, mesh)
          ? propagate::padded(requested->spec(), xs.size())
          : result_sharding(mesh,
                            propagate::scatter_add(
                                propagate::padded(x_in->sharding()->spec(), xs.size()), ax,
                                propagate::padded(updates_in->sharding()->spec(), us.size()),
                                is.size(), shape_elements(is) > xs[ax]),
                            xs)
                ->spec()
                .dims();
  // Each device's result block starts as x's block and takes every update
  // aimed inside it, in update order: all the indices, and the updates'
  // block over the same ranges of x's other dimensions with the index
  // dimensions whole.
  const ArrayPtr x = laid_out(converted(x_in, t, "x"), mesh, out_dims);
  const ArrayPtr indices = laid_out(indices_in, mesh, propagate::Dims(is.size()));
  const ArrayPtr updates = laid_out(converted(updates_in, t, "updates"), mesh,
                                    splice(out_dims, ax, 1, propagate::Dims(is.size())));
  auto out = std::make_shared<Array>(sharding_of(mesh, out_dims), t, xs);
  std::vector<std::pair<size_t, Kernel>> kernels;
  kernels.reserve(out->shard_count());
  for (size_t i = 0; i < out->shard_count(); ++i) {
    const Box &box = out->shard(i).box;
    if (box.empty() || !out->addressable(i)) continue;
    scatter_add::Params p;
    p.dtype = t;
    p.index_dtype = it;
    split_at(box.extent(), ax, p.pre, p.len, p.post);
    p.count = shape_elements(is);
    p.axis_size = xs[ax];
    p.start = box.start[ax];
    kernels.emplace_back(i, Kernel::scatter_added(out->buffer(i).place(), x->buffer(i).place(),
                                                  indices->buffer(i).place(),
                                                  updates->buffer(i).place(), p, out->shard(i).device));
  }
  launch_per_shard(*out, {x.get(), indices.get(), updates.get()}, std::move(kernels));
  return honour(t == x_in->dtype() ? out : astype(out, x_in->dtype(), {}), requested);
}

}  // namespace spmd::ops
