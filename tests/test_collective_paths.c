/* Every collective gives the same answer by both of its paths: called
 * inside spmd_shard_map (each device its own call) and planned once as a
 * persistent spmd_collective. The shard_map runs with the persistent
 * plan's own output spec, so the two results must match in shape,
 * sharding and every value, for even blocks and for uneven ones. */
#include "collective_test_util.h"

typedef struct {
  const char *name;
  int mesh;                 /* 0: 'x' of 4; 1: ('x', 'y') of 2x2; 2: 'x' of 2 */
  int kind;                 /* OP_* */
  const char *axes;
  int64_t axis, concat;
  int tiled;
  size_t npairs;
  const int64_t *pairs;
  size_t ndim;
  int64_t shape[2];
  const char *spec;
  int expect_uneven_output; /* the result's blocks are not all alike */
} path_case;

static const int64_t kCycle4[8] = {0, 1, 1, 2, 2, 3, 3, 0};
static const int64_t kSwap2[4] = {0, 1, 1, 0};
static const int64_t kOneWay[2] = {0, 1};

static const path_case kCases[] = {
    {"psum even", 0, OP_PSUM, "x", 0, 0, 0, 0, NULL, 2, {8, 3}, "x", 0},
    {"psum uneven", 1, OP_PSUM, "y", 0, 0, 0, 0, NULL, 2, {3, 5}, "x", 1},
    {"psum over a tuple", 1, OP_PSUM, "(y, x)", 0, 0, 0, 0, NULL, 2, {4, 2}, "(x, y)", 0},
    {"pmean even", 0, OP_PMEAN, "x", 0, 0, 0, 0, NULL, 2, {8, 3}, "x", 0},
    {"pmean uneven", 1, OP_PMEAN, "y", 0, 0, 0, 0, NULL, 2, {3, 5}, "x", 1},
    {"pmax even", 0, OP_PMAX, "x", 0, 0, 0, 0, NULL, 2, {8, 4}, "None, x", 0},
    {"pmax uneven", 1, OP_PMAX, "y", 0, 0, 0, 0, NULL, 2, {5, 3}, "x", 1},
    {"pmin even", 0, OP_PMIN, "x", 0, 0, 0, 0, NULL, 2, {8, 3}, "x", 0},
    {"pmin uneven", 1, OP_PMIN, "y", 0, 0, 0, 0, NULL, 2, {5, 3}, "x", 1},
    {"all_gather tiled even", 0, OP_ALL_GATHER, "x", 0, 0, 1, 0, NULL, 2, {8, 3}, "x", 0},
    {"all_gather tiled uneven", 0, OP_ALL_GATHER, "x", 0, 0, 1, 0, NULL, 2, {7, 3}, "x", 0},
    {"all_gather tiled uneven, other axis", 1, OP_ALL_GATHER, "y", 1, 0, 1, 0, NULL, 2, {3, 3},
     "x, y", 1},
    {"all_gather untiled even", 0, OP_ALL_GATHER, "x", 1, 0, 0, 0, NULL, 2, {8, 3}, "x", 0},
    {"all_gather untiled uneven", 1, OP_ALL_GATHER, "y", 0, 0, 0, 0, NULL, 2, {3, 2}, "x", 1},
    {"psum_scatter even", 0, OP_PSUM_SCATTER, "x", 0, 0, 1, 0, NULL, 2, {8, 3}, "", 0},
    {"psum_scatter uneven", 0, OP_PSUM_SCATTER, "x", 0, 0, 1, 0, NULL, 2, {7, 3}, "", 1},
    {"psum_scatter uneven, sharded elsewhere", 1, OP_PSUM_SCATTER, "y", 1, 0, 1, 0, NULL, 2,
     {4, 3}, "x", 1},
    {"all_to_all even", 0, OP_ALL_TO_ALL, "x", 1, 0, 1, 0, NULL, 2, {8, 4}, "x", 0},
    {"all_to_all uneven concat", 0, OP_ALL_TO_ALL, "x", 1, 0, 1, 0, NULL, 2, {7, 4}, "x", 0},
    {"all_to_all uneven split", 0, OP_ALL_TO_ALL, "x", 1, 0, 1, 0, NULL, 2, {8, 6}, "x", 1},
    {"all_to_all split = concat, uneven", 2, OP_ALL_TO_ALL, "x", 0, 0, 1, 0, NULL, 1, {3, 0},
     "x", 1},
    {"all_to_all split = concat, even", 0, OP_ALL_TO_ALL, "x", 0, 0, 1, 0, NULL, 2, {16, 2},
     "x", 0},
    {"ppermute even", 0, OP_PPERMUTE, "x", 0, 0, 0, 4, kCycle4, 2, {8, 3}, "x", 0},
    {"ppermute uneven", 1, OP_PPERMUTE, "y", 0, 0, 0, 2, kSwap2, 2, {3, 5}, "x", 1},
    {"ppermute with a device that receives nothing", 2, OP_PPERMUTE, "x", 0, 0, 0, 1, kOneWay,
     2, {4, 2}, "x", 0},
};

static const spmd_collective_kind kKinds[] = {
    [OP_PSUM] = SPMD_COLLECTIVE_PSUM,
    [OP_PMEAN] = SPMD_COLLECTIVE_PMEAN,
    [OP_PMAX] = SPMD_COLLECTIVE_PMAX,
    [OP_PMIN] = SPMD_COLLECTIVE_PMIN,
    [OP_ALL_GATHER] = SPMD_COLLECTIVE_ALL_GATHER,
    [OP_PSUM_SCATTER] = SPMD_COLLECTIVE_PSUM_SCATTER,
    [OP_ALL_TO_ALL] = SPMD_COLLECTIVE_ALL_TO_ALL,
    [OP_PPERMUTE] = SPMD_COLLECTIVE_PPERMUTE,
};

typedef struct {
  spmd_runtime *rt;
  spmd_mesh *mesh[3];
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  f->rt = test_runtime(8);
  const int64_t four[1] = {4}, two_by_two[2] = {2, 2}, two[1] = {2};
  f->mesh[0] = test_mesh(f->rt, 1, four);
  f->mesh[1] = test_mesh(f->rt, 2, two_by_two);
  f->mesh[2] = test_mesh(f->rt, 1, two);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  for (int i = 0; i < 3; ++i) spmd_mesh_destroy(f->mesh[i]);
  spmd_runtime_destroy(f->rt);
  free(f);
  return 0;
}

static spmd_collective_options options_of(const path_case *c) {
  spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
  o.axis = c->axis;
  o.concat_axis = c->concat;
  o.tiled = c->tiled;
  o.npairs = c->npairs;
  o.pairs = c->pairs;
  return o;
}

/* Whether the shards of `a` differ in shape. */
static int uneven(spmd_array *a) {
  size_t n;
  assert_ok(spmd_array_shard_count(a, &n));
  spmd_shard_info first;
  memset(&first, 0, sizeof first);
  first.struct_size = sizeof first;
  assert_ok(spmd_array_shard_info(a, 0, &first));
  for (size_t i = 1; i < n; ++i) {
    spmd_shard_info s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    assert_ok(spmd_array_shard_info(a, i, &s));
    for (size_t d = 0; d < s.ndim; ++d)
      if (s.local_shape[d] != first.local_shape[d]) return 1;
  }
  return 0;
}

static void check_case(fixture *f, const path_case *c) {
  spmd_mesh *mesh = f->mesh[c->mesh];
  int64_t count = 1;
  for (size_t d = 0; d < c->ndim; ++d) count *= c->shape[d];
  float *data = malloc((size_t)count * sizeof *data);
  for (int64_t i = 0; i < count; ++i) data[i] = (float)((i * 7) % 23) - 5.0f;
  spmd_array *input = test_put(mesh, c->spec, SPMD_F32, c->ndim, c->shape, data);
  spmd_sharding *in_sharding = NULL;
  assert_ok(spmd_array_sharding(input, &in_sharding));

  /* Planned once. */
  const spmd_collective_options o = options_of(c);
  spmd_collective *plan = NULL;
  if (spmd_collective_create(in_sharding, kKinds[c->kind], c->axes, SPMD_F32, c->ndim, c->shape,
                             &o, &plan) != SPMD_OK)
    fail_msg("%s: spmd_collective_create: %s", c->name, spmd_last_error());
  spmd_array *planned = NULL;
  if (spmd_collective_execute(plan, input, &planned) != SPMD_OK)
    fail_msg("%s: spmd_collective_execute: %s", c->name, spmd_last_error());

  /* Called per device, with the plan's output spec. */
  spmd_sharding *out_sharding = NULL;
  assert_ok(spmd_collective_output_sharding(plan, &out_sharding));
  spmd_spec *in_spec = NULL, *out_spec = NULL;
  assert_ok(spmd_sharding_spec(in_sharding, &in_spec));
  assert_ok(spmd_sharding_spec(out_sharding, &out_spec));
  op_t op = {c->kind, c->axes, c->axis, c->concat, c->tiled, c->npairs, c->pairs, 0};
  spmd_array *mapped = NULL;
  const spmd_spec *in_specs[1] = {in_spec}, *out_specs[1] = {out_spec};
  if (spmd_shard_map(mesh, apply_op, &op, 1, &input, in_specs, 1, out_specs, NULL, &mapped) !=
      SPMD_OK)
    fail_msg("%s: spmd_shard_map: %s", c->name, spmd_last_error());

  /* The same array: dtype, shape, sharding and values. */
  spmd_dtype t;
  size_t nd;
  int64_t shape[SPMD_MAX_NDIM];
  assert_ok(spmd_collective_output_dtype(plan, &t));
  assert_ok(spmd_collective_output_ndim(plan, &nd));
  assert_ok(spmd_collective_output_shape(plan, sizeof shape / sizeof shape[0], shape, NULL));
  spmd_sharding *mapped_sharding = NULL;
  assert_ok(spmd_array_sharding(mapped, &mapped_sharding));
  int same = 0;
  assert_ok(spmd_sharding_equal(mapped_sharding, out_sharding, &same));
  if (!same) fail_msg("%s: the two results are laid out differently", c->name);
  void *a = fetch(planned, t, nd, shape), *b = fetch(mapped, t, nd, shape);
  size_t bytes;
  assert_ok(spmd_array_nbytes(planned, &bytes));
  if (memcmp(a, b, bytes) != 0) {
    for (size_t i = 0; i < bytes / spmd_dtype_size(t); ++i)
      if (elem(t, a, i) != elem(t, b, i))
        fail_msg("%s: element %zu: persistent %g, shard_map %g", c->name, i, elem(t, a, i),
                 elem(t, b, i));
  }
  if (uneven(mapped) != c->expect_uneven_output)
    fail_msg("%s: the result's blocks are %s", c->name,
             c->expect_uneven_output ? "all alike (the case tests nothing uneven)"
                                     : "uneven (the case was meant to be even)");

  free(a);
  free(b);
  free(data);
  spmd_sharding_destroy(mapped_sharding);
  spmd_spec_destroy(in_spec);
  spmd_spec_destroy(out_spec);
  spmd_sharding_destroy(out_sharding);
  spmd_sharding_destroy(in_sharding);
  spmd_array_destroy(mapped);
  spmd_array_destroy(planned);
  spmd_array_destroy(input);
  spmd_collective_destroy(plan);
}

static void both_paths_give_the_same_array(void **state) {
  fixture *f = *state;
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) check_case(f, &kCases[i]);
}

/* A 2-device mesh, a (3,) float32 array P('x') (blocks of 2 and 1), a tiled
 * all_to_all with split = concat = 0: device 0 gets the first chunk of
 * each block ([0] and [2]), device 1 the second ([1] and nothing). */
static void uneven_all_to_all_along_one_axis_agrees(void **state) {
  fixture *f = *state;
  const float in[3] = {0, 1, 2};
  const int64_t shape[1] = {3};
  spmd_array *a = test_put(f->mesh[2], "x", SPMD_F32, 1, shape, in);
  op_t op = {OP_ALL_TO_ALL, "x", 0, 0, 1, 0, NULL, 0};
  const char *spec = "x";
  spmd_array *mapped = NULL, *planned = NULL;
  assert_ok(spmd_shard_map_text(f->mesh[2], apply_op, &op, 1, &a, &spec, 1, &spec, NULL,
                                &mapped));
  spmd_sharding *s = NULL;
  assert_ok(spmd_array_sharding(a, &s));
  spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
  o.tiled = 1;
  spmd_collective *c = NULL;
  assert_ok(spmd_collective_create(s, SPMD_COLLECTIVE_ALL_TO_ALL, "x", SPMD_F32, 1, shape, &o, &c));
  int64_t out_shape[1];
  assert_ok(spmd_collective_output_shape(c, sizeof out_shape / sizeof out_shape[0], out_shape, NULL));
  assert_int_equal(out_shape[0], 3);
  assert_ok(spmd_collective_execute(c, a, &planned));
  const float want[3] = {0, 2, 1};
  float *got = fetch(mapped, SPMD_F32, 1, shape);
  assert_memory_equal(got, want, sizeof want);
  free(got);
  got = fetch(planned, SPMD_F32, 1, shape);
  assert_memory_equal(got, want, sizeof want);
  free(got);
  spmd_array_destroy(mapped);
  spmd_array_destroy(planned);
  spmd_collective_destroy(c);
  spmd_sharding_destroy(s);
  spmd_array_destroy(a);
}

/* Untiled psum_scatter and all_to_all give per-device results no spec can
 * place: inside shard_map they work, planned they are refused. */
static void untiled_scatters_are_shard_map_only(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {4, 4};
  float in[16];
  for (int i = 0; i < 16; ++i) in[i] = (float)i;
  spmd_array *a = test_put(f->mesh[0], "", SPMD_F32, 2, shape, in);
  spmd_sharding *s = NULL;
  assert_ok(spmd_array_sharding(a, &s));
  const int kinds[2] = {OP_PSUM_SCATTER, OP_ALL_TO_ALL};
  for (int k = 0; k < 2; ++k) {
    op_t op = {kinds[k], "x", 0, 1, 0, 0, NULL, 0};
    const char *in_spec = "", *out_spec = "x";
    spmd_array *mapped = NULL;
    assert_ok(spmd_shard_map_text(f->mesh[0], apply_op, &op, 1, &a, &in_spec, 1, &out_spec, NULL,
                                  &mapped));
    spmd_array_destroy(mapped);
    spmd_collective_options o = SPMD_COLLECTIVE_OPTIONS_INIT;
    o.concat_axis = 1;
    spmd_collective *c = NULL;
    assert_fails(spmd_collective_create(s, kKinds[kinds[k]], "x", SPMD_F32, 2, shape, &o, &c),
                 SPMD_ERR_UNSUPPORTED, "without tiled");
    assert_null(c);
  }
  spmd_sharding_destroy(s);
  spmd_array_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(both_paths_give_the_same_array),
      cmocka_unit_test(uneven_all_to_all_along_one_axis_agrees),
      cmocka_unit_test(untiled_scatters_are_shard_map_only),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
