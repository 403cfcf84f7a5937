// The `axes` argument ("x", "x,y", "(x, y)", "('x', 'y')", "(x,)") on any
// text, against fixed meshes (the first byte picks one), through every entry
// point that takes it: spmd_ctx_axis_index, spmd_ctx_axis_size,
// spmd_ctx_psum and spmd_ctx_all_gather inside a shard_map on every
// device, and spmd_collective_create outside. Properties:
//  - all of them accept or refuse the text alike, on every device, with
//    the same status; a refusal leaves the outputs untouched and names
//    the argument ("axes") after the function's name;
//  - a text naming an axis the mesh lacks, an axis twice, or no axis (but
//    "()", the empty tuple) is refused, and so is one not spelt as Python
//    spells an axis or a tuple; one so spelt with distinct mesh axes is
//    accepted;
//  - when accepted, the named axes are the text's names in order:
//    axis_size is the product of their sizes, axis_index is the device's
//    row-major index over its coordinates on them, a psum of ones gives
//    axis_size, an all_gather of axis_index gives 0, 1, ..., size-1, and the
//    planned psum of a replicated array of ones gives axis_size everywhere.
#include "fuzz_common.h"

#include <regex>

namespace {

constexpr int kDevices = 8;
constexpr int64_t kUntouched = -7777;

struct Fixture {
  spmd_runtime *rt = nullptr;
  std::vector<fuzz::MeshDef> defs;
  std::vector<spmd_mesh *> meshes;
  std::vector<spmd_sharding *> replicated;
  std::vector<spmd_array *> ones;  // f32[2] of ones, replicated on each mesh
};

Fixture &fixture() {
  static Fixture f = [] {
    Fixture x;
    x.rt = fuzz::make_runtime(kDevices);
    x.defs = {
        {{2, 4}, {"x", "y"}, {}},
        {{2, 2, 2}, {"a", "b", "c"}, {}},
        {{8}, {"x"}, {}},
    };
    for (const auto &d : x.defs) {
      spmd_mesh *m = fuzz::make_mesh(x.rt, d);
      spmd_sharding *s = nullptr;
      spmd_array *a = nullptr;
      const int64_t shape[1] = {2};
      if (spmd_sharding_replicated(m, &s) != SPMD_OK ||
          spmd_array_full(s, SPMD_F32, 1, shape, 1.0, &a) != SPMD_OK) {
        std::fprintf(stderr, "fixture: %s\n", spmd_last_error());
        std::abort();
      }
      x.meshes.push_back(m);
      x.replicated.push_back(s);
      x.ones.push_back(a);
    }
    return x;
  }();
  return f;
}

// What one device saw.
struct Seen {
  bool ran = false;
  spmd_status index_st = SPMD_OK, size_st = SPMD_OK, psum_st = SPMD_OK, gather_st = SPMD_OK;
  int64_t index = kUntouched, size = kUntouched;
  std::string index_error, size_error, psum_error, gather_error;
  bool psum_out_untouched = true, gather_out_untouched = true;
  float psum = -1;
  size_t gathered_ndim = 99;
  std::vector<int32_t> gathered;
};

struct Run {
  const char *axes;
  Seen seen[kDevices];
};

spmd_status probe(spmd_ctx *ctx, void *user) {
  Run &run = *static_cast<Run *>(user);
  int device = -1;
  FUZZ_CHECK(spmd_ctx_device_id(ctx, &device) == SPMD_OK && device >= 0 && device < kDevices,
             "spmd_ctx_device_id");
  Seen &s = run.seen[device];
  s.ran = true;

  s.index_st = spmd_ctx_axis_index(ctx, run.axes, &s.index);
  if (s.index_st != SPMD_OK) s.index_error = spmd_last_error();
  s.size_st = spmd_ctx_axis_size(ctx, run.axes, &s.size);
  if (s.size_st != SPMD_OK) s.size_error = spmd_last_error();

  // Collectives over the same text: a scalar 1.0, and this device's index.
  float one = 1.0f;
  spmd_block x = SPMD_BLOCK_INIT;
  x.data = &one;
  x.dtype = SPMD_F32;
  x.ndim = 0;
  spmd_block out = SPMD_BLOCK_INIT;
  s.psum_st = spmd_ctx_psum(ctx, &x, run.axes, &out);
  if (s.psum_st == SPMD_OK) {
    FUZZ_CHECK(out.dtype == SPMD_F32 && out.ndim == 0 && out.data, "psum of a f32 scalar");
    s.psum = *static_cast<const float *>(out.data);
  } else {
    s.psum_error = spmd_last_error();
    s.psum_out_untouched = out.data == nullptr && out.dtype == SPMD_DTYPE_INVALID;
  }

  int32_t mine = static_cast<int32_t>(s.index_st == SPMD_OK ? s.index : -1);
  spmd_block y = SPMD_BLOCK_INIT;
  y.data = &mine;
  y.dtype = SPMD_I32;
  y.ndim = 0;
  spmd_block all = SPMD_BLOCK_INIT;
  s.gather_st = spmd_ctx_all_gather(ctx, &y, run.axes, 0, 0, &all);
  if (s.gather_st == SPMD_OK) {
    FUZZ_CHECK(all.dtype == SPMD_I32 && all.ndim <= 1 && all.data, "all_gather of a scalar");
    const int32_t *v = static_cast<const int32_t *>(all.data);
    s.gathered_ndim = all.ndim;
    s.gathered.assign(v, v + (all.ndim ? all.shape[0] : 1));
  } else {
    s.gather_error = spmd_last_error();
    s.gather_out_untouched = all.data == nullptr && all.dtype == SPMD_DTYPE_INVALID;
  }
  return SPMD_OK;
}

// The names in the text: its runs of letters, digits and '_'.
std::vector<std::string> names_in(const std::string &text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      cur += c;
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// Python's spelling of an axis or a tuple of axes, the grammar shard_map.h
// documents: names, each bare or in matching quotes, separated by commas
// (one trailing comma allowed), inside parentheses or not; spaces between
// tokens; "()" the empty tuple. Written as a regular expression, apart
// from the parser it checks.
bool python_spelling(const std::string &text) {
  static const std::regex grammar([] {
    const std::string item = R"((?:\w+|'\w+'|"\w+"))";
    const std::string list = item + R"((?:\s*,\s*)" + item + R"()*(?:\s*,)?)";
    return R"(^\s*(?:\(\s*(?:)" + list + R"()?\s*\)|)" + list + R"()\s*$)";
  }());
  return std::regex_match(text, grammar);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fixture();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Fixture &f = fixture();
  fuzz::Bytes in(data, size);
  const size_t which = in.pick(static_cast<unsigned>(f.meshes.size()));
  const fuzz::MeshDef &def = f.defs[which];
  const std::string text = fuzz::c_text(in.rest());

  // What the text means on this mesh, by the documented rules. "()", the
  // empty tuple, may be taken as no axes (every device alone).
  const std::vector<std::string> names = names_in(text);
  std::string bare;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) bare += c;
  const bool empty_tuple = bare == "()";
  std::vector<size_t> axes;
  bool unknown_or_repeated = names.empty() && !empty_tuple;
  for (const auto &n : names) {
    size_t a = 0;
    while (a < def.names.size() && n != def.names[a]) ++a;
    if (a == def.names.size()) {
      unknown_or_repeated = true;
      continue;
    }
    for (size_t b : axes) unknown_or_repeated |= b == a;
    axes.push_back(a);
  }

  Run run;
  run.axes = text.c_str();
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.timeout_ms = 2000;  // every device calls every collective: no wait is expected
  spmd_clear_error();
  const spmd_status st = spmd_shard_map(f.meshes[which], probe, &run, 0, nullptr, nullptr, 0,
                                        nullptr, &o, nullptr);
  const spmd_status accepted = run.seen[0].index_st;
  // A collective that fails fails the shard_map, with its status.
  FUZZ_CHECK(st == accepted, "the shard_map on \"%s\" gave %d, axis_index %d", text.c_str(),
             (int)st, (int)accepted);
  for (int d = 0; d < kDevices; ++d) {
    const Seen &s = run.seen[d];
    FUZZ_CHECK(s.ran, "device %d never ran", d);
    fuzz::check_status(s.index_st, "spmd_ctx_axis_index");
    fuzz::check_status(s.psum_st, "spmd_ctx_psum");
    FUZZ_CHECK(s.index_st == accepted && s.size_st == accepted && s.psum_st == accepted &&
                   s.gather_st == accepted,
               "device %d on \"%s\": axis_index %d, axis_size %d, psum %d, all_gather %d, "
               "device 0's axis_index %d",
               d, text.c_str(), (int)s.index_st, (int)s.size_st, (int)s.psum_st,
               (int)s.gather_st, (int)accepted);
    if (accepted != SPMD_OK) {
      FUZZ_CHECK(s.index == kUntouched && s.size == kUntouched && s.psum_out_untouched &&
                     s.gather_out_untouched,
                 "a refused \"%s\" wrote an output", text.c_str());
      const std::pair<const std::string *, const char *> errors[] = {
          {&s.index_error, "spmd_ctx_axis_index: "},
          {&s.size_error, "spmd_ctx_axis_size: "},
          {&s.psum_error, "spmd_ctx_psum: "},
          {&s.gather_error, "spmd_ctx_all_gather: "}};
      for (const auto &[msg, head] : errors)
        FUZZ_CHECK(msg->rfind(head, 0) == 0 && fuzz::contains(*msg, "axes"),
                   "the message \"%s\" does not start with \"%s\" and name axes", msg->c_str(),
                   head);
    }
  }

  // The planned collective takes the text as the shard_map does.
  spmd_collective_options co = SPMD_COLLECTIVE_OPTIONS_INIT;
  co.timeout_ms = 2000;
  const int64_t shape[1] = {2};
  spmd_collective *coll = fuzz::sentinel<spmd_collective>();
  spmd_clear_error();
  const spmd_status planned = spmd_collective_create(
      f.replicated[which], SPMD_COLLECTIVE_PSUM, text.c_str(), SPMD_F32, 1, shape, &co, &coll);
  fuzz::check_status(planned, "spmd_collective_create");
  FUZZ_CHECK(planned == accepted, "\"%s\": spmd_collective_create gave %d, axis_index %d",
             text.c_str(), (int)planned, (int)accepted);

  if (accepted != SPMD_OK) {
    FUZZ_CHECK(coll == fuzz::sentinel<spmd_collective>(),
               "a failed spmd_collective_create wrote its output");
    fuzz::check_failure(planned, "spmd_collective_create", "axes");
    FUZZ_CHECK(unknown_or_repeated || !python_spelling(text),
               "\"%s\" is spelt as Python spells axes, with distinct mesh axes, yet refused",
               text.c_str());
    return 0;
  }
  FUZZ_CHECK(!unknown_or_repeated,
             "\"%s\" names no axis, an axis twice or one mesh %zu lacks, yet is accepted",
             text.c_str(), which);
  FUZZ_CHECK(python_spelling(text), "\"%s\" is not spelt as Python spells axes, yet is accepted",
             text.c_str());

  // The meaning: the names in order.
  int64_t want_size = 1;
  for (size_t a : axes) want_size *= def.shape[a];
  for (int d = 0; d < kDevices; ++d) {
    // Devices are laid out 0, 1, ... row-major over the mesh.
    std::vector<int64_t> coords(def.shape.size());
    int64_t rest = d;
    for (size_t a = def.shape.size(); a-- > 0;) {
      coords[a] = rest % def.shape[a];
      rest /= def.shape[a];
    }
    int64_t want_index = 0;
    for (size_t a : axes) want_index = want_index * def.shape[a] + coords[a];
    const Seen &s = run.seen[d];
    FUZZ_CHECK(s.size == want_size, "\"%s\": axis_size %lld, want %lld", text.c_str(),
               (long long)s.size, (long long)want_size);
    FUZZ_CHECK(s.index == want_index, "\"%s\" on device %d: axis_index %lld, want %lld",
               text.c_str(), d, (long long)s.index, (long long)want_index);
    FUZZ_CHECK(s.psum == static_cast<float>(want_size), "\"%s\": psum of ones %g, want %lld",
               text.c_str(), s.psum, (long long)want_size);
    FUZZ_CHECK(static_cast<int64_t>(s.gathered.size()) == want_size &&
                   (s.gathered_ndim == 1 || empty_tuple),
               "\"%s\": all_gather gave %zu values in %zu dimensions", text.c_str(),
               s.gathered.size(), s.gathered_ndim);
    for (size_t i = 0; i < s.gathered.size(); ++i)
      FUZZ_CHECK(s.gathered[i] == static_cast<int32_t>(i),
                 "\"%s\" on device %d: all_gather of axis_index has %d at %zu", text.c_str(), d,
                 s.gathered[i], i);
  }

  spmd_array *summed = nullptr;
  FUZZ_CHECK(spmd_collective_execute(coll, f.ones[which], &summed) == SPMD_OK,
             "executing the planned psum over \"%s\"", text.c_str());
  float host[2] = {0, 0};
  FUZZ_CHECK(spmd_array_to_host(summed, host, sizeof host) == SPMD_OK, "to_host");
  FUZZ_CHECK(host[0] == static_cast<float>(want_size) && host[1] == host[0],
             "\"%s\": the planned psum of ones gave %g, %g, want %lld", text.c_str(), host[0],
             host[1], (long long)want_size);
  spmd_array_destroy(summed);
  spmd_collective_destroy(coll);
  return 0;
}
