// Random sequences of C API calls over a small table of handles: runtimes
// of a few CPU or sim devices, meshes, specs, shardings, arrays and planned
// collectives, created, used, queried, resharded, copied to the host,
// pictured, destroyed (twice too) and used after destruction, and
// shard_maps whose callbacks run collectives that may be mismatched,
// skipped by a device or failed. Each byte string is one sequence of at
// most kMaxCalls calls; a slot picked for a handle argument may be empty
// (NULL) or hold a destroyed handle. Properties:
//  - every call returns a spmd_status and never SPMD_ERR_INTERNAL; none
//    crashes, hangs (libFuzzer's -timeout) or leaks (LeakSanitizer, after
//    everything left is destroyed);
//  - a NULL or destroyed handle argument gives SPMD_ERR_INVALID_ARGUMENT;
//  - a failed call leaves a message that starts with its name and writes
//    no output (handles, values, host buffers);
//  - arrays hold what they were made from (host data, zeros, full, arange
//    of small integers), and keep it through reshards, collectives' inputs
//    and host copies; nbytes is size times the dtype's size;
//  - random arrays from the same key and shape do not depend on the
//    sharding.
#include "fuzz_common.h"

#include <cmath>

namespace {

constexpr size_t kSlots = 4;
constexpr int kMaxCalls = 48;
constexpr unsigned char kPoison = 0xAB;

enum Kind { kRuntime, kMesh, kSpec, kSharding, kArray, kCollective, kKinds };

struct Slot {
  void *p = nullptr;  // NULL: empty; not live: destroyed
  bool live = false;
};

// What the sequence knows of an array it made.
struct ArrayInfo {
  spmd_dtype dtype = SPMD_DTYPE_INVALID;
  std::vector<int64_t> shape;
  bool consistent = true;  // every replica holds the same values
  bool known = false;      // `bytes` are its values
  std::vector<unsigned char> bytes;
};

struct State {
  explicit State(fuzz::Bytes &b) : in(b) {}
  fuzz::Bytes &in;
  Slot slots[kKinds][kSlots];
  ArrayInfo arrays[kSlots];
};

// A handle argument as the input picked it.
template <typename T>
struct Arg {
  T *p;
  bool bad;   // NULL or destroyed: the call must refuse it
  int owner;  // the array slot of a live array, else -1
};

template <typename T>
Arg<T> pick(State &s, Kind k) {
  const size_t i = s.in.pick(kSlots);
  const Slot &sl = s.slots[k][i];
  return {static_cast<T *>(sl.p), !sl.live, sl.live && k == kArray ? static_cast<int>(i) : -1};
}

void destroy_raw(Kind k, void *p) {
  switch (k) {
    case kRuntime: spmd_runtime_destroy(static_cast<spmd_runtime *>(p)); break;
    case kMesh: spmd_mesh_destroy(static_cast<spmd_mesh *>(p)); break;
    case kSpec: spmd_spec_destroy(static_cast<spmd_spec *>(p)); break;
    case kSharding: spmd_sharding_destroy(static_cast<spmd_sharding *>(p)); break;
    case kArray: spmd_array_destroy(static_cast<spmd_array *>(p)); break;
    case kCollective: spmd_collective_destroy(static_cast<spmd_collective *>(p)); break;
    case kKinds: break;
  }
}

// Destroys slot i: a live handle, or again one already destroyed (a double
// destroy must be ignored), or NULL.
void destroy(State &s, Kind k, size_t i) {
  destroy_raw(k, s.slots[k][i].p);
  s.slots[k][i].live = false;
}

// A new handle is never one the sequence has seen, live or destroyed: a
// destroyed handle must stay refused, so it is never handed out again.
void put(State &s, Kind k, size_t i, void *p) {
  FUZZ_CHECK(p != nullptr, "a successful call gave a NULL handle");
  for (size_t j = 0; j < kSlots; ++j)
    FUZZ_CHECK(s.slots[k][j].p != p, "a new handle equals the %s one in slot %zu",
               s.slots[k][j].live ? "live" : "destroyed", j);
  if (s.slots[k][i].live) destroy(s, k, i);
  s.slots[k][i] = {p, true};
}

// SPMD_FUZZ_TRACE=1 prints every call and its status, to read what a
// reproducer does.
const bool kTrace = std::getenv("SPMD_FUZZ_TRACE") != nullptr;

// With SPMD_FUZZ_TRACE, the arguments the input chose for the next call.
void trace(const char *fmt, ...) {
  if (!kTrace) return;
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "  ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
}

std::string shape_str(const std::vector<int64_t> &shape) {
  std::string t = "(";
  for (size_t i = 0; i < shape.size(); ++i) t += (i ? ", " : "") + std::to_string(shape[i]);
  return t + (shape.size() == 1 ? ",)" : ")");
}

// The rules every call keeps (see the top of the file).
void after(spmd_status st, const char *fn, bool bad_handle, bool untouched = true) {
  if (kTrace)
    std::fprintf(stderr, "%s -> %s%s%s\n", fn, spmd_status_string(st), st ? ": " : "",
                 st ? spmd_last_error() : "");
  fuzz::check_status(st, fn);
  if (bad_handle)
    FUZZ_CHECK(st == SPMD_ERR_INVALID_ARGUMENT, "%s took a NULL or destroyed handle: status %d",
               fn, (int)st);
  if (st != SPMD_OK) {
    FUZZ_CHECK(untouched, "a failed %s wrote an output", fn);
    const std::string head = std::string(fn) + ": ";
    FUZZ_CHECK(std::string(spmd_last_error()).rfind(head, 0) == 0,
               "the message of a failed %s does not start with its name", fn);
  }
}

// ---- choices ----

const char *const kAxisNames[] = {"x", "y", "z", "x", "None", "1a", ""};
const char *const kAxesTexts[] = {"x", "y", "z", "(x, y)", "y,x", "('x', 'z')", "x, x", "", "q"};
const char *const kSpecTexts[] = {"",       "x",        "y",         "x, y",       "y, x",
                                  "(x, y)", "None, x",  "P('x', None)", "(y, z), x", "x, x",
                                  "x,,y",   "z, None, y", "P(",        "PartitionSpec((), 'y')"};

spmd_dtype pick_dtype(State &s) {
  // Mostly valid types; now and then one no release defines.
  static const int kTypes[] = {1, 2, 3, 4, 5, 6, 7, 8, 1, 5, 0, 9};
  return static_cast<spmd_dtype>(kTypes[s.in.pick(sizeof kTypes / sizeof *kTypes)]);
}

std::vector<int64_t> pick_shape(State &s) {
  const size_t ndim = s.in.pick(4);
  std::vector<int64_t> shape(ndim);
  static const int64_t kSizes[] = {1, 2, 3, 4, 5, 0, 2, 4, -1};
  for (auto &n : shape) n = kSizes[s.in.pick(sizeof kSizes / sizeof *kSizes)];
  return shape;
}

std::string pick_text(State &s, const char *const *table, size_t n) {
  const size_t i = s.in.pick(static_cast<unsigned>(n + 1));
  if (i < n) return table[i];
  // Or a few bytes of the input.
  std::string t;
  for (size_t k = s.in.pick(16); k > 0; --k) t += static_cast<char>(s.in.byte());
  return fuzz::c_text(t);
}
std::string pick_axes(State &s) { return pick_text(s, kAxesTexts, std::size(kAxesTexts)); }
std::string pick_spec(State &s) { return pick_text(s, kSpecTexts, std::size(kSpecTexts)); }

int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool valid_dtype(spmd_dtype t) { return t >= SPMD_F32 && t <= SPMD_BOOL; }
bool valid_shape(const std::vector<int64_t> &shape) {
  for (int64_t d : shape)
    if (d < 0) return false;
  return true;
}

// The bytes of element values that every dtype holds exactly (small
// non-negative integers), or false for f16/bf16, whose bits are not
// modelled here.
bool encode(spmd_dtype t, const std::vector<double> &v, std::vector<unsigned char> &out) {
  out.clear();
  auto push = [&](const void *p, size_t n) {
    out.insert(out.end(), static_cast<const unsigned char *>(p),
               static_cast<const unsigned char *>(p) + n);
  };
  for (double x : v) {
    switch (t) {
      case SPMD_F32: { const float f = static_cast<float>(x); push(&f, 4); break; }
      case SPMD_F64: push(&x, 8); break;
      case SPMD_I32: { const int32_t i = static_cast<int32_t>(x); push(&i, 4); break; }
      case SPMD_I64: { const int64_t i = static_cast<int64_t>(x); push(&i, 8); break; }
      case SPMD_U8: { const uint8_t u = static_cast<uint8_t>(x); push(&u, 1); break; }
      case SPMD_BOOL: { const uint8_t b = x != 0; push(&b, 1); break; }
      default: return false;
    }
  }
  return true;
}

std::vector<unsigned char> to_host(spmd_array *a) {
  size_t n = 0;
  FUZZ_CHECK(spmd_array_nbytes(a, &n) == SPMD_OK, "spmd_array_nbytes of a live array");
  std::vector<unsigned char> v(n);
  const spmd_status st = spmd_array_to_host(a, v.data(), n);
  FUZZ_CHECK(st == SPMD_OK, "spmd_array_to_host of a live array failed (%d)", (int)st);
  return v;
}

void record_array(State &s, size_t slot, spmd_array *a, spmd_dtype dt,
                  std::vector<int64_t> shape) {
  put(s, kArray, slot, a);
  ArrayInfo &info = s.arrays[slot];
  info = ArrayInfo{};
  info.dtype = dt;
  info.shape = std::move(shape);
}

// ---- shard_map programs ----

struct CollOp {
  unsigned kind;     // what run_program calls: psum, pmean, ... (kOps below)
  unsigned operand;  // even: input operand/2; odd: the last result (before one: an input, or
                     // a new f32[2] in a shard_map without inputs)
  std::string axes;
  int64_t a, b;
  int tiled;
  std::vector<int64_t> pairs;
  int skip_device;  // this device leaves the op out (peers then time out)
};

struct Program {
  std::vector<CollOp> ops;
  int fail_device;
  size_t n_out;
};

void quiet_print(int, const char *, void *) {}

spmd_status run_program(spmd_ctx *ctx, void *user) {
  const Program &p = *static_cast<const Program *>(user);
  int dev = -1;
  FUZZ_CHECK(spmd_ctx_device_id(ctx, &dev) == SPMD_OK, "spmd_ctx_device_id");
  size_t n_in = 0;
  FUZZ_CHECK(spmd_ctx_input_count(ctx, &n_in) == SPMD_OK, "spmd_ctx_input_count");
  spmd_block cur = SPMD_BLOCK_INIT;
  bool have = false;
  for (const CollOp &op : p.ops) {
    if (op.skip_device == dev) continue;
    spmd_block x = SPMD_BLOCK_INIT;
    if (n_in && (op.operand % 2 == 0 || !have)) {
      const spmd_status st = spmd_ctx_input(ctx, op.operand / 2 % n_in, &x);
      FUZZ_CHECK(st == SPMD_OK, "spmd_ctx_input of an existing input");
    } else if (have) {
      x = cur;
    } else {
      const int64_t shape[1] = {2};
      const spmd_status st = spmd_ctx_alloc(ctx, SPMD_F32, 1, shape, &x);
      FUZZ_CHECK(st == SPMD_OK, "spmd_ctx_alloc of f32[2]");
    }
    spmd_block out = SPMD_BLOCK_INIT;
    const char *axes = op.axes.c_str();
    const char *fn = "";
    spmd_status st = SPMD_OK;
    switch (op.kind) {
      case 0: fn = "spmd_ctx_psum"; st = spmd_ctx_psum(ctx, &x, axes, &out); break;
      case 1: fn = "spmd_ctx_pmean"; st = spmd_ctx_pmean(ctx, &x, axes, &out); break;
      case 2: fn = "spmd_ctx_pmax"; st = spmd_ctx_pmax(ctx, &x, axes, &out); break;
      case 3: fn = "spmd_ctx_pmin"; st = spmd_ctx_pmin(ctx, &x, axes, &out); break;
      case 4:
        fn = "spmd_ctx_all_gather";
        st = spmd_ctx_all_gather(ctx, &x, axes, op.a, op.tiled, &out);
        break;
      case 5:
        fn = "spmd_ctx_psum_scatter";
        st = spmd_ctx_psum_scatter(ctx, &x, axes, op.a, op.tiled, &out);
        break;
      case 6:
        fn = "spmd_ctx_all_to_all";
        st = spmd_ctx_all_to_all(ctx, &x, axes, op.a, op.b, op.tiled, &out);
        break;
      case 7:
        fn = "spmd_ctx_ppermute";
        st = spmd_ctx_ppermute(ctx, &x, axes, op.pairs.size() / 2, op.pairs.data(), &out);
        break;
      case 8: {
        int64_t v = kPoison;
        fn = "spmd_ctx_axis_index";
        st = spmd_ctx_axis_index(ctx, axes, &v);
        after(st, fn, false, v == kPoison);
        if (st == SPMD_OK) {
          int64_t n = kPoison;
          FUZZ_CHECK(spmd_ctx_axis_size(ctx, axes, &n) == SPMD_OK && v >= 0 && v < n,
                     "axis_index %lld outside axis_size %lld", (long long)v, (long long)n);
        }
        continue;
      }
      case 9:
        fn = "spmd_ctx_printf";
        st = spmd_ctx_printf(ctx, "device %d: %s", dev, axes);
        after(st, fn, false);
        continue;
      default: {
        const int64_t shape[2] = {op.a, op.b};
        fn = "spmd_ctx_alloc";
        st = spmd_ctx_alloc(ctx, SPMD_I32, 2, shape, &out);
        break;
      }
    }
    after(st, fn, false, out.data == nullptr && out.dtype == SPMD_DTYPE_INVALID);
    if (st != SPMD_OK) return st;  // this device stops; its peers must not hang
    cur = out;
    have = true;
  }
  if (p.fail_device == dev) return spmd_ctx_error(ctx, SPMD_ERR_CALLBACK, "this device fails");
  for (size_t j = 0; j < p.n_out; ++j) {
    spmd_block b = cur;
    if (!have || (j % 2 == 1 && n_in)) {
      if (n_in == 0) return spmd_ctx_error(ctx, SPMD_ERR_CALLBACK, "nothing to hand back");
      FUZZ_CHECK(spmd_ctx_input(ctx, j % n_in, &b) == SPMD_OK, "spmd_ctx_input");
    }
    const spmd_status st = spmd_ctx_set_output(ctx, j, &b);
    after(st, "spmd_ctx_set_output", false);
    if (st != SPMD_OK) return st;
  }
  return SPMD_OK;
}

void op_shard_map(State &s) {
  const auto mesh = pick<spmd_mesh>(s, kMesh);
  const size_t n_in = s.in.pick(3);
  std::vector<spmd_array *> inputs;
  std::vector<std::string> in_text, out_text;
  bool bad = mesh.bad, consistent = true;
  for (size_t i = 0; i < n_in; ++i) {
    const auto a = pick<spmd_array>(s, kArray);
    inputs.push_back(a.p);
    bad |= a.bad;
    consistent &= a.owner >= 0 && s.arrays[a.owner].consistent;
    in_text.push_back(pick_spec(s));
  }
  Program prog;
  prog.n_out = s.in.pick(3);
  for (size_t j = 0; j < prog.n_out; ++j) out_text.push_back(pick_spec(s));
  for (size_t k = s.in.pick(4); k > 0; --k) {
    CollOp op;
    op.kind = s.in.pick(11);
    op.operand = s.in.pick(4);
    op.axes = pick_axes(s);
    op.a = static_cast<int64_t>(s.in.pick(6)) - 2;
    op.b = static_cast<int64_t>(s.in.pick(6)) - 2;
    op.tiled = s.in.flag();
    for (size_t n = s.in.pick(5); n > 0; --n) op.pairs.push_back(static_cast<int64_t>(s.in.pick(6)) - 1);
    op.skip_device = s.in.pick(8) == 0 ? static_cast<int>(s.in.pick(4)) : -1;
    prog.ops.push_back(std::move(op));
  }
  prog.fail_device = s.in.pick(8) == 0 ? static_cast<int>(s.in.pick(4)) : -1;
  static const char *const kOps[] = {"psum",      "pmean",        "pmax",     "pmin",
                                     "all_gather", "psum_scatter", "all_to_all", "ppermute",
                                     "axis_index", "printf",       "alloc"};
  for (size_t i = 0; i < in_text.size(); ++i) trace("in_specs[%zu] '%s'", i, in_text[i].c_str());
  for (size_t j = 0; j < out_text.size(); ++j)
    trace("out_specs[%zu] '%s'", j, out_text[j].c_str());
  for (const CollOp &op : prog.ops)
    trace("callback: %s(operand %u, axes '%s', %lld, %lld, tiled %d, %zu pair values), skipped "
          "by device %d", kOps[op.kind], op.operand, op.axes.c_str(), (long long)op.a,
          (long long)op.b, op.tiled, op.pairs.size(), op.skip_device);
  trace("callback fails on device %d; %zu outputs", prog.fail_device, prog.n_out);

  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.check_rep = s.in.flag();
  // Short, and never 0 (60 s): a peer that left or waits in another
  // collective is reported at once, so only a slow device waits this long.
  static const int64_t kTimeouts[] = {50, 20, 5, 200, -3};
  o.timeout_ms = kTimeouts[s.in.pick(5)];
  o.print_fn = quiet_print;

  std::vector<const char *> in_ptrs, out_ptrs;
  for (const auto &t : in_text) in_ptrs.push_back(t.c_str());
  for (const auto &t : out_text) out_ptrs.push_back(t.c_str());
  spmd_array *outs[2] = {fuzz::sentinel<spmd_array>(), fuzz::sentinel<spmd_array>()};
  spmd_clear_error();
  const spmd_status st =
      spmd_shard_map_text(mesh.p, run_program, &prog, n_in, inputs.data(), in_ptrs.data(),
                          prog.n_out, out_ptrs.data(), &o, outs);
  bool untouched = true;
  for (size_t j = 0; j < prog.n_out; ++j) untouched &= outs[j] == fuzz::sentinel<spmd_array>();
  after(st, "spmd_shard_map_text", bad, untouched);
  if (st != SPMD_OK) return;
  for (size_t j = 0; j < prog.n_out; ++j) {
    spmd_dtype dt = SPMD_DTYPE_INVALID;
    FUZZ_CHECK(spmd_array_dtype(outs[j], &dt) == SPMD_OK, "dtype of a shard_map output");
    const size_t slot = s.in.pick(kSlots);
    record_array(s, slot, outs[j], dt, {});
    // Without check_rep the callback may leave replicas unequal.
    s.arrays[slot].consistent = consistent && o.check_rep;
  }
}

// ---- the calls ----

void op_runtime_create(State &s) {
  static const spmd_platform kPlatforms[] = {SPMD_PLATFORM_CPU, SPMD_PLATFORM_SIM,
                                             SPMD_PLATFORM_CPU, SPMD_PLATFORM_SIM,
                                             SPMD_PLATFORM_DEFAULT, SPMD_PLATFORM_CUDA};
  static const int kDevices[] = {1, 2, 3, 4, 4, 2, -1};
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = kPlatforms[s.in.pick(6)];
  o.cpu_device_count = kDevices[s.in.pick(7)];
  o.worker_threads = static_cast<int>(s.in.pick(3));  // 0: one per core
  const size_t slot = s.in.pick(kSlots);
  spmd_runtime *rt = fuzz::sentinel<spmd_runtime>();
  spmd_clear_error();
  const spmd_status st = spmd_runtime_create(&o, &rt);
  after(st, "spmd_runtime_create", false, rt == fuzz::sentinel<spmd_runtime>());
  if (st != SPMD_OK) {
    FUZZ_CHECK(o.platform == SPMD_PLATFORM_CUDA || o.cpu_device_count < 0,
               "spmd_runtime_create refused a CPU or sim runtime of %d devices",
               o.cpu_device_count);
    return;
  }
  put(s, kRuntime, slot, rt);
  int n = 0;
  FUZZ_CHECK(spmd_runtime_device_count(rt, &n) == SPMD_OK && n >= 1, "device_count");
}

void op_mesh_create(State &s) {
  const auto rt = pick<spmd_runtime>(s, kRuntime);
  const size_t ndim = s.in.pick(4);
  std::vector<int64_t> shape(ndim);
  std::vector<const char *> names(ndim);
  static const int64_t kSizes[] = {1, 2, 2, 4, 3, 0, -2};
  for (size_t i = 0; i < ndim; ++i) {
    shape[i] = kSizes[s.in.pick(7)];
    names[i] = kAxisNames[s.in.pick(std::size(kAxisNames))];
  }
  std::vector<int> ids;
  const bool explicit_ids = s.in.flag();
  if (explicit_ids)
    for (int64_t n = std::max<int64_t>(elements(shape), 0), k = 0; k < n && k < 8; ++k)
      ids.push_back(static_cast<int>(s.in.pick(6)) - 1);
  const size_t slot = s.in.pick(kSlots);
  std::string axes;
  for (const char *n : names) axes += std::string(axes.empty() ? "'" : ", '") + n + "'";
  trace("shape %s, axes %s, %s device ids", shape_str(shape).c_str(), axes.c_str(),
        explicit_ids ? "given" : "default");
  spmd_mesh *m = fuzz::sentinel<spmd_mesh>();
  spmd_clear_error();
  const spmd_status st = spmd_mesh_create(rt.p, ndim, shape.data(), names.data(),
                                          explicit_ids ? ids.data() : nullptr, &m);
  after(st, "spmd_mesh_create", rt.bad, m == fuzz::sentinel<spmd_mesh>());
  if (st != SPMD_OK) return;
  put(s, kMesh, slot, m);
  size_t size = 0, nd = 99;
  FUZZ_CHECK(spmd_mesh_size(m, &size) == SPMD_OK &&
                 static_cast<int64_t>(size) == elements(shape),
             "mesh size %zu, shape holds %lld", size, (long long)elements(shape));
  FUZZ_CHECK(spmd_mesh_ndim(m, &nd) == SPMD_OK && nd == ndim, "mesh ndim");
}

void op_spec(State &s) {
  const size_t slot = s.in.pick(kSlots);
  spmd_spec *spec = fuzz::sentinel<spmd_spec>();
  spmd_clear_error();
  if (s.in.flag()) {
    const std::string text = pick_spec(s);
    trace("text '%s'", text.c_str());
    const spmd_status st = spmd_spec_parse(text.c_str(), &spec);
    after(st, "spmd_spec_parse", false, spec == fuzz::sentinel<spmd_spec>());
    if (st == SPMD_OK) put(s, kSpec, slot, spec);
    return;
  }
  const spmd_status st = spmd_spec_create(&spec);
  after(st, "spmd_spec_create", false);
  if (st != SPMD_OK) return;
  put(s, kSpec, slot, spec);
  for (size_t d = s.in.pick(4); d > 0; --d) {
    const char *axes[2] = {kAxisNames[s.in.pick(std::size(kAxisNames))],
                           kAxisNames[s.in.pick(std::size(kAxisNames))]};
    const std::string before = fuzz::spec_string(spec);
    const spmd_status a = spmd_spec_append(spec, axes, s.in.pick(3));
    after(a, "spmd_spec_append", false, fuzz::spec_string(spec) == before);
  }
}

void op_sharding(State &s) {
  const size_t slot = s.in.pick(kSlots);
  spmd_sharding *sh = fuzz::sentinel<spmd_sharding>();
  spmd_clear_error();
  spmd_status st;
  const char *fn;
  bool bad;
  switch (s.in.pick(4)) {
    case 0: {
      const auto mesh = pick<spmd_mesh>(s, kMesh);
      const auto spec = pick<spmd_spec>(s, kSpec);
      fn = "spmd_sharding_named";
      st = spmd_sharding_named(mesh.p, spec.p, &sh);
      bad = mesh.bad || spec.bad;
      break;
    }
    case 1: {
      const auto mesh = pick<spmd_mesh>(s, kMesh);
      const std::string text = pick_spec(s);
      trace("spec '%s'", text.c_str());
      fn = "spmd_sharding_named_text";
      st = spmd_sharding_named_text(mesh.p, text.c_str(), &sh);
      bad = mesh.bad;
      break;
    }
    case 2: {
      const auto mesh = pick<spmd_mesh>(s, kMesh);
      fn = "spmd_sharding_replicated";
      st = spmd_sharding_replicated(mesh.p, &sh);
      bad = mesh.bad;
      break;
    }
    default: {
      const auto rt = pick<spmd_runtime>(s, kRuntime);
      fn = "spmd_sharding_single_device";
      st = spmd_sharding_single_device(rt.p, static_cast<int>(s.in.pick(6)) - 1, &sh);
      bad = rt.bad;
      break;
    }
  }
  after(st, fn, bad, sh == fuzz::sentinel<spmd_sharding>());
  if (st == SPMD_OK) put(s, kSharding, slot, sh);
}

void op_array_create(State &s) {
  const auto sh = pick<spmd_sharding>(s, kSharding);
  const spmd_dtype dt = pick_dtype(s);
  std::vector<int64_t> shape = pick_shape(s);
  const size_t slot = s.in.pick(kSlots);
  trace("dtype %d, shape %s", (int)dt, shape_str(shape).c_str());
  spmd_array *a = fuzz::sentinel<spmd_array>();
  const bool sane = valid_dtype(dt) && valid_shape(shape);
  const int64_t n = sane ? elements(shape) : 0;
  std::vector<double> values(static_cast<size_t>(n));
  bool model = sane;
  spmd_clear_error();
  spmd_status st;
  const char *fn;
  switch (s.in.pick(5)) {
    case 0: {
      fn = "spmd_array_from_host";
      std::vector<unsigned char> host;
      for (auto &v : values) v = s.in.pick(4);
      model = model && encode(dt, values, host);
      size_t nbytes = host.size();
      if (!model) {  // bytes the input gives, of the size it says
        host.resize(n * (sane ? spmd_dtype_size(dt) : 1));
        for (auto &b : host) b = s.in.byte();
        nbytes = host.size();
      }
      const size_t wrong = s.in.pick(8) == 0;
      st = spmd_array_from_host(sh.p, dt, shape.size(), shape.data(), host.data(), nbytes + wrong,
                                &a);
      FUZZ_CHECK(!(wrong && st == SPMD_OK), "from_host took one byte more than the array holds");
      if (st == SPMD_OK && model) {
        record_array(s, slot, a, dt, shape);
        s.arrays[slot].known = true;
        s.arrays[slot].bytes = host;
      }
      break;
    }
    case 1:
      fn = "spmd_array_zeros";
      st = spmd_array_zeros(sh.p, dt, shape.size(), shape.data(), &a);
      break;
    case 2: {
      static const double kValues[] = {0, 1, 3, 2, -1, 0.5, 1e30, NAN, INFINITY};
      const double v = kValues[s.in.pick(9)];
      fn = "spmd_array_full";
      st = spmd_array_full(sh.p, dt, shape.size(), shape.data(), v, &a);
      for (auto &x : values) x = v;
      model = model && v >= 0 && v <= 3 && v == std::floor(v);
      break;
    }
    case 3: {
      static const double kStarts[] = {0, 1, 2, 3, -1, 0.25, 1e300, NAN};
      const double start = kStarts[s.in.pick(8)], step = kStarts[s.in.pick(8)];
      fn = "spmd_array_arange";
      st = spmd_array_arange(sh.p, dt, shape.size(), shape.data(), start, step, &a);
      for (int64_t i = 0; i < n; ++i) values[i] = start + static_cast<double>(i) * step;
      model = model && start >= 0 && start <= 3 && step >= 0 && step <= 3 &&
              start == std::floor(start) && step == std::floor(step) &&
              start + static_cast<double>(n) * step < 128;
      break;
    }
    default: {
      // Random values do not depend on the sharding: drawn again under a
      // second sharding, they are the same.
      const auto other = pick<spmd_sharding>(s, kSharding);
      spmd_key key;
      spmd_random_key(s.in.byte(), &key);
      const bool uniform = s.in.flag();
      fn = uniform ? "spmd_random_uniform" : "spmd_random_bits";
      auto draw = [&](const spmd_sharding *where, spmd_array **out) {
        return uniform ? spmd_random_uniform(where, &key, dt, shape.size(), shape.data(), -1.0,
                                             2.0, out)
                       : spmd_random_bits(where, &key, dt, shape.size(), shape.data(), out);
      };
      st = draw(sh.p, &a);
      if (st == SPMD_OK) {
        spmd_array *b = nullptr;
        const spmd_status st2 = draw(other.p, &b);
        after(st2, fn, other.bad);
        if (st2 == SPMD_OK) {
          FUZZ_CHECK(to_host(a) == to_host(b), "%s: the values depend on the sharding", fn);
          spmd_array_destroy(b);
        }
      }
      model = false;
      break;
    }
  }
  after(st, fn, sh.bad, a == fuzz::sentinel<spmd_array>());
  if (st != SPMD_OK || s.slots[kArray][slot].p == a) return;
  record_array(s, slot, a, dt, shape);
  std::vector<unsigned char> bytes;
  if (model && encode(dt, values, bytes)) {
    s.arrays[slot].known = true;
    s.arrays[slot].bytes = bytes;
  }
}

void op_array_read(State &s) {
  const auto arr = pick<spmd_array>(s, kArray);
  spmd_clear_error();
  switch (s.in.pick(6)) {
    case 0: {  // to_host, with the right size or not
      size_t nbytes = 0;
      const spmd_status q = spmd_array_nbytes(arr.p, &nbytes);
      after(q, "spmd_array_nbytes", arr.bad);
      const size_t want = q == SPMD_OK ? nbytes : 8;
      const size_t give = s.in.pick(6) == 0 ? want + 1 : want;
      std::vector<unsigned char> buf(give + 1, kPoison);
      const spmd_status st = spmd_array_to_host(arr.p, buf.data(), give);
      bool untouched = true;
      for (auto b : buf) untouched &= b == kPoison;
      after(st, "spmd_array_to_host", arr.bad, untouched);
      if (st != SPMD_OK) return;
      FUZZ_CHECK(give == nbytes && buf[give] == kPoison, "to_host wrote past %zu bytes", give);
      if (arr.owner >= 0 && s.arrays[arr.owner].known) {
        buf.pop_back();
        FUZZ_CHECK(buf == s.arrays[arr.owner].bytes, "the array lost the values it was made with");
      }
      return;
    }
    case 1: {  // what it says of itself
      spmd_dtype dt = SPMD_DTYPE_INVALID;
      size_t nd = 99, nbytes = 0;
      int64_t size = -5;
      const spmd_status a = spmd_array_dtype(arr.p, &dt);
      after(a, "spmd_array_dtype", arr.bad);
      const spmd_status b = spmd_array_ndim(arr.p, &nd);
      after(b, "spmd_array_ndim", arr.bad);
      const spmd_status c = spmd_array_size(arr.p, &size);
      after(c, "spmd_array_size", arr.bad);
      const spmd_status d = spmd_array_nbytes(arr.p, &nbytes);
      after(d, "spmd_array_nbytes", arr.bad);
      if (a || b || c || d) return;
      FUZZ_CHECK(nbytes == static_cast<size_t>(size) * spmd_dtype_size(dt),
                 "nbytes %zu, size %lld of %zu bytes", nbytes, (long long)size,
                 spmd_dtype_size(dt));
      if (arr.owner >= 0 && !s.arrays[arr.owner].shape.empty())
        FUZZ_CHECK(size == elements(s.arrays[arr.owner].shape) &&
                       nd == s.arrays[arr.owner].shape.size() && dt == s.arrays[arr.owner].dtype,
                   "the array's size, rank or dtype changed");
      int dev = -1;
      after(spmd_array_device(arr.p, &dev), "spmd_array_device", arr.bad, dev == -1);
      return;
    }
    case 2: {
      const spmd_status st = spmd_array_block_until_ready(arr.p);
      after(st, "spmd_array_block_until_ready", arr.bad);
      return;
    }
    case 3: {
      spmd_sharding *sh = fuzz::sentinel<spmd_sharding>();
      const spmd_status st = spmd_array_sharding(arr.p, &sh);
      after(st, "spmd_array_sharding", arr.bad, sh == fuzz::sentinel<spmd_sharding>());
      if (st == SPMD_OK) put(s, kSharding, s.in.pick(kSlots), sh);
      return;
    }
    case 4: {  // a shard, read or (on a copy of its own bytes) written
      size_t count = 0, nbytes = 0;
      const spmd_status q = spmd_array_shard_count(arr.p, &count);
      after(q, "spmd_array_shard_count", arr.bad);
      if (q != SPMD_OK) return;
      FUZZ_CHECK(spmd_array_nbytes(arr.p, &nbytes) == SPMD_OK, "nbytes");
      const size_t index = s.in.pick(static_cast<unsigned>(count + 1));
      // Right for a replicated array; otherwise often the wrong size.
      std::vector<unsigned char> buf(nbytes, kPoison);
      const spmd_status st = spmd_array_shard_read(arr.p, index, buf.data(), nbytes);
      after(st, "spmd_array_shard_read", false);
      if (index == count) FUZZ_CHECK(st != SPMD_OK, "shard %zu of %zu was read", index, count);
      if (st == SPMD_OK && s.in.flag()) {
        const spmd_status w = spmd_array_shard_write(arr.p, index, buf.data(), nbytes);
        after(w, "spmd_array_shard_write", false);
      }
      return;
    }
    default: {
      char *text = fuzz::sentinel<char>();
      const bool repr = s.in.flag();
      const spmd_status st = repr ? spmd_array_repr(arr.p, &text) : spmd_array_str(arr.p, &text);
      after(st, repr ? "spmd_array_repr" : "spmd_array_str", arr.bad,
            text == fuzz::sentinel<char>());
      if (st == SPMD_OK) spmd_string_free(text);
      return;
    }
  }
}

void op_reshard(State &s) {
  const auto arr = pick<spmd_array>(s, kArray);
  const auto sh = pick<spmd_sharding>(s, kSharding);
  const size_t slot = s.in.pick(kSlots);
  spmd_array *out = fuzz::sentinel<spmd_array>();
  spmd_clear_error();
  const spmd_status st = spmd_array_reshard(arr.p, sh.p, &out);
  after(st, "spmd_array_reshard", arr.bad || sh.bad, out == fuzz::sentinel<spmd_array>());
  if (st != SPMD_OK) return;
  const bool consistent = arr.owner >= 0 && s.arrays[arr.owner].consistent;
  if (consistent)
    FUZZ_CHECK(to_host(out) == to_host(arr.p), "reshard changed the values");
  ArrayInfo info = arr.owner >= 0 ? s.arrays[arr.owner] : ArrayInfo{};
  info.consistent = consistent;
  record_array(s, slot, out, info.dtype, info.shape);
  s.arrays[slot] = info;
}

void op_collective(State &s) {
  switch (s.in.pick(3)) {
    case 0: {
      const auto sh = pick<spmd_sharding>(s, kSharding);
      const int kind = static_cast<int>(s.in.pick(10));  // 0 and 9 are no kind
      const std::string axes = pick_axes(s);
      const spmd_dtype dt = pick_dtype(s);
      const std::vector<int64_t> shape = pick_shape(s);
      spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
      o.axis = static_cast<int64_t>(s.in.pick(5)) - 2;
      o.concat_axis = static_cast<int64_t>(s.in.pick(5)) - 2;
      o.tiled = s.in.flag();
      std::vector<int64_t> pairs;
      for (size_t n = s.in.pick(5); n > 0; --n) pairs.push_back(static_cast<int64_t>(s.in.pick(6)) - 1);
      o.npairs = pairs.size() / 2;
      o.pairs = pairs.data();
      o.timeout_ms = 10;
      trace("kind %d, axes '%s', dtype %d, shape %s, axis %lld, concat_axis %lld, tiled %d, "
            "%zu pairs", kind, axes.c_str(), (int)dt, shape_str(shape).c_str(), (long long)o.axis,
            (long long)o.concat_axis, o.tiled, o.npairs);
      spmd_collective *c = fuzz::sentinel<spmd_collective>();
      spmd_clear_error();
      const spmd_status st =
          spmd_collective_create(sh.p, static_cast<spmd_collective_kind>(kind), axes.c_str(), dt,
                                 shape.size(), shape.data(), &o, &c);
      after(st, "spmd_collective_create", sh.bad, c == fuzz::sentinel<spmd_collective>());
      if (st != SPMD_OK) return;
      put(s, kCollective, s.in.pick(kSlots), c);
      spmd_sharding *out_sh = nullptr;
      spmd_dtype out_dt = SPMD_DTYPE_INVALID;
      size_t out_nd = 99;
      FUZZ_CHECK(spmd_collective_output_sharding(c, &out_sh) == SPMD_OK &&
                     spmd_collective_output_dtype(c, &out_dt) == SPMD_OK &&
                     spmd_collective_output_ndim(c, &out_nd) == SPMD_OK,
                 "a planned collective cannot describe its output");
      spmd_sharding_destroy(out_sh);
      return;
    }
    case 1: {
      const auto c = pick<spmd_collective>(s, kCollective);
      const auto arr = pick<spmd_array>(s, kArray);
      const size_t slot = s.in.pick(kSlots);
      spmd_array *out = fuzz::sentinel<spmd_array>();
      spmd_clear_error();
      const spmd_status st = spmd_collective_execute(c.p, arr.p, &out);
      after(st, "spmd_collective_execute", c.bad || arr.bad, out == fuzz::sentinel<spmd_array>());
      if (st != SPMD_OK) return;
      spmd_dtype dt = SPMD_DTYPE_INVALID;
      FUZZ_CHECK(spmd_array_dtype(out, &dt) == SPMD_OK, "dtype of a collective's output");
      const bool consistent = arr.owner >= 0 && s.arrays[arr.owner].consistent;
      record_array(s, slot, out, dt, {});
      s.arrays[slot].consistent = consistent;
      return;
    }
    default: {
      const auto c = pick<spmd_collective>(s, kCollective);
      const auto arr = pick<spmd_array>(s, kArray);
      const auto into = pick<spmd_array>(s, kArray);
      spmd_clear_error();
      const spmd_status st = spmd_collective_execute_into(c.p, arr.p, into.p);
      after(st, "spmd_collective_execute_into", c.bad || arr.bad || into.bad);
      if (st == SPMD_OK && into.owner >= 0) {
        ArrayInfo &info = s.arrays[into.owner];
        info.known = false;
        info.consistent = arr.owner >= 0 && s.arrays[arr.owner].consistent;
      }
      return;
    }
  }
}

void op_describe(State &s) {
  spmd_clear_error();
  switch (s.in.pick(5)) {
    case 0: {
      const auto m = pick<spmd_mesh>(s, kMesh);
      char *text = fuzz::sentinel<char>();
      const spmd_status st = spmd_mesh_to_string(m.p, &text);
      after(st, "spmd_mesh_to_string", m.bad, text == fuzz::sentinel<char>());
      if (st == SPMD_OK) spmd_string_free(text);
      int dev = -9;
      const spmd_status d = spmd_mesh_device(m.p, s.in.pick(5), &dev);
      after(d, "spmd_mesh_device", m.bad, dev == -9);
      return;
    }
    case 1: {
      const auto sh = pick<spmd_sharding>(s, kSharding);
      char *text = fuzz::sentinel<char>();
      const spmd_status st = spmd_sharding_to_string(sh.p, &text);
      after(st, "spmd_sharding_to_string", sh.bad, text == fuzz::sentinel<char>());
      if (st == SPMD_OK) spmd_string_free(text);
      spmd_mesh *m = fuzz::sentinel<spmd_mesh>();
      const spmd_status g = spmd_sharding_mesh(sh.p, &m);
      after(g, "spmd_sharding_mesh", sh.bad, m == fuzz::sentinel<spmd_mesh>());
      if (g == SPMD_OK) put(s, kMesh, s.in.pick(kSlots), m);
      return;
    }
    case 2: {  // pictures of a sharding or an array
      spmd_visualize_options o = SPMD_VISUALIZE_OPTIONS_INIT;
      o.ascii = s.in.flag();
      static const int kWidths[] = {0, 80, 20, 7, 1, -3};
      o.max_width = kWidths[s.in.pick(6)];
      o.min_width = kWidths[s.in.pick(6)];
      static const double kScales[] = {0, 1, 0.5, 3, -1};
      o.scale = kScales[s.in.pick(5)];
      char *text = fuzz::sentinel<char>();
      if (s.in.flag()) {
        const auto sh = pick<spmd_sharding>(s, kSharding);
        const std::vector<int64_t> shape = pick_shape(s);
        const spmd_status st =
            spmd_sharding_visualize(sh.p, shape.size(), shape.data(), &o, &text);
        after(st, "spmd_sharding_visualize", sh.bad, text == fuzz::sentinel<char>());
      } else {
        const auto arr = pick<spmd_array>(s, kArray);
        const spmd_status st = spmd_array_visualize(arr.p, s.in.flag() ? &o : nullptr, &text);
        after(st, "spmd_array_visualize", arr.bad, text == fuzz::sentinel<char>());
      }
      if (text != fuzz::sentinel<char>()) {
        FUZZ_CHECK(text != nullptr && *text, "an empty picture");
        spmd_string_free(text);
      }
      return;
    }
    case 3: {
      const auto a = pick<spmd_sharding>(s, kSharding);
      const auto b = pick<spmd_sharding>(s, kSharding);
      int eq = -1;
      const spmd_status st = spmd_sharding_equal(a.p, b.p, &eq);
      after(st, "spmd_sharding_equal", a.bad || b.bad, eq == -1);
      if (st == SPMD_OK && a.p == b.p) FUZZ_CHECK(eq == 1, "a sharding differs from itself");
      return;
    }
    default: {
      const auto rt = pick<spmd_runtime>(s, kRuntime);
      spmd_device_info info = SPMD_DEVICE_INFO_INIT;
      const spmd_status st =
          spmd_runtime_device_info(rt.p, static_cast<int>(s.in.pick(6)) - 1, &info);
      after(st, "spmd_runtime_device_info", rt.bad, info.platform_name == nullptr);
      char *text = fuzz::sentinel<char>();
      const spmd_status t =
          spmd_runtime_device_to_string(rt.p, static_cast<int>(s.in.pick(6)) - 1, &text);
      after(t, "spmd_runtime_device_to_string", rt.bad, text == fuzz::sentinel<char>());
      if (t == SPMD_OK) spmd_string_free(text);
      return;
    }
  }
}

void op_destroy(State &s) {
  const Kind k = static_cast<Kind>(s.in.pick(kKinds));
  destroy(s, k, s.in.pick(kSlots));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::Bytes in(data, size);
  State s(in);
  for (int call = 0; call < kMaxCalls && !in.empty(); ++call) {
    switch (in.pick(12)) {
      case 0: op_runtime_create(s); break;
      case 1: op_mesh_create(s); break;
      case 2: op_spec(s); break;
      case 3: op_sharding(s); break;
      case 4: case 5: op_array_create(s); break;
      case 6: op_array_read(s); break;
      case 7: op_reshard(s); break;
      case 8: op_collective(s); break;
      case 9: op_shard_map(s); break;
      case 10: op_describe(s); break;
      default: op_destroy(s); break;
    }
  }
  // Everything left goes, in an order that leaves runtimes for last only
  // sometimes: destruction order must not matter.
  const bool runtimes_first = in.flag();
  for (int k = kKinds - 1; k >= 0; --k) {
    const Kind kind = runtimes_first ? static_cast<Kind>((k + 1) % kKinds) : static_cast<Kind>(k);
    for (size_t i = 0; i < kSlots; ++i)
      if (s.slots[kind][i].live) destroy(s, kind, i);
  }
  return 0;
}
