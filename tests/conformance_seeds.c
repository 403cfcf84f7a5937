/* Conformance family 7, the seeds end to end (tests/conformance/seeds/):
 * the seed notebooks' shard_map programs (examples/c/seed_cells.c) run on
 * the inputs JAX used — recorded, or regenerated with the JAX-identical
 * generator — and compared with JAX's outputs: small arrays in full,
 * the 1000x1000 case through sums and sampled elements, pictures character
 * for character. */
#include <math.h>
#include <stdlib.h>

#include "conformance.h"
#include "conformance_cases.h"
#include "seed_cells.h"
#include "spmd_test.h"

static spmd_dtype dtype_of(const char *name) {
  if (strcmp(name, "float32") == 0) return SPMD_F32;
  if (strcmp(name, "int32") == 0) return SPMD_I32;
  fail_msg("unexpected dtype %s in a seeds reference", name);
  return SPMD_DTYPE_INVALID;
}

/* An input array, replicated over the case's mesh (the programs reshard
 * to their in_specs): recorded bytes, or jax.random.normal(PRNGKey(k)). */
static spmd_array *load_input(spmd_mesh *mesh, const json_value *ref, const char *where) {
  int64_t shape[SPMD_MAX_NDIM];
  const size_t ndim =
      conformance_ints(conformance_member(ref, "shape", where), shape, SPMD_MAX_NDIM, where);
  const spmd_dtype dtype = dtype_of(json_string(conformance_member(ref, "dtype", where)));
  spmd_sharding *rep = NULL;
  assert_ok(spmd_sharding_replicated(mesh, &rep));
  spmd_array *a = NULL;
  const json_value *key = json_get(ref, "normal_key");
  if (key != NULL) {
    spmd_key k;
    assert_ok(spmd_random_key((uint64_t)json_int(key, 0), &k));
    assert_ok(spmd_random_normal(rep, &k, dtype, ndim, shape, &a));
  } else {
    size_t len;
    unsigned char *bytes = conformance_hex(ref, &len, where);
    assert_ok(spmd_array_from_host(rep, dtype, ndim, shape, bytes, len, &a));
    free(bytes);
  }
  spmd_sharding_destroy(rep);
  return a;
}

static float *host_f32(spmd_array *a, int64_t *n) {
  assert_ok(spmd_array_size(a, n));
  float *p = malloc((size_t)(*n ? *n : 1) * sizeof *p);
  assert_ok(spmd_array_to_host(a, p, (size_t)*n * sizeof *p));
  return p;
}

/* Compares an output with its reference (full bytes, or a summary). */
static int output_agrees(spmd_array *got, const json_value *ref, double tol, char *detail,
                         size_t size, const char *name) {
  spmd_dtype dtype;
  assert_ok(spmd_array_dtype(got, &dtype));
  if (dtype == SPMD_I32) {
    size_t len, nbytes;
    unsigned char *want = conformance_hex(ref, &len, name);
    assert_ok(spmd_array_nbytes(got, &nbytes));
    unsigned char *have = malloc(nbytes ? nbytes : 1);
    assert_ok(spmd_array_to_host(got, have, nbytes));
    const int ok = len == nbytes && memcmp(want, have, len) == 0;
    if (!ok) conformance_detail(detail, size, "  %s: int32 values differ\n", name);
    free(want);
    free(have);
    return ok;
  }
  int64_t n;
  float *have = host_f32(got, &n);
  const int ok = conformance_f32_agree(have, n, ref, tol, detail, size, name);
  free(have);
  return ok;
}

static int picture_agrees(spmd_array *a, const json_value *text, const char *key, char *detail,
                          size_t size) {
  const char *want = json_string(json_get(text, key));
  if (want == NULL) return 1;
  char *pic = NULL;
  assert_ok(spmd_array_visualize(a, NULL, &pic));
  const int ok = strcmp(test_platform_text(pic), want) == 0;
  if (!ok) conformance_detail(detail, size, "  %s:\n%s  JAX:\n%s", key, pic, want);
  spmd_string_free(pic);
  return ok;
}

/* One program run: its outputs, and which reference each is compared with
 * (an output may be checked against several, e.g. the sharded result and
 * JAX's unsharded product). */
typedef struct seed_case {
  const char *name;
  spmd_array *in[3];
  size_t n_in;
  spmd_array *out[3];
  size_t n_out;
  spmd_runtime *rt;
  struct {
    size_t out;
    const char *ref;
  } checks[8];
  size_t n_checks;
} seed_case;

static void check(seed_case *c, size_t out, const char *ref) {
  c->checks[c->n_checks].out = out;
  c->checks[c->n_checks].ref = ref;
  c->n_checks++;
}

/* What the jit cells print: whether the elementwise result kept x's
 * sharding, and the sums' shardings, pictures and values. */
static int text_is(char *got, const json_value *text, const char *key, char *detail,
                   size_t size) {
  const char *want = json_string(conformance_member(text, key, "jit_cells_2x4"));
  const int ok = got != NULL && strcmp(test_platform_text(got), want) == 0;
  if (!ok) conformance_detail(detail, size, "  %s: %s\n  JAX: %s\n", key, got, want);
  spmd_string_free(got);
  return ok;
}

static char *sharding_text(const spmd_array *a) {
  spmd_sharding *s = NULL;
  char *text = NULL;
  assert_ok(spmd_array_sharding(a, &s));
  assert_ok(spmd_sharding_to_string(s, &text));
  spmd_sharding_destroy(s);
  return text;
}

static int jit_cells_text_agrees(const seed_case *c, const json_value *text, char *detail,
                                 size_t size) {
  spmd_sharding *in = NULL, *out = NULL;
  int same = 0;
  assert_ok(spmd_array_sharding(c->in[0], &in));
  assert_ok(spmd_array_sharding(c->out[0], &out));
  assert_ok(spmd_sharding_equal(in, out, &same));
  spmd_sharding_destroy(in);
  spmd_sharding_destroy(out);
  const char *match = same ? "True" : "False";
  const char *want = json_string(conformance_member(text, "shardings_match", c->name));
  int ok = strcmp(match, want) == 0;
  if (!ok) conformance_detail(detail, size, "  shardings match: %s, JAX: %s\n", match, want);
  char *repr = NULL;
  ok &= text_is(sharding_text(c->out[1]), text, "contract_sharding", detail, size);
  ok &= text_is(sharding_text(c->out[2]), text, "contract_2_sharding", detail, size);
  assert_ok(spmd_array_str(c->out[1], &repr));
  ok &= text_is(repr, text, "contract_repr", detail, size);
  ok &= picture_agrees(c->out[1], text, "contract_picture", detail, size);
  ok &= picture_agrees(c->out[2], text, "contract_2_picture", detail, size);
  return ok;
}

static void silent(int device, const char *text, void *ud) {
  (void)device;
  (void)text;
  (void)ud;
}

/* Runs the program of case `name` on its inputs. */
static void run_case(const spmd_mesh *mesh, seed_case *c) {
  spmd_array **in = c->in;
  c->n_out = 1;
  if (strcmp(c->name, "elementwise_sin_3dev") == 0) {
    spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
    o.print_fn = silent;
    assert_ok(seed_elementwise_sin(mesh, in[0], &o, &c->out[0]));
    check(c, 0, "y");
  } else if (strcmp(c->name, "psum_of_shard_sums_3dev") == 0) {
    assert_ok(seed_psum_of_shard_sums(mesh, in[0], &c->out[0]));
    check(c, 0, "total");
  } else if (strcmp(c->name, "local_shapes_8dev") == 0) {
    spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
    o.print_fn = silent;
    assert_ok(seed_shard_sums(mesh, in[0], &c->out[0]));
    assert_ok(seed_psum_of_shard_sums(mesh, in[0], &c->out[1]));
    assert_ok(seed_double(mesh, in[0], &o, &c->out[2]));
    c->n_out = 3;
    check(c, 0, "shard_sums");
    check(c, 1, "total");
    check(c, 2, "doubled");
  } else if (strcmp(c->name, "jit_cells_2x4") == 0) {
    /* The input as the notebook's arr_sharded: P('x', 'y'). */
    spmd_sharding *xy = NULL;
    spmd_array *arr = NULL;
    assert_ok(spmd_sharding_named_text(mesh, "x, y", &xy));
    assert_ok(spmd_array_reshard(in[0], xy, &arr));
    spmd_array_destroy(in[0]);
    in[0] = arr;
    spmd_sharding_destroy(xy);
    const int64_t eight[1] = {8};
    const char *x_name[1] = {"x"};
    spmd_mesh *mesh8 = NULL;
    assert_ok(spmd_mesh_create(c->rt, 1, eight, x_name, NULL, &mesh8));
    assert_ok(seed_f_elementwise(in[0], &c->out[0]));
    assert_ok(seed_f_contract(mesh, in[0], &c->out[1]));
    assert_ok(seed_f_contract_2(mesh, mesh8, in[0], &c->out[2]));
    spmd_mesh_destroy(mesh8);
    c->n_out = 3;
    check(c, 0, "elementwise");
    check(c, 1, "contract");
    check(c, 2, "contract_2");
  } else if (strcmp(c->name, "layer_three_ways_8dev") == 0) {
    assert_ok(seed_layer_sharded(mesh, in[0], in[1], in[2], &c->out[0]));
    assert_ok(seed_layer_auto(mesh, in[0], in[1], in[2], &c->out[1]));
    c->n_out = 2;
    /* JAX's three ways (plain jit, jit with sharded inputs, shard_map) give
     * one answer; libspmd's shard_map and global ops must give it too. */
    check(c, 0, "layer_shard_map");
    check(c, 0, "layer_jit_sharded");
    check(c, 0, "layer");
    check(c, 1, "layer_jit_sharded");
    check(c, 1, "layer");
  } else if (strcmp(c->name, "fsdp_matmul_2x2") == 0) {
    assert_ok(seed_fsdp_matmul(mesh, in[0], in[1], &c->out[0]));
    assert_ok(seed_fsdp_auto(mesh, in[0], in[1], &c->out[1]));
    c->n_out = 2;
    check(c, 0, "B");
    check(c, 0, "unsharded");
    check(c, 1, "B");
  } else if (strcmp(c->name, "tp_mlp_2x2") == 0 || strcmp(c->name, "fsdp_tp_2x2") == 0) {
    if (c->name[0] == 't') {
      assert_ok(seed_tp_mlp(mesh, in[0], in[1], in[2], &c->out[0]));
      assert_ok(seed_tp_mlp_auto(mesh, in[0], in[1], in[2], &c->out[1]));
    } else {
      assert_ok(seed_fsdp_tp(mesh, in[0], in[1], in[2], &c->out[0]));
      assert_ok(seed_fsdp_tp_auto(mesh, in[0], in[1], in[2], &c->out[1]));
    }
    c->n_out = 2;
    check(c, 0, "B");
    check(c, 0, "unsharded");
    check(c, 1, "B");
  } else if (strncmp(c->name, "all_to_all_", 11) == 0) {
    assert_ok(seed_all_to_all(mesh, in[0], &c->out[0]));
    assert_ok(seed_all_to_all(mesh, c->out[0], &c->out[1]));
    c->n_out = 2;
    check(c, 0, "X_T");
    check(c, 1, "X_T_T");
  } else {
    fail_msg("seeds reference has a case libspmd does not know: %s", c->name);
  }
}

/* The inputs each program takes, in order. */
static const char *const *input_names(const char *name, size_t *n) {
  static const char *const x[] = {"x"}, *const layer[] = {"x", "weights", "bias"},
                           *const fsdp[] = {"x", "A"}, *const mlp[] = {"x", "W1", "W2"},
                           *const big[] = {"X"};
  if (strcmp(name, "layer_three_ways_8dev") == 0) return *n = 3, layer;
  if (strcmp(name, "fsdp_matmul_2x2") == 0) return *n = 2, fsdp;
  if (strcmp(name, "tp_mlp_2x2") == 0 || strcmp(name, "fsdp_tp_2x2") == 0) return *n = 3, mlp;
  if (strncmp(name, "all_to_all_", 11) == 0) return *n = 1, big;
  return *n = 1, x;
}

void conformance_seeds(conformance_tally *t) {
  json_value *root = conformance_load("seeds", "cases.json");
  const json_value *cases = conformance_member(root, "cases", "seeds/cases.json");
  spmd_runtime *rt = test_runtime(8);
  for (size_t i = 0; i < json_count(cases); ++i) {
    const json_value *cj = json_at(cases, i);
    seed_case c = {0};
    c.rt = rt;
    c.name = json_string(conformance_member(cj, "name", "seeds case"));
    spmd_mesh *mesh = conformance_mesh(rt, conformance_member(cj, "mesh", c.name), c.name);
    const json_value *inputs = conformance_member(cj, "inputs", c.name);
    const char *const *names = input_names(c.name, &c.n_in);
    for (size_t k = 0; k < c.n_in; ++k)
      c.in[k] = load_input(mesh, conformance_member(inputs, names[k], c.name), c.name);
    run_case(mesh, &c);
    const json_value *outputs = conformance_member(cj, "outputs", c.name);
    const json_value *text = conformance_member(cj, "text", c.name);
    const double tol = conformance_member(cj, "tolerance", c.name)->number;
    char detail[4096] = "";
    int ok = 1;
    for (size_t k = 0; k < c.n_checks; ++k)
      ok &= output_agrees(c.out[c.checks[k].out], conformance_member(outputs, c.checks[k].ref, c.name),
                          tol, detail, sizeof detail, c.checks[k].ref);
    /* The whole-array summaries of the big case also check the regenerated input. */
    if (json_get(outputs, "X") != NULL && json_get(json_get(outputs, "X"), "samples") != NULL)
      ok &= output_agrees(c.in[0], json_get(outputs, "X"), tol, detail, sizeof detail, "X");
    if (strcmp(c.name, "jit_cells_2x4") == 0)
      ok &= jit_cells_text_agrees(&c, text, detail, sizeof detail);
    ok &= picture_agrees(c.out[0], text, "picture", detail, sizeof detail);
    ok &= picture_agrees(c.out[0], text, "X_T_picture", detail, sizeof detail);
    conformance_record(t, c.name, ok, detail[0] ? detail : NULL);
    for (size_t k = 0; k < c.n_in; ++k) spmd_array_destroy(c.in[k]);
    for (size_t k = 0; k < c.n_out; ++k) spmd_array_destroy(c.out[k]);
    spmd_mesh_destroy(mesh);
  }
  spmd_runtime_destroy(rt);
  json_free(root);
}
