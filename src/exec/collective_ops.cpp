#include "exec/collective_ops.hpp"

#include <algorithm>
#include <cstring>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "core/axis_groups.hpp"

namespace spmd {

namespace {

bool is_float(spmd_dtype t) {
  return t == SPMD_F32 || t == SPMD_F64 || t == SPMD_F16 || t == SPMD_BF16;
}

// Python-style axis in [0, limit).
int64_t norm_axis(int64_t axis, int64_t limit, const std::string &what, const char *param,
                  const Shape &shape) {
  const int64_t a = axis < 0 ? axis + limit : axis;
  if (a < 0 || a >= limit)
    invalid(what, ": ", param, " ", axis, " is out of range for a block of shape ",
            shape_to_string(shape), " (", limit == 0 ? 0 : -limit, " to ", limit - 1, ")");
  return a;
}

std::string shape_sig(const Shape &s, int64_t masked) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += cat(i ? "," : "", static_cast<int64_t>(i) == masked ? std::string("*") : cat(s[i]));
  return r + "]";
}

}  // namespace

void convert_elements(const void *src, spmd_dtype from, void *dst, spmd_dtype to, size_t count) {
  const size_t fs = dtype_size(from), ts = dtype_size(to);
  for (size_t i = 0; i < count; ++i)
    store_from_double(to, load_as_double(from, static_cast<const char *>(src) + i * fs),
                      static_cast<char *>(dst) + i * ts);
}

void divide_elements(void *data, spmd_dtype dtype, size_t count, double n) {
  switch (dtype) {
    case SPMD_F32: {
      auto *p = static_cast<float *>(data);
      const float fn = static_cast<float>(n);
      for (size_t i = 0; i < count; ++i) p[i] /= fn;
      return;
    }
    case SPMD_F64: {
      auto *p = static_cast<double *>(data);
      for (size_t i = 0; i < count; ++i) p[i] /= n;
      return;
    }
    case SPMD_F16:
    case SPMD_BF16: {
      auto *p = static_cast<uint16_t *>(data);
      const bool bf = dtype == SPMD_BF16;
      for (size_t i = 0; i < count; ++i) {
        const float v = (bf ? bf16_bits_to_f32(p[i]) : f16_bits_to_f32(p[i])) / static_cast<float>(n);
        p[i] = bf ? f32_to_bf16_bits(v) : f32_to_f16_bits(v);
      }
      return;
    }
    default:
      fail(SPMD_ERR_INTERNAL, "pmean of non-float dtype ", dtype_name(dtype));
  }
}

spmd_dtype op_output_dtype(const OpSpec &op, spmd_dtype dtype) {
  if (op.kind != CollKind::AllReduce) return dtype;
  if (op.mean && !is_float(dtype)) return dtype == SPMD_I64 ? SPMD_F64 : SPMD_F32;
  if (op.op == ReduceOp::Sum && dtype == SPMD_BOOL) return SPMD_I32;
  return dtype;
}

spmd_dtype op_transport_dtype(const OpSpec &op, spmd_dtype dtype) {
  if (op.kind == CollKind::AllReduce && op.op == ReduceOp::Sum && dtype == SPMD_BOOL)
    return SPMD_I32;
  return dtype;
}

Shape op_output_shape(const OpSpec &op, const Shape &in, size_t n, size_t rank,
                      const char *what_c) {
  const std::string what = what_c;
  const int64_t nn = static_cast<int64_t>(n);
  Shape out = in;
  switch (op.kind) {
    case CollKind::AllReduce:
    case CollKind::Permute:
      return out;
    case CollKind::AllGather:
      if (op.tiled) {
        out[static_cast<size_t>(op.axis)] *= nn;
      } else {
        out.insert(out.begin() + op.axis, nn);
      }
      return out;
    case CollKind::ReduceScatter: {
      const size_t a = static_cast<size_t>(op.axis);
      if (!op.tiled) {
        out.erase(out.begin() + op.axis);
        return out;
      }
      const int64_t chunk = (in[a] + nn - 1) / nn;
      const int64_t start = std::min<int64_t>(in[a], static_cast<int64_t>(rank) * chunk);
      out[a] = std::min<int64_t>(in[a], start + chunk) - start;
      return out;
    }
    case CollKind::AllToAll: {
      const size_t s = static_cast<size_t>(op.axis), c = static_cast<size_t>(op.concat_axis);
      if (!op.tiled) {
        out.erase(out.begin() + op.axis);
        out.insert(out.begin() + op.concat_axis, nn);
        return out;
      }
      const int64_t chunk = (in[s] + nn - 1) / nn;
      const int64_t start = std::min<int64_t>(in[s], static_cast<int64_t>(rank) * chunk);
      out[s] = std::min<int64_t>(in[s], start + chunk) - start;
      // Each peer contributes one chunk along the concat axis.
      out[c] = s == c ? nn * out[s] : in[c] * nn;
      return out;
    }
  }
  invalid(what, ": unknown collective");
}

namespace {

// Normalises op's axes against this device's block and checks its
// parameters; returns the group rank this device receives from in a
// permute (-1 if none).
int64_t check_params(OpSpec &op, const Shape &shape, spmd_dtype dtype, size_t n, size_t me,
                     const std::string &what) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  int64_t source = -1;
  switch (op.kind) {
    case CollKind::AllReduce:
      break;
    case CollKind::AllGather:
      op.axis = norm_axis(op.axis, op.tiled ? nd : nd + 1, what, "axis", shape);
      break;
    case CollKind::ReduceScatter:
      if (dtype == SPMD_BOOL)
        invalid(what, ": bool has no sum to scatter (jax.lax.psum_scatter refuses bool too); "
                "convert to int32 first");
      op.axis = norm_axis(op.axis, nd, what, "scatter_dimension", shape);
      if (!op.tiled && shape[static_cast<size_t>(op.axis)] != static_cast<int64_t>(n))
        invalid(what, ": scatter_dimension ", op.axis, " has size ",
                shape[static_cast<size_t>(op.axis)], " but the axis size is ", n,
                "; without tiled they must be equal");
      break;
    case CollKind::AllToAll:
      op.axis = norm_axis(op.axis, nd, what, "split_axis", shape);
      op.concat_axis = norm_axis(op.concat_axis, nd, what, "concat_axis", shape);
      if (!op.tiled && shape[static_cast<size_t>(op.axis)] != static_cast<int64_t>(n))
        invalid(what, ": split_axis ", op.axis, " has size ", shape[static_cast<size_t>(op.axis)],
                " but the axis size is ", n, "; without tiled they must be equal");
      break;
    case CollKind::Permute: {
      std::vector<char> seen_src(n, 0), seen_dst(n, 0);
      for (const auto &[s, d] : op.pairs) {
        if (s < 0 || d < 0 || s >= static_cast<int64_t>(n) || d >= static_cast<int64_t>(n))
          invalid(what, ": pair (", s, ", ", d, ") names an index outside 0..", n - 1);
        if (seen_src[static_cast<size_t>(s)]++)
          invalid(what, ": index ", s, " is a source in more than one pair");
        if (seen_dst[static_cast<size_t>(d)]++)
          invalid(what, ": index ", d, " is a destination in more than one pair");
        if (d == static_cast<int64_t>(me)) source = s;
      }
      break;
    }
  }
  return source;
}

}  // namespace

LocalBlock run_collective_op(Session &session, size_t position, Backend &backend, const OpSpec &op0,
                             const LocalBlock &in0, const OpMemory &mem) {
  const Mesh &mesh = session.mesh();
  const std::string what = cat(op0.name, " over ", axes_label(mesh, op0.axes));
  const Session::Member member = session.member(position, op0.axes);
  Group &group = *member.group;
  const size_t n = group.size(), me = member.rank;
  const int device = mesh.devices()[position];
  OpSpec op = op0;
  const Shape &shape = in0.shape;

  // Parameters, normalised and checked against this device's block. A
  // device whose own call is wrong breaks its group at once: its peers fail
  // now instead of at the timeout, and none of them is paired with this
  // device's next collective should the callback carry on.
  int64_t source = -1;
  try {
    source = check_params(op, shape, in0.dtype, n, me, what);
  } catch (const Error &e) {
    group.break_with(e.status(), cat(what, ": device ", device, " failed before reaching it: ",
                                     e.what()));
    throw;
  }

  // JAX's promotions: bool sums in int32; pmean of integers is a float.
  const spmd_dtype sum_dtype = op_transport_dtype(op, in0.dtype);
  const spmd_dtype out_dtype = op_output_dtype(op, in0.dtype);
  const size_t count = static_cast<size_t>(shape_elements(shape));
  LocalBlock in = in0;
  if (sum_dtype != in0.dtype) {
    in.data = mem.scratch(count * dtype_size(sum_dtype), 0);
    convert_elements(in0.data, in0.dtype, in.data, sum_dtype, count);
    in.dtype = sum_dtype;
  }

  // What every member must agree on; the dimension that may differ between
  // members (the tiled gather/concat axis) is masked.
  int64_t masked = -1;
  if (op.kind == CollKind::AllGather && op.tiled) masked = op.axis;
  if (op.kind == CollKind::AllToAll && op.tiled) masked = op.concat_axis;
  std::string sig = cat(op.name, "(", dtype_name(in0.dtype), shape_sig(shape, masked));
  switch (op.kind) {
    case CollKind::AllGather:
      sig += cat(", axis=", op.axis, ", tiled=", op.tiled ? "True" : "False");
      break;
    case CollKind::ReduceScatter:
      sig += cat(", scatter_dimension=", op.axis, ", tiled=", op.tiled ? "True" : "False");
      break;
    case CollKind::AllToAll:
      sig += cat(", split_axis=", op.axis, ", concat_axis=", op.concat_axis,
                 ", tiled=", op.tiled ? "True" : "False");
      break;
    case CollKind::Permute:
      sig += ", perm=[";
      for (size_t i = 0; i < op.pairs.size(); ++i)
        sig += cat(i ? ", " : "", "(", op.pairs[i].first, ", ", op.pairs[i].second, ")");
      sig += "]";
      break;
    default:
      break;
  }
  sig += ")";

  CollectiveCall call;
  call.kind = op.kind;
  call.op = op.op;
  call.dtype = sum_dtype;
  call.device = device;
  call.axis = op.axis;
  call.concat_axis = op.concat_axis;
  call.tiled = op.tiled;
  call.source = source;
  const size_t es = dtype_size(sum_dtype);

  // All-reduce results are read by peers, so their memory is published. A
  // pmean of integers sums into scratch first.
  CollSlot slot{in.data, shape, nullptr};
  if (op.kind == CollKind::AllReduce && count * es <= kSmallAllReduceBytes) {
    slot.in = group.stage(me, in.data, count * es);
    call.inputs_staged = true;
  }
  if (op.kind == CollKind::AllReduce) {
    call.out_shape = shape;
    call.out = sum_dtype != out_dtype ? mem.scratch(count * es, 1) : mem.output(count * es);
    slot.out = call.out;
  }
  group.exchange(me, slot, sig, what);

  for (size_t r = 0; r < n; ++r)
    if (group.signature(me, r) != group.signature(me, 0)) {
      session.mark_broken();
      invalid(what, ": the devices of the group disagree: device ", group.devices()[0], " calls ",
              group.signature(me, 0), " but device ", group.devices()[r], " calls ",
              group.signature(me, r));
    }

  if (op.kind != CollKind::AllReduce) {
    Shape out_shape = op_output_shape(op, shape, n, me, what.c_str());
    if (op.kind == CollKind::AllGather && op.tiled) {
      int64_t total = 0;
      for (size_t r = 0; r < n; ++r)
        total += group.slot(me, r).in_shape[static_cast<size_t>(op.axis)];
      out_shape[static_cast<size_t>(op.axis)] = total;
    }
    if (op.kind == CollKind::AllToAll && op.tiled) {
      const size_t s = static_cast<size_t>(op.axis), c = static_cast<size_t>(op.concat_axis);
      int64_t total = 0;
      for (size_t r = 0; r < n; ++r) {
        const Shape &rs = group.slot(me, r).in_shape;
        if (s == c) {
          const int64_t chunk = (rs[s] + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
          const int64_t st = std::min<int64_t>(rs[s], static_cast<int64_t>(me) * chunk);
          total += std::min<int64_t>(rs[s], st + chunk) - st;
        } else {
          total += rs[c];
        }
      }
      out_shape[c] = total;
    }
    call.out_shape = out_shape;
    call.out = mem.output(static_cast<size_t>(shape_elements(out_shape)) * es);
  }

  MemberSync sync(group, me, what);
  backend.run_collective(call, sync);

  void *result = call.out;
  if (op.mean) {
    if (sum_dtype != out_dtype) {
      result = mem.output(count * dtype_size(out_dtype));
      convert_elements(call.out, sum_dtype, result, out_dtype, count);
    }
    divide_elements(result, out_dtype, count, static_cast<double>(n));
  }
  return LocalBlock{result, out_dtype, call.out_shape};
}

}  // namespace spmd
