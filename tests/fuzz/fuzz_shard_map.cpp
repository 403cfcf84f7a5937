// spmd_shard_map_text with fuzzed in_specs/out_specs against spmd_shard_map
// given the parsed specs. The first byte picks the mesh, the number of
// inputs (f32[4,8], i32[6], f32[] in turn) and outputs, check_rep and
// whether device 0 leaves its outputs unset; then one spec per line,
// inputs first. The callback hands input
// j % n_in back as output j. Properties:
//  - a spec that does not parse fails the text call with
//    SPMD_ERR_INVALID_ARGUMENT naming it (in_specs[i] / out_specs[j]);
//  - otherwise both calls give the same status, and on success outputs of
//    the same dtype, rank, sharding and values;
//  - an output whose spec equals its input's holds the input's values;
//  - a failed call writes no output.
#include "fuzz_common.h"

namespace {

constexpr int kDevices = 8;
constexpr size_t kMaxIo = 3;

struct Fixture {
  spmd_runtime *rt = nullptr;
  std::vector<spmd_mesh *> meshes;
  std::vector<std::vector<spmd_array *>> inputs;  // per mesh: f32[4,8], i32[6], f32[]
};

spmd_array *arange(spmd_mesh *m, const char *spec, spmd_dtype dt, size_t ndim,
                   const int64_t *shape) {
  spmd_sharding *s = nullptr;
  spmd_array *a = nullptr;
  if (spmd_sharding_named_text(m, spec, &s) != SPMD_OK ||
      spmd_array_arange(s, dt, ndim, shape, 1.0, 1.0, &a) != SPMD_OK) {
    std::fprintf(stderr, "fixture: %s\n", spmd_last_error());
    std::abort();
  }
  spmd_sharding_destroy(s);
  return a;
}

Fixture &fixture() {
  static Fixture f = [] {
    Fixture x;
    x.rt = fuzz::make_runtime(kDevices);
    x.meshes = {fuzz::make_mesh(x.rt, {{2, 4}, {"x", "y"}, {}}),
                fuzz::make_mesh(x.rt, {{2, 2, 2}, {"a", "b", "c"}, {}})};
    const int64_t s2[2] = {4, 8}, s1[1] = {6};
    const char *first[2] = {"x, y", "a, (b, c)"};
    for (size_t i = 0; i < x.meshes.size(); ++i)
      x.inputs.push_back({arange(x.meshes[i], first[i], SPMD_F32, 2, s2),
                          arange(x.meshes[i], "", SPMD_I32, 1, s1),
                          arange(x.meshes[i], "", SPMD_F32, 0, nullptr)});
    return x;
  }();
  return f;
}

struct Program {
  size_t n_in, n_out;
  bool device0_skips;
};

spmd_status hand_back(spmd_ctx *ctx, void *user) {
  const Program &p = *static_cast<const Program *>(user);
  int device = -1;
  spmd_ctx_device_id(ctx, &device);
  if (p.device0_skips && device == 0) return SPMD_OK;
  for (size_t j = 0; j < p.n_out; ++j) {
    spmd_block b = SPMD_BLOCK_INIT;
    spmd_status st = spmd_ctx_input(ctx, j % p.n_in, &b);
    if (st != SPMD_OK) return st;
    st = spmd_ctx_set_output(ctx, j, &b);
    if (st != SPMD_OK) return st;
  }
  return SPMD_OK;
}

std::vector<unsigned char> host_bytes(const spmd_array *a) {
  size_t n = 0;
  FUZZ_CHECK(spmd_array_nbytes(a, &n) == SPMD_OK, "spmd_array_nbytes");
  std::vector<unsigned char> v(n);
  FUZZ_CHECK(spmd_array_to_host(a, v.data(), n) == SPMD_OK, "spmd_array_to_host");
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fixture();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Fixture &f = fixture();
  fuzz::Bytes in(data, size);
  const uint8_t head = in.byte();
  const size_t which = head & 1;
  // Bit 0: the mesh; bits 1-2: inputs - 1 (3 reads as 0); bits 3-4: outputs;
  // bit 6: device 0 sets no output; bit 7: check_rep.
  Program p{1 + ((head >> 1) & 3u) % kMaxIo, (head >> 3) & 3u, ((head >> 6) & 1) != 0};
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.check_rep = head >> 7;
  o.timeout_ms = 1000;  // the callback calls no collective

  std::vector<std::string> in_text, out_text;
  for (size_t i = 0; i < p.n_in; ++i) in_text.push_back(fuzz::c_text(in.line()));
  for (size_t j = 0; j < p.n_out; ++j) out_text.push_back(fuzz::c_text(in.line()));
  std::vector<const char *> in_ptrs, out_ptrs;
  for (const auto &s : in_text) in_ptrs.push_back(s.c_str());
  for (const auto &s : out_text) out_ptrs.push_back(s.c_str());
  std::vector<spmd_array *> inputs(f.inputs[which].begin(), f.inputs[which].begin() + p.n_in);

  spmd_array *outs[kMaxIo];
  for (auto &o_ : outs) o_ = fuzz::sentinel<spmd_array>();
  spmd_clear_error();
  const spmd_status st_text =
      spmd_shard_map_text(f.meshes[which], hand_back, &p, p.n_in, inputs.data(), in_ptrs.data(),
                          p.n_out, out_ptrs.data(), &o, outs);
  fuzz::check_status(st_text, "spmd_shard_map_text");
  const std::string text_error = spmd_last_error();
  if (st_text != SPMD_OK)
    for (size_t j = 0; j < p.n_out; ++j)
      FUZZ_CHECK(outs[j] == fuzz::sentinel<spmd_array>(), "a failed shard_map_text wrote "
                 "outputs[%zu]", j);

  // The parsed specs, or the first that does not parse.
  std::vector<spmd_spec *> in_specs, out_specs;
  std::string unparsable;
  auto parse_all = [&](const std::vector<std::string> &texts, std::vector<spmd_spec *> &specs,
                       const char *label) {
    for (size_t i = 0; i < texts.size(); ++i) {
      spmd_spec *s = nullptr;
      if (spmd_spec_parse(texts[i].c_str(), &s) == SPMD_OK) {
        specs.push_back(s);
      } else if (unparsable.empty()) {
        unparsable = std::string(label) + "[" + std::to_string(i) + "]";
      }
    }
  };
  parse_all(in_text, in_specs, "in_specs");
  parse_all(out_text, out_specs, "out_specs");
  auto release = [&] {
    for (auto *s : in_specs) spmd_spec_destroy(s);
    for (auto *s : out_specs) spmd_spec_destroy(s);
  };

  if (!unparsable.empty()) {
    FUZZ_CHECK(st_text == SPMD_ERR_INVALID_ARGUMENT, "an unparsable %s gave status %d",
               unparsable.c_str(), (int)st_text);
    FUZZ_CHECK(text_error.rfind("spmd_shard_map_text: " + unparsable, 0) == 0,
               "the message \"%s\" does not start by naming %s", text_error.c_str(),
               unparsable.c_str());
    release();
    return 0;
  }

  spmd_array *souts[kMaxIo];
  for (auto &o_ : souts) o_ = fuzz::sentinel<spmd_array>();
  const spmd_status st_struct =
      spmd_shard_map(f.meshes[which], hand_back, &p, p.n_in, inputs.data(), in_specs.data(),
                     p.n_out, out_specs.data(), &o, souts);
  fuzz::check_status(st_struct, "spmd_shard_map");
  FUZZ_CHECK(st_text == st_struct, "shard_map_text gave %d (%s), shard_map %d", (int)st_text,
             text_error.c_str(), (int)st_struct);
  if (st_struct != SPMD_OK) {
    for (size_t j = 0; j < p.n_out; ++j)
      FUZZ_CHECK(souts[j] == fuzz::sentinel<spmd_array>(), "a failed shard_map wrote "
                 "outputs[%zu]", j);
    release();
    return 0;
  }

  for (size_t j = 0; j < p.n_out; ++j) {
    spmd_dtype dt_a = SPMD_DTYPE_INVALID, dt_b = SPMD_DTYPE_INVALID;
    size_t nd_a = 99, nd_b = 98;
    FUZZ_CHECK(spmd_array_dtype(outs[j], &dt_a) == SPMD_OK &&
                   spmd_array_dtype(souts[j], &dt_b) == SPMD_OK && dt_a == dt_b,
               "outputs[%zu]: dtypes differ", j);
    FUZZ_CHECK(spmd_array_ndim(outs[j], &nd_a) == SPMD_OK &&
                   spmd_array_ndim(souts[j], &nd_b) == SPMD_OK && nd_a == nd_b,
               "outputs[%zu]: ranks differ", j);
    spmd_sharding *sa = nullptr, *sb = nullptr;
    FUZZ_CHECK(spmd_array_sharding(outs[j], &sa) == SPMD_OK &&
                   spmd_array_sharding(souts[j], &sb) == SPMD_OK,
               "spmd_array_sharding");
    FUZZ_CHECK(fuzz::shardings_equal(sa, sb), "outputs[%zu]: shardings differ", j);
    spmd_sharding_destroy(sa);
    spmd_sharding_destroy(sb);
    const auto va = host_bytes(outs[j]);
    FUZZ_CHECK(va == host_bytes(souts[j]), "outputs[%zu]: values differ", j);
    // Handed back under the spec it came in with, an input is unchanged.
    const size_t i = j % p.n_in;
    if (fuzz::specs_equal(out_specs[j], in_specs[i]))
      FUZZ_CHECK(va == host_bytes(inputs[i]), "outputs[%zu] under its input's spec '%s' "
                 "differs from inputs[%zu]", j, out_text[j].c_str(), i);
    spmd_array_destroy(outs[j]);
    spmd_array_destroy(souts[j]);
  }
  release();
  return 0;
}
