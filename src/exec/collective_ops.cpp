#include "exec/collective_ops.hpp"

#include "base/checked.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "core/axis_groups.hpp"
#include "exec/across_processes.hpp"
#include "runtime/runtime.hpp"

namespace spmd {

size_t LocalBlock::bytes() const {
  return static_cast<size_t>(shape_elements(shape)) * dtype_size(dtype);
}

CollectiveCall collective_call(const Collective &op, spmd_dtype dtype, int device, size_t rank) {
  CollectiveCall call;
  call.kind = op.transport();
  call.op = op.traits().reduce;
  call.dtype = dtype;
  call.device = device;
  call.axis = op.params().axis;
  call.concat_axis = op.params().concat_axis;
  call.tiled = op.params().tiled;
  call.source = op.source_of(rank);
  return call;
}

namespace {

// A pmean's division by the group size (after the sum's conversion to the
// result's float type where the input was not one): queued after `done`.
OpResult finish_mean(Backend &backend, size_t n, Buffer *out,
                     spmd_dtype sum_dtype, spmd_dtype out_dtype, const LocalBlock &summed,
                     EventPtr done, const OpMemory &mem) {
  const size_t count = static_cast<size_t>(shape_elements(summed.shape));
  Buffer *target = out;
  if (sum_dtype != out_dtype) {
    target = &mem.output(count * dtype_size(out_dtype));
    EventList after{done};
    after.add(target->before_write());
    const Kernel k = Kernel::convert(target->place(), out_dtype, summed.place, sum_dtype, count);
    done = backend.launch({&k, 1}, after);
    out->add_read(done);
    target->set_written(done);
  }
  const Kernel k = Kernel::scale_by_reciprocal(target->place(), target->place(), out_dtype, count,
                                               static_cast<double>(n));
  done = backend.launch({&k, 1}, target->before_write());
  target->set_written(done);
  return {{target->place(), out_dtype, summed.shape}, done};
}

// The member's side of a collective whose group has members in other
// processes (exec/across_processes.hpp): every device of this process
// meets the others here, one of them exchanges every block with the other
// processes, and each works out its result on the host.
OpResult run_across_processes(Session &session, size_t position, Backend &backend,
                              const Collective &op, spmd_dtype in_dtype, const LocalBlock &in,
                              const EventList &ready, const OpMemory &mem) {
  const Mesh &mesh = session.mesh();
  const std::string what = op.label(mesh);
  const Session::Member member = session.member(position, op.axes());
  const Session::Member here = session.process_member(position);
  Group &process = *here.group;
  const size_t n = member.global->devices.size(), me = member.global_rank;
  const spmd_dtype sum_dtype = op.transport_dtype(in_dtype);
  const spmd_dtype out_dtype = op.output_dtype(in_dtype);
  const size_t es = dtype_size(sum_dtype);
  Runtime &runtime = Runtime::of(*mesh.device_set());

  // The block is read on the host by another thread: it must be ready.
  ready.wait();
  const std::string signature = op.signature(in_dtype, in.shape);
  process.exchange(here.rank, CollSlot{in.place, in.shape, Place{}}, signature, what);
  for (size_t r = 0; r < process.size(); ++r)
    if (process.signature(here.rank, r) != signature) {
      session.mark_broken();
      invalid(what, ": the devices of this process disagree: device ", process.devices()[r],
              " calls ", process.signature(here.rank, r), " but device ",
              mesh.devices()[position], " calls ", signature);
    }

  // The first device of the process exchanges for all of them. An
  // all-reduce sends one partial result per process and group, unless one
  // process's order is asked for.
  const bool partials = op.transport() == Transport::AllReduce && !runtime.exact_reductions();
  Place gathered;
  if (here.rank == 0) {
    try {
      std::vector<across::LocalMember> locals(process.size());
      std::vector<std::string> signatures(process.size());
      for (size_t r = 0; r < process.size(); ++r) {
        const Session::Member m =
            session.member(static_cast<size_t>(mesh.position_of(process.devices()[r])), op.axes());
        const CollSlot &slot = process.slot(here.rank, r);
        signatures[r] = process.signature(here.rank, r);
        locals[r] = {m.global, m.global_rank, slot.in, slot.in_shape, &signatures[r]};
      }
      const across::Combine combine{op.traits().reduce, sum_dtype};
      void *storage = across::exchange(
          runtime, runtime.processes_of(mesh.devices()), locals, es, deadline_after(session.timeout()), what,
          [&](size_t bytes) { return process.member_storage(here.rank, bytes); },
          partials ? &combine : nullptr);
      gathered = Place::host(storage);
    } catch (const Error &e) {
      process.break_with(e.status(), e.what());
      throw;
    }
  }
  // The second meeting hands every device the exchanged blocks.
  process.exchange(here.rank, CollSlot{gathered, {}, Place{}}, signature, what);
  const auto *storage = reinterpret_cast<const void *>(process.slot(here.rank, 0).in.ptr.bits);
  const std::vector<across::Block> blocks = across::group_blocks(storage, here.rank);

  CollectiveCall call = collective_call(op, sum_dtype, mesh.devices()[position], me);
  if (call.kind == Transport::AllReduce) {
    call.out_shape = in.shape;
  } else {
    std::vector<Shape> inputs;
    for (const auto &b : blocks) inputs.push_back(b.shape);
    call.out_shape = op.output_block(inputs, me);
  }
  const size_t bytes = byte_size(cat(what, ": result").c_str(), call.out_shape, sum_dtype);
  Buffer *out = op.traits().mean && sum_dtype != out_dtype ? &mem.scratch(bytes, 1)
                                                           : &mem.output(bytes);
  across::write_result(runtime, call, blocks, me, *out);
  // Blocks read in place stay untouched until every device here has read
  // them: one more meeting.
  if (across::reads_in_place(runtime) && !partials) process.barrier(here.rank, what);
  // Written by now: nothing is left to wait for.
  const LocalBlock summed{out->place(), sum_dtype, call.out_shape};
  if (!op.traits().mean) return {summed, nullptr};
  return finish_mean(backend, n, out, sum_dtype, out_dtype, summed, nullptr, mem);
}

}  // namespace

OpResult run_collective_op(Session &session, size_t position, Backend &backend,
                           const Collective &op0, const LocalBlock &in0, const EventList &in_ready,
                           const OpMemory &mem) {
  const Mesh &mesh = session.mesh();
  const std::string what = op0.label(mesh);
  const Session::Member member = session.member(position, op0.axes());
  Group &group = *member.group;
  // Over several processes the group may have members elsewhere: its size
  // and this member's rank are the whole group's.
  const bool across = session.spans_processes(op0.axes());
  const size_t n = member.global->devices.size(), me = member.global_rank;
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

  if (across) return run_across_processes(session, position, backend, op, in0.dtype, in, ready, mem);

  const Transport transport = op.transport();
  CollectiveCall call = collective_call(op, sum_dtype, device, me);
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
  const LocalBlock result{call.out, sum_dtype, call.out_shape};
  if (!op.traits().mean) return {result, done};
  return finish_mean(backend, n, out, sum_dtype, out_dtype, result, done, mem);
}

}  // namespace spmd
