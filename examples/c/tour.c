/* The libspmd tour: the seed notebooks' cells, one after another, on the
 * default CPU platform (8 virtual devices), printing what the notebooks
 * print. Each cell is shown with the Python it reproduces. */
#include <spmd/spmd.h>

#include "seed_cells.h"
#include "seed_error.h"
#include "seed_layer.h"
#include "seed_train.h"
#include "seed_train_ops.h"

#include <stdio.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    spmd_status st_ = (call);                                                           \
    if (st_ != SPMD_OK) {                                                               \
      fprintf(stderr, "tour: %s failed: %s: %s\n", #call, spmd_status_string(st_),       \
              seed_or_spmd_last_error());                                               \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

static void cell(const char *python) { printf("\n>>> %s\n", python); }

static void print_owned(char *s) {
  fputs(s, stdout);
  if (s[0] && s[strlen(s) - 1] != '\n') putchar('\n');
  spmd_string_free(s);
}

static void show_picture(const spmd_array *a) {
  char *pic;
  CHECK(spmd_array_visualize(a, NULL, &pic));
  print_owned(pic);
}

/* What the notebook's cell shows for an array: its repr. */
static void show_repr(const spmd_array *a) {
  char *str;
  CHECK(spmd_array_repr(a, &str));
  print_owned(str);
}

/* print(a): numpy's form. */
static void show_str(const spmd_array *a) {
  char *str;
  CHECK(spmd_array_str(a, &str));
  print_owned(str);
}

static void show_sharding(const spmd_sharding *s) {
  char *str;
  CHECK(spmd_sharding_to_string(s, &str));
  print_owned(str);
}

static void show_device(spmd_runtime *rt, int device) {
  char *str;
  CHECK(spmd_runtime_device_to_string(rt, device, &str));
  print_owned(str);
}

/* jax.devices(), single-device arrays and their pictures. */
static void devices_and_single_device_arrays(spmd_runtime *rt) {
  printf("\n=== Device parallelism for SPMD ===\n");
  cell("jax.devices()");
  int n;
  CHECK(spmd_runtime_device_count(rt, &n));
  putchar('[');
  for (int d = 0; d < n; ++d) {
    char *str;
    CHECK(spmd_runtime_device_to_string(rt, d, &str));
    printf("%s%s", d ? ", " : "", str);
    spmd_string_free(str);
  }
  printf("]\n");

  spmd_sharding *dev0, *dev1;
  CHECK(spmd_sharding_single_device(rt, 0, &dev0));
  CHECK(spmd_sharding_single_device(rt, 1, &dev1));
  int64_t five[1] = {5}, three[1] = {3};
  spmd_array *a, *b;
  cell("a = jnp.arange(5); a.device");
  CHECK(spmd_array_arange(dev0, SPMD_I32, 1, five, 0, 1, &a));
  int device;
  CHECK(spmd_array_device(a, &device));
  show_device(rt, device);
  cell("b = jnp.array([2,3,4], device=jax.devices()[1]); b.device");
  const int32_t bv[3] = {2, 3, 4};
  CHECK(spmd_array_from_host(dev1, SPMD_I32, 1, three, bv, sizeof bv, &b));
  CHECK(spmd_array_device(b, &device));
  show_device(rt, device);
  cell("a.sharding");
  spmd_sharding *as;
  CHECK(spmd_array_sharding(a, &as));
  show_sharding(as);
  cell("jax.debug.visualize_array_sharding(a)");
  show_picture(a);
  cell("jax.debug.visualize_array_sharding(b)");
  show_picture(b);
  spmd_sharding_destroy(as);
  spmd_array_destroy(a);
  spmd_array_destroy(b);
  spmd_sharding_destroy(dev0);
  spmd_sharding_destroy(dev1);
}

/* a.sharding == b.sharding */
static int same_sharding(const spmd_array *a, const spmd_array *b) {
  spmd_sharding *sa, *sb;
  int same = 0;
  CHECK(spmd_array_sharding(a, &sa));
  CHECK(spmd_array_sharding(b, &sb));
  CHECK(spmd_sharding_equal(sa, sb, &same));
  spmd_sharding_destroy(sb);
  spmd_sharding_destroy(sa);
  return same;
}

/* jnp.sum(x, axis=axis) of a 2-D array, as under jax.jit. */
static spmd_array *sum_along(const spmd_array *x, int64_t axis) {
  spmd_array *out;
  CHECK(spmd_reduce(SPMD_REDUCE_SUM, x, 1, &axis, 0, NULL, &out));
  return out;
}

/* The first notebook's jit cells on its (3, 8) array over Mesh('x': 3):
 * the results are placed as jax.jit places them. */
static void first_notebook_jit_cells(const spmd_array *arr, spmd_array *arr_sharded) {
  cell("@jax.jit\n... def f(x):\n...     return 2 * jnp.sin(x) + 1\n"
       "... result = f(arr_sharded); jax.debug.visualize_array_sharding(result)");
  spmd_array *result;
  CHECK(seed_f_elementwise(arr_sharded, &result));
  show_picture(result);
  cell("arr_sharded.sharding == result.sharding");
  printf("%s\n", same_sharding(arr_sharded, result) ? "True" : "False");
  spmd_array_destroy(result);

  cell("@jax.jit\n... def f(x):\n...     return x.sum(axis=0)\n"
       "... result = f(arr_sharded); jax.debug.visualize_array_sharding(result)");
  result = sum_along(arr_sharded, 0);
  show_picture(result);
  spmd_array_destroy(result);

  cell("arr.sum(axis=1)");
  result = sum_along(arr, 1);
  show_repr(result);
  spmd_array_destroy(result);

  cell("@jax.jit\n... def f(x):\n...     return x.sum(axis=1)\n"
       "... result = f(arr_sharded); jax.debug.visualize_array_sharding(result)");
  result = sum_along(arr_sharded, 1);
  show_picture(result);
  spmd_array_destroy(result);
}

/* A (3, 8) array split by rows over a 3-device mesh. */
static void rows_over_three_devices(spmd_runtime *rt) {
  cell("mesh = jax.make_mesh((3,), ('x',))\n"
       "... sharding = jax.sharding.NamedSharding(mesh, PartitionSpec('x',)); print(sharding)");
  int64_t ms[1] = {3};
  const char *x[1] = {"x"};
  spmd_mesh *mesh;
  CHECK(spmd_mesh_create(rt, 1, ms, x, NULL, &mesh));
  spmd_sharding *sharding;
  CHECK(spmd_sharding_named_text(mesh, "P('x',)", &sharding));
  show_sharding(sharding);

  cell("arr = jnp.arange(24.0).reshape(3, 8); arr.shape");
  spmd_sharding *dev0;
  CHECK(spmd_sharding_single_device(rt, 0, &dev0));
  int64_t shape[2] = {3, 8};
  spmd_array *arr, *sharded;
  CHECK(spmd_array_arange(dev0, SPMD_F32, 2, shape, 0, 1, &arr));
  int64_t got[2];
  CHECK(spmd_array_shape(arr, sizeof got / sizeof got[0], got, NULL));
  printf("(%lld, %lld)\n", (long long)got[0], (long long)got[1]);

  cell("arr_sharded = jax.device_put(arr, sharding); arr_sharded.sharding");
  CHECK(spmd_array_reshard(arr, sharding, &sharded));
  spmd_sharding *ss;
  CHECK(spmd_array_sharding(sharded, &ss));
  show_sharding(ss);
  cell("jax.debug.visualize_array_sharding(arr_sharded)");
  show_picture(sharded);
  first_notebook_jit_cells(arr, sharded);
  spmd_sharding_destroy(ss);
  spmd_array_destroy(arr);
  spmd_array_destroy(sharded);
  spmd_sharding_destroy(dev0);
  spmd_sharding_destroy(sharding);
  spmd_mesh_destroy(mesh);
}

/* A (4, 8) array on one device, then over a 2x4 mesh by P('x', 'y'). */
static void grid_over_two_by_four(spmd_runtime *rt) {
  printf("\n=== Introduction to sharded computation ===\n");
  cell("arr = jnp.arange(32.0).reshape(4, 8); arr.devices()");
  spmd_sharding *dev0;
  CHECK(spmd_sharding_single_device(rt, 0, &dev0));
  int64_t shape[2] = {4, 8};
  spmd_array *arr;
  CHECK(spmd_array_arange(dev0, SPMD_F32, 2, shape, 0, 1, &arr));
  int device;
  CHECK(spmd_array_device(arr, &device));
  char *str;
  CHECK(spmd_runtime_device_to_string(rt, device, &str));
  printf("{%s}\n", str);
  spmd_string_free(str);
  cell("arr.sharding");
  show_sharding(dev0);
  cell("jax.debug.visualize_array_sharding(arr)");
  show_picture(arr);

  cell("mesh = jax.sharding.Mesh(mesh_utils.create_device_mesh((2, 4)), ('x', 'y'))\n"
       "... sharding = jax.sharding.NamedSharding(mesh, P('x', 'y')); print(sharding)");
  int64_t ms[2] = {2, 4};
  const char *xy[2] = {"x", "y"};
  spmd_mesh *mesh;
  CHECK(spmd_mesh_create(rt, 2, ms, xy, NULL, &mesh));
  spmd_sharding *sharding;
  CHECK(spmd_sharding_named_text(mesh, "P('x', 'y')", &sharding));
  show_sharding(sharding);
  cell("arr_sharded = jax.device_put(arr, sharding)\n"
       "... print(arr_sharded)\n... jax.debug.visualize_array_sharding(arr_sharded)");
  spmd_array *sharded;
  CHECK(spmd_array_reshard(arr, sharding, &sharded));
  show_str(sharded);
  show_picture(sharded);
  spmd_array_destroy(sharded);
  spmd_array_destroy(arr);
  spmd_sharding_destroy(sharding);
  spmd_sharding_destroy(dev0);
  spmd_mesh_destroy(mesh);
}


/* The jit cells of the introduction notebook, written with the global ops:
 * each op places its result as jit would (computation follows data). */
static void jit_cells(spmd_runtime *rt) {
  printf("\n=== Automatic parallelism via jit ===\n");
  int64_t ms[2] = {2, 4}, eight[1] = {8};
  const char *xy[2] = {"x", "y"};
  spmd_mesh *mesh, *mesh8;
  CHECK(spmd_mesh_create(rt, 2, ms, xy, NULL, &mesh));
  CHECK(spmd_mesh_create(rt, 1, eight, xy, NULL, &mesh8));
  spmd_sharding *sharding;
  CHECK(spmd_sharding_named_text(mesh, "P('x', 'y')", &sharding));
  const int64_t shape[2] = {4, 8};
  spmd_array *arr_sharded, *result;
  CHECK(spmd_array_arange(sharding, SPMD_F32, 2, shape, 0, 1, &arr_sharded));

  cell("@jax.jit\n... def f_elementwise(x):\n...     return 2 * jnp.sin(x) + 1\n"
       "... result = f_elementwise(arr_sharded)\n"
       "... print(\"shardings match:\", result.sharding == arr_sharded.sharding)");
  CHECK(seed_f_elementwise(arr_sharded, &result));
  printf("shardings match: %s\n", same_sharding(result, arr_sharded) ? "True" : "False");
  spmd_array_destroy(result);

  cell("@jax.jit\n... def f_contract(x):\n...     return x.sum(axis=0)\n"
       "... result = f_contract(arr_sharded)\n"
       "... jax.debug.visualize_array_sharding(result)\n... print(result)");
  CHECK(seed_f_contract(mesh, arr_sharded, &result));
  show_picture(result);
  show_str(result);
  spmd_array_destroy(result);

  cell("@jax.jit\n... def f_contract_2(x):\n...     out = x.sum(axis=0)\n"
       "...     mesh = jax.sharding.Mesh(mesh_utils.create_device_mesh(8), 'x')\n"
       "...     return jax.lax.with_sharding_constraint(out, NamedSharding(mesh, P('x')))\n"
       "... result = f_contract_2(arr_sharded)\n"
       "... jax.debug.visualize_array_sharding(result)\n... print(result)");
  CHECK(seed_f_contract_2(mesh, mesh8, arr_sharded, &result));
  show_picture(result);
  show_str(result);
  spmd_array_destroy(result);
  spmd_array_destroy(arr_sharded);
  spmd_sharding_destroy(sharding);
  spmd_mesh_destroy(mesh8);
  spmd_mesh_destroy(mesh);
}

/* Prints each device's local shape as jax.debug.print does: the text alone. */
static void print_line(int device, const char *text, void *ud) {
  (void)device;
  (void)ud;
  printf("%s\n", text);
}

/* shard_map over Mesh('x': 3): per-device code sees its own block only. */
static void shard_map_over_three_devices(spmd_runtime *rt) {
  printf("\n=== Manual partitioning with shard_map ===\n");
  int64_t ms[1] = {3};
  const char *x[1] = {"x"};
  spmd_mesh *mesh;
  CHECK(spmd_mesh_create(rt, 1, ms, x, NULL, &mesh));
  spmd_sharding *dev0;
  CHECK(spmd_sharding_single_device(rt, 0, &dev0));
  cell("f_elementwise_sharded = shard_map(f_elementwise, mesh=mesh, in_specs=P('x'), "
       "out_specs=P('x'))\n... f_elementwise_sharded(jnp.arange(24))");
  int64_t n24[1] = {24};
  spmd_array *arr, *y;
  CHECK(spmd_array_arange(dev0, SPMD_I32, 1, n24, 0, 1, &arr));
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.print_fn = print_line;
  CHECK(seed_elementwise_sin(mesh, arr, &o, &y));
  show_repr(y);

  cell("shard_map(lambda x: jax.lax.psum(x.sum(), 'x'), mesh=mesh, in_specs=P('x'), "
       "out_specs=P())(arr_sharded)");
  int64_t shape[2] = {3, 8};
  spmd_sharding *rows;
  CHECK(spmd_sharding_named_text(mesh, "x", &rows));
  spmd_array *arr_sharded, *total;
  CHECK(spmd_array_arange(rows, SPMD_F32, 2, shape, 0, 1, &arr_sharded));
  CHECK(seed_psum_of_shard_sums(mesh, arr_sharded, &total));
  show_repr(total);
  cell("result.sharding");
  spmd_sharding *ts;
  CHECK(spmd_array_sharding(total, &ts));
  show_sharding(ts);
  spmd_sharding_destroy(ts);
  spmd_array_destroy(total);
  spmd_array_destroy(arr_sharded);
  spmd_sharding_destroy(rows);
  spmd_array_destroy(y);
  spmd_array_destroy(arr);
  spmd_sharding_destroy(dev0);
  spmd_mesh_destroy(mesh);
}

/* The introduction notebook's shard_map cells and its layer compared
 * two ways, on all 8 devices. The notebook's layer inputs come from numpy's
 * default_rng(0); here from jax.random.normal on split keys of PRNGKey(0)
 * (the conformance suite runs the notebook's own inputs). */
static void shard_map_over_eight_devices(spmd_runtime *rt) {
  printf("\n=== shard_map over all 8 devices ===\n");
  int64_t eight[1] = {8};
  const char *x_name[1] = {"x"};
  spmd_mesh *mesh;
  CHECK(spmd_mesh_create(rt, 1, eight, x_name, NULL, &mesh));
  spmd_sharding *dev0;
  CHECK(spmd_sharding_single_device(rt, 0, &dev0));
  const int64_t n32[1] = {32};
  spmd_array *x, *y;
  CHECK(spmd_array_arange(dev0, SPMD_I32, 1, n32, 0, 1, &x));

  cell("x = jnp.arange(32)\n... print(f\"global shape: {x.shape=}\")\n... def f(x):\n"
       "...     print(f\"device local shape: {x.shape=}\")\n...     return x * 2\n"
       "... y = shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P('x'))(x)");
  printf("global shape: x.shape=(32,)\n");
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.print_fn = print_line;
  CHECK(seed_double(mesh, x, &o, &y));
  spmd_array_destroy(y);

  cell("def f(x):\n...     return jnp.sum(x, keepdims=True)\n"
       "... shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P('x'))(x)");
  CHECK(seed_shard_sums(mesh, x, &y));
  show_repr(y);
  spmd_array_destroy(y);

  cell("def f(x):\n...     sum_in_shard = x.sum()\n...     return jax.lax.psum(sum_in_shard, 'x')\n"
       "... shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P())(x)");
  CHECK(seed_psum_of_shard_sums(mesh, x, &y));
  show_repr(y);
  spmd_array_destroy(y);
  spmd_array_destroy(x);

  /* layer(x, weights, bias) = sigmoid(x @ weights + bias). */
  spmd_key root, keys[3];
  CHECK(spmd_random_key(0, &root));
  CHECK(spmd_random_split(&root, 3, keys));
  const int64_t xs[1] = {32}, ws[2] = {32, 4}, bs[1] = {4};
  spmd_array *lx, *lw, *lb;
  CHECK(spmd_random_normal(dev0, &keys[0], SPMD_F32, 1, xs, &lx));
  CHECK(spmd_random_normal(dev0, &keys[1], SPMD_F32, 2, ws, &lw));
  CHECK(spmd_random_normal(dev0, &keys[2], SPMD_F32, 1, bs, &lb));
  cell("layer(x, weights, bias)   # on one device");
  float hx[32], hw[32 * 4], hb[4], out[4];
  CHECK(spmd_array_to_host(lx, hx, sizeof hx));
  CHECK(spmd_array_to_host(lw, hw, sizeof hw));
  CHECK(spmd_array_to_host(lb, hb, sizeof hb));
  for (int j = 0; j < 4; ++j) {
    float acc = 0.0f;
    for (int i = 0; i < 32; ++i) acc += hx[i] * hw[i * 4 + j];
    out[j] = 1.0f / (1.0f + expf(-(acc + hb[j])));
  }
  CHECK(spmd_array_from_host(dev0, SPMD_F32, 1, bs, out, sizeof out, &y));
  show_repr(y);
  spmd_array_destroy(y);
  cell("@jax.jit\n... @partial(shard_map, mesh=mesh, in_specs=(P('x'), P('x', None), P(None)),\n"
       "...          out_specs=P(None))\n... def layer_sharded(x, weights, bias):\n"
       "...     return jax.nn.sigmoid(jax.lax.psum(x @ weights, 'x') + bias)\n"
       "... layer_sharded(x, weights, bias)");
  CHECK(seed_layer_sharded(mesh, lx, lw, lb, &y));
  show_repr(y);
  spmd_array_destroy(y);
  cell("jax.jit(layer)(jax.device_put(x, NamedSharding(mesh, P('x'))),\n"
       "...              jax.device_put(weights, NamedSharding(mesh, P('x', None))), bias)"
       "   # automatic: the psum appears by itself");
  CHECK(seed_layer_auto(mesh, lx, lw, lb, &y));
  show_repr(y);
  spmd_array_destroy(y);
  spmd_array_destroy(lb);
  spmd_array_destroy(lw);
  spmd_array_destroy(lx);
  spmd_sharding_destroy(dev0);
  spmd_mesh_destroy(mesh);
}

/* jax.random.normal(jax.random.PRNGKey(0), shape), replicated on the mesh. */
static spmd_array *normal(spmd_mesh *mesh, int64_t rows, int64_t cols) {
  spmd_sharding *rep;
  CHECK(spmd_sharding_replicated(mesh, &rep));
  spmd_key key;
  CHECK(spmd_random_key(0, &key));
  int64_t shape[2] = {rows, cols};
  spmd_array *a;
  CHECK(spmd_random_normal(rep, &key, SPMD_F32, 2, shape, &a));
  spmd_sharding_destroy(rep);
  return a;
}

static float *to_host_f32(const spmd_array *a, int64_t *n) {
  CHECK(spmd_array_size(a, n));
  float *p = malloc((size_t)*n * sizeof *p);
  CHECK(spmd_array_to_host(a, p, (size_t)*n * sizeof *p));
  return p;
}

/* assert np.allclose(B, x @ W...) computed on the host. */
static void check_against_host_product(const spmd_array *b, const spmd_array *const *factors,
                                       size_t nfactors) {
  int64_t n, rows, k;
  float *acc = to_host_f32(factors[0], &n);
  int64_t shape[2];
  CHECK(spmd_array_shape(factors[0], sizeof shape / sizeof shape[0], shape, NULL));
  rows = shape[0];
  k = shape[1];
  for (size_t f = 1; f < nfactors; ++f) {
    int64_t m;
    float *w = to_host_f32(factors[f], &m);
    CHECK(spmd_array_shape(factors[f], sizeof shape / sizeof shape[0], shape, NULL));
    float *next = calloc((size_t)(rows * shape[1]), sizeof *next);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t t = 0; t < k; ++t)
        for (int64_t j = 0; j < shape[1]; ++j) next[i * shape[1] + j] += acc[i * k + t] * w[t * shape[1] + j];
    free(acc);
    free(w);
    acc = next;
    k = shape[1];
  }
  int64_t nb;
  float *got = to_host_f32(b, &nb);
  double worst = 0;
  for (int64_t i = 0; i < nb; ++i) worst = fmax(worst, fabs((double)got[i] - acc[i]));
  printf("np.allclose(B, B_non_sharded): %s (max |difference| %.2g)\n",
         worst < 1e-4 ? "True" : "False", worst);
  free(got);
  free(acc);
}

/* FSDP, tensor parallelism and both together on a 2x2 ('data', 'model') mesh. */
static void fsdp_and_tensor_parallelism(spmd_runtime *rt) {
  printf("\n=== FSDP and tensor parallelism ===\n");
  int64_t ms[2] = {2, 2};
  const char *names[2] = {"data", "model"};
  spmd_mesh *mesh;
  CHECK(spmd_mesh_create(rt, 2, ms, names, NULL, &mesh));
  spmd_array *x = normal(mesh, 4, 10), *a = normal(mesh, 10, 10);
  spmd_array *w1 = normal(mesh, 10, 40), *w2 = normal(mesh, 40, 10), *b;

  cell("B = shard_map(sharded_matmul, mesh=mesh, in_specs=(P('data', None), P('data', None)),\n"
       "...             out_specs=P('data', None))(x, A)   # FSDP: all_gather of A over 'data'\n"
       "... jax.debug.visualize_array_sharding(B)");
  CHECK(seed_fsdp_matmul(mesh, x, a, &b));
  const spmd_array *xa[2] = {x, a};
  check_against_host_product(b, xa, 2);
  show_picture(b);
  spmd_array_destroy(b);

  cell("B = shard_map(sharded_matmul, mesh=mesh, in_specs=(P(None, 'model'), P(None, 'model'),\n"
       "...             P('model', None)), out_specs=P(None, 'model'))(x, W1, W2)   # TP MLP\n"
       "... jax.debug.visualize_array_sharding(B)");
  CHECK(seed_tp_mlp(mesh, x, w1, w2, &b));
  const spmd_array *xww[3] = {x, w1, w2};
  check_against_host_product(b, xww, 3);
  show_picture(b);
  spmd_array_destroy(b);

  cell("B = shard_map(sharded_matmul, mesh=mesh, in_specs=(P('data', 'model'), P('data', "
       "'model'),\n...             P('model', 'data')), out_specs=P('data', 'model'))(x, W1, W2)"
       "   # FSDP + TP\n... jax.debug.visualize_array_sharding(B)");
  CHECK(seed_fsdp_tp(mesh, x, w1, w2, &b));
  check_against_host_product(b, xww, 3);
  show_picture(b);
  spmd_array_destroy(b);

  printf("\n--- the same three, the automatic way: global ops over sharded inputs ---\n");
  cell("B = jax.jit(lambda x, A: x @ A, out_shardings=NamedSharding(mesh, P('data', None)))(\n"
       "...     jax.device_put(x, P('data', None)), jax.device_put(A, P('data', None)))   # FSDP");
  CHECK(seed_fsdp_auto(mesh, x, a, &b));
  check_against_host_product(b, xa, 2);
  show_picture(b);
  spmd_array_destroy(b);
  cell("B = jax.jit(lambda x, W1, W2: x @ W1 @ W2, out_shardings=NamedSharding(mesh, P(None, "
       "'model')))(\n...     x @ P(None, 'model'), W1 @ P(None, 'model'), W2 @ P('model', None))"
       "   # TP");
  CHECK(seed_tp_mlp_auto(mesh, x, w1, w2, &b));
  check_against_host_product(b, xww, 3);
  show_picture(b);
  spmd_array_destroy(b);
  cell("B = jax.jit(lambda x, W1, W2: x @ W1 @ W2, out_shardings=P('data', 'model'))(\n"
       "...     x @ P('data', 'model'), W1 @ P('data', 'model'), W2 @ P('model', 'data'))"
       "   # FSDP + TP");
  CHECK(seed_fsdp_tp_auto(mesh, x, w1, w2, &b));
  check_against_host_product(b, xww, 3);
  show_picture(b);
  spmd_array_destroy(b);
  spmd_array_destroy(x);
  spmd_array_destroy(a);
  spmd_array_destroy(w1);
  spmd_array_destroy(w2);
  spmd_mesh_destroy(mesh);
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Benchmarking communication: all_to_all of a 1000x1000 array over 4 devices. */
static void all_to_all_benchmark(spmd_runtime *rt) {
  printf("\n=== Benchmarking communication ===\n");
  int64_t ms[1] = {4};
  const char *names[1] = {"data"};
  spmd_mesh *mesh;
  CHECK(spmd_mesh_create(rt, 1, ms, names, NULL, &mesh));
  spmd_sharding *rows;
  CHECK(spmd_sharding_named_text(mesh, "data, None", &rows));
  spmd_array *r = normal(mesh, 1000, 1000), *X, *XT = NULL, *XTT;
  CHECK(spmd_array_reshard(r, rows, &X));
  spmd_array_destroy(r);
  cell("benchmark_func(all_to_all)");
  show_picture(X);
  double t0 = seconds();
  for (int i = 0; i < 5; ++i) {
    spmd_array_destroy(XT);
    CHECK(seed_all_to_all(mesh, X, &XT));
  }
  CHECK(spmd_array_block_until_ready(XT));
  printf("Warmup time: %g seconds\n", seconds() - t0);
  const int iters = 25;
  t0 = seconds();
  for (int i = 0; i < iters; ++i) {
    spmd_array_destroy(XT);
    CHECK(seed_all_to_all(mesh, X, &XT));
  }
  CHECK(spmd_array_block_until_ready(XT));
  const double per_iter = (seconds() - t0) / iters;
  show_picture(XT);
  printf("Time per iteration: %g seconds\n", per_iter);
  cell("X_T_T = all_to_all(all_to_all(X)); assert np.allclose(X, X_T_T)");
  CHECK(seed_all_to_all(mesh, XT, &XTT));
  int64_t n;
  float *a = to_host_f32(X, &n), *b = to_host_f32(XTT, &n);
  printf("%s\n", memcmp(a, b, (size_t)n * sizeof *a) == 0 ? "True" : "False");
  free(a);
  free(b);
  spmd_array_destroy(XTT);
  spmd_array_destroy(XT);
  spmd_array_destroy(X);
  spmd_sharding_destroy(rows);
  spmd_mesh_destroy(mesh);
}

/* The tensor-parallel Attention + MLP layer on a 2x2 ('data', 'model')
 * mesh, at the notebook's size. */
static void attention_mlp_layer(spmd_runtime *rt) {
  printf("\n=== Attention + MLP layer, tensor parallel ===\n");
  int64_t ms[2] = {2, 2};
  const char *names[2] = {"data", "model"};
  spmd_mesh *mesh;
  CHECK(spmd_mesh_create(rt, 2, ms, names, NULL, &mesh));
  cell("X = jax.random.normal(jax.random.PRNGKey(0), (2, 128, 1024))\n"
       "... X = jax.device_put(X, NamedSharding(mesh, PartitionSpec('data', None)))\n"
       "... model = nnx.jit(Layer(hidden_dim=1024, num_heads=16, rngs=nnx.Rngs(0)))\n"
       "... y = model(X)\n"
       "... jax.debug.visualize_array_sharding(y.reshape(2, -1))");
  spmd_key key;
  CHECK(spmd_random_key(0, &key));
  spmd_sharding *rows;
  CHECK(spmd_sharding_named_text(mesh, "data, None", &rows));
  const int64_t shape[3] = {2, 128, 1024};
  spmd_array *x, *y;
  CHECK(spmd_random_normal(rows, &key, SPMD_F32, 3, shape, &x));
  seed_layer layer;
  CHECK(seed_layer_init(mesh, 1024, 16, &layer));
  const double t0 = seconds();
  CHECK(seed_layer_apply(mesh, &layer, x, &y));
  const double elapsed = seconds() - t0;
  /* y.reshape(2, -1) keeps dimension 0 split over 'data': the same picture
   * as y's sharding over the flattened shape. */
  spmd_sharding *ys;
  CHECK(spmd_array_sharding(y, &ys));
  const int64_t flat[2] = {2, 128 * 1024};
  char *pic;
  CHECK(spmd_sharding_visualize(ys, 2, flat, NULL, &pic));
  print_owned(pic);
  show_sharding(ys);
  printf("(one layer: %.3f s on %d devices)\n", elapsed, 4);
  spmd_sharding_destroy(ys);

  cell("# the same Layer as global ops: einsum, reshape, transpose, softmax, relu;\n"
       "# the psums over 'model' after Wo and W2 appear by propagation");
  spmd_array *y_ops;
  const double t1 = seconds();
  CHECK(seed_layer_apply_auto(mesh, &layer, x, &y_ops));
  const double elapsed_ops = seconds() - t1;
  float *a = malloc(sizeof(float) * 2 * 128 * 1024), *b = malloc(sizeof(float) * 2 * 128 * 1024);
  CHECK(spmd_array_to_host(y, a, sizeof(float) * 2 * 128 * 1024));
  CHECK(spmd_array_to_host(y_ops, b, sizeof(float) * 2 * 128 * 1024));
  double worst = 0;
  for (int i = 0; i < 2 * 128 * 1024; ++i) worst = fmax(worst, fabs((double)a[i] - b[i]));
  CHECK(spmd_array_sharding(y_ops, &ys));
  show_sharding(ys);
  printf("np.allclose(y_ops, y): %s (max |difference| %.2g; %.3f s)\n",
         worst < 1e-3 ? "True" : "False", worst, elapsed_ops);
  spmd_sharding_destroy(ys);
  free(a);
  free(b);
  spmd_array_destroy(y_ops);
  spmd_array_destroy(y);
  spmd_array_destroy(x);
  seed_layer_destroy(&layer);
  spmd_sharding_destroy(rows);
  spmd_mesh_destroy(mesh);
}

/* The autoparallelism notebook: an MLP trained data-parallel over all 8
 * devices, replicated parameters, each batch split over 'x'. The notebook's
 * data come from numpy's global generator; here xs =
 * normal(PRNGKey(0), (64, 4)) and the batches are consecutive slices (the
 * spmd-train example shuffles each epoch and runs 300 steps). */
static void data_parallel_training(spmd_runtime *rt) {
  printf("\n=== Data-parallel training (autoparallelism) ===\n");
  enum { DATA = 64, BATCH = 16, STEPS = 10 };
  const int64_t eight[1] = {8};
  const char *names[1] = {"x"};
  spmd_mesh *mesh;
  CHECK(spmd_mesh_create(rt, 1, eight, names, NULL, &mesh));
  spmd_sharding *rows, *rep;
  CHECK(spmd_sharding_named_text(mesh, "x", &rows));
  CHECK(spmd_sharding_replicated(mesh, &rep));
  spmd_key data_key, model_key;
  CHECK(spmd_random_key(0, &data_key));
  CHECK(spmd_random_key(6789, &model_key));
  const int64_t data_shape[2] = {DATA, SEED_MLP_IN};
  spmd_array *xs_array;
  CHECK(spmd_random_normal(rep, &data_key, SPMD_F32, 2, data_shape, &xs_array));
  static float xs[DATA][SEED_MLP_IN], ys[DATA][SEED_MLP_OUT];
  CHECK(spmd_array_to_host(xs_array, xs, sizeof xs));
  spmd_array_destroy(xs_array);
  for (int i = 0; i < DATA; ++i)
    for (int j = 0; j < SEED_MLP_IN; ++j) ys[i][j] = sinf(xs[i][j]);

  cell("model = eqx.nn.MLP(channel_size, channel_size, hidden_size, depth, key=jr.PRNGKey(6789))\n"
       "... for step, (x, y) in zip(range(1, num_steps + 1),\n"
       "...                          train_dataloader((xs, ys), batch_size)):\n"
       "...     x, y = eqx.filter_shard((x, y), sharding)\n"
       "...     model, opt_state = train_step(model, opt_state, x, y, sharding)");
  float params[SEED_MLP_PARAMS];
  CHECK(seed_mlp_init(mesh, &model_key, params));
  seed_trainer *trainer;
  CHECK(seed_trainer_create(mesh, "x", params, 3e-4, &trainer));
  const int64_t batch_shape[2] = {BATCH, SEED_MLP_IN};
  spmd_array *x[DATA / BATCH], *y[DATA / BATCH];
  for (int b = 0; b < DATA / BATCH; ++b) {
    CHECK(spmd_array_from_host(rows, SPMD_F32, 2, batch_shape, xs[b * BATCH],
                               sizeof xs[0] * BATCH, &x[b]));
    CHECK(spmd_array_from_host(rows, SPMD_F32, 2, batch_shape, ys[b * BATCH],
                               sizeof ys[0] * BATCH, &y[b]));
  }
  for (int step = 0; step < STEPS; ++step) {
    float loss;
    CHECK(seed_trainer_step(trainer, x[step % (DATA / BATCH)], y[step % (DATA / BATCH)], &loss));
    printf("step %2d  batch loss %.6f\n", step + 1, loss);
  }
  cell("print(f\"train loss={loss/num_batches}\")");
  double total = 0;
  for (int b = 0; b < DATA / BATCH; ++b) {
    float loss;
    CHECK(seed_trainer_loss(trainer, x[b], y[b], &loss));
    total += loss;
  }
  printf("train loss=%.9g\n", total / (DATA / BATCH));

  cell("# the same steps written with global ops: forward, a hand-written backward pass and\n"
       "# Adam with donation; the gradient psum is inserted by propagation (the contractions\n"
       "# over the split batch dimension)");
  seed_ops_trainer *ops_trainer;
  CHECK(seed_ops_trainer_create(mesh, params, 3e-4, &ops_trainer));
  for (int step = 0; step < STEPS; ++step) {
    float loss;
    CHECK(seed_ops_trainer_step(ops_trainer, x[step % (DATA / BATCH)], y[step % (DATA / BATCH)],
                                &loss));
    printf("step %2d  batch loss %.6f\n", step + 1, loss);
  }
  seed_ops_trainer_destroy(ops_trainer);
  for (int b = 0; b < DATA / BATCH; ++b) {
    spmd_array_destroy(x[b]);
    spmd_array_destroy(y[b]);
  }
  seed_trainer_destroy(trainer);
  spmd_sharding_destroy(rep);
  spmd_sharding_destroy(rows);
  spmd_mesh_destroy(mesh);
}

/* FSDP-style placement: batch rows over 'data' of a 2x2 mesh. */
static void batch_over_data_axis(spmd_runtime *rt) {
  printf("\n=== FSDP-style sharding ===\n");
  cell("mesh = Mesh(np.array(jax.devices()).reshape(2, 2), axis_names=('data', 'model'))\n"
       "... x = jax.device_put(x, NamedSharding(mesh, PartitionSpec('data', None)))");
  int64_t ms[2] = {2, 2};
  const char *names[2] = {"data", "model"};
  const int devices[4] = {0, 1, 2, 3};
  spmd_mesh *mesh;
  CHECK(spmd_mesh_create(rt, 2, ms, names, devices, &mesh));
  spmd_sharding *sharding;
  CHECK(spmd_sharding_named_text(mesh, "PartitionSpec('data', None)", &sharding));
  int64_t shape[2] = {4, 10};
  spmd_array *x;
  CHECK(spmd_array_arange(sharding, SPMD_F32, 2, shape, 0, 1, &x));
  show_sharding(sharding);
  show_picture(x);
  spmd_array_destroy(x);
  spmd_sharding_destroy(sharding);
  spmd_mesh_destroy(mesh);
}

int main(void) {
  spmd_runtime *rt;
  CHECK(spmd_runtime_create(NULL, &rt));
  printf("libspmd %s tour\n", spmd_version_string());
  devices_and_single_device_arrays(rt);
  rows_over_three_devices(rt);
  grid_over_two_by_four(rt);
  jit_cells(rt);
  batch_over_data_axis(rt);
  shard_map_over_three_devices(rt);
  shard_map_over_eight_devices(rt);
  fsdp_and_tensor_parallelism(rt);
  all_to_all_benchmark(rt);
  attention_mlp_layer(rt);
  data_parallel_training(rt);
  spmd_runtime_destroy(rt);
  return 0;
}
