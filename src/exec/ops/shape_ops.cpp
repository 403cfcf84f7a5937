#include "exec/ops/shape_ops.hpp"

#include <algorithm>
#include <numeric>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "base/promotion.hpp"
#include "runtime/recording.hpp"
#include "exec/ops/elementwise.hpp"
#include "kernels/elementwise.hpp"
#include "runtime/shard_moves.hpp"

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
  kernels.reserve(out.shard_count());
  for (size_t i = 0; i < out.shard_count(); ++i) {
    const ShardLayout &s = out.shard(i);
    if (s.box.empty() || !out.addressable(i)) continue;
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
// Copies into every shard of `dst` the part of `src` it covers, src's
// global index i landing at dst's index i + shift (only where both
// exist). Each block of src is read from a replica on the destination's
// own device when there is one, else from one in the destination's
// process, else from its first replica.
void copy_region(const Array &src, Array &dst, const Shape &shift) {
  const size_t nd = dst.shape().size();
  const Runtime &rt = dst.runtime();
  std::vector<ShardMove> moves;
  for (size_t j = 0; j < dst.shard_count(); ++j) {
    const ShardLayout &d = dst.shard(j);
    if (d.box.empty()) continue;
    std::vector<const Box *> done;
    for (size_t i = 0; i < src.shard_count(); ++i) {
      const ShardLayout &s = src.shard(i);
      if (s.box.empty()) continue;
      bool seen = false;
      for (const Box *b : done) seen = seen || *b == s.box;
      if (seen) continue;
      // The replica of this block to read: on d's device, else in its process.
      size_t from = i;
      int rank = 0;
      for (size_t k = 0; k < src.shard_count(); ++k) {
        if (src.shard(k).box != s.box) continue;
        const int dev = src.shard(k).device;
        const int r = dev == d.device ? 2 : rt.process_of(dev) == rt.process_of(d.device) ? 1 : 0;
        if (r > rank) from = k, rank = r;
      }
      done.push_back(&s.box);
      Box moved = s.box;
      for (size_t a = 0; a < nd; ++a) {
        moved.start[a] += shift[a];
        moved.stop[a] += shift[a];
      }
      const Box overlap = intersect(moved, d.box);
      if (overlap.empty()) continue;
      ShardMove m{from, j, Shape(nd), Shape(nd), overlap.extent()};
      for (size_t a = 0; a < nd; ++a) {
        m.src_offset[a] = overlap.start[a] - moved.start[a];
        m.dst_offset[a] = overlap.start[a] - d.box.start[a];
      }
      moves.push_back(std::move(m));
    }
  }
  if (moves.empty()) return;
  move_shards(src, dst, moves, "copying blocks");
}
}  // namespace

namespace {
// Refuses start and stop that do not fit x (the dimension and its size in
// the message).
void check_window(const Shape &shape, const Shape &start, const Shape &stop) {
  const size_t nd = shape.size();
  if (start.size() != nd || stop.size() != nd)
    invalid("start and stop: ", start.size(), " and ", stop.size(), " values for an array of ", nd,
            " dimensions ", shape_to_string(shape));
  for (size_t d = 0; d < nd; ++d) {
    if (start[d] < 0 || start[d] > shape[d])
      invalid("start[", d, "]: ", start[d], " is out of range for dimension ", d, " of size ", shape[d]);
    if (stop[d] < start[d] || stop[d] > shape[d])
      invalid("stop[", d, "]: ", stop[d], " is out of range for dimension ", d, " of size ", shape[d],
              " starting at ", start[d]);
  }
}

// A window of x, for a program's placement: one factor per dimension,
// sliced or not; along a sliced one elements move between devices. (An
// empty window is a constant to jax.jit, laid out as the eager op lays it.)
void note_window(const Array &x, const Shape &out_shape) {
  Recording *rec = current_recording();
  if (!rec || shape_elements(out_shape) == 0) return;
  Recording::Factors f = Recording::Factors::per_dimension(propagate::ProgramOp::Kind::Slice, x);
  f.permuted.resize(out_shape.size());
  for (size_t d = 0; d < out_shape.size(); ++d) f.permuted[d] = out_shape[d] != x.shape()[d];
  rec->note_factors(std::move(f));
}

// x[start:start + out_shape] laid out by `dims` (axes that do not divide
// the result dropped) unless the caller asked for a layout.
ArrayPtr window(const ArrayPtr &x, const Shape &start, const Shape &out_shape, const propagate::Dims &dims,
                const OpOptions &options) {
  const size_t nd = out_shape.size();
  const MeshPtr mesh = x->sharding()->mesh();
  const ShardingPtr requested = requested_sharding(options, mesh, nd);
  const ShardingPtr target = on_mesh(requested, mesh) ? requested : result_sharding(mesh, dims, out_shape);
  auto out = std::make_shared<Array>(target, x->dtype(), out_shape);
  Shape shift(nd);
  for (size_t d = 0; d < nd; ++d) shift[d] = -start[d];
  copy_region(*x, *out, shift);
  return honour(out, requested);
}
}  // namespace

ArrayPtr slice(const ArrayPtr &x, const Shape &start, const Shape &stop, const OpOptions &options) {
  check_window(x->shape(), start, stop);
  Shape out_shape(start.size());
  for (size_t d = 0; d < out_shape.size(); ++d) out_shape[d] = stop[d] - start[d];
  note_window(*x, out_shape);
  return window(x, start, out_shape, propagate::padded(x->sharding()->spec(), out_shape.size()), options);
}

ArrayPtr slice_strided(const ArrayPtr &x, const Shape &start, const Shape &stop, const Shape &strides,
                       const OpOptions &options) {
  check_window(x->shape(), start, stop);
  const size_t nd = start.size();
  if (strides.size() != nd)
    invalid("strides: ", strides.size(), " values for an array of ", nd, " dimensions ",
            shape_to_string(x->shape()));
  Shape out_shape(nd), span(nd);
  bool unit = true;
  for (size_t d = 0; d < nd; ++d) {
    if (strides[d] < 1) invalid("strides[", d, "]: ", strides[d], " is not a positive step");
    out_shape[d] = (stop[d] - start[d] + strides[d] - 1) / strides[d];
    span[d] = out_shape[d] * strides[d];  // whole strides: each block's rows start its span
    unit = unit && strides[d] == 1;
  }
  if (unit) return slice(x, start, stop, options);
  note_window(*x, out_shape);  // placed as jax.jit places lax.slice with strides
  const MeshPtr mesh = x->sharding()->mesh();
  const ShardingPtr requested = requested_sharding(options, mesh, nd);
  // The result keeps x's spec where its dimensions divide (as lax.slice
  // under jax.jit); every device reads the window of its own block, laid
  // out alike, `strides` times longer, and keeps every stride-th element.
  // The window's tail past x is never read: the last element kept is
  // start + (n - 1) * stride < stop.
  const ShardingPtr target =
      result_sharding(mesh, propagate::padded(x->sharding()->spec(), nd), out_shape);
  auto out = std::make_shared<Array>(target, x->dtype(), out_shape);
  if (out->size() == 0) return honour(out, requested);
  auto spanned = std::make_shared<Array>(target, x->dtype(), span);
  Shape shift(nd);
  for (size_t d = 0; d < nd; ++d) shift[d] = -start[d];
  copy_region(*x, *spanned, shift);
  local_copies(*spanned, *out, [&](const Shape &in_block, const Shape &) {
    Shape st = dense_strides(in_block);
    for (size_t d = 0; d < nd; ++d) st[d] *= strides[d];
    return st;
  });
  return honour(out, requested);
}

ArrayPtr dynamic_slice(const ArrayPtr &x, const Shape &start, const Shape &sizes, const OpOptions &options) {
  const Shape &shape = x->shape();
  const size_t nd = shape.size();
  if (start.size() != nd || sizes.size() != nd)
    invalid("start and sizes: ", start.size(), " and ", sizes.size(), " values for an array of ", nd,
            " dimensions ", shape_to_string(shape));
  Shape from(nd);
  for (size_t d = 0; d < nd; ++d) {
    if (sizes[d] < 0 || sizes[d] > shape[d])
      invalid("sizes[", d, "]: ", sizes[d], " does not fit dimension ", d, " of size ", shape[d]);
    // As lax.dynamic_slice: a negative start counts from the end, then the
    // window is moved back inside x rather than refused.
    const int64_t s = start[d] < 0 ? start[d] + shape[d] : start[d];
    from[d] = std::clamp<int64_t>(s, 0, shape[d] - sizes[d]);
  }
  // The start is known when the op runs, as a constant start is to
  // jax.jit, which then places the window as a slice (axes that do not
  // divide the result dropped), in a program too.
  note_window(*x, sizes);
  return window(x, from, sizes, propagate::padded(x->sharding()->spec(), nd), options);
}

ArrayPtr concatenate(const std::vector<ArrayPtr> &xs, int64_t axis, const OpOptions &options) {
  if (xs.empty()) invalid("n: concatenate needs at least one array");
  std::vector<Operand> operands;
  std::vector<std::string> names;
  for (size_t k = 0; k < xs.size(); ++k) names.push_back(cat("xs[", k, "]"));
  for (size_t k = 0; k < xs.size(); ++k) operands.push_back({xs[k], names[k].c_str()});
  const MeshPtr mesh = common_mesh(operands);
  const size_t nd = xs[0]->shape().size();
  if (nd == 0) invalid("xs[0]: zero-dimensional arrays cannot be concatenated");
  const size_t a = checked_axis(axis, nd, "axis");
  Shape out_shape = xs[0]->shape();
  out_shape[a] = 0;
  spmd_dtype dtype = xs[0]->dtype();
  for (size_t k = 0; k < xs.size(); ++k) {
    const Shape &s = xs[k]->shape();
    bool fits = s.size() == nd;
    for (size_t d = 0; fits && d < nd; ++d) fits = d == a || s[d] == xs[0]->shape()[d];
    if (!fits)
      invalid("xs[0] and xs[", k, "]: shapes ", shape_to_string(xs[0]->shape()), " and ",
              shape_to_string(s), " differ outside axis ", a);
    int64_t sum = 0;
    if (__builtin_add_overflow(out_shape[a], s[a], &sum))
      invalid("xs: the result's dimension ", a, " would have more elements than 64 bits count");
    out_shape[a] = sum;
    dtype = promote_types(dtype, xs[k]->dtype());
  }
  check_result("xs", out_shape, dtype);
  if (Recording *rec = current_recording()) {
    // One factor per dimension, shared by every operand (along the axis,
    // each runs over its part, and elements move between devices).
    Recording::Factors f;
    f.kind = propagate::ProgramOp::Kind::Concatenate;
    f.sizes = out_shape;
    f.summed.assign(nd, false);
    f.permuted.assign(nd, false);
    f.permuted[a] = true;
    f.result_factors.resize(nd);
    std::iota(f.result_factors.begin(), f.result_factors.end(), 0);
    for (const ArrayPtr &x : xs) {
      f.operands.push_back(x.get());
      f.operand_factors.push_back(f.result_factors);
    }
    rec->note_factors(std::move(f));
  }
  const ShardingPtr requested = requested_sharding(options, mesh, nd);
  std::vector<propagate::Dims> operand_dims;
  for (const auto &x : xs) operand_dims.push_back(propagate::padded(x->sharding()->spec(), nd));
  const ShardingPtr target =
      on_mesh(requested, mesh)
          ? requested
          : result_sharding(mesh, propagate::concatenate(operand_dims, a), out_shape);
  auto out = std::make_shared<Array>(target, dtype, out_shape);
  Shape shift(nd, 0);
  for (const auto &x : xs) {
    const ArrayPtr part = converted(x, dtype, "xs");
    copy_region(*part, *out, shift);
    shift[a] += x->shape()[a];
  }
  return honour(out, requested);
}

ArrayPtr transpose(const ArrayPtr &x, std::vector<int64_t> perm, const OpOptions &options) {
  const size_t nd = x->shape().size();
  if (perm.empty())
    for (size_t d = nd; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  if (perm.size() != nd)
    invalid("perm: ", perm.size(), " axes for an array of ", nd, " dimensions");
  std::vector<bool> seen(nd, false);
  for (size_t k = 0; k < nd; ++k) {
    perm[k] = static_cast<int64_t>(checked_axis(perm[k], nd, cat("perm[", k, "]").c_str()));
    if (seen[static_cast<size_t>(perm[k])]) invalid("perm: axis ", perm[k], " appears twice");
    seen[static_cast<size_t>(perm[k])] = true;
  }
  const MeshPtr mesh = x->sharding()->mesh();
  const propagate::Dims in_dims = propagate::padded(x->sharding()->spec(), nd);
  const propagate::Dims out_dims = propagate::transpose(in_dims, perm);
  Shape out_shape;
  for (int64_t p : perm) out_shape.push_back(x->shape()[static_cast<size_t>(p)]);
  const ShardingPtr requested = requested_sharding(options, mesh, nd);
  if (Recording *r = current_recording()) {
    // One factor per dimension of x; result dimension k runs over perm[k].
    Recording::Factors f = Recording::Factors::per_dimension(propagate::ProgramOp::Kind::Transpose, *x);
    for (size_t k = 0; k < nd; ++k) f.result_factors[k] = static_cast<int>(perm[k]);
    r->note_factors(std::move(f));
  }
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
    } else if (__builtin_mul_overflow(known, shape[d], &known)) {
      invalid("shape: ", shape_to_string(shape), " has more elements than 64 bits count (x has ",
              total, ")");
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
  check_result("shape", shape, x->dtype());
  if (Recording *rec = current_recording(); rec && total > 0) {
    // One factor per dimension of x: placing a program splits them as the
    // two shapes share them (propagate::reshape_op).
    Recording::Factors f = Recording::Factors::per_dimension(propagate::ProgramOp::Kind::Reshape, *x);
    f.result_factors.clear();
    rec->note_factors(std::move(f));
  }
  const MeshPtr mesh = x->sharding()->mesh();
  const propagate::Reshape r =
      propagate::reshape(propagate::padded(x->sharding()->spec(), x->shape().size()), x->shape(),
                         shape, mesh->axis_names(), mesh->shape());
  const ShardingPtr requested = requested_sharding(options, mesh, shape.size());
  const ArrayPtr in = laid_out(x, mesh, r.in);
  // Each device's block is the same run of elements on both sides: the
  // result shares the blocks, as jnp.reshape's bitcast inside jax.jit does
  // (nothing writes a shared block in place: Array::shares_buffers).
  std::vector<BufferPtr> blocks;
  blocks.reserve(in->shard_count());
  for (size_t i = 0; i < in->shard_count(); ++i) blocks.push_back(in->buffer_ptr(i));
  ArrayPtr out = Array::from_buffers(sharding_of(mesh, r.out), x->dtype(), shape, std::move(blocks));
  // jax.jit's layout, when the local reshape cannot give it directly.
  if (!requested && r.result != r.out) out = out->reshard(sharding_of(mesh, r.result));
  return honour(out, requested);
}

}  // namespace spmd::ops
