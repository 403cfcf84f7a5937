/* Conformance family 2, text (tests/conformance/text/): str() of meshes,
 * specs and shardings, and repr() / print() of arrays of every dtype, as
 * JAX prints them, mapped to the seeds' forms where this JAX prints newer
 * ones (conformance/refio.py seed_form; docs/differences.md). */
#include <stdlib.h>

#include "conformance.h"
#include "conformance_cases.h"
#include "spmd_test.h"

static spmd_dtype dtype_named(const char *name) {
  spmd_dtype d = SPMD_DTYPE_INVALID;
  if (name == NULL || spmd_dtype_from_name(name, &d) != SPMD_OK)
    fail_msg("unknown dtype '%s' in the text references", name ? name : "(null)");
  return d;
}

/* Compares one printed text; appends the difference to detail. */
static int same_text(char *got, const char *want, const char *what, char *detail, size_t size) {
  test_platform_text(got);
  const int same = got != NULL && strcmp(got, want) == 0;
  if (!same)
    conformance_detail(detail, size, "  %s:\n    libspmd: %s\n    expected: %s\n", what,
                       got ? got : "(failed)", want);
  spmd_string_free(got);
  return same;
}

static spmd_sharding *placement(spmd_runtime *rt, const conformance_meshes *meshes,
                                const json_value *c, const char *name) {
  spmd_sharding *s = NULL;
  const json_value *single = json_get(c, "single_device");
  if (single != NULL) {
    assert_ok(spmd_sharding_single_device(rt, (int)json_int(single, -1), &s));
    return s;
  }
  spmd_mesh *mesh = conformance_meshes_find(meshes, json_string(conformance_member(c, "mesh", name)), name);
  spmd_spec *spec = conformance_spec(conformance_member(c, "spec", name), name);
  assert_ok(spmd_sharding_named(mesh, spec, &s));
  spmd_spec_destroy(spec);
  return s;
}

static void check_case(conformance_tally *tally, spmd_runtime *rt,
                       const conformance_meshes *meshes, const json_value *c) {
  const char *name = json_string(conformance_member(c, "name", "text case"));
  const char *kind = json_string(conformance_member(c, "kind", name ? name : "text case"));
  if (name == NULL || kind == NULL) fail_msg("text: a case lacks a name or kind");
  char detail[16384] = "";
  int agreed = 1;
  char *got = NULL;

  if (strcmp(kind, "array") == 0) {
    const json_value *expected = conformance_member(c, "expected", name);
    const char *want_repr = json_string(conformance_member(expected, "repr", name));
    const char *want_str = json_string(conformance_member(expected, "str", name));
    if (want_repr == NULL || want_str == NULL) fail_msg("%s: expected texts are not strings", name);
    const spmd_dtype dtype = dtype_named(json_string(conformance_member(c, "dtype", name)));
    int64_t shape[SPMD_MAX_NDIM];
    const size_t ndim = conformance_ints(conformance_member(c, "shape", name), shape, SPMD_MAX_NDIM, name);
    size_t nbytes = 0;
    unsigned char *data = conformance_hex(c, &nbytes, name);
    spmd_sharding *sharding = placement(rt, meshes, c, name);
    spmd_array *array = NULL;
    if (spmd_array_from_host(sharding, dtype, ndim, shape, data, nbytes, &array) != SPMD_OK) {
      agreed = 0;
      conformance_detail(detail, sizeof detail, "  spmd_array_from_host: %s\n", spmd_last_error());
    } else {
      got = NULL;
      if (spmd_array_repr(array, &got) != SPMD_OK) got = NULL;
      agreed &= same_text(got, want_repr, "repr", detail, sizeof detail);
      got = NULL;
      if (spmd_array_str(array, &got) != SPMD_OK) got = NULL;
      agreed &= same_text(got, want_str, "str", detail, sizeof detail);
    }
    spmd_array_destroy(array);
    spmd_sharding_destroy(sharding);
    free(data);
    conformance_record(tally, name, agreed, detail);
    return;
  }

  const char *want = json_string(conformance_member(c, "expected", name));
  if (want == NULL) fail_msg("%s: expected is not a string", name);
  if (strcmp(kind, "mesh") == 0) {
    spmd_mesh *mesh = conformance_meshes_find(meshes, json_string(conformance_member(c, "mesh", name)), name);
    if (spmd_mesh_to_string(mesh, &got) != SPMD_OK) got = NULL;
    agreed = same_text(got, want, "str(mesh)", detail, sizeof detail);
  } else if (strcmp(kind, "spec") == 0) {
    spmd_spec *spec = conformance_spec(conformance_member(c, "spec", name), name);
    if (spmd_spec_to_string(spec, &got) != SPMD_OK) got = NULL;
    agreed = same_text(got, want, "str(spec)", detail, sizeof detail);
    /* The text JAX printed parses back to the same spec. */
    const char *jax = json_string(conformance_member(c, "jax", name));
    spmd_spec *parsed = NULL;
    int equal = 0;
    if (jax == NULL || spmd_spec_parse(jax, &parsed) != SPMD_OK ||
        spmd_spec_equal(parsed, spec, &equal) != SPMD_OK || !equal) {
      agreed = 0;
      conformance_detail(detail, sizeof detail, "  spmd_spec_parse(\"%s\") is not the spec: %s\n",
                         jax ? jax : "", spmd_last_error());
    }
    spmd_spec_destroy(parsed);
    spmd_spec_destroy(spec);
  } else if (strcmp(kind, "named_sharding") == 0 || strcmp(kind, "single_device_sharding") == 0) {
    if (strcmp(kind, "single_device_sharding") == 0 && json_get(c, "single_device") == NULL) {
      /* The device is under "device" for sharding cases. */
      spmd_sharding *s = NULL;
      assert_ok(spmd_sharding_single_device(rt, (int)json_int(conformance_member(c, "device", name), -1), &s));
      if (spmd_sharding_to_string(s, &got) != SPMD_OK) got = NULL;
      spmd_sharding_destroy(s);
    } else {
      spmd_sharding *s = placement(rt, meshes, c, name);
      if (spmd_sharding_to_string(s, &got) != SPMD_OK) got = NULL;
      spmd_sharding_destroy(s);
    }
    agreed = same_text(got, want, "str(sharding)", detail, sizeof detail);
  } else {
    fail_msg("%s: unknown kind '%s'", name, kind);
  }
  conformance_record(tally, name, agreed, detail);
}

void conformance_text(conformance_tally *tally) {
  conformance_file f;
  conformance_file_open(&f, "text");
  for (size_t i = 0; i < json_count(f.cases); ++i)
    check_case(tally, f.runtime, &f.meshes, json_at(f.cases, i));
  conformance_file_close(&f);
}
