#include "exec/collective_ops.hpp"

#include <cstring>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "core/axis_groups.hpp"

namespace spmd {

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

LocalBlock run_collective_op(Session &session, size_t position, Backend &backend,
                             const Collective &op0, const LocalBlock &in0, const OpMemory &mem) {
  const Mesh &mesh = session.mesh();
  const std::string what = op0.label(mesh);
  const Session::Member member = session.member(position, op0.axes());
  Group &group = *member.group;
  const size_t n = group.size(), me = member.rank;
  const int device = mesh.devices()[position];
  const Shape &shape = in0.shape;

  // Parameters, normalised and checked against this device's block. A
  // device whose own call is wrong breaks its group at once: its peers fail
  // now instead of at the timeout, and none of them is paired with this
  // device's next collective should the callback carry on.
  const Collective op = [&] {
    try {
      return op0.normalized(in0.dtype, shape, n, what,
                            cat("a block of shape ", shape_to_string(shape)));
    } catch (const Error &e) {
      group.break_with(e.status(), cat(what, ": device ", device, " failed before reaching it: ",
                                       e.what()));
      throw;
    }
  }();

  // JAX's promotions: bool sums in int32; pmean of integers is a float.
  const spmd_dtype sum_dtype = op.transport_dtype(in0.dtype);
  const spmd_dtype out_dtype = op.output_dtype(in0.dtype);
  const size_t count = static_cast<size_t>(shape_elements(shape));
  LocalBlock in = in0;
  if (sum_dtype != in0.dtype) {
    in.data = mem.scratch(count * dtype_size(sum_dtype), 0);
    convert_elements(in0.data, in0.dtype, in.data, sum_dtype, count);
    in.dtype = sum_dtype;
  }

  const Transport transport = op.transport();
  CollectiveCall call;
  call.kind = transport;
  call.op = op.traits().reduce;
  call.dtype = sum_dtype;
  call.device = device;
  call.axis = op.params().axis;
  call.concat_axis = op.params().concat_axis;
  call.tiled = op.params().tiled;
  call.source = op.source_of(me);
  const size_t es = dtype_size(sum_dtype);

  // All-reduce results are read by peers, so their memory is published. A
  // pmean of integers sums into scratch first.
  CollSlot slot{in.data, shape, nullptr};
  if (transport == Transport::AllReduce && count * es <= kSmallAllReduceBytes) {
    slot.in = group.stage(me, in.data, count * es);
    call.inputs_staged = true;
  }
  if (transport == Transport::AllReduce) {
    call.out_shape = shape;
    call.out = sum_dtype != out_dtype ? mem.scratch(count * es, 1) : mem.output(count * es);
    slot.out = call.out;
  }
  group.exchange(me, slot, op.signature(in0.dtype, shape), what);

  for (size_t r = 0; r < n; ++r)
    if (group.signature(me, r) != group.signature(me, 0)) {
      session.mark_broken();
      invalid(what, ": the devices of the group disagree: device ", group.devices()[0], " calls ",
              group.signature(me, 0), " but device ", group.devices()[r], " calls ",
              group.signature(me, r));
    }

  if (transport != Transport::AllReduce) {
    std::vector<Shape> inputs(n);
    for (size_t r = 0; r < n; ++r) inputs[r] = group.slot(me, r).in_shape;
    call.out_shape = op.output_block(inputs, me);
    call.out = mem.output(static_cast<size_t>(shape_elements(call.out_shape)) * es);
  }

  MemberSync sync(group, me, what);
  backend.run_collective(call, sync);

  void *result = call.out;
  if (op.traits().mean) {
    if (sum_dtype != out_dtype) {
      result = mem.output(count * dtype_size(out_dtype));
      convert_elements(call.out, sum_dtype, result, out_dtype, count);
    }
    divide_elements(result, out_dtype, count, static_cast<double>(n));
  }
  return LocalBlock{result, out_dtype, call.out_shape};
}

}  // namespace spmd
