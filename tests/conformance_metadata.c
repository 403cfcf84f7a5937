/* Conformance family 1, shard metadata (tests/conformance/metadata/):
 * for each mesh, spec and global shape, every device's block [start, stop)
 * and replica id as JAX's devices_indices_map and Shard.replica_id give
 * them, and whether the sharding is fully replicated. Where JAX refuses an
 * uneven shape, libspmd must accept it and follow its own documented rule
 * (ceil(D/n) long shards, the last ones shorter or empty; docs/differences.md).
 * Where JAX accepts the shape, an array of it (zeros, possibly with a
 * dimension of size 0) must report the same metadata through
 * spmd_array_shard_info as the sharding does through
 * spmd_sharding_shard_info. Pairs of shardings are compared with JAX's ==. */
#include "conformance.h"
#include "conformance_cases.h"
#include "spmd_test.h"

/* The position of each device's block along each dimension under libspmd's
 * documented rule, from the mesh coordinates: row-major over the spec's axes
 * of that dimension. */
static void expected_uneven(spmd_mesh *mesh, spmd_spec *spec, int device, size_t ndim,
                            const int64_t *shape, int64_t *start, int64_t *stop) {
  int64_t coords[SPMD_MAX_NDIM];
  size_t spec_ndim = 0;
  assert_ok(spmd_mesh_device_coords(mesh, device, sizeof coords / sizeof coords[0], coords, NULL));
  assert_ok(spmd_spec_ndim(spec, &spec_ndim));
  for (size_t d = 0; d < ndim; ++d) {
    int64_t index = 0, n = 1;
    size_t naxes = 0;
    if (d < spec_ndim) assert_ok(spmd_spec_dim_size(spec, d, &naxes));
    for (size_t i = 0; i < naxes; ++i) {
      const char *name = NULL;
      size_t axis = 0;
      int64_t size = 0;
      assert_ok(spmd_spec_dim_axis(spec, d, i, &name));
      assert_ok(spmd_mesh_axis_index(mesh, name, &axis));
      assert_ok(spmd_mesh_axis_size(mesh, axis, &size));
      index = index * size + coords[axis];
      n *= size;
    }
    const int64_t chunk = (shape[d] + n - 1) / n;
    start[d] = index * chunk < shape[d] ? index * chunk : shape[d];
    stop[d] = start[d] + chunk < shape[d] ? start[d] + chunk : shape[d];
  }
}

static void check_case(conformance_tally *tally, const conformance_meshes *meshes,
                       const json_value *c) {
  const char *name = json_string(conformance_member(c, "name", "metadata case"));
  if (name == NULL) fail_msg("metadata: a case name is not a string");
  spmd_mesh *mesh = conformance_meshes_find(meshes, json_string(conformance_member(c, "mesh", name)), name);
  spmd_spec *spec = conformance_spec(conformance_member(c, "spec", name), name);
  int64_t shape[SPMD_MAX_NDIM];
  const size_t ndim = conformance_ints(conformance_member(c, "shape", name), shape, SPMD_MAX_NDIM, name);
  const json_value *shards = json_get(c, "shards");
  const int refused = json_get(c, "refused") != NULL;
  if (!refused && shards == NULL) fail_msg("%s: neither shards nor refused", name);

  char detail[2048] = "";
  int agreed = 1;
  spmd_sharding *sharding = NULL;
  if (spmd_sharding_named(mesh, spec, &sharding) != SPMD_OK) {
    conformance_detail(detail, sizeof detail, "  spmd_sharding_named: %s\n", spmd_last_error());
    conformance_record(tally, name, 0, detail);
    spmd_spec_destroy(spec);
    return;
  }

  int replicated = -1;
  assert_ok(spmd_sharding_is_fully_replicated(sharding, &replicated));
  const json_value *jr = conformance_member(c, "fully_replicated", name);
  if (jr->type != JSON_BOOL) fail_msg("%s: fully_replicated is not a bool", name);
  if (replicated != jr->boolean) {
    agreed = 0;
    conformance_detail(detail, sizeof detail, "  fully replicated: libspmd %d, JAX %d\n",
                       replicated, jr->boolean);
  }

  size_t count = 0;
  assert_ok(spmd_sharding_device_count(sharding, &count));
  spmd_array *array = NULL;
  if (!refused) assert_ok(spmd_array_zeros(sharding, SPMD_U8, ndim, shape, &array));
  if (!refused && json_count(shards) != count) {
    agreed = 0;
    conformance_detail(detail, sizeof detail, "  %zu shards, JAX has %zu\n", count, json_count(shards));
  }
  for (size_t i = 0; i < count; ++i) {
    spmd_shard_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (spmd_sharding_shard_info(sharding, ndim, shape, i, &info) != SPMD_OK) {
      agreed = 0;
      conformance_detail(detail, sizeof detail, "  shard %zu: %s\n", i, spmd_last_error());
      continue;
    }
    int64_t start[SPMD_MAX_NDIM], stop[SPMD_MAX_NDIM];
    int64_t replica = -1;
    if (refused) {
      /* JAX refuses this shape: libspmd's own rule. */
      expected_uneven(mesh, spec, info.device, ndim, shape, start, stop);
      const json_value *ids = conformance_member(c, "replica_ids", name);
      for (size_t j = 0; j < json_count(ids); ++j)
        if (json_int(json_at(json_at(ids, j), 0), -1) == info.device)
          replica = json_int(json_at(json_at(ids, j), 1), -1);
    } else {
      const json_value *ref = NULL;
      for (size_t j = 0; j < json_count(shards); ++j) {
        const json_value *s = json_at(shards, j);
        if (json_int(json_get(s, "device"), -1) == info.device) ref = s;
      }
      if (ref == NULL) {
        agreed = 0;
        conformance_detail(detail, sizeof detail, "  device %d holds a shard, not in JAX's map\n",
                           info.device);
        continue;
      }
      if (conformance_ints(conformance_member(ref, "start", name), start, SPMD_MAX_NDIM, name) != ndim ||
          conformance_ints(conformance_member(ref, "stop", name), stop, SPMD_MAX_NDIM, name) != ndim)
        fail_msg("%s: start/stop rank differs from the shape", name);
      replica = json_int(conformance_member(ref, "replica_id", name), -1);
    }
    int same = info.ndim == ndim && info.replica_id == replica;
    for (size_t d = 0; d < ndim; ++d)
      same = same && info.start[d] == start[d] && info.stop[d] == stop[d] &&
             info.local_shape[d] == stop[d] - start[d];
    if (array != NULL) {
      spmd_shard_info held;
      memset(&held, 0, sizeof held);
      held.struct_size = sizeof held;
      assert_ok(spmd_array_shard_info(array, i, &held));
      int agree = held.device == info.device && held.replica_id == info.replica_id &&
                  held.ndim == info.ndim;
      for (size_t d = 0; agree && d < ndim; ++d)
        agree = held.start[d] == info.start[d] && held.stop[d] == info.stop[d] &&
                held.local_shape[d] == info.local_shape[d];
      if (!agree) {
        agreed = 0;
        conformance_detail(detail, sizeof detail,
                           "  shard %zu: the array says device %d replica %d, the sharding "
                           "device %d replica %d\n",
                           i, held.device, held.replica_id, info.device, info.replica_id);
      }
    }
    if (!same) {
      agreed = 0;
      conformance_detail(detail, sizeof detail, "  device %d: libspmd [", info.device);
      for (size_t d = 0; d < info.ndim; ++d)
        conformance_detail(detail, sizeof detail, "%s%lld:%lld", d ? ", " : "",
                           (long long)info.start[d], (long long)info.stop[d]);
      conformance_detail(detail, sizeof detail, "] replica %d, %s [", info.replica_id,
                         refused ? "rule" : "JAX");
      for (size_t d = 0; d < ndim; ++d)
        conformance_detail(detail, sizeof detail, "%s%lld:%lld", d ? ", " : "",
                           (long long)start[d], (long long)stop[d]);
      conformance_detail(detail, sizeof detail, "] replica %lld\n", (long long)replica);
    }
  }
  conformance_record(tally, name, agreed, detail);
  spmd_array_destroy(array);
  spmd_sharding_destroy(sharding);
  spmd_spec_destroy(spec);
}

static spmd_sharding *pair_side(const conformance_meshes *meshes, const json_value *side,
                                const char *name) {
  spmd_mesh *mesh = conformance_meshes_find(meshes, json_string(conformance_member(side, "mesh", name)), name);
  spmd_spec *spec = conformance_spec(conformance_member(side, "spec", name), name);
  spmd_sharding *s = NULL;
  assert_ok(spmd_sharding_named(mesh, spec, &s));
  spmd_spec_destroy(spec);
  return s;
}

static void check_equality(conformance_tally *tally, const conformance_meshes *meshes,
                           const json_value *c) {
  const char *name = json_string(conformance_member(c, "name", "equality case"));
  if (name == NULL) fail_msg("metadata: an equality case name is not a string");
  spmd_sharding *a = pair_side(meshes, conformance_member(c, "a", name), name);
  spmd_sharding *b = pair_side(meshes, conformance_member(c, "b", name), name);
  int equal = -1, back = -1;
  assert_ok(spmd_sharding_equal(a, b, &equal));
  assert_ok(spmd_sharding_equal(b, a, &back));
  const json_value *jax = conformance_member(c, "equal", name);
  const json_value *trailing = conformance_member(c, "trailing_none_only", name);
  /* Specs that differ only by trailing Nones: JAX's == says different,
   * libspmd's documented rule says equal (docs/differences.md). */
  const int expected = trailing->boolean ? 1 : jax->boolean;
  char detail[256];
  snprintf(detail, sizeof detail, "  libspmd %d (reversed %d), expected %d (JAX's == %d)", equal,
           back, expected, jax->boolean);
  conformance_record(tally, name, equal == expected && back == expected, detail);
  spmd_sharding_destroy(a);
  spmd_sharding_destroy(b);
}

void conformance_metadata(conformance_tally *tally) {
  conformance_file f;
  conformance_file_open(&f, "metadata");
  for (size_t i = 0; i < json_count(f.cases); ++i) check_case(tally, &f.meshes, json_at(f.cases, i));
  const json_value *pairs = conformance_member(f.root, "equality", "metadata");
  for (size_t i = 0; i < json_count(pairs); ++i) check_equality(tally, &f.meshes, json_at(pairs, i));
  conformance_file_close(&f);
}
