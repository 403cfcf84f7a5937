// spmd_sharding_named_text on any text, against a few fixed meshes (the
// first byte picks one). Properties:
//  - it agrees with spmd_sharding_named(mesh, spmd_spec_parse(text)): the
//    same status, and equal shardings that print the same on success;
//  - it succeeds exactly when the text parses and every axis it names is
//    an axis of the mesh;
//  - on success the sharding's spec equals the parsed one, it prints as
//    NamedSharding(mesh=<the mesh>, spec=<the spec>, ...), it spans the
//    whole mesh, it is fully replicated exactly when every named axis has
//    size 1, and the text of its spec gives the same sharding back;
//  - on failure the output is untouched and the message starts with
//    spmd_sharding_named_text and quotes the spec (or the missing axis).
#include "fuzz_common.h"

namespace {

struct Fixture {
  spmd_runtime *rt = nullptr;
  std::vector<fuzz::MeshDef> defs;
  std::vector<spmd_mesh *> meshes;
};

Fixture &fixture() {
  static Fixture f = [] {
    Fixture x;
    x.rt = fuzz::make_runtime(8);
    x.defs = {
        {{8}, {"x"}, {}},
        {{2, 4}, {"x", "y"}, {}},
        {{2, 2, 2}, {"a", "b", "c"}, {}},
        {{4, 2}, {"data", "model"}, {7, 6, 5, 4, 3, 2, 1, 0}},
        {{1, 8}, {"one", "x"}, {}},
    };
    for (const auto &d : x.defs) x.meshes.push_back(fuzz::make_mesh(x.rt, d));
    return x;
  }();
  return f;
}

// The size of `axis` in the mesh, or 0 when the mesh has no such axis.
int64_t axis_size(const fuzz::MeshDef &def, const std::string &axis) {
  for (size_t i = 0; i < def.names.size(); ++i)
    if (axis == def.names[i]) return def.shape[i];
  return 0;
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
  spmd_mesh *mesh = f.meshes[which];
  const std::string text = fuzz::c_text(in.rest());

  spmd_clear_error();
  spmd_sharding *from_text = fuzz::sentinel<spmd_sharding>();
  const spmd_status st_text = spmd_sharding_named_text(mesh, text.c_str(), &from_text);
  fuzz::check_status(st_text, "spmd_sharding_named_text");
  const std::string text_error = spmd_last_error();

  spmd_spec *spec = nullptr;
  const spmd_status st_parse = spmd_spec_parse(text.c_str(), &spec);
  if (st_parse != SPMD_OK) {
    FUZZ_CHECK(st_text == st_parse, "\"%s\" fails to parse (%d) but named_text gave %d",
               text.c_str(), (int)st_parse, (int)st_text);
    FUZZ_CHECK(from_text == fuzz::sentinel<spmd_sharding>(),
               "a failed spmd_sharding_named_text wrote its output");
    spmd_clear_error();
    spmd_sharding_named_text(mesh, text.c_str(), &from_text);
    fuzz::check_failure(st_text, "spmd_sharding_named_text", "'" + text + "'");
    return 0;
  }

  // Which axis, if any, the mesh lacks.
  const fuzz::Dims dims = fuzz::spec_dims(spec);
  std::string missing;
  int64_t split = 1;
  for (const auto &axes : dims)
    for (const auto &a : axes) {
      const int64_t n = axis_size(def, a);
      if (n == 0 && missing.empty()) missing = a;
      split *= n ? n : 1;
    }

  spmd_sharding *structured = fuzz::sentinel<spmd_sharding>();
  const spmd_status st_struct = spmd_sharding_named(mesh, spec, &structured);
  fuzz::check_status(st_struct, "spmd_sharding_named");
  FUZZ_CHECK(st_text == st_struct, "\"%s\": named_text gave %d, named gave %d", text.c_str(),
             (int)st_text, (int)st_struct);
  FUZZ_CHECK((st_struct == SPMD_OK) == missing.empty(),
             "\"%s\" on mesh %zu: status %d, yet the axis the mesh lacks is '%s'", text.c_str(),
             which, (int)st_struct, missing.c_str());

  if (st_struct != SPMD_OK) {
    FUZZ_CHECK(from_text == fuzz::sentinel<spmd_sharding>() &&
                   structured == fuzz::sentinel<spmd_sharding>(),
               "a failed named sharding wrote its output");
    FUZZ_CHECK(fuzz::contains(text_error, "spmd_sharding_named_text: ") &&
                   fuzz::contains(text_error, "'" + missing + "'"),
               "the message \"%s\" does not name the missing axis '%s'", text_error.c_str(),
               missing.c_str());
    spmd_clear_error();
    spmd_sharding_named(mesh, spec, &structured);
    fuzz::check_failure(st_struct, "spmd_sharding_named", "'" + missing + "'");
    spmd_spec_destroy(spec);
    return 0;
  }

  FUZZ_CHECK(fuzz::shardings_equal(from_text, structured), "the two shardings of \"%s\" differ",
             text.c_str());
  const std::string printed = fuzz::sharding_string(from_text);
  FUZZ_CHECK(printed == fuzz::sharding_string(structured), "the two shardings of \"%s\" print "
             "differently", text.c_str());

  // What the sharding says about itself.
  spmd_spec *back = nullptr;
  FUZZ_CHECK(spmd_sharding_spec(from_text, &back) == SPMD_OK, "spmd_sharding_spec failed");
  FUZZ_CHECK(fuzz::specs_equal(back, spec), "the sharding's spec differs from \"%s\"",
             text.c_str());
  const std::string spec_text = fuzz::spec_string(back);
  char *mesh_text = nullptr;
  FUZZ_CHECK(spmd_mesh_to_string(mesh, &mesh_text) == SPMD_OK, "spmd_mesh_to_string failed");
  const std::string mesh_str = fuzz::take_string(mesh_text);
  FUZZ_CHECK(fuzz::contains(printed, "mesh=" + mesh_str) &&
                 fuzz::contains(printed, "spec=" + spec_text),
             "\"%s\" does not show mesh=%s and spec=%s", printed.c_str(), mesh_str.c_str(),
             spec_text.c_str());
  size_t devices = 0;
  FUZZ_CHECK(spmd_sharding_device_count(from_text, &devices) == SPMD_OK, "device_count failed");
  size_t mesh_devices = 1;
  for (int64_t n : def.shape) mesh_devices *= static_cast<size_t>(n);
  FUZZ_CHECK(devices == mesh_devices, "%zu devices on a mesh of %zu", devices, mesh_devices);
  int replicated = -1;
  FUZZ_CHECK(spmd_sharding_is_fully_replicated(from_text, &replicated) == SPMD_OK,
             "is_fully_replicated failed");
  FUZZ_CHECK(replicated == (split == 1), "\"%s\" splits %lld ways, is_fully_replicated says %d",
             text.c_str(), (long long)split, replicated);

  // The spec's own text gives the same sharding back.
  spmd_sharding *again = nullptr;
  FUZZ_CHECK(spmd_sharding_named_text(mesh, spec_text.c_str(), &again) == SPMD_OK,
             "\"%s\" from to_string is refused", spec_text.c_str());
  FUZZ_CHECK(fuzz::shardings_equal(again, from_text), "\"%s\" gives another sharding",
             spec_text.c_str());
  FUZZ_CHECK(fuzz::sharding_string(again) == printed, "\"%s\" prints otherwise",
             spec_text.c_str());

  spmd_sharding_destroy(again);
  spmd_spec_destroy(back);
  spmd_sharding_destroy(structured);
  spmd_sharding_destroy(from_text);
  spmd_spec_destroy(spec);
  return 0;
}
