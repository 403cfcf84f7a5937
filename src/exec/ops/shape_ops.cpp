#include "exec/ops/shape_ops.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "exec/ops/elementwise.hpp"
#include "kernels/elementwise.hpp"

namespace spmd::ops {

namespace {
Shape dense_strides(const Shape &s) {
  Shape st(s.size());
  int64_t k = 1;
  for (size_t d = s.size(); d-- > 0;) {
    st[d] = k;
    k *= s[d];
  }
  return st;
}

// Every device copies its block of `in` into its block of `out` reading
// through strides(in_block, out_block).
template <typename Strides>
void local_copies(const Array &in, Array &out, Strides strides) {
  std::vector<std::pair<size_t, Kernel>> kernels;
  for (size_t i = 0; i < out.shard_count(); ++i) {
    const ShardLayout &s = out.shard(i);
    if (s.box.empty()) continue;
    ew::Params p;
    p.op = ew::Op::Copy;
    p.out = out.dtype();
    p.compute = compute_type(out.dtype());
    p.shape = s.box.extent();
    p.nin = 1;
    p.in[0].dtype = in.dtype();
    p.in[0].strides = strides(in.shard(i).box.extent(), p.shape);
    const Place places[3] = {in.buffer(i).place(), {}, {}};
    kernels.emplace_back(i, Kernel::elementwise_op(out.buffer(i).place(), places, std::move(p), s.device));
  }
  launch_per_shard(out, {&in}, std::move(kernels));
}
}  // namespace

ArrayPtr transpose(const ArrayPtr &x, std::vector<int64_t> perm, const OpOptions &options) {
  const size_t nd = x->shape().size();
  if (perm.empty())
    for (size_t d = nd; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  if (perm.size() != nd)
    invalid("perm: ", perm.size(), " axes for an array of ", nd, " dimensions");
  std::vector<bool> seen(nd, false);
  for (size_t k = 0; k < nd; ++k) {
    if (perm[k] < -static_cast<int64_t>(nd) || perm[k] >= static_cast<int64_t>(nd))
      invalid("perm[", k, "]: ", perm[k], " is out of range for an array of ", nd, " dimensions");
    if (perm[k] < 0) perm[k] += static_cast<int64_t>(nd);
    if (seen[static_cast<size_t>(perm[k])]) invalid("perm: axis ", perm[k], " appears twice");
    seen[static_cast<size_t>(perm[k])] = true;
  }
  const MeshPtr mesh = x->sharding()->mesh();
  const propagate::Dims in_dims = propagate::padded(x->sharding()->spec(), nd);
  const propagate::Dims out_dims = propagate::transpose(in_dims, perm);
  Shape out_shape;
  for (int64_t p : perm) out_shape.push_back(x->shape()[static_cast<size_t>(p)]);
  const ShardingPtr requested = requested_sharding(options, mesh, nd);
  const ArrayPtr in = laid_out(x, mesh, in_dims);
  auto out = std::make_shared<Array>(sharding_of(mesh, out_dims), x->dtype(), out_shape);
  local_copies(*in, *out, [&](const Shape &in_block, const Shape &) {
    const Shape st = dense_strides(in_block);
    Shape permuted;
    for (int64_t p : perm) permuted.push_back(st[static_cast<size_t>(p)]);
    return permuted;
  });
  return honour(out, requested);
}

ArrayPtr reshape(const ArrayPtr &x, Shape shape, const OpOptions &options) {
  const int64_t total = x->size();
  int64_t known = 1, infer = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (infer >= 0) invalid("shape: more than one -1 in ", shape_to_string(shape));
      infer = static_cast<int64_t>(d);
    } else if (shape[d] < 0) {
      invalid("shape[", d, "]: ", shape[d], " is negative");
    } else {
      known *= shape[d];
    }
  }
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      invalid("shape: cannot infer the -1 in ", shape_to_string(shape), " for ", total, " elements");
    shape[static_cast<size_t>(infer)] = total / known;
    known *= shape[static_cast<size_t>(infer)];
  }
  if (known != total)
    invalid("shape: cannot reshape an array of shape ", shape_to_string(x->shape()), " (", total,
            " elements) into shape ", shape_to_string(shape), " (", known, " elements)");
  const MeshPtr mesh = x->sharding()->mesh();
  const propagate::Reshape r =
      propagate::reshape(propagate::padded(x->sharding()->spec(), x->shape().size()), x->shape(),
                         shape, mesh->axis_names(), mesh->shape());
  const ShardingPtr requested = requested_sharding(options, mesh, shape.size());
  const ArrayPtr in = laid_out(x, mesh, r.in);
  auto out = std::make_shared<Array>(sharding_of(mesh, r.out), x->dtype(), shape);
  // Each device's block is the same run of elements on both sides.
  local_copies(*in, *out, [](const Shape &, const Shape &out_block) { return dense_strides(out_block); });
  return honour(out, requested);
}

}  // namespace spmd::ops
