#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <thread>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "base/checked.hpp"
#include "base/dtype.hpp"
#include "base/raw_enum.hpp"
#include "core/axis_groups.hpp"
#include "exec/program/program.hpp"
#include "exec/shard_map.hpp"
#include "spmd/shard_map.h"

// The per-device context a callback receives: borrowed, registered as a
// live handle only while its shard_map runs, and usable only on the thread
// of the callback that received it.
struct spmd_ctx {
  spmd::ShardContext *impl = nullptr;
  const spmd_mesh *mesh = nullptr;  // the handle the shard_map was called with
  std::thread::id thread;
};

namespace spmd::capi {
template <> struct KindOf<spmd_ctx> {
  static constexpr HandleKind kind = HandleKind::Context;
  static constexpr const char *name = "spmd_ctx";
};
}  // namespace spmd::capi

using namespace spmd;
using namespace spmd::capi;

namespace {

// The struct behind a context handle, found through the registry (a
// context of a finished run is no longer there).
const spmd_ctx &ctx_struct(const spmd_ctx *ctx) {
  if (ctx == nullptr) invalid("ctx: NULL context");
  const auto *c = static_cast<const spmd_ctx *>(lookup(id_of(ctx), HandleKind::Context));
  if (c == nullptr)
    invalid("ctx: not a live shard_map context (a context is valid only inside the callback "
            "that received it)");
  if (c->thread != std::this_thread::get_id())
    invalid("ctx: used outside its callback (a context is valid only inside the callback that "
            "received it, on that callback's thread)");
  return *c;
}

ShardContext &ctx_impl(const spmd_ctx *ctx) { return *ctx_struct(ctx).impl; }

// A status that came back from a callback, read as the integer it is: any
// value but a spmd_status becomes SPMD_ERR_CALLBACK, with the value said.
spmd_status callback_status(const spmd_status &returned, std::string *why) {
  const int code = raw_enum(returned);
  if (code >= SPMD_OK && code <= SPMD_ERR_INTERNAL) return static_cast<spmd_status>(code);
  if (why) *why = cat("the callback returned ", code, ", which is not a spmd_status");
  return SPMD_ERR_CALLBACK;
}

// The smallest spmd_block a caller may pass: 1.2's, which ended before
// memory_kind.
constexpr size_t kMinBlockSize = offsetof(spmd_block, memory_kind);

void check_block_size(size_t struct_size, const char *arg) {
  checked_struct_size(struct_size, arg);
  if (struct_size < kMinBlockSize)
    invalid(arg, "->struct_size: ", struct_size,
            " is smaller than spmd_block; initialise it with SPMD_BLOCK_INIT");
}

// check(name) for the field "arg->field": run first without the name and,
// where it fails, again with it, to throw its error naming the field.
// (Making the name at every block of every call cost 3% of a shard_map
// training step, with a string stream or with snprintf.)
template <typename Check>
auto field_checked(const char *arg, const char *field, Check check) {
  try {
    return check("");
  } catch (const Error &) {
    return check(cat(arg, "->", field).c_str());
  }
}

// A caller's block: callback memory of the context's device (the backend
// defines what the pointer is: a host pointer on the CPU platform).
LocalBlock block_arg(const ShardContext &c, const spmd_block *b, const char *arg) {
  if (b == nullptr) invalid(arg, ": NULL block");
  check_block_size(b->struct_size, arg);
  field_checked(arg, "dtype", [&](const char *name) { check_dtype(name, b->dtype); });
  LocalBlock out;
  out.place = {c.run->backend().callback_memory(), c.device, from_callback_pointer(b->data)};
  out.dtype = b->dtype;
  out.shape = field_checked(arg, "shape", [&](const char *name) { return checked_shape(name, b->ndim, b->shape); });
  field_checked(arg, "shape", [&](const char *name) { return byte_size(name, out.shape, out.dtype); });
  const int64_t n = shape_elements(out.shape);
  if (n > 0 && b->data == nullptr) invalid(arg, "->data: NULL for ", n, " elements");
  return out;
}

spmd_block *block_out(spmd_block *out, const char *arg = "out") {
  out_arg(out, arg);
  check_block_size(out->struct_size, arg);
  return out;
}

void write_block(const ShardContext &c, const LocalBlock &b, spmd_block *out) {
  out->data = callback_pointer(b.place.ptr);
  out->dtype = b.dtype;
  out->ndim = b.shape.size();
  for (size_t d = 0; d < SPMD_MAX_NDIM; ++d) out->shape[d] = d < b.shape.size() ? b.shape[d] : 0;
  if (out->struct_size >= offsetof(spmd_block, memory_kind) + sizeof out->memory_kind)
    out->memory_kind = b.place.kind == MemoryKind::Mapped ? SPMD_MEMORY_HOST_MAPPED
                       : c.run->backend().platform() == SPMD_PLATFORM_CPU ? SPMD_MEMORY_HOST
                                                                          : SPMD_MEMORY_DEVICE;
}

// Runs a collective from a ctx entry point.
// Runs a collective from a ctx entry point. A collective that fails, for
// whatever reason, fails the shard_map even if the callback ignores it.
void collective(spmd_ctx *ctx, const spmd_block *x, const char *axes, spmd_block *out,
                CollectiveKind kind, CollectiveParams params = {}) {
  ShardContext &c = ctx_impl(ctx);
  try {
    const LocalBlock in = block_arg(c, x, "x");
    block_out(out);
    const Collective op(kind, parse_axes(c.run->mesh(), axes, "axes"), std::move(params));
    write_block(c, c.run->collective(c, op, in), out);
  } catch (const Error &e) {
    if (c.collective_status == SPMD_OK) {
      c.collective_status = e.status();
      c.collective_message = e.what();
    }
    throw;
  }
}

spmd_shard_map_options read_shard_map_options(const spmd_shard_map_options *options) {
  return read_options(options, spmd_shard_map_options SPMD_SHARD_MAP_OPTIONS_INIT, "options");
}

// Runs fn on every device of the mesh over `ins` and returns the outputs.
// `mesh` is the handle the callbacks' spmd_ctx_mesh gives.
std::vector<ArrayPtr> run_shard_map(const spmd_mesh *mesh, spmd_shard_fn fn, void *user_data,
                                    const std::vector<ArrayPtr> &ins,
                                    const std::vector<PartitionSpec> &in_specs,
                                    const std::vector<PartitionSpec> &out_specs,
                                    const spmd_shard_map_options &o) {
  const auto &m = use(mesh, "mesh");
  ShardMapOptions so;
  so.check_rep = o.check_rep != 0;
  so.timeout = collective_timeout(o.timeout_ms, "options->timeout_ms");
  so.print_fn = o.print_fn;
  so.print_user_data = o.print_user_data;
  ShardMapRun run(m.impl, so);
  // One C context per device, live as a handle only while the run lasts
  // (its id is never handed out again).
  std::vector<spmd_ctx> ctxs(m.impl->size());
  struct Registered {
    std::vector<uintptr_t> ids;
    ~Registered() {
      for (uintptr_t id : ids) release(id, HandleKind::Context);
    }
  } registered;
  registered.ids.reserve(ctxs.size());
  for (auto &c : ctxs) {
    c.mesh = mesh;
    registered.ids.push_back(register_object(&c, HandleKind::Context, nullptr));
  }
  return run.run(ins, in_specs, out_specs, [&](ShardContext &sc) {
    spmd_ctx &c = ctxs[sc.position];
    c.impl = &sc;
    c.thread = std::this_thread::get_id();
    spmd_clear_error();
    const spmd_status returned =
        fn(reinterpret_cast<spmd_ctx *>(registered.ids[sc.position]), user_data);
    c.thread = std::thread::id();
    std::string why;
    const spmd_status st = callback_status(returned, &why);
    if (st == SPMD_OK) return;
    sc.status = st;
    if (!why.empty())
      sc.message = why;
    else if (!sc.user_message.empty())
      sc.message = sc.user_message;
    else if (sc.collective_status == st && !sc.collective_message.empty())
      sc.message = sc.collective_message;
    else if (*spmd_last_error())
      sc.message = spmd_last_error();
    else
      sc.message = cat("the callback returned ", spmd_status_string(st));
  });
}

// A shard_map given values of a program records itself as one step. As
// jax.jit traces the body once, the body runs now, on zeros of the values'
// types and layouts, to learn its outputs' types; each run of the program
// then runs it on that run's values. The program keeps a mesh handle of
// its own for the callbacks, so the caller's may be destroyed; fn and
// user_data must stay valid while the program can run.
std::vector<ArrayPtr> record_shard_map(Program &program, const spmd_mesh *mesh, spmd_shard_fn fn,
                                       void *user_data, const std::vector<ArrayPtr> &ins,
                                       std::vector<PartitionSpec> in_specs,
                                       std::vector<PartitionSpec> out_specs,
                                       const spmd_shard_map_options &o) {
  if (program.compiled())
    invalid("inputs: values of a compiled program; record steps before spmd_x_program_compile, "
            "or record a new program");
  if (out_specs.empty())
    invalid("n_out: a shard_map recorded into a program needs at least one output (its "
            "inputs are values of a program)");
  std::vector<ArrayPtr> zeros;
  for (const ArrayPtr &a : ins)
    zeros.push_back(a->abstract() ? Array::full(a->sharding(), a->dtype(), a->shape(), 0.0) : a);
  const std::vector<ArrayPtr> examples = run_shard_map(mesh, fn, user_data, zeros, in_specs, out_specs, o);
  std::shared_ptr<spmd_mesh> own(new_handle<spmd_mesh>(use(mesh, "mesh").impl),
                                 [](spmd_mesh *h) { destroy_handle(h); });
  return program.record_multi(
      "spmd_shard_map", ins, examples,
      [own, fn, user_data, in_specs = std::move(in_specs), out_specs = std::move(out_specs),
       o](const std::vector<ArrayPtr> &xs) {
        return run_shard_map(own.get(), fn, user_data, xs, in_specs, out_specs, o);
      });
}

void shard_map_impl(const spmd_mesh *mesh, spmd_shard_fn fn, void *user_data,
                    std::vector<ArrayPtr> ins, std::vector<PartitionSpec> in_specs,
                    std::vector<PartitionSpec> out_specs, const spmd_shard_map_options *options,
                    spmd_array **outputs) {
  use(mesh, "mesh");
  if (fn == nullptr) invalid("fn: NULL callback");
  if (!out_specs.empty() && outputs == nullptr) invalid("outputs: NULL output array");
  const spmd_shard_map_options o = read_shard_map_options(options);
  std::vector<std::string> names;
  for (size_t i = 0; i < ins.size(); ++i) names.push_back(cat("inputs[", i, "]"));
  std::vector<ArrayPtr> results;
  if (auto program = Program::of(ins, names))
    results = record_shard_map(*program, mesh, fn, user_data, ins, std::move(in_specs), std::move(out_specs), o);
  else
    results = run_shard_map(mesh, fn, user_data, ins, in_specs, out_specs, o);
  hand_out(std::move(results), outputs);
}

// Holds every input until the shard_map returns (its callbacks may read
// the inputs' own memory).
std::vector<ArrayPtr> input_arrays(size_t n_in, spmd_array *const *inputs,
                                   std::vector<ArrayHold> &holds) {
  if (n_in && inputs == nullptr) invalid("inputs: NULL array of ", n_in, " inputs");
  std::vector<ArrayPtr> ins;
  holds.reserve(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    holds.emplace_back(inputs[i], cat("inputs[", i, "]").c_str(), Abstract::Allowed);
    ins.push_back(holds.back().ptr());
  }
  return ins;
}

}  // namespace

extern "C" {

spmd_status spmd_block_init(spmd_block *block, size_t size) {
  return guard(__func__, [&] { init_struct(block, size, spmd_block SPMD_BLOCK_INIT, "block"); });
}

spmd_status spmd_shard_map_options_init(spmd_shard_map_options *options, size_t size) {
  return guard(__func__, [&] {
    init_struct(options, size, spmd_shard_map_options SPMD_SHARD_MAP_OPTIONS_INIT, "options");
  });
}

spmd_status spmd_shard_map(const spmd_mesh *mesh, spmd_shard_fn fn, void *user_data, size_t n_in,
                           spmd_array *const *inputs, const spmd_spec *const *in_specs,
                           size_t n_out, const spmd_spec *const *out_specs,
                           const spmd_shard_map_options *options, spmd_array **outputs) {
  return guard(__func__, [&] {
    use(mesh, "mesh");
    std::vector<ArrayHold> holds;
    auto ins = input_arrays(n_in, inputs, holds);
    if (n_in && in_specs == nullptr) invalid("in_specs: NULL array of ", n_in, " specs");
    if (n_out && out_specs == nullptr) invalid("out_specs: NULL array of ", n_out, " specs");
    std::vector<PartitionSpec> is, os;
    for (size_t i = 0; i < n_in; ++i) is.push_back(use(in_specs[i], cat("in_specs[", i, "]").c_str()).impl);
    for (size_t i = 0; i < n_out; ++i)
      os.push_back(use(out_specs[i], cat("out_specs[", i, "]").c_str()).impl);
    shard_map_impl(mesh, fn, user_data, std::move(ins), std::move(is), std::move(os), options,
                   outputs);
  });
}

spmd_status spmd_shard_map_text(const spmd_mesh *mesh, spmd_shard_fn fn, void *user_data,
                                size_t n_in, spmd_array *const *inputs,
                                const char *const *in_specs, size_t n_out,
                                const char *const *out_specs, const spmd_shard_map_options *options,
                                spmd_array **outputs) {
  return guard(__func__, [&] {
    use(mesh, "mesh");
    std::vector<ArrayHold> holds;
    auto ins = input_arrays(n_in, inputs, holds);
    if (n_in && in_specs == nullptr) invalid("in_specs: NULL array of ", n_in, " specs");
    if (n_out && out_specs == nullptr) invalid("out_specs: NULL array of ", n_out, " specs");
    auto parse = [](const char *text, const std::string &label) {
      if (text == nullptr) invalid(label, ": NULL spec");
      try {
        return PartitionSpec::parse(text);
      } catch (const Error &e) {
        fail(e.status(), label, ": ", e.what());
      }
    };
    std::vector<PartitionSpec> is, os;
    for (size_t i = 0; i < n_in; ++i) is.push_back(parse(in_specs[i], cat("in_specs[", i, "]")));
    for (size_t i = 0; i < n_out; ++i) os.push_back(parse(out_specs[i], cat("out_specs[", i, "]")));
    shard_map_impl(mesh, fn, user_data, std::move(ins), std::move(is), std::move(os), options,
                   outputs);
  });
}

spmd_status spmd_ctx_device_id(const spmd_ctx *ctx, int *out) {
  return guard(__func__, [&] { produce(out, [&] { return ctx_impl(ctx).device; }); });
}

spmd_status spmd_ctx_mesh(const spmd_ctx *ctx, const spmd_mesh **out) {
  return guard(__func__, [&] { produce(out, [&] { return ctx_struct(ctx).mesh; }); });
}

spmd_status spmd_ctx_stream(const spmd_ctx *ctx, void **out) {
  return guard(__func__, [&] {
    const ShardContext &c = ctx_impl(ctx);
    produce(out, [&] { return c.run->backend().device_stream(c.device); });
  });
}

spmd_status spmd_ctx_axis_index(const spmd_ctx *ctx, const char *axes, int64_t *out) {
  return guard(__func__, [&] {
    const ShardContext &c = ctx_impl(ctx);
    out_arg(out);
    const Mesh &m = c.run->mesh();
    const auto ax = parse_axes(m, axes, "axes");
    const Shape coords = m.coords_of_position(c.position);
    int64_t index = 0;
    for (int a : ax)
      index = index * m.shape()[static_cast<size_t>(a)] + coords[static_cast<size_t>(a)];
    *out = index;
  });
}

spmd_status spmd_ctx_axis_size(const spmd_ctx *ctx, const char *axes, int64_t *out) {
  return guard(__func__, [&] {
    const ShardContext &c = ctx_impl(ctx);
    out_arg(out);
    const Mesh &m = c.run->mesh();
    int64_t size = 1;
    for (int a : parse_axes(m, axes, "axes")) size *= m.shape()[static_cast<size_t>(a)];
    *out = size;
  });
}

spmd_status spmd_ctx_input_count(const spmd_ctx *ctx, size_t *out) {
  return guard(__func__, [&] { produce(out, [&] { return ctx_impl(ctx).inputs.size(); }); });
}

spmd_status spmd_ctx_input(const spmd_ctx *ctx, size_t index, spmd_block *out) {
  return guard(__func__, [&] {
    const ShardContext &c = ctx_impl(ctx);
    block_out(out);
    if (index >= c.inputs.size())
      fail(SPMD_ERR_OUT_OF_RANGE, "index: input ", index, " does not exist (the shard_map has ",
           c.inputs.size(), " inputs)");
    write_block(c, c.inputs[index], out);
  });
}

spmd_status spmd_ctx_array(spmd_ctx *ctx, const spmd_block *block, spmd_array **out) {
  return guard(__func__, [&] {
    ShardContext &c = ctx_impl(ctx);
    const LocalBlock b = block_arg(c, block, "block");
    out_arg(out);
    *out = new_handle<spmd_array>(c.run->block_array(c, b));
  });
}

spmd_status spmd_ctx_block(spmd_ctx *ctx, const spmd_array *array, spmd_block *out) {
  return guard(__func__, [&] {
    ShardContext &c = ctx_impl(ctx);
    const ArrayHold a(array, "array");
    block_out(out);
    write_block(c, c.run->array_block(c, *a), out);
  });
}

spmd_status spmd_ctx_alloc(spmd_ctx *ctx, spmd_dtype dtype, size_t ndim, const int64_t *shape,
                           spmd_block *out) {
  return guard(__func__, [&] {
    ShardContext &c = ctx_impl(ctx);
    block_out(out);
    check_dtype("dtype", dtype);
    const Shape s = checked_shape("shape", ndim, shape);
    write_block(c, c.run->alloc(c, dtype, s), out);
  });
}

spmd_status spmd_ctx_set_output(spmd_ctx *ctx, size_t index, const spmd_block *block) {
  return guard(__func__, [&] {
    ShardContext &c = ctx_impl(ctx);
    c.run->set_output(c, index, block_arg(c, block, "block"));
  });
}

spmd_status spmd_ctx_print(spmd_ctx *ctx, const char *text) {
  return guard(__func__, [&] {
    ShardContext &c = ctx_impl(ctx);
    if (text == nullptr) invalid("text: NULL");
    c.run->print(c.device, text);
  });
}

spmd_status spmd_ctx_printf(spmd_ctx *ctx, const char *format, ...) {
  std::string text;
  if (format != nullptr) {
    va_list ap, ap2;
    va_start(ap, format);
    va_copy(ap2, ap);
    const int n = std::vsnprintf(nullptr, 0, format, ap);
    va_end(ap);
    if (n > 0) {
      text.resize(static_cast<size_t>(n) + 1);
      std::vsnprintf(text.data(), text.size(), format, ap2);
      text.resize(static_cast<size_t>(n));
    }
    va_end(ap2);
  }
  return guard(__func__, [&] {
    ShardContext &c = ctx_impl(ctx);
    if (format == nullptr) invalid("format: NULL");
    c.run->print(c.device, text.c_str());
  });
}

spmd_status spmd_ctx_error(spmd_ctx *ctx, spmd_status status, const char *message) {
  std::string why;
  const spmd_status st = callback_status(status, &why);
  if (st == SPMD_OK) return SPMD_OK;
  guard(__func__, [&] {
    ShardContext &c = ctx_impl(ctx);
    c.user_message = message ? message : "";
    if (!why.empty()) c.user_message = cat(why, c.user_message.empty() ? "" : ": ", c.user_message);
  });
  return st;
}

spmd_status spmd_ctx_psum(spmd_ctx *ctx, const spmd_block *x, const char *axes, spmd_block *out) {
  return guard(__func__, [&] { collective(ctx, x, axes, out, CollectiveKind::Psum); });
}

spmd_status spmd_ctx_pmean(spmd_ctx *ctx, const spmd_block *x, const char *axes, spmd_block *out) {
  return guard(__func__, [&] { collective(ctx, x, axes, out, CollectiveKind::Pmean); });
}

spmd_status spmd_ctx_pmax(spmd_ctx *ctx, const spmd_block *x, const char *axes, spmd_block *out) {
  return guard(__func__, [&] { collective(ctx, x, axes, out, CollectiveKind::Pmax); });
}

spmd_status spmd_ctx_pmin(spmd_ctx *ctx, const spmd_block *x, const char *axes, spmd_block *out) {
  return guard(__func__, [&] { collective(ctx, x, axes, out, CollectiveKind::Pmin); });
}

spmd_status spmd_ctx_all_gather(spmd_ctx *ctx, const spmd_block *x, const char *axes,
                                int64_t axis, int tiled, spmd_block *out) {
  return guard(__func__, [&] {
    CollectiveParams p;
    p.axis = axis;
    p.tiled = tiled != 0;
    collective(ctx, x, axes, out, CollectiveKind::AllGather, std::move(p));
  });
}

spmd_status spmd_ctx_psum_scatter(spmd_ctx *ctx, const spmd_block *x, const char *axes,
                                  int64_t scatter_dimension, int tiled, spmd_block *out) {
  return guard(__func__, [&] {
    CollectiveParams p;
    p.axis = scatter_dimension;
    p.tiled = tiled != 0;
    collective(ctx, x, axes, out, CollectiveKind::PsumScatter, std::move(p));
  });
}

spmd_status spmd_ctx_all_to_all(spmd_ctx *ctx, const spmd_block *x, const char *axes,
                                int64_t split_axis, int64_t concat_axis, int tiled,
                                spmd_block *out) {
  return guard(__func__, [&] {
    CollectiveParams p;
    p.axis = split_axis;
    p.concat_axis = concat_axis;
    p.tiled = tiled != 0;
    collective(ctx, x, axes, out, CollectiveKind::AllToAll, std::move(p));
  });
}

spmd_status spmd_ctx_ppermute(spmd_ctx *ctx, const spmd_block *x, const char *axes, size_t npairs,
                              const int64_t *pairs, spmd_block *out) {
  return guard(__func__, [&] {
    CollectiveParams p;
    if (npairs && pairs == nullptr) invalid("pairs: NULL for ", npairs, " pairs");
    for (size_t i = 0; i < npairs; ++i) p.pairs.emplace_back(pairs[2 * i], pairs[2 * i + 1]);
    collective(ctx, x, axes, out, CollectiveKind::Ppermute, std::move(p));
  });
}

}  // extern "C"
