#include "exec/ops/indexing.hpp"

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "exec/ops/elementwise.hpp"
#include "exec/ops/shape_ops.hpp"
#include "kernels/take.hpp"

namespace spmd::ops {

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
  const MeshPtr mesh = x->sharding()->mesh();
  const ArrayPtr lhs = reshape(x, expanded, {});
  const ArrayPtr rhs = Array::arange(sharding_of(mesh, propagate::Dims(classes.size())), x->dtype(),
                                     classes, 0, 1);
  return astype(binary(ew::Op::Eq, lhs, rhs, {}), dtype, options);
}

ArrayPtr take(const ArrayPtr &a_in, const ArrayPtr &indices_in, int64_t axis,
              const OpOptions &options) {
  const spmd_dtype it = indices_in->dtype();
  if (it != SPMD_I32 && it != SPMD_I64 && it != SPMD_U8)
    invalid("indices: ", dtype_name(it), " indices; jnp.take takes integers (int32, int64, uint8)");
  const MeshPtr mesh = common_mesh({{a_in, "a"}, {indices_in, "indices"}});
  const Shape &as = a_in->shape(), &is = indices_in->shape();
  const size_t ax = checked_axis(axis, as.size(), "axis");
  Shape out_shape(as.begin(), as.begin() + static_cast<std::ptrdiff_t>(ax));
  out_shape.insert(out_shape.end(), is.begin(), is.end());
  out_shape.insert(out_shape.end(), as.begin() + static_cast<std::ptrdiff_t>(ax) + 1, as.end());
  check_result("indices", out_shape, a_in->dtype());
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
  propagate::Dims a_layout(out_dims.begin(), out_dims.begin() + static_cast<std::ptrdiff_t>(ax));
  a_layout.emplace_back();
  a_layout.insert(a_layout.end(), out_dims.end() - static_cast<std::ptrdiff_t>(as.size() - ax - 1),
                  out_dims.end());
  const propagate::Dims i_layout(out_dims.begin() + static_cast<std::ptrdiff_t>(ax),
                                 out_dims.begin() + static_cast<std::ptrdiff_t>(ax + is.size()));
  const ArrayPtr a = laid_out(a_in, mesh, a_layout), indices = laid_out(indices_in, mesh, i_layout);
  auto out = std::make_shared<Array>(sharding_of(mesh, out_dims), a->dtype(), out_shape);
  std::vector<std::pair<size_t, Kernel>> kernels;
  for (size_t i = 0; i < out->shard_count(); ++i) {
    if (out->shard(i).box.empty() || !out->addressable(i)) continue;
    const Shape block = a->shard(i).box.extent();
    take::Params p;
    p.dtype = a->dtype();
    p.index_dtype = it;
    p.pre = 1;
    p.post = 1;
    for (size_t d = 0; d < ax; ++d) p.pre *= block[d];
    p.len = block[ax];
    for (size_t d = ax + 1; d < block.size(); ++d) p.post *= block[d];
    p.count = indices->shard(i).box.elements();
    kernels.emplace_back(i, Kernel::take_along(out->buffer(i).place(), a->buffer(i).place(),
                                               indices->buffer(i).place(), p, out->shard(i).device));
  }
  launch_per_shard(*out, {a.get(), indices.get()}, std::move(kernels));
  return honour(out, requested);
}

}  // namespace spmd::ops
