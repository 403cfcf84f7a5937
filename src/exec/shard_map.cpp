#include "exec/shard_map.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/checked.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "runtime/device_threads.hpp"

namespace spmd {

// ---- the memory a callback's context knows outlives the run ----

void ShardContext::note_run_memory(Buffer &buffer) {
  if (buffer.bytes() == 0) return;
  run_memory[buffer.ptr().bits] = &buffer;
}

Buffer *ShardContext::run_buffer(DevicePtr ptr, size_t bytes) const {
  auto it = run_memory.upper_bound(ptr.bits);
  if (it == run_memory.begin()) return nullptr;
  --it;
  Buffer *b = it->second;
  return ptr.bits + bytes <= b->ptr().bits + b->bytes() ? b : nullptr;
}

namespace {

// Mesh axis indices splitting dimension `dim` of a named sharding.
std::vector<int> dim_axes(const Sharding &s, size_t dim) {
  std::vector<int> axes;
  if (dim < s.spec().ndim())
    for (const auto &name : s.spec().dims()[dim]) axes.push_back(s.mesh()->axis_index(name));
  return axes;
}

std::string index_string(const Shape &shape, int64_t flat) {
  Shape idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return shape_to_string(idx);
}

}  // namespace

Shape assemble_global(const Sharding &sharding, const std::vector<Shape> &locals,
                      const std::string &label) {
  const Mesh &m = *sharding.mesh();
  const Shape &first = locals.at(0);
  for (size_t p = 1; p < locals.size(); ++p)
    if (locals[p].size() != first.size())
      invalid(label, ": device ", m.devices()[0], " gives a block of rank ", first.size(),
              " but device ", m.devices()[p], " one of rank ", locals[p].size());
  if (sharding.spec().ndim() > first.size())
    invalid(label, ": out_spec '", sharding.spec().short_string(), "' names ",
            sharding.spec().ndim(), " dimensions but the blocks have ", first.size(), " (shape ",
            shape_to_string(first), ")");
  Shape global(first.size(), 0);
  for (size_t d = 0; d < first.size(); ++d) {
    const std::vector<int> axes = dim_axes(sharding, d);
    if (axes.empty()) {
      global[d] = first[d];
      continue;
    }
    // One block per index over the dimension's axes: the devices whose other
    // coordinates are all zero.
    for (size_t p = 0; p < m.size(); ++p) {
      const Shape c = m.coords_of_position(p);
      bool others_zero = true;
      for (size_t a = 0; a < m.ndim(); ++a)
        if (std::find(axes.begin(), axes.end(), static_cast<int>(a)) == axes.end() && c[a] != 0)
          others_zero = false;
      if (others_zero) global[d] += locals[p][d];
    }
  }
  const auto layout = sharding.layout(global);
  for (size_t p = 0; p < layout.size(); ++p)
    if (layout[p].box.extent() != locals[p])
      invalid(label, ": device ", layout[p].device, " gives a block of shape ",
              shape_to_string(locals[p]), " but out_spec '", sharding.spec().short_string(),
              "' puts a block of shape ", shape_to_string(layout[p].box.extent()),
              " there (global shape ", shape_to_string(global),
              "); blocks must tile the global array as the spec says");
  return global;
}

ShardMapRun::ShardMapRun(MeshPtr mesh, const ShardMapOptions &options)
    : mesh_(std::move(mesh)), options_(options),
      session_(mesh_, options.timeout) {}

void ShardMapRun::print(int device, const char *text) {
  std::lock_guard<std::mutex> lock(print_mu_);
  if (options_.print_fn) {
    options_.print_fn(device, text, options_.print_user_data);
    return;
  }
  std::fputs(text, stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

Buffer &ShardMapRun::take(ShardContext &ctx, size_t bytes) {
  auto buf = std::make_shared<Buffer>(runtime().backend_ptr(), ctx.device, bytes,
                                      backend().callback_memory());
  ctx.owned.push_back(buf);
  ctx.note_run_memory(*buf);
  return *buf;
}

LocalBlock ShardMapRun::alloc(ShardContext &ctx, spmd_dtype dtype, const Shape &shape) {
  const size_t bytes = byte_size("shape", shape, dtype);
  const size_t count = static_cast<size_t>(shape_elements(shape));
  Buffer &buf = take(ctx, bytes);
  if (count) {
    const unsigned char zero[8] = {0};
    const Kernel k = Kernel::fill(buf.place(), dtype, count, zero);
    const EventPtr done = backend().launch({&k, 1}, {});
    buf.set_written(done);
    buf.wait();  // the callback reads it as soon as it has it
  }
  return LocalBlock{buf.place(), dtype, shape};
}

LocalBlock ShardMapRun::collective(ShardContext &ctx, const Collective &op, const LocalBlock &in) {
  OpMemory mem{[&](size_t bytes) -> Buffer & { return take(ctx, bytes); },
               [&](size_t bytes, int) -> Buffer & { return take(ctx, bytes); }};
  // Peers read a member's input in place, possibly after the member has
  // left the collective (when it failed or timed out first). An input in
  // the callback's own memory, which it may release as soon as the call
  // returns, is therefore copied into memory of the run first.
  LocalBlock src = in;
  const size_t bytes = in.bytes();
  Buffer *owner = bytes ? ctx.run_buffer(in.place.ptr, bytes) : nullptr;
  if (bytes && owner == nullptr) {
    Buffer &copy = take(ctx, bytes);
    const Shape flat{static_cast<int64_t>(bytes)};
    const BoxCopy c{{in.place, flat, Shape{0}}, {copy.place(), flat, Shape{0}}, flat, 1};
    const EventPtr done = backend().copy_boxes({&c, 1}, {});
    copy.set_written(done);
    copy.wait();
    src.place = copy.place();
    owner = &copy;
  }
  try {
    const OpResult r = run_collective_op(session_, ctx.position, backend(), op, src,
                                         owner ? owner->before_read() : EventList{}, mem);
    if (owner) owner->add_read(r.done);
    // The callback reads the result on return.
    if (r.done) r.done->wait();
    return r.block;
  } catch (const Error &e) {
    if (ctx.collective_status == SPMD_OK) {
      ctx.collective_status = e.status();
      ctx.collective_message = e.what();
    }
    throw;
  }
}

ArrayPtr ShardMapRun::block_array(ShardContext &ctx, const LocalBlock &block) {
  const size_t bytes = block.bytes();
  ShardingPtr one = Sharding::single_device(mesh_->device_set(), ctx.device);
  for (const BufferPtr &b : ctx.input_buffers)
    if (bytes > 0 && b->ptr().bits == block.place.ptr.bits && b->bytes() == bytes)
      return Array::from_buffers(std::move(one), block.dtype, block.shape, {b});
  auto copy = std::make_shared<Buffer>(runtime().backend_ptr(), ctx.device, bytes, MemoryKind::Device);
  if (bytes > 0) {
    Buffer *owner = ctx.run_buffer(block.place.ptr, bytes);
    const Shape flat{static_cast<int64_t>(bytes)};
    const BoxCopy c{{block.place, flat, Shape{0}}, {copy->place(), flat, Shape{0}}, flat, 1};
    const EventPtr done = backend().copy_boxes({&c, 1}, owner ? owner->before_read() : EventList{});
    if (owner) owner->add_read(done);
    copy->set_written(done);
    // The callback may change its block as soon as this returns.
    copy->wait();
  }
  return Array::from_buffers(std::move(one), block.dtype, block.shape, {copy});
}

LocalBlock ShardMapRun::array_block(ShardContext &ctx, const Array &array) {
  const Sharding &s = *array.sharding();
  if (s.device_set() != mesh_->device_set())
    invalid("array: belongs to another runtime than the shard_map");
  const std::vector<int> &devices = s.mesh()->devices();
  if (devices.size() != 1 || devices[0] != ctx.device)
    invalid("array: ", s.to_string(), " is not on this callback's device ", ctx.device,
            " alone; make it with spmd_ctx_array or from arrays that were");
  const BufferPtr &b = array.buffer_ptr(0);
  const size_t bytes = array.shard_bytes(0);
  b->wait();  // the callback reads it as soon as it has it
  bool input = false;
  for (const BufferPtr &in : ctx.input_buffers) input = input || in == b;
  // Memory another array shares too (a reshape's view) is copied as an
  // input's is: the callback may write its block, and the output takes it
  // over. Holders beyond the array: the context, for each time it handed
  // the block out before.
  long holders = array_holders(b);
  for (const BufferPtr &o : ctx.owned) holders -= o == b ? 1 : 0;
  if (!input && holders == 1 && b->kind() == backend().callback_memory()) {
    ctx.owned.push_back(b);
    ctx.note_run_memory(*b);
    return LocalBlock{b->place(), array.dtype(), array.shape()};
  }
  Buffer &copy = take(ctx, bytes);
  if (bytes > 0) {
    const Shape flat{static_cast<int64_t>(bytes)};
    const BoxCopy c{{b->place(), flat, Shape{0}}, {copy.place(), flat, Shape{0}}, flat, 1};
    const EventPtr done = backend().copy_boxes({&c, 1}, b->before_read());
    b->add_read(done);
    copy.set_written(done);
    copy.wait();
  }
  return LocalBlock{copy.place(), array.dtype(), array.shape()};
}

void ShardMapRun::set_output(ShardContext &ctx, size_t index, const LocalBlock &block) {
  if (index >= ctx.outputs.size())
    fail(SPMD_ERR_OUT_OF_RANGE, "index: output ", index, " does not exist (the shard_map has ",
         ctx.outputs.size(), " outputs)");
  const size_t bytes = block.bytes();
  if (bytes && !block.place.ptr) invalid("block->data: NULL for ", bytes, " bytes");
  BufferPtr buf;
  // A whole block of the context's own device memory is taken over.
  if (bytes && backend().callback_memory() == MemoryKind::Device)
    for (auto it = ctx.owned.begin(); it != ctx.owned.end(); ++it)
      if ((*it)->ptr() == block.place.ptr && (*it)->bytes() == bytes) {
        buf = *it;
        ctx.owned.erase(it);
        break;
      }
  if (!buf) {
    buf = std::make_shared<Buffer>(runtime().backend_ptr(), ctx.device, bytes);
    if (bytes) {
      Buffer *owner = ctx.run_buffer(block.place.ptr, bytes);
      const Shape flat{static_cast<int64_t>(bytes)};
      const BoxCopy c{{block.place, flat, Shape{0}}, {buf->place(), flat, Shape{0}}, flat, 1};
      const EventPtr done =
          backend().copy_boxes({&c, 1}, owner ? owner->before_read() : EventList{});
      if (owner) owner->add_read(done);
      buf->set_written(done);
      // The callback may change or reuse its block as soon as this returns.
      buf->wait();
    }
  }
  auto &o = ctx.outputs[index];
  o.buffer = std::move(buf);
  o.dtype = block.dtype;
  o.shape = block.shape;
  o.set = true;
}

void ShardMapRun::give_inputs(std::vector<ShardContext> &ctxs, const std::vector<ArrayPtr> &laid) {
  const bool direct = backend().callback_memory() == MemoryKind::Device;
  std::vector<BoxCopy> copies;
  EventList after;
  for (auto &c : ctxs)
    for (const auto &a : laid) {
      if (!a->addressable(c.position)) break;  // another process's device
      Buffer &b = a->buffer(c.position);
      const Shape local = a->shard(c.position).box.extent();
      if (direct) {
        c.inputs.push_back(LocalBlock{b.place(), a->dtype(), local});
        c.note_run_memory(b);
        c.input_buffers.push_back(a->buffer_ptr(c.position));
        continue;
      }
      Buffer &staged = take(c, b.bytes());
      c.inputs.push_back(LocalBlock{staged.place(), a->dtype(), local});
      if (b.bytes() == 0) continue;
      const Shape flat{static_cast<int64_t>(b.bytes())};
      after.add(b.before_read());
      copies.push_back({{b.place(), flat, Shape{0}}, {staged.place(), flat, Shape{0}}, flat, 1});
    }
  if (direct) {
    for (const auto &a : laid) a->block_until_ready();
    return;
  }
  const EventPtr done = backend().copy_boxes(copies, after);
  for (const auto &a : laid) a->add_read(done);
  for (auto &c : ctxs)
    for (auto &b : c.owned) b->set_written(done);
  // Callbacks read their inputs as soon as they start.
  if (done) done->wait();
}

std::vector<ArrayPtr> ShardMapRun::run(const std::vector<ArrayPtr> &inputs,
                                       const std::vector<PartitionSpec> &in_specs,
                                       const std::vector<PartitionSpec> &out_specs,
                                       const std::function<void(ShardContext &)> &call) {
  const Mesh &m = *mesh_;
  auto labelled = [](const std::string &label, auto &&make) {
    try {
      return make();
    } catch (const Error &e) {
      fail(e.status(), label, ": ", e.what());
    }
  };
  std::vector<ArrayPtr> laid;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ArrayPtr &a = inputs[i];
    if (a->sharding()->device_set() != m.device_set())
      invalid("inputs[", i, "]: lives on another runtime than the mesh");
    ShardingPtr target = labelled(cat("in_specs[", i, "]"), [&] {
      auto s = Sharding::named(mesh_, in_specs[i]);
      s->check_rank(a->shape());
      return s;
    });
    laid.push_back(a->sharding()->equivalent(*target) && *a->sharding()->mesh() == m
                       ? a
                       : a->reshard(target));
  }
  std::vector<ShardingPtr> out_shardings;
  for (size_t i = 0; i < out_specs.size(); ++i)
    out_shardings.push_back(
        labelled(cat("out_specs[", i, "]"), [&] { return Sharding::named(mesh_, out_specs[i]); }));

  std::vector<ShardContext> ctxs(m.size());
  for (size_t p = 0; p < m.size(); ++p) {
    ShardContext &c = ctxs[p];
    c.run = this;
    c.position = p;
    c.device = m.devices()[p];
    c.outputs.resize(out_specs.size());
  }
  give_inputs(ctxs, laid);

  // This process's devices run their callbacks; the others' processes run
  // theirs. A process without a device of the mesh could not learn what
  // the outputs are (the processes of the mesh tell each other).
  std::vector<int> mesh_processes;
  for (int d : m.devices()) mesh_processes.push_back(runtime().process_of(d));
  std::sort(mesh_processes.begin(), mesh_processes.end());
  mesh_processes.erase(std::unique(mesh_processes.begin(), mesh_processes.end()),
                       mesh_processes.end());
  if (!std::binary_search(mesh_processes.begin(), mesh_processes.end(),
                          runtime().process_index()))
    fail(SPMD_ERR_UNSUPPORTED, "mesh: none of its devices belongs to this process (",
         runtime().process_index(), "), which so takes no part in the shard_map; run it in "
         "the processes of the mesh's devices");
  std::vector<int> local_devices;
  std::vector<size_t> local_positions;
  for (size_t p = 0; p < m.size(); ++p)
    if (runtime().is_local(m.devices()[p])) {
      local_devices.push_back(m.devices()[p]);
      local_positions.push_back(p);
    }
  runtime().device_threads().run(local_devices, [&](size_t i) {
    const size_t p = local_positions[i];
    ShardContext &c = ctxs[p];
    // Whatever happens, the device departs: its peers must hear of it.
    try {
      try {
        call(c);
      } catch (const Error &e) {
        c.status = e.status();
        c.message = e.what();
      } catch (const std::bad_alloc &) {
        c.status = SPMD_ERR_OUT_OF_MEMORY;
        c.message = "out of memory";
      } catch (const std::exception &e) {
        c.status = SPMD_ERR_INTERNAL;
        c.message = cat("internal error: ", e.what());
      }
      // Work the callback queued on its device's stream (spmd_ctx_stream)
      // comes before every later use of the memory it could touch: writers
      // of the inputs, readers of the outputs, the frees of its own blocks.
      try {
        if (const EventPtr fence = backend().fence(c.device)) {
          for (const auto &a : laid) a->buffer(p).add_read(fence);
          for (auto &b : c.owned) b->add_read(fence);
          for (auto &o : c.outputs)
            if (o.set && o.buffer) o.buffer->set_written(fence);
        }
      } catch (const Error &e) {
        if (c.status == SPMD_OK) {
          c.status = e.status();
          c.message = e.what();
        }
      }
      if (c.status == SPMD_OK && c.collective_status != SPMD_OK) {
        c.status = c.collective_status;
        c.message = c.collective_message;
      }
      if (c.status == SPMD_OK)
        for (size_t i = 0; i < c.outputs.size(); ++i)
          if (!c.outputs[i].set) {
            c.status = SPMD_ERR_INVALID_ARGUMENT;
            c.message = cat("output ", i, " was never set (call spmd_ctx_set_output)");
            break;
          }
    } catch (...) {  // a message could not be made: the status is enough
      if (c.status == SPMD_OK) c.status = SPMD_ERR_OUT_OF_MEMORY;
    }
    session_.depart(p, c.status, c.message);
  });

  // The root cause first: a device that failed on its own, before one that
  // failed because a peer did.
  const ShardContext *bad = nullptr;
  for (const auto &c : ctxs)
    if (c.status != SPMD_OK && c.collective_status == SPMD_OK) {
      bad = &c;
      break;
    }
  if (!bad)
    for (const auto &c : ctxs)
      if (c.status != SPMD_OK) {
        bad = &c;
        break;
      }
  if (mesh_processes.size() > 1) {
    // Every process of the mesh learns how every device ended and what it
    // gave.
    share_outcome(ctxs, local_positions, mesh_processes, out_specs.size(), bad);
    return assemble(ctxs, out_shardings);
  }
  if (bad) fail(bad->status, "device ", bad->device, ": ", bad->message);
  return assemble(ctxs, out_shardings);
}

namespace {

// How a process's devices ended, as it tells the others.
struct Ending {
  int32_t status;
  int32_t device;
  int32_t root;  // failed on its own, not because a peer did
  char message[500];
};

// An output block's dtype and shape.
struct BlockShape {
  int32_t dtype;
  int32_t ndim;
  int64_t dims[SPMD_MAX_NDIM];
};

}  // namespace

void ShardMapRun::share_outcome(std::vector<ShardContext> &ctxs,
                                const std::vector<size_t> &local_positions,
                                const std::vector<int> &members, size_t outputs,
                                const ShardContext *bad) {
  const Mesh &m = *mesh_;
  Runtime &rt = runtime();
  const size_t processes = members.size();
  auto member_of = [&](int process) {
    return static_cast<size_t>(std::lower_bound(members.begin(), members.end(), process) -
                               members.begin());
  };
  std::vector<std::vector<size_t>> positions(processes);
  for (size_t p = 0; p < m.size(); ++p) positions[member_of(rt.process_of(m.devices()[p]))].push_back(p);
  size_t slots = 0;
  for (const auto &ps : positions) slots = std::max(slots, ps.size());
  const size_t record = sizeof(Ending) + outputs * slots * sizeof(BlockShape);

  std::vector<std::byte> mine(record);
  Ending ending{};
  if (bad) {
    ending.status = bad->status;
    ending.device = bad->device;
    ending.root = bad->collective_status == SPMD_OK;
    std::snprintf(ending.message, sizeof ending.message, "%s", bad->message.c_str());
  }
  std::memcpy(mine.data(), &ending, sizeof ending);
  auto *blocks = reinterpret_cast<BlockShape *>(mine.data() + sizeof(Ending));
  for (size_t k = 0; k < local_positions.size(); ++k)
    for (size_t i = 0; i < outputs; ++i) {
      const auto &o = ctxs[local_positions[k]].outputs[i];
      BlockShape &b = blocks[k * outputs + i];
      b.dtype = o.dtype;
      b.ndim = static_cast<int32_t>(o.shape.size());
      for (size_t d = 0; d < o.shape.size(); ++d) b.dims[d] = o.shape[d];
    }

  std::vector<std::byte> all;
  try {
    // A process may still be waiting out one collective timeout for a peer
    // that left: it comes within two.
    const auto t = session_.timeout();
    const auto deadline = deadline_after(t > std::chrono::milliseconds::max() / 2 ? t : 2 * t);
    dist::Communicator &comm = static_cast<int>(processes) == rt.process_count()
                                   ? static_cast<dist::Communicator &>(*rt.transport())
                                   : rt.transport()->group(members, deadline);
    all = comm.all_gather(mine, deadline);
  } catch (const Error &e) {
    if (bad) fail(bad->status, "device ", bad->device, ": ", bad->message);
    fail(e.status(), "shard_map: hearing how the other processes' devices ended: ", e.what());
  }

  // The first root cause of any process, else the first failure.
  const Ending *first = nullptr;
  size_t first_process = 0;
  for (int pass = 0; pass < 2 && !first; ++pass)
    for (size_t q = 0; q < processes && !first; ++q) {
      const auto *e = reinterpret_cast<const Ending *>(all.data() + q * record);
      if (e->status != SPMD_OK && (pass == 1 || e->root)) {
        first = e;
        first_process = q;
      }
    }
  if (first) {
    if (members[first_process] == rt.process_index())
      fail(bad->status, "device ", bad->device, ": ", bad->message);
    fail(static_cast<spmd_status>(first->status), "device ", first->device, " (process ",
         members[first_process], "): ", std::string(first->message, strnlen(first->message, sizeof first->message)));
  }
  for (size_t q = 0; q < processes; ++q) {
    if (members[q] == rt.process_index()) continue;
    const auto *theirs = reinterpret_cast<const BlockShape *>(all.data() + q * record + sizeof(Ending));
    for (size_t k = 0; k < positions[q].size(); ++k)
      for (size_t i = 0; i < outputs; ++i) {
        const BlockShape &b = theirs[k * outputs + i];
        auto &o = ctxs[positions[q][k]].outputs[i];
        o.dtype = static_cast<spmd_dtype>(b.dtype);
        o.shape.assign(b.dims, b.dims + std::min<int32_t>(std::max<int32_t>(b.ndim, 0), SPMD_MAX_NDIM));
        o.set = true;
      }
  }
}

std::vector<ArrayPtr> ShardMapRun::assemble(std::vector<ShardContext> &ctxs,
                                            const std::vector<ShardingPtr> &out_shardings) {
  std::vector<ArrayPtr> out;
  for (size_t i = 0; i < out_shardings.size(); ++i) {
    const Sharding &s = *out_shardings[i];
    const std::string label = cat("output ", i);
    const spmd_dtype dtype = ctxs[0].outputs[i].dtype;
    std::vector<Shape> locals;
    std::vector<BufferPtr> buffers;
    for (auto &c : ctxs) {
      if (c.outputs[i].dtype != dtype)
        invalid(label, ": device ", ctxs[0].device, " gives ", dtype_name(dtype), " but device ",
                c.device, " gives ", dtype_name(c.outputs[i].dtype));
      locals.push_back(c.outputs[i].shape);
      buffers.push_back(c.outputs[i].buffer);
    }
    const Shape global = assemble_global(s, locals, label);
    if (options_.check_rep) check_replicas(s, buffers, locals, dtype, label);
    out.push_back(Array::from_buffers(out_shardings[i], dtype, global, std::move(buffers)));
  }
  return out;
}

void ShardMapRun::check_replicas(const Sharding &s, const std::vector<BufferPtr> &buffers,
                                 const std::vector<Shape> &locals, spmd_dtype dtype,
                                 const std::string &label) {
  const Mesh &m = *mesh_;
  std::vector<bool> used(m.ndim(), false);
  for (size_t d = 0; d < s.spec().ndim(); ++d)
    for (int a : dim_axes(s, d)) used[static_cast<size_t>(a)] = true;
  // Each block against the block of the device with zero coordinates on
  // the unused axes, compared by the backend; the first differing index of
  // each pair comes back to the host.
  std::vector<std::pair<size_t, size_t>> pairs;  // (reference, other) positions
  for (size_t p = 0; p < m.size(); ++p) {
    Shape c = m.coords_of_position(p);
    for (size_t a = 0; a < m.ndim(); ++a)
      if (!used[a]) c[a] = 0;
    const size_t q = static_cast<size_t>(m.position_of(m.device_at(c)));
    // Over several processes, only pairs of this process's blocks.
    if (q != p && buffers[p] && buffers[q] && buffers[p]->bytes() != 0) pairs.emplace_back(q, p);
  }
  if (pairs.empty()) return;
  const size_t es = dtype_size(dtype);
  std::vector<int64_t> first(pairs.size(), -1);
  std::vector<Kernel> kernels;
  EventList after;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Buffer &x = *buffers[pairs[i].first], &y = *buffers[pairs[i].second];
    after.add(x.before_read());
    after.add(y.before_read());
    kernels.push_back(Kernel::first_difference(Place::host(&first[i]), x.place(), y.place(), dtype,
                                               y.bytes() / es, y.device()));
  }
  const EventPtr done = backend().launch(kernels, after);
  for (const auto &[q, p] : pairs) {
    buffers[q]->add_read(done);
    buffers[p]->add_read(done);
  }
  if (done) done->wait();
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (first[i] < 0) continue;
    const auto [q, p] = pairs[i];
    // The two differing elements, for the message.
    unsigned char values[2][8] = {{0}};
    const Shape one{1}, at{first[i]};
    const BoxCopy copies[2] = {
        {{buffers[q]->place(), Shape{static_cast<int64_t>(buffers[q]->bytes() / es)}, at},
         {Place::host(values[0]), one, Shape{0}}, one, es},
        {{buffers[p]->place(), Shape{static_cast<int64_t>(buffers[p]->bytes() / es)}, at},
         {Place::host(values[1]), one, Shape{0}}, one, es}};
    const EventPtr read = backend().copy_boxes(copies, {});
    if (read) read->wait();
    std::string unused;
    for (size_t a = 0; a < m.ndim(); ++a)
      if (!used[a]) unused += cat(unused.empty() ? "" : ", ", "'", m.axis_names()[a], "'");
    invalid(label, ": out_spec '", s.spec().short_string(), "' leaves out mesh axes ", unused,
            " so the blocks along them must be equal (check_rep), but devices ", m.devices()[q],
            " and ", m.devices()[p], " differ, first at local index ",
            index_string(locals[p], first[i]), " (", load_as_double(dtype, values[0]), " vs ",
            load_as_double(dtype, values[1]), ")");
  }
}

}  // namespace spmd
