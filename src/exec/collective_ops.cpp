#include "exec/collective_ops.hpp"

#include "base/checked.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "core/axis_groups.hpp"

namespace spmd {

size_t LocalBlock::bytes() const {
  return static_cast<size_t>(shape_elements(shape)) * dtype_size(dtype);
}

OpResult run_collective_op(Session &session, size_t position, Backend &backend,
                           const Collective &op0, const LocalBlock &in0, const EventList &in_ready,
                           const OpMemory &mem) {
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
  const size_t es = dtype_size(sum_dtype);
  LocalBlock in = in0;
  EventList ready = in_ready;
  Buffer *promoted = nullptr;
  if (sum_dtype != in0.dtype) {
    promoted = &mem.scratch(count * es, 0);
    EventList after = in_ready;
    after.add(promoted->before_write());
    const Kernel k = Kernel::convert(promoted->place(), sum_dtype, in0.place, in0.dtype, count);
    const EventPtr converted = backend.launch({&k, 1}, after);
    promoted->set_written(converted);
    in = {promoted->place(), sum_dtype, shape};
    ready = EventList{converted};
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
  call.after = ready;

  // All-reduce results are read by peers, so their memory is published. A
  // pmean of integers sums into scratch first.
  MemberSync sync(group, me, what);
  CollSlot slot{in.place, shape, Place{}};
  Buffer *out = nullptr;
  if (transport == Transport::AllReduce) {
    call.out_shape = shape;
    out = sum_dtype != out_dtype ? &mem.scratch(count * es, 1) : &mem.output(count * es);
    call.out = out->place();
    call.after.add(out->before_write());
    slot.out = call.out;
  }
  backend.prepare_collective(call, slot, sync);
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
    out = &mem.output(byte_size(cat(what, ": result").c_str(), call.out_shape, sum_dtype));
    call.out = out->place();
    call.after.add(out->before_write());
  }

  EventPtr done = backend.run_collective(call, sync);
  out->set_written(done);
  if (promoted) promoted->add_read(done);
  LocalBlock result{call.out, sum_dtype, call.out_shape};
  if (op.traits().mean) {
    Buffer *target = out;
    if (sum_dtype != out_dtype) {
      target = &mem.output(count * dtype_size(out_dtype));
      EventList after{done};
      after.add(target->before_write());
      const Kernel k = Kernel::convert(target->place(), out_dtype, call.out, sum_dtype, count);
      done = backend.launch({&k, 1}, after);
      out->add_read(done);
      target->set_written(done);
    }
    const Kernel k = Kernel::scale_by_reciprocal(target->place(), target->place(), out_dtype,
                                                 count, static_cast<double>(n));
    done = backend.launch({&k, 1}, target->before_write());
    target->set_written(done);
    result = {target->place(), out_dtype, call.out_shape};
  }
  return {result, done};
}

}  // namespace spmd
