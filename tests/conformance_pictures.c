/* Conformance family 3, pictures (tests/conformance/pictures/): libspmd's
 * spmd_sharding_visualize must print jax.debug.visualize_sharding's
 * picture (use_color=False, console 80 columns unless the case says
 * otherwise) character for character,
 * including tables wider than the console, which rich narrows. */
#include <stdlib.h>

#include "conformance.h"
#include "conformance_cases.h"
#include "spmd_test.h"

/* The first line where two texts differ, for the report. */
static void describe_difference(char *detail, size_t size, const char *got, const char *want) {
  int line = 1;
  const char *g = got, *w = want;
  while (*g && *w && *g == *w) {
    if (*g == '\n') ++line;
    ++g;
    ++w;
  }
  conformance_detail(detail, size, "  first difference on line %d\n  libspmd:\n%s  JAX:\n%s", line,
                     got, want);
}

static void check_case(conformance_tally *tally, spmd_runtime *rt,
                       const conformance_meshes *meshes, const json_value *c) {
  const char *name = json_string(conformance_member(c, "name", "pictures case"));
  if (name == NULL) fail_msg("pictures: a case name is not a string");
  const char *want = json_string(conformance_member(c, "picture", name));
  if (want == NULL) fail_msg("%s: picture is not a string", name);
  int64_t shape[SPMD_MAX_NDIM];
  const size_t ndim = conformance_ints(conformance_member(c, "shape", name), shape, SPMD_MAX_NDIM, name);

  spmd_sharding *sharding = NULL;
  const json_value *single = json_get(c, "single_device");
  if (single != NULL) {
    assert_ok(spmd_sharding_single_device(rt, (int)json_int(single, -1), &sharding));
  } else {
    spmd_mesh *mesh = conformance_meshes_find(meshes, json_string(conformance_member(c, "mesh", name)), name);
    spmd_spec *spec = conformance_spec(conformance_member(c, "spec", name), name);
    assert_ok(spmd_sharding_named(mesh, spec, &sharding));
    spmd_spec_destroy(spec);
  }
  spmd_visualize_options options = SPMD_VISUALIZE_OPTIONS_INIT;
  options.max_width = (int)json_int(json_get(c, "max_width"), 80);
  char *got = NULL;
  char detail[16384] = "";
  if (spmd_sharding_visualize(sharding, ndim, shape, &options, &got) != SPMD_OK) {
    conformance_detail(detail, sizeof detail, "  spmd_sharding_visualize: %s\n", spmd_last_error());
    conformance_record(tally, name, 0, detail);
  } else {
    const int same = strcmp(test_platform_text(got), want) == 0;
    if (!same) describe_difference(detail, sizeof detail, got, want);
    conformance_record(tally, name, same, detail);
    spmd_string_free(got);
  }
  spmd_sharding_destroy(sharding);
}

void conformance_pictures(conformance_tally *tally) {
  conformance_file f;
  conformance_file_open(&f, "pictures");
  for (size_t i = 0; i < json_count(f.cases); ++i)
    check_case(tally, f.runtime, &f.meshes, json_at(f.cases, i));
  conformance_file_close(&f);
}
