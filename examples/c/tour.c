/* The libspmd tour: the seed notebooks' cells, one after another, on the
 * default CPU platform (8 virtual devices).
 *
 * Each cell shows the Python it reproduces and prints what JAX prints for
 * that Python, no more and no less (JAX's own run of the same cells is
 * tests/conformance/tour/transcript.txt, and ctest compares the two). The
 * tour's remarks are "# " lines between cells; each section ends with one
 * saying whether its values agree with JAX's recorded answers.
 *
 *   spmd-tour        the notebooks' transcript
 *   spmd-tour --c    the same, with the C calls that ran each cell shown
 *                    where they ran ("[C] " lines): the C tutorial */
#include <spmd/spmd.h>

#include "seed_cells.h"
#include "seed_layer.h"
#include "seed_train.h"
#include "seed_train_ops.h"
#include "tour_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static float *to_host_f32(const spmd_array *a, int64_t *n) {
  tour_ok(spmd_array_size(a, n), "spmd_array_size");
  float *p = malloc((size_t)(*n ? *n : 1) * sizeof *p);
  if (p == NULL) tour_ok(SPMD_ERR_OUT_OF_MEMORY, "malloc");
  tour_ok(spmd_array_to_host(a, p, (size_t)*n * sizeof *p), "spmd_array_to_host");
  return p;
}

/* assert np.allclose(a, b): stops the tour as a failed assert stops the
 * notebook. Returns the largest |a - b|. */
static double assert_allclose(const spmd_array *a, const spmd_array *b, const char *a_name,
                              const char *b_name) {
  tour_c("assert_allclose(%s, %s);  /* spmd_array_to_host of both; "
         "|a - b| <= 1e-8 + 1e-5 |b|, as np.allclose */",
         a_name, b_name);
  int64_t n, m;
  float *x = to_host_f32(a, &n), *y = to_host_f32(b, &m);
  int ok = n == m;
  double worst = 0;
  for (int64_t i = 0; ok && i < n; ++i) {
    const double d = fabs((double)x[i] - (double)y[i]);
    worst = fmax(worst, d);
    ok = d <= 1e-8 + 1e-5 * fabs((double)y[i]);
  }
  free(x);
  free(y);
  if (!ok) {
    fflush(stdout);
    fprintf(stderr, "AssertionError: np.allclose(%s, %s)\n", a_name, b_name);
    exit(1);
  }
  return worst;
}

/* jax.device_put(a, NamedSharding(mesh, PartitionSpec(*spec))). */
static spmd_array *put(const spmd_mesh *mesh, const spmd_array *a, const char *spec) {
  spmd_sharding *s;
  spmd_array *out;
  tour_ok(spmd_sharding_named_text(mesh, spec, &s), "spmd_sharding_named_text");
  tour_ok(spmd_array_reshard(a, s, &out), "spmd_array_reshard");
  spmd_sharding_destroy(s);
  return out;
}
#define PUT_C(out, a, spec)                                                                    \
  tour_c("spmd_sharding_named_text(mesh, \"%s\", &s); spmd_array_reshard(%s, s, &%s); "      \
         "spmd_sharding_destroy(s);",                                                        \
         spec, a, out)

/* ---- notebook 000: device parallelism for SPMD ---- */

static void device_parallelism(spmd_runtime *rt) {
  tour_section("Device parallelism for SPMD");
  tour_cell("jax.devices()");
  int n;
  CALL(spmd_runtime_device_count(rt, &n));
  tour_c("for (int d = 0; d < n; ++d) spmd_runtime_device_to_string(rt, d, &text);  "
         "/* printed as a list */");
  putchar('[');
  for (int d = 0; d < n; ++d) {
    char *text;
    tour_ok(spmd_runtime_device_to_string(rt, d, &text), "spmd_runtime_device_to_string");
    printf("%s%s", d ? ", " : "", text);
    spmd_string_free(text);
  }
  printf("]\n");

  spmd_sharding *dev0, *dev1, *a_sharding;
  spmd_array *a, *b;
  int device;
  tour_cell("a = jnp.arange(5); a.device");
  CALL(spmd_sharding_single_device(rt, 0, &dev0));
  CALL(spmd_array_arange(dev0, SPMD_I32, 1, (int64_t[]){5}, 0, 1, &a));
  CALL(spmd_array_device(a, &device));
  show_device(rt, device);
  tour_cell("b = jnp.array([2,3,4], device=jax.devices()[1]); b.device");
  CALL(spmd_sharding_single_device(rt, 1, &dev1));
  CALL(spmd_array_from_host(dev1, SPMD_I32, 1, (int64_t[]){3}, (int32_t[]){2, 3, 4},
                            3 * sizeof(int32_t), &b));
  CALL(spmd_array_device(b, &device));
  show_device(rt, device);
  tour_cell("a.sharding");
  CALL(spmd_array_sharding(a, &a_sharding));
  show_sharding(a_sharding, "a_sharding");
  tour_agree_text("text", "single_device/0", "expected");
  tour_cell("jax.debug.visualize_array_sharding(a)");
  show_picture(a, "a");
  tour_agree_text("pictures", "seed0/single_device_0/5", "picture");
  tour_cell("jax.debug.visualize_array_sharding(b)");
  show_picture(b, "b");
  tour_agree_text("pictures", "seed0/single_device_1/5", "picture");

  spmd_mesh *mesh;
  spmd_sharding *sharding, *arr_sharding, *result_sharding;
  spmd_array *arr, *arr_sharded, *s, *t, *result;
  int64_t shape[2];
  tour_cell("mesh = jax.make_mesh((3,), ('x',))\n"
            "sharding = jax.sharding.NamedSharding(mesh, PartitionSpec('x',)); print(sharding)");
  CALL(spmd_mesh_create(rt, 1, (int64_t[]){3}, (const char *[]){"x"}, NULL, &mesh));
  CALL(spmd_sharding_named_text(mesh, "PartitionSpec('x',)", &sharding));
  show_sharding(sharding, "sharding");
  tour_agree_text("text", "named/3/P('x')", "expected");
  tour_cell("arr = jnp.arange(24.0).reshape(3, 8); arr.shape");
  CALL(spmd_array_arange(dev0, SPMD_F32, 2, (int64_t[]){3, 8}, 0, 1, &arr));
  CALL(spmd_array_shape(arr, 2, shape, NULL));
  show_line("printf(\"(%lld, %lld)\\n\", shape[0], shape[1]);", "(%lld, %lld)",
            (long long)shape[0], (long long)shape[1]);
  tour_cell("arr_sharded = jax.device_put(arr, sharding); arr_sharded.sharding");
  CALL(spmd_array_reshard(arr, sharding, &arr_sharded));
  CALL(spmd_array_sharding(arr_sharded, &arr_sharding));
  show_sharding(arr_sharding, "arr_sharding");
  tour_agree_text("text", "named/3/P('x')", "expected");
  tour_cell("jax.debug.visualize_array_sharding(arr_sharded)");
  show_picture(arr_sharded, "arr_sharded");
  tour_agree_text("pictures", "seed0/arange24_3x8_P('x')", "picture");
  tour_agree_array("text", "array/seed0/arange24_3x8", "", arr_sharded, 0);

  tour_cell("@jax.jit\ndef f(x):\n    return 2 * jnp.sin(x) + 1\n"
            "result = f(arr_sharded); jax.debug.visualize_array_sharding(result)");
  CALL(spmd_unary(SPMD_UNARY_SIN, arr_sharded, NULL, &s));
  CALL(spmd_scalar_binary(SPMD_BINARY_MUL, 2.0, s, NULL, &t));
  CALL(spmd_binary_scalar(SPMD_BINARY_ADD, t, 1.0, NULL, &result));
  VCALL(spmd_array_destroy(t));
  VCALL(spmd_array_destroy(s));
  show_picture(result, "result");
  tour_agree_text("pictures", "seed0/elementwise_3x8", "picture");
  tour_cell("arr_sharded.sharding == result.sharding");
  int same;
  CALL(spmd_array_sharding(result, &result_sharding));
  CALL(spmd_sharding_equal(arr_sharding, result_sharding, &same));
  show_line("puts(same ? \"True\" : \"False\");", "%s", same ? "True" : "False");
  spmd_sharding_destroy(result_sharding);
  spmd_array_destroy(result);

  tour_cell("@jax.jit\ndef f(x):\n    return x.sum(axis=0)\n"
            "result = f(arr_sharded); jax.debug.visualize_array_sharding(result)");
  CALL(spmd_reduce(SPMD_REDUCE_SUM, arr_sharded, 1, (int64_t[]){0}, 0, NULL, &result));
  show_picture(result, "result");
  tour_agree_text("pictures", "seed0/sum_axis0_8", "picture");
  spmd_array_destroy(result);
  tour_cell("arr.sum(axis=1)");
  CALL(spmd_reduce(SPMD_REDUCE_SUM, arr, 1, (int64_t[]){1}, 0, NULL, &result));
  show_repr(result, "result");
  tour_agree_text("text", "array/seed0/sum_axis1", "expected.repr");
  spmd_array_destroy(result);
  tour_cell("@jax.jit\ndef f(x):\n    return x.sum(axis=1)\n"
            "result = f(arr_sharded); jax.debug.visualize_array_sharding(result)");
  CALL(spmd_reduce(SPMD_REDUCE_SUM, arr_sharded, 1, (int64_t[]){1}, 0, NULL, &result));
  show_picture(result, "result");
  tour_agree_text("pictures", "seed0/sum_axis1_3", "picture");
  spmd_array_destroy(result);

  /* The shard_map part of the notebook, on a new Mesh('x': 3). */
  tour_section("Manual partitioning with shard_map");
  tour_cell("mesh = jax.make_mesh((3,), ('x',))\n"
            "@jax.jit\n"
            "def f_elementwise(x):\n"
            "    jax.debug.print(str(x.shape))\n"
            "    return 2 * jnp.sin(x) + 1\n"
            "f_elementwise_sharded = shard_map(f_elementwise, mesh=mesh,\n"
            "                                  in_specs=PartitionSpec('x'), "
            "out_specs=PartitionSpec('x'))\n"
            "arr = jnp.arange(24)\n"
            "f_elementwise_sharded(arr)");
  VCALL(spmd_mesh_destroy(mesh));
  CALL(spmd_mesh_create(rt, 1, (int64_t[]){3}, (const char *[]){"x"}, NULL, &mesh));
  spmd_array *arr24, *y;
  CALL(spmd_array_arange(dev0, SPMD_I32, 1, (int64_t[]){24}, 0, 1, &arr24));
  SEED("spmd_shard_map_text over 'x': each device prints spmd_ctx_printf(ctx, \"(%lld,)\", "
       "n) and computes 2 * sinf(x) + 1 on its block (examples/c/seed_cells.c)",
       seed_elementwise_sin(mesh, arr24, NULL, &y));
  show_repr(y, "y");
  tour_agree_text("seeds", "elementwise_sin_3dev", "text.repr");
  tour_agree_array("seeds", "elementwise_sin_3dev", "outputs.y", y, 1e-6);
  tour_note("the seed, run on CUDA GPUs, printed -0.08804214, 1.8403342 and 0.42419332 where "
            "JAX on CPUs prints -0.08804226, 1.840334 and 0.42419338: the GPU's sin rounds "
            "otherwise");
  spmd_array_destroy(y);
  spmd_array_destroy(arr24);

  tour_cell("def f(x):\n"
            "    sum_in_shard = x.sum()\n"
            "    return jax.lax.psum(sum_in_shard, 'x')\n"
            "result = shard_map(f, mesh=mesh, in_specs=PartitionSpec('x'),\n"
            "                   out_specs=PartitionSpec())(arr_sharded)\n"
            "result");
  SEED("spmd_shard_map_text, check_rep on: each device sums its block, then "
       "spmd_ctx_psum(ctx, &sum, \"x\", &total) (examples/c/seed_cells.c)",
       seed_psum_of_shard_sums(mesh, arr_sharded, &result));
  show_repr(result, "result");
  tour_agree_text("seeds", "psum_of_shard_sums_3dev", "text.repr");
  tour_agree_array("seeds", "psum_of_shard_sums_3dev", "outputs.total", result, 0);
  tour_cell("result.sharding");
  CALL(spmd_array_sharding(result, &result_sharding));
  show_sharding(result_sharding, "result_sharding");
  tour_agree_text("seeds", "psum_of_shard_sums_3dev", "text.sharding");
  spmd_sharding_destroy(result_sharding);
  spmd_array_destroy(result);

  spmd_sharding_destroy(arr_sharding);
  spmd_array_destroy(arr_sharded);
  spmd_array_destroy(arr);
  spmd_sharding_destroy(sharding);
  spmd_mesh_destroy(mesh);
  spmd_sharding_destroy(a_sharding);
  spmd_array_destroy(a);
  spmd_array_destroy(b);
  spmd_sharding_destroy(dev0);
  spmd_sharding_destroy(dev1);
}

/* ---- notebook 001: introduction to sharded computation ---- */

static void sharded_computation(spmd_runtime *rt) {
  tour_section("Introduction to sharded computation");
  spmd_sharding *dev0, *s, *sharding, *arr_sharding, *result_sharding, *constraint;
  spmd_array *arr, *arr_sharded, *sn, *t, *result;
  spmd_mesh *mesh, *mesh8;
  int device;
  char *text;
  tour_cell("arr = jnp.arange(32.0).reshape(4, 8); arr.devices()");
  CALL(spmd_sharding_single_device(rt, 0, &dev0));
  CALL(spmd_array_arange(dev0, SPMD_F32, 2, (int64_t[]){4, 8}, 0, 1, &arr));
  CALL(spmd_array_device(arr, &device));
  CALL(spmd_runtime_device_to_string(rt, device, &text));
  show_line("printf(\"{%s}\\n\", text);", "{%s}", text);
  VCALL(spmd_string_free(text));
  tour_cell("arr.sharding");
  CALL(spmd_array_sharding(arr, &s));
  show_sharding(s, "s");
  tour_agree_text("text", "single_device/0", "expected");
  spmd_sharding_destroy(s);
  tour_cell("jax.debug.visualize_array_sharding(arr)");
  show_picture(arr, "arr");
  tour_agree_text("pictures", "seed1/single_device_4x8", "picture");

  tour_cell("mesh = jax.sharding.Mesh(mesh_utils.create_device_mesh((2, 4)), ('x', 'y'))\n"
            "sharding = jax.sharding.NamedSharding(mesh, P('x', 'y')); print(sharding)");
  CALL(spmd_mesh_create(rt, 2, (int64_t[]){2, 4}, (const char *[]){"x", "y"}, NULL, &mesh));
  CALL(spmd_sharding_named_text(mesh, "P('x', 'y')", &sharding));
  show_sharding(sharding, "sharding");
  tour_agree_text("text", "named/2x4/P('x','y')", "expected");
  tour_cell("arr_sharded = jax.device_put(arr, sharding)\n"
            "print(arr_sharded)\n"
            "jax.debug.visualize_array_sharding(arr_sharded)");
  CALL(spmd_array_reshard(arr, sharding, &arr_sharded));
  show_str(arr_sharded, "arr_sharded");
  tour_agree_text("text", "array/seed1/arange32_4x8", "expected.str");
  show_picture(arr_sharded, "arr_sharded");
  tour_agree_text("pictures", "seed1/arange32_4x8_P('x','y')", "picture");

  tour_section("Automatic parallelism via jit");
  tour_cell("@jax.jit\n"
            "def f_elementwise(x):\n"
            "    return 2 * jnp.sin(x) + 1\n"
            "result = f_elementwise(arr_sharded)\n"
            "print(\"shardings match:\", result.sharding == arr_sharded.sharding)");
  CALL(spmd_unary(SPMD_UNARY_SIN, arr_sharded, NULL, &sn));
  CALL(spmd_scalar_binary(SPMD_BINARY_MUL, 2.0, sn, NULL, &t));
  CALL(spmd_binary_scalar(SPMD_BINARY_ADD, t, 1.0, NULL, &result));
  VCALL(spmd_array_destroy(t));
  VCALL(spmd_array_destroy(sn));
  int same;
  CALL(spmd_array_sharding(result, &result_sharding));
  CALL(spmd_array_sharding(arr_sharded, &arr_sharding));
  CALL(spmd_sharding_equal(result_sharding, arr_sharding, &same));
  show_line("printf(\"shardings match: %s\\n\", same ? \"True\" : \"False\");",
            "shardings match: %s", same ? "True" : "False");
  const char *want = tour_ref_text("seeds", "jit_cells_2x4", "text.shardings_match");
  tour_agree(want != NULL && strcmp(want, same ? "True" : "False") == 0, "seeds",
             "seeds jit_cells_2x4:text.shardings_match");
  tour_agree_array("seeds", "jit_cells_2x4", "outputs.elementwise", result, 1e-6);
  spmd_sharding_destroy(result_sharding);
  spmd_sharding_destroy(arr_sharding);
  spmd_array_destroy(result);

  tour_cell("@jax.jit\n"
            "def f_contract(x):\n"
            "    return x.sum(axis=0)\n"
            "result = f_contract(arr_sharded)\n"
            "jax.debug.visualize_array_sharding(result)\n"
            "print(result)");
  CALL(spmd_reduce(SPMD_REDUCE_SUM, arr_sharded, 1, (int64_t[]){0}, 0, NULL, &result));
  show_picture(result, "result");
  tour_agree_text("seeds", "jit_cells_2x4", "text.contract_picture");
  show_str(result, "result");
  tour_agree_text("seeds", "jit_cells_2x4", "text.contract_repr");
  tour_agree_array("seeds", "jit_cells_2x4", "outputs.contract", result, 1e-6);
  spmd_array_destroy(result);

  tour_cell("@jax.jit\n"
            "def f_contract_2(x):\n"
            "    out = x.sum(axis=0)\n"
            "    devices = mesh_utils.create_device_mesh((8,))\n"
            "    mesh = jax.sharding.Mesh(devices, 'x')\n"
            "    sharding = jax.sharding.NamedSharding(mesh, P('x'))\n"
            "    return jax.lax.with_sharding_constraint(out, sharding)\n"
            "result = f_contract_2(arr_sharded)\n"
            "jax.debug.visualize_array_sharding(result)\n"
            "print(result)");
  CALL(spmd_mesh_create(rt, 1, (int64_t[]){8}, (const char *[]){"x"}, NULL, &mesh8));
  CALL(spmd_sharding_named_text(mesh8, "P('x')", &constraint));
  tour_c("spmd_op_options o = SPMD_OP_OPTIONS_INIT; o.out_sharding = constraint;");
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.out_sharding = constraint;
  CALL(spmd_reduce(SPMD_REDUCE_SUM, arr_sharded, 1, (int64_t[]){0}, 0, &o, &result));
  show_picture(result, "result");
  tour_agree_text("seeds", "jit_cells_2x4", "text.contract_2_picture");
  show_str(result, "result");
  tour_agree_array("seeds", "jit_cells_2x4", "outputs.contract_2", result, 1e-6);
  spmd_array_destroy(result);
  spmd_sharding_destroy(constraint);
  spmd_mesh_destroy(mesh8);
  spmd_array_destroy(arr_sharded);
  spmd_sharding_destroy(sharding);
  spmd_mesh_destroy(mesh);
  spmd_array_destroy(arr);

  tour_section("Manual parallelism with shard_map");
  spmd_array *arr32, *x, *y;
  tour_cell("mesh = jax.sharding.Mesh(jax.devices(), 'x')\n"
            "f_elementwise_sharded = shard_map(f_elementwise, mesh=mesh, in_specs=P('x'), "
            "out_specs=P('x'))\n"
            "arr = jnp.arange(32)\n"
            "f_elementwise_sharded(arr)");
  CALL(spmd_mesh_create(rt, 1, (int64_t[]){8}, (const char *[]){"x"}, NULL, &mesh));
  CALL(spmd_array_arange(dev0, SPMD_I32, 1, (int64_t[]){32}, 0, 1, &arr32));
  SEED("spmd_shard_map_text over 'x': 2 * sinf(x) + 1 on each device's block "
       "(examples/c/seed_cells.c)",
       seed_elementwise_sin_quiet(mesh, arr32, &y));
  show_repr(y, "y");
  {
    /* Its first 24 values are those of the first notebook's cell. */
    float want24[24];
    int64_t n;
    float *have = to_host_f32(y, &n);
    int ok = n == 32 && tour_ref_f32("seeds", "elementwise_sin_3dev", "outputs.y", want24, 24);
    for (int i = 0; ok && i < 24; ++i) ok = have[i] == want24[i];
    tour_agree(ok, "seeds", "seeds elementwise_sin_3dev:outputs.y (the first 24 values)");
    free(have);
  }
  spmd_array_destroy(y);
  spmd_array_destroy(arr32);

  tour_cell("x = jnp.arange(32)\n"
            "print(f\"global shape: {x.shape=}\")\n"
            "def f(x):\n"
            "    print(f\"device local shape: {x.shape=}\")\n"
            "    return x * 2\n"
            "y = shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P('x'))(x)");
  int64_t shape[1];
  CALL(spmd_array_arange(dev0, SPMD_I32, 1, (int64_t[]){32}, 0, 1, &x));
  CALL(spmd_array_shape(x, 1, shape, NULL));
  show_line("printf(\"global shape: x.shape=(%lld,)\\n\", shape[0]);",
            "global shape: x.shape=(%lld,)", (long long)shape[0]);
  SEED("spmd_shard_map_text over 'x': the device at axis index 0 prints its block's "
       "shape once, as Python's print runs once while JAX traces f; each doubles its block "
       "(examples/c/seed_cells.c)",
       seed_double(mesh, x, NULL, &y));
  tour_agree_array("seeds", "local_shapes_8dev", "outputs.doubled", y, 0);
  spmd_array_destroy(y);

  tour_cell("def f(x):\n"
            "    return jnp.sum(x, keepdims=True)\n"
            "shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P('x'))(x)");
  SEED("spmd_shard_map_text over 'x': each device's block summed into a block of shape (1,) "
       "(examples/c/seed_cells.c)",
       seed_shard_sums(mesh, x, &y));
  show_repr(y, "y");
  tour_agree_text("seeds", "local_shapes_8dev", "text.shard_sums");
  tour_agree_array("seeds", "local_shapes_8dev", "outputs.shard_sums", y, 0);
  spmd_array_destroy(y);

  tour_cell("def f(x):\n"
            "    sum_in_shard = x.sum()\n"
            "    return jax.lax.psum(sum_in_shard, 'x')\n"
            "shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P())(x)");
  SEED("spmd_shard_map_text, check_rep on: each device sums its block, then "
       "spmd_ctx_psum(ctx, &sum, \"x\", &total) (examples/c/seed_cells.c)",
       seed_psum_of_shard_sums(mesh, x, &y));
  show_repr(y, "y");
  tour_agree_text("seeds", "local_shapes_8dev", "text.total");
  tour_agree_array("seeds", "local_shapes_8dev", "outputs.total", y, 0);
  spmd_array_destroy(y);
  spmd_array_destroy(x);

  tour_section("Comparing the three approaches");
  spmd_array *weights, *bias, *xw, *z, *out, *x_sharded, *weights_sharded, *bias_replicated;
  spmd_sharding *replicated;
  float hx[32], hw[32 * 4], hb[4];
  tour_cell("@jax.jit\n"
            "def layer(x, weights, bias):\n"
            "    return jax.nn.sigmoid(x @ weights + bias)\n"
            "rng = np.random.default_rng(0)\n"
            "x = rng.normal(size=(32,))\n"
            "weights = rng.normal(size=(32, 4))\n"
            "bias = rng.normal(size=(4,))\n"
            "layer(x, weights, bias)");
  tour_c("tour_ref_f32(\"seeds\", \"layer_three_ways_8dev\", \"inputs.x\", hx, 32);  "
         "/* and weights, bias: numpy's draws, as JAX recorded them */");
  const int have_inputs =
      tour_ref_f32("seeds", "layer_three_ways_8dev", "inputs.x", hx, 32) &&
      tour_ref_f32("seeds", "layer_three_ways_8dev", "inputs.weights", hw, 32 * 4) &&
      tour_ref_f32("seeds", "layer_three_ways_8dev", "inputs.bias", hb, 4);
  if (!have_inputs) {
    fflush(stdout);
    fprintf(stderr, "tour: numpy's default_rng(0) draws are read from %s/seeds/cases.json, "
            "which is missing; SPMD_TOUR_REFERENCES names the directory\n", tour_references());
    exit(1);
  }
  CALL(spmd_array_from_host(dev0, SPMD_F32, 1, (int64_t[]){32}, hx, sizeof hx, &x));
  CALL(spmd_array_from_host(dev0, SPMD_F32, 2, (int64_t[]){32, 4}, hw, sizeof hw, &weights));
  CALL(spmd_array_from_host(dev0, SPMD_F32, 1, (int64_t[]){4}, hb, sizeof hb, &bias));
  CALL(spmd_matmul(x, weights, NULL, &xw));
  CALL(spmd_binary(SPMD_BINARY_ADD, xw, bias, NULL, &z));
  CALL(spmd_unary(SPMD_UNARY_SIGMOID, z, NULL, &out));
  show_repr(out, "out");
  tour_agree_text("seeds", "layer_three_ways_8dev", "text.layer");
  tour_agree_array("seeds", "layer_three_ways_8dev", "outputs.layer", out, 1e-5);
  spmd_array_destroy(out);
  spmd_array_destroy(z);
  spmd_array_destroy(xw);
  tour_note("x, weights and bias are numpy's default_rng(0) draws as JAX recorded them "
            "(tests/conformance/seeds/cases.json): libspmd's generator is jax.random's");

  tour_cell("sharding = jax.sharding.NamedSharding(mesh, P('x'))\n"
            "x_sharded = jax.device_put(x, sharding)\n"
            "weights_sharded = jax.device_put(weights, sharding)\n"
            "layer(x_sharded, weights_sharded, bias)");
  CALL(spmd_sharding_named_text(mesh, "P('x')", &sharding));
  CALL(spmd_array_reshard(x, sharding, &x_sharded));
  CALL(spmd_array_reshard(weights, sharding, &weights_sharded));
  CALL(spmd_sharding_replicated(mesh, &replicated));
  CALL(spmd_array_reshard(bias, replicated, &bias_replicated));
  CALL(spmd_matmul(x_sharded, weights_sharded, NULL, &xw)); /* the psum over 'x' appears here */
  CALL(spmd_binary(SPMD_BINARY_ADD, xw, bias_replicated, NULL, &z));
  CALL(spmd_unary(SPMD_UNARY_SIGMOID, z, NULL, &out));
  show_repr(out, "out");
  tour_agree_array("seeds", "layer_three_ways_8dev", "outputs.layer_jit_sharded", out, 1e-5);
  spmd_array_destroy(out);
  spmd_array_destroy(z);
  spmd_array_destroy(xw);

  tour_cell("@jax.jit\n"
            "def layer_auto(x, weights, bias):\n"
            "    x = jax.lax.with_sharding_constraint(x, sharding)\n"
            "    weights = jax.lax.with_sharding_constraint(weights, sharding)\n"
            "    return layer(x, weights, bias)\n"
            "layer_auto(x, weights, bias)  # pass in unsharded inputs");
  SEED("x and weights placed P('x'), bias replicated, then spmd_matmul (the psum over 'x' by "
       "propagation), spmd_binary(SPMD_BINARY_ADD), spmd_unary(SPMD_UNARY_SIGMOID) "
       "(examples/c/seed_cells.c)",
       seed_layer_auto(mesh, x, weights, bias, &out));
  show_repr(out, "out");
  tour_agree_array("seeds", "layer_three_ways_8dev", "outputs.layer_jit_sharded", out, 1e-5);
  spmd_array_destroy(out);

  tour_cell("@jax.jit\n"
            "@partial(shard_map, mesh=mesh, in_specs=(P('x'), P('x', None), P(None)),\n"
            "         out_specs=P(None))\n"
            "def layer_sharded(x, weights, bias):\n"
            "    return jax.nn.sigmoid(jax.lax.psum(x @ weights, 'x') + bias)\n"
            "layer_sharded(x, weights, bias)");
  SEED("spmd_shard_map_text, check_rep on: each device multiplies its 4 elements of x by its "
       "4 rows of weights, spmd_ctx_psum over 'x', adds bias; then "
       "spmd_unary(SPMD_UNARY_SIGMOID) of the replicated result (examples/c/seed_cells.c)",
       seed_layer_sharded(mesh, x, weights, bias, &out));
  show_repr(out, "out");
  tour_agree_array("seeds", "layer_three_ways_8dev", "outputs.layer_shard_map", out, 1e-5);
  spmd_array_destroy(out);

  spmd_array_destroy(bias_replicated);
  spmd_sharding_destroy(replicated);
  spmd_array_destroy(weights_sharded);
  spmd_array_destroy(x_sharded);
  spmd_sharding_destroy(sharding);
  spmd_array_destroy(bias);
  spmd_array_destroy(weights);
  spmd_array_destroy(x);
  spmd_mesh_destroy(mesh);
  spmd_sharding_destroy(dev0);
}

/* ---- notebook 002: FSDP, tensor parallelism, communication, the Layer ---- */

static void fsdp_and_tensor_parallelism(spmd_runtime *rt) {
  tour_section("FSDP-style sharding");
  spmd_sharding *dev0, *rows, *s;
  spmd_mesh *mesh;
  spmd_key key;
  spmd_array *x_normal, *a_normal, *x, *A, *B, *B_non_sharded, *W1, *W2, *h, *B_pjit;
  spmd_array *xp, *Ap, *W1p, *W2p;
  tour_cell("mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), "
            "axis_names=(\"data\", \"model\"))\n"
            "x = jax.random.normal(jax.random.PRNGKey(0), (4, 10))\n"
            "A = jax.random.normal(jax.random.PRNGKey(0), (10, 10))\n"
            "x = jax.device_put(x, NamedSharding(mesh, PartitionSpec(\"data\", None)))\n"
            "A = jax.device_put(A, NamedSharding(mesh, PartitionSpec(\"data\", None)))\n"
            "def sharded_matmul(x, A):\n"
            "    A = jax.lax.all_gather(A, axis_name=\"data\", axis=0, tiled=True)\n"
            "    return x @ A\n"
            "sharded_matmul = shard_map(sharded_matmul, mesh=mesh,\n"
            "    in_specs=(PartitionSpec(\"data\", None), PartitionSpec(\"data\", None)),\n"
            "    out_specs=PartitionSpec(\"data\", None))\n"
            "with mesh:\n"
            "    B = sharded_matmul(x, A)\n"
            "    B_non_sharded = x @ A\n"
            "    assert np.allclose(B, B_non_sharded)\n"
            "jax.debug.visualize_array_sharding(B)");
  CALL(spmd_mesh_create(rt, 2, (int64_t[]){2, 2}, (const char *[]){"data", "model"},
                        (int[]){0, 1, 2, 3}, &mesh));
  CALL(spmd_sharding_single_device(rt, 0, &dev0));
  CALL(spmd_random_key(0, &key));
  CALL(spmd_random_normal(dev0, &key, SPMD_F32, 2, (int64_t[]){4, 10}, &x_normal));
  CALL(spmd_random_normal(dev0, &key, SPMD_F32, 2, (int64_t[]){10, 10}, &a_normal));
  CALL(spmd_sharding_named_text(mesh, "PartitionSpec('data', None)", &rows));
  CALL(spmd_array_reshard(x_normal, rows, &x));
  CALL(spmd_array_reshard(a_normal, rows, &A));
  SEED("spmd_shard_map_text, in_specs ('data', None) twice: each device runs "
       "spmd_ctx_all_gather(ctx, &A, \"data\", 0, 1, &full), then x @ full "
       "(examples/c/seed_cells.c)",
       seed_fsdp_matmul(mesh, x, A, &B));
  CALL(spmd_matmul(x, A, NULL, &B_non_sharded));
  assert_allclose(B, B_non_sharded, "B", "B_non_sharded");
  show_picture(B, "B");
  tour_agree_text("seeds", "fsdp_matmul_2x2", "text.picture");
  tour_agree_array("seeds", "fsdp_matmul_2x2", "outputs.B", B, 1e-5);
  tour_agree_array("seeds", "fsdp_matmul_2x2", "outputs.unsharded", B_non_sharded, 1e-5);
  spmd_array_destroy(B_non_sharded);
  spmd_array_destroy(B);

  tour_section("Column-wise Tensor Parallelism for MLP");
  tour_cell("x = jax.random.normal(jax.random.PRNGKey(0), (4, 10))\n"
            "W1 = jax.random.normal(jax.random.PRNGKey(0), (10, 40))\n"
            "W2 = jax.random.normal(jax.random.PRNGKey(0), (40, 10))\n"
            "def sharded_matmul(x, W1, W2):\n"
            "    x = jax.lax.all_gather(x, axis_name=\"model\", axis=1, tiled=True)\n"
            "    temp = x @ W1\n"
            "    temp = temp @ W2\n"
            "    return jax.lax.psum_scatter(temp, axis_name=\"model\", scatter_dimension=1, "
            "tiled=True)\n"
            "sharded_matmul = shard_map(sharded_matmul, mesh=mesh,\n"
            "    in_specs=(PartitionSpec(None, \"model\"), PartitionSpec(None, \"model\"),\n"
            "              PartitionSpec(\"model\", None)),\n"
            "    out_specs=PartitionSpec(None, \"model\"))\n"
            "with mesh:\n"
            "    B = sharded_matmul(x, W1, W2)\n"
            "    B_non_sharded = x @ W1 @ W2\n"
            "    assert np.allclose(B, B_non_sharded)\n"
            "jax.debug.visualize_array_sharding(B)");
  CALL(spmd_random_normal(dev0, &key, SPMD_F32, 2, (int64_t[]){10, 40}, &W1));
  CALL(spmd_random_normal(dev0, &key, SPMD_F32, 2, (int64_t[]){40, 10}, &W2));
  SEED("spmd_shard_map_text, in_specs (None, 'model'), (None, 'model'), ('model', None): each "
       "device gathers x over 'model' (spmd_ctx_all_gather), multiplies by its columns of W1 "
       "and rows of W2, then spmd_ctx_psum_scatter(ctx, &y, \"model\", 1, 1, &out) "
       "(examples/c/seed_cells.c)",
       seed_tp_mlp(mesh, x_normal, W1, W2, &B));
  CALL(spmd_matmul(x_normal, W1, NULL, &h));
  CALL(spmd_matmul(h, W2, NULL, &B_non_sharded));
  assert_allclose(B, B_non_sharded, "B", "B_non_sharded");
  show_picture(B, "B");
  tour_agree_text("seeds", "tp_mlp_2x2", "text.picture");
  tour_agree_array("seeds", "tp_mlp_2x2", "outputs.B", B, 1e-4);
  tour_agree_array("seeds", "tp_mlp_2x2", "outputs.unsharded", B_non_sharded, 1e-4);
  tour_note("the seed's copy of this cell also shows (4, 10), which this code does not print");
  spmd_array_destroy(B);

  tour_section("FSDP + TP style sharding");
  tour_cell("def sharded_matmul(x, W1, W2):\n"
            "    x = jax.lax.all_gather(x, axis_name=\"model\", axis=1, tiled=True)\n"
            "    W1 = jax.lax.all_gather(W1, axis_name=\"data\", axis=0, tiled=True)\n"
            "    W2 = jax.lax.all_gather(W2, axis_name=\"data\", axis=1, tiled=True)\n"
            "    temp = x @ W1\n"
            "    out = temp @ W2\n"
            "    return jax.lax.psum_scatter(out, axis_name=\"model\", scatter_dimension=1, "
            "tiled=True)\n"
            "specs = (PartitionSpec(\"data\", \"model\"), PartitionSpec(\"data\", \"model\"),\n"
            "         PartitionSpec(\"model\", \"data\"))\n"
            "sharded_matmul = shard_map(sharded_matmul, mesh=mesh, in_specs=specs,\n"
            "                           out_specs=PartitionSpec(\"data\", \"model\"))\n"
            "sharded_matmul_pjit = pjit(sharded_matmul, in_shardings=specs,\n"
            "                           out_shardings=PartitionSpec(\"data\", \"model\"))\n"
            "with mesh:\n"
            "    B = sharded_matmul(x, W1, W2)\n"
            "    B_pjit = sharded_matmul_pjit(x, W1, W2)\n"
            "    B_non_sharded = x @ W1 @ W2\n"
            "    assert np.allclose(B, B_non_sharded)\n"
            "    assert np.allclose(B, B_pjit)\n"
            "jax.debug.visualize_array_sharding(B)");
  SEED("spmd_shard_map_text, in_specs ('data', 'model'), ('data', 'model'), ('model', "
       "'data'): each device gathers x over 'model', W1 and W2 over 'data' "
       "(spmd_ctx_all_gather), multiplies, then spmd_ctx_psum_scatter over 'model' "
       "(examples/c/seed_cells.c)",
       seed_fsdp_tp(mesh, x_normal, W1, W2, &B));
  /* pjit places the operands as in_shardings says, then runs the same program. */
  PUT_C("xp", "x_normal", "'data', 'model'");
  xp = put(mesh, x_normal, "'data', 'model'");
  PUT_C("W1p", "W1", "'data', 'model'");
  W1p = put(mesh, W1, "'data', 'model'");
  PUT_C("W2p", "W2", "'model', 'data'");
  W2p = put(mesh, W2, "'model', 'data'");
  SEED("the same program on the placed operands", seed_fsdp_tp(mesh, xp, W1p, W2p, &B_pjit));
  assert_allclose(B, B_non_sharded, "B", "B_non_sharded");
  assert_allclose(B, B_pjit, "B", "B_pjit");
  show_picture(B, "B");
  tour_agree_text("seeds", "fsdp_tp_2x2", "text.picture");
  tour_agree_array("seeds", "fsdp_tp_2x2", "outputs.B", B, 1e-4);
  tour_agree_array("seeds", "fsdp_tp_2x2", "outputs.B", B_pjit, 1e-4);
  spmd_array_destroy(B_pjit);
  spmd_array_destroy(W2p);
  spmd_array_destroy(W1p);
  spmd_array_destroy(xp);
  spmd_array_destroy(B);
  spmd_array_destroy(h);

  tour_section("The same three without shard_map");
  tour_note("jax.jit over sharded operands: the collectives appear by propagation");
  spmd_array *xa;
  tour_cell("def put(a, *spec):\n"
            "    return jax.device_put(a, NamedSharding(mesh, PartitionSpec(*spec)))\n"
            "B = jax.jit(lambda x, A: x @ A, out_shardings=NamedSharding(mesh, "
            "PartitionSpec(\"data\", None)))(\n"
            "    put(x, \"data\", None), put(A, \"data\", None))\n"
            "assert np.allclose(B, x @ A)\n"
            "jax.debug.visualize_array_sharding(B)");
  PUT_C("xp", "x_normal", "'data', None");
  xp = put(mesh, x_normal, "'data', None");
  PUT_C("Ap", "A", "'data', None");
  Ap = put(mesh, A, "'data', None");
  tour_c("spmd_op_options o = SPMD_OP_OPTIONS_INIT; o.out_sharding = rows;");
  spmd_op_options o = SPMD_OP_OPTIONS_INIT;
  o.out_sharding = rows;
  CALL(spmd_matmul(xp, Ap, &o, &B)); /* A gathered over 'data' by propagation */
  CALL(spmd_matmul(x, A, NULL, &xa));
  assert_allclose(B, xa, "B", "xa");
  show_picture(B, "B");
  tour_agree_text("seeds", "fsdp_matmul_2x2", "text.picture");
  tour_agree_array("seeds", "fsdp_matmul_2x2", "outputs.B", B, 1e-5);
  spmd_array_destroy(xa);
  spmd_array_destroy(B);
  spmd_array_destroy(Ap);
  spmd_array_destroy(xp);

  static const char *const auto_specs[2][4] = {
      {"None, 'model'", "None, 'model'", "'model', None", "None, 'model'"},
      {"'data', 'model'", "'data', 'model'", "'model', 'data'", "'data', 'model'"}};
  static const char *const auto_cells[2] = {
      "B = jax.jit(lambda x, W1, W2: x @ W1 @ W2,\n"
      "            out_shardings=NamedSharding(mesh, PartitionSpec(None, \"model\")))(\n"
      "    put(x, None, \"model\"), put(W1, None, \"model\"), put(W2, \"model\", None))\n"
      "assert np.allclose(B, x @ W1 @ W2)\n"
      "jax.debug.visualize_array_sharding(B)",
      "B = jax.jit(lambda x, W1, W2: x @ W1 @ W2,\n"
      "            out_shardings=NamedSharding(mesh, PartitionSpec(\"data\", \"model\")))(\n"
      "    put(x, \"data\", \"model\"), put(W1, \"data\", \"model\"), "
      "put(W2, \"model\", \"data\"))\n"
      "assert np.allclose(B, x @ W1 @ W2)\n"
      "jax.debug.visualize_array_sharding(B)"};
  static const char *const auto_cases[2] = {"tp_mlp_2x2", "fsdp_tp_2x2"};
  for (int k = 0; k < 2; ++k) {
    tour_cell(auto_cells[k]);
    PUT_C("xp", "x_normal", auto_specs[k][0]);
    xp = put(mesh, x_normal, auto_specs[k][0]);
    PUT_C("W1p", "W1", auto_specs[k][1]);
    W1p = put(mesh, W1, auto_specs[k][1]);
    PUT_C("W2p", "W2", auto_specs[k][2]);
    W2p = put(mesh, W2, auto_specs[k][2]);
    tour_c("spmd_sharding_named_text(mesh, \"%s\", &s);", auto_specs[k][3]);
    tour_ok(spmd_sharding_named_text(mesh, auto_specs[k][3], &s), "spmd_sharding_named_text");
    tour_c("spmd_op_options o = SPMD_OP_OPTIONS_INIT; o.out_sharding = s;");
    o.out_sharding = s;
    CALL(spmd_matmul(xp, W1p, NULL, &h));
    CALL(spmd_matmul(h, W2p, &o, &B)); /* the psum_scatter over 'model' by propagation */
    assert_allclose(B, B_non_sharded, "B", "B_non_sharded");  /* x @ W1 @ W2, as above */
    show_picture(B, "B");
    tour_agree_text("seeds", auto_cases[k], "text.picture");
    tour_agree_array("seeds", auto_cases[k], "outputs.B", B, 1e-4);
    spmd_array_destroy(B);
    spmd_array_destroy(h);
    spmd_sharding_destroy(s);
    spmd_array_destroy(W2p);
    spmd_array_destroy(W1p);
    spmd_array_destroy(xp);
  }
  spmd_array_destroy(B_non_sharded);
  spmd_array_destroy(W2);
  spmd_array_destroy(W1);
  spmd_array_destroy(A);
  spmd_array_destroy(x);
  spmd_array_destroy(a_normal);
  spmd_array_destroy(x_normal);
  spmd_sharding_destroy(rows);
  spmd_sharding_destroy(dev0);
  spmd_mesh_destroy(mesh);
}

static void all_to_all_benchmark(spmd_runtime *rt) {
  tour_section("Benchmarking communication");
  spmd_sharding *dev0, *rows;
  spmd_mesh *mesh;
  spmd_key key;
  spmd_array *X_normal, *X, *X_after_fn = NULL, *X_T, *X_T_T;
  char t[64];
  tour_cell("X = jax.random.normal(jax.random.PRNGKey(0), (1000, 1000))\n"
            "mesh = Mesh(np.array(jax.devices()[:4]).reshape(4, ), axis_names=(\"data\", ))\n"
            "X = jax.device_put(X, NamedSharding(mesh, PartitionSpec(\"data\", None)))\n"
            "all_to_all = shard_map(lambda x: jax.lax.all_to_all(x, axis_name=\"data\", "
            "split_axis=1,\n"
            "                                                    concat_axis=0, tiled=True),\n"
            "    mesh=mesh, in_specs=PartitionSpec(\"data\", None), "
            "out_specs=PartitionSpec(None, \"data\"),\n"
            "    check_rep=False)\n"
            "def benchmark_func(fn, num_iters=25):\n"
            "    start = time.time()\n"
            "    jax.debug.visualize_array_sharding(X)\n"
            "    for _ in range(5):\n"
            "        X_after_fn = fn(X)\n"
            "    end = time.time()\n"
            "    X_after_fn.block_until_ready()\n"
            "    print(f\"Warmup time: {end - start} seconds\")\n"
            "    start = time.time()\n"
            "    for _ in range(num_iters):\n"
            "        X_after_fn = fn(X)\n"
            "    end = time.time()\n"
            "    X_after_fn.block_until_ready()\n"
            "    jax.debug.visualize_array_sharding(X_after_fn)\n"
            "    print(f\"Time per iteration: {(end - start) / num_iters} seconds\")\n"
            "with mesh:\n"
            "    print(\"all to all\")\n"
            "    benchmark_func(all_to_all)\n"
            "    X_T = all_to_all(X)\n"
            "    X_T_T = all_to_all(X_T)\n"
            "    assert np.allclose(X, X_T_T)");
  CALL(spmd_sharding_single_device(rt, 0, &dev0));
  CALL(spmd_random_key(0, &key));
  CALL(spmd_random_normal(dev0, &key, SPMD_F32, 2, (int64_t[]){1000, 1000}, &X_normal));
  CALL(spmd_mesh_create(rt, 1, (int64_t[]){4}, (const char *[]){"data"}, (int[]){0, 1, 2, 3},
                        &mesh));
  CALL(spmd_sharding_named_text(mesh, "PartitionSpec('data', None)", &rows));
  CALL(spmd_array_reshard(X_normal, rows, &X));
  show_line("puts(\"all to all\");", "all to all");
  double start = seconds();
  show_picture(X, "X");
  tour_agree_text("seeds", "all_to_all_1000x1000_4dev", "text.X_picture");
  tour_c("for (int i = 0; i < 5; ++i) {  /* and again 25 times, timed */");
  for (int i = 0; i < 5; ++i) {
    if (i == 1) tour_show_c = -tour_show_c; /* one iteration's lines are enough */
    VCALL(spmd_array_destroy(X_after_fn));
    SEED("spmd_shard_map_text over 'data': each device runs spmd_ctx_all_to_all(ctx, &x, "
         "\"data\", 1, 0, 1, &y) (examples/c/seed_cells.c)",
         seed_all_to_all(mesh, X, &X_after_fn));
  }
  if (tour_show_c < 0) tour_show_c = -tour_show_c;
  tour_c("}");
  double end = seconds();
  CALL(spmd_array_block_until_ready(X_after_fn));
  py_float(end - start, t, sizeof t);
  show_line("printf(\"Warmup time: %s seconds\\n\", t);  /* t: the seconds as Python prints "
            "them */",
            "Warmup time: %s seconds", t);
  const int num_iters = 25;
  start = seconds();
  for (int i = 0; i < num_iters; ++i) {
    spmd_array_destroy(X_after_fn);
    tour_ok(seed_all_to_all(mesh, X, &X_after_fn), "seed_all_to_all");
  }
  end = seconds();
  CALL(spmd_array_block_until_ready(X_after_fn));
  show_picture(X_after_fn, "X_after_fn");
  tour_agree_text("seeds", "all_to_all_1000x1000_4dev", "text.X_T_picture");
  py_float((end - start) / num_iters, t, sizeof t);
  const double per_iteration = (end - start) / num_iters;
  show_line("printf(\"Time per iteration: %s seconds\\n\", t);",
            "Time per iteration: %s seconds", t);
  SEED("as above", seed_all_to_all(mesh, X, &X_T));
  SEED("as above", seed_all_to_all(mesh, X_T, &X_T_T));
  assert_allclose(X, X_T_T, "X", "X_T_T");
  tour_agree_array("seeds", "all_to_all_1000x1000_4dev", "outputs.X", X, 0);
  tour_agree_array("seeds", "all_to_all_1000x1000_4dev", "outputs.X_T", X_T, 0);
  tour_agree_array("seeds", "all_to_all_1000x1000_4dev", "outputs.X_T_T", X_T_T, 0);
  tour_note("the first picture is X, its rows split over 'data'; the second is "
            "X_after_fn = all_to_all(X), its columns split over 'data'");
  tour_note("times are this run's, on 4 of libspmd's CPU devices (%.2g ms per all_to_all of "
            "4 MB); the seed's GPUs printed 3.99 s to warm up (JAX compiles then) and 0.80 s "
            "per iteration",
            per_iteration * 1e3);
  spmd_array_destroy(X_T_T);
  spmd_array_destroy(X_T);
  spmd_array_destroy(X_after_fn);
  spmd_array_destroy(X);
  spmd_array_destroy(X_normal);
  spmd_sharding_destroy(rows);
  spmd_mesh_destroy(mesh);
  spmd_sharding_destroy(dev0);
}

static void attention_mlp_layer(spmd_runtime *rt) {
  tour_section("Attention + MLP layer, tensor parallel");
  spmd_mesh *mesh;
  spmd_sharding *rows;
  spmd_key key;
  spmd_array *X, *y, *y_flat, *y_ops;
  seed_layer layer;
  tour_cell("# class Attention, MLP and Layer: the notebook's, unchanged (Wq, Wk, Wv and W1 "
            "split\n"
            "# PartitionSpec(None, \"model\"), Wo and W2 PartitionSpec(\"model\", None))\n"
            "mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), "
            "axis_names=(\"data\", \"model\"))\n"
            "rngs = nnx.Rngs(0)\n"
            "with jax.set_mesh(mesh):  # the notebook's `with mesh:` (flax now asks for "
            "set_mesh)\n"
            "    X = jax.random.normal(jax.random.PRNGKey(0), (2, 128, 1024))\n"
            "    X = jax.device_put(X, NamedSharding(mesh, PartitionSpec(\"data\", None)))\n"
            "    model = nnx.jit(Layer(hidden_dim=1024, num_heads=16, rngs=rngs))\n"
            "    y = model(X)\n"
            "    jax.debug.visualize_array_sharding(y.reshape(2, -1))");
  CALL(spmd_mesh_create(rt, 2, (int64_t[]){2, 2}, (const char *[]){"data", "model"},
                        (int[]){0, 1, 2, 3}, &mesh));
  CALL(spmd_random_key(0, &key));
  CALL(spmd_sharding_named_text(mesh, "PartitionSpec('data', None)", &rows));
  CALL(spmd_random_normal(rows, &key, SPMD_F32, 3, (int64_t[]){2, 128, 1024}, &X));
  SEED("the six kernels as nnx.Rngs(0) draws them: spmd_random_fold_in, "
       "spmd_random_truncated_normal, laid out P(None, 'model') or P('model', None) "
       "(examples/c/seed_layer.c)",
       seed_layer_init(mesh, 1024, 16, &layer));
  const double t0 = seconds();
  SEED("one spmd_shard_map_text: each device computes its heads and its W1 columns, and "
       "each half of the layer ends in spmd_ctx_psum over 'model' (examples/c/seed_layer.c)",
       seed_layer_apply(mesh, &layer, X, &y));
  const double elapsed = seconds() - t0;
  CALL(spmd_reshape(y, 2, (int64_t[]){2, -1}, NULL, &y_flat));
  show_picture(y_flat, "y_flat");
  tour_agree_text("layer", "attention_mlp_layer_2x2", "text.picture");
  tour_agree_array("layer", "attention_mlp_layer_2x2", "x.summary", X, 0);
  tour_agree_array("layer", "attention_mlp_layer_2x2", "output", y, 1e-4);

  const double t1 = seconds();
  tour_ok(seed_layer_apply_auto(mesh, &layer, X, &y_ops), "seed_layer_apply_auto");
  const double elapsed_ops = seconds() - t1;
  tour_agree_array("layer", "attention_mlp_layer_2x2", "output", y_ops, 1e-4);
  int64_t n;
  float *a = to_host_f32(y, &n), *b = to_host_f32(y_ops, &n);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = fmax(worst, fabs((double)a[i] - b[i]));
  free(a);
  free(b);
  tour_note("one layer took %.3f s on 4 devices, written as one shard_map "
            "(seed_layer_apply)", elapsed);
  tour_note("written instead with global ops (seed_layer_apply_auto: einsum, reshape, "
            "transpose, softmax, relu; the psums over 'model' after Wo and W2 found by "
            "propagation) it took %.3f s and gives y within %.2g (float32 sums grouped "
            "otherwise)", elapsed_ops, worst);
  spmd_array_destroy(y_ops);
  spmd_array_destroy(y_flat);
  spmd_array_destroy(y);
  spmd_array_destroy(X);
  seed_layer_destroy(&layer);
  spmd_sharding_destroy(rows);
  spmd_mesh_destroy(mesh);
}

/* ---- notebook 003: autoparallelism (Equinox, data parallel) ---- */

enum { DATA = 64, BATCH = 16, STEPS = 10 };

/* x, y of one batch: rows idx of xs, ys, placed P('x'). */
static void batch_arrays(const spmd_sharding *sharding, float (*xs)[SEED_MLP_IN],
                         float (*ys)[SEED_MLP_OUT], const uint8_t *idx, spmd_array **x,
                         spmd_array **y) {
  float bx[BATCH][SEED_MLP_IN], by[BATCH][SEED_MLP_OUT];
  for (int r = 0; r < BATCH; ++r) {
    memcpy(bx[r], xs[idx ? idx[r] : r], sizeof bx[r]);
    memcpy(by[r], ys[idx ? idx[r] : r], sizeof by[r]);
  }
  tour_c("spmd_array_from_host(sharding, SPMD_F32, 2, (int64_t[]){16, 4}, bx, sizeof bx, &x);");
  tour_ok(spmd_array_from_host(sharding, SPMD_F32, 2, (int64_t[]){BATCH, SEED_MLP_IN}, bx,
                               sizeof bx, x),
          "spmd_array_from_host");
  tour_c("spmd_array_from_host(sharding, SPMD_F32, 2, (int64_t[]){16, 4}, by, sizeof by, &y);");
  tour_ok(spmd_array_from_host(sharding, SPMD_F32, 2, (int64_t[]){BATCH, SEED_MLP_OUT}, by,
                               sizeof by, y),
          "spmd_array_from_host");
}

static double max_relative(const float *a, const double *b, int n) {
  double worst = 0;
  for (int i = 0; i < n; ++i) worst = fmax(worst, fabs((double)a[i] - b[i]) / fabs(b[i]));
  return worst;
}

/* The four tensors of a recorded params object, in seed_train.h's order. */
static int ref_params(const char *case_name, const char *which, float *params) {
  static const char *const names[4] = {"layer0_weight", "layer0_bias", "layer1_weight",
                                       "layer1_bias"};
  static const size_t counts[4] = {SEED_MLP_HIDDEN * SEED_MLP_IN, SEED_MLP_HIDDEN,
                                   SEED_MLP_OUT * SEED_MLP_HIDDEN, SEED_MLP_OUT};
  size_t at = 0;
  for (int k = 0; k < 4; ++k) {
    char path[64];
    snprintf(path, sizeof path, "%s.%s", which, names[k]);
    if (!tour_ref_f32("training", case_name, path, params + at, counts[k])) return 0;
    at += counts[k];
  }
  return 1;
}

static void data_parallel_training(spmd_runtime *rt) {
  tour_section("Data-parallel training (autoparallelism)");
  static const char *const training = "equinox_data_parallel_mlp";
  spmd_mesh *mesh;
  spmd_sharding *sharding;
  spmd_key model_key;
  seed_trainer *trainer;
  seed_ops_trainer *ops_trainer;
  spmd_array *x, *y;
  static float xs[DATA][SEED_MLP_IN], ys[DATA][SEED_MLP_OUT];
  static uint8_t batches[STEPS][BATCH];
  float params[SEED_MLP_PARAMS], want_params[SEED_MLP_PARAMS];
  float losses[STEPS], ops_losses[STEPS];

  tour_cell("# compute_loss, train_dataloader, train_step, eval_dataloader, evaluate: the "
            "notebook's\n"
            "dataset_size, channel_size, hidden_size, depth = 64, 4, 32, 1\n"
            "learning_rate, num_steps, batch_size = 3e-4, 10, 16\n"
            "np.random.seed(0)  # the notebook draws from numpy's unseeded global generator\n"
            "xs = np.random.normal(size=(dataset_size, channel_size))\n"
            "ys = np.sin(xs)\n"
            "model = eqx.nn.MLP(channel_size, channel_size, hidden_size, depth, "
            "key=jr.PRNGKey(6789))\n"
            "optim = optax.adam(learning_rate)\n"
            "opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))");
  tour_c("tour_ref_f32(\"training\", \"%s\", \"data.xs\", xs, 64 * 4);  /* and ys, and each "
         "step's batch rows: numpy's draws after np.random.seed(0), as JAX recorded them */",
         training);
  if (!tour_ref_f32("training", training, "data.xs", &xs[0][0], DATA * SEED_MLP_IN) ||
      !tour_ref_f32("training", training, "data.ys", &ys[0][0], DATA * SEED_MLP_OUT) ||
      !tour_ref_u8("training", training, "batches", &batches[0][0], STEPS * BATCH)) {
    fflush(stdout);
    fprintf(stderr, "tour: numpy's draws are read from %s/training/cases.json, which is "
            "missing; SPMD_TOUR_REFERENCES names the directory\n", tour_references());
    exit(1);
  }
  CALL(spmd_mesh_create(rt, 1, (int64_t[]){8}, (const char *[]){"x"}, NULL, &mesh));
  CALL(spmd_random_key(6789, &model_key));
  SEED("each Linear's weight and bias uniform on [-1/sqrt(in), 1/sqrt(in)) from "
       "spmd_random_split keys, as Equinox draws them (examples/c/seed_train.c)",
       seed_mlp_init(mesh, &model_key, params));
  SEED("the parameters and Adam's state replicated on the mesh (examples/c/seed_train.c)",
       seed_trainer_create(mesh, "x", params, 3e-4, &trainer));
  {
    int ok = ref_params(training, "params", want_params);
    for (int i = 0; ok && i < SEED_MLP_PARAMS; ++i) ok = params[i] == want_params[i];
    tour_agree(ok, "training", "training: the initial parameters, bit for bit");
  }

  tour_cell("mesh = jax.sharding.Mesh(jax.devices(), 'x')  # the notebook: PositionalSharding\n"
            "sharding = jax.sharding.NamedSharding(mesh, PartitionSpec('x'))\n"
            "replicated = jax.sharding.NamedSharding(mesh, PartitionSpec())\n"
            "model = eqx.filter_shard(model, replicated)\n"
            "for step, (x, y) in zip(range(1, num_steps + 1),\n"
            "                        train_dataloader((xs, ys), batch_size)):\n"
            "    x, y = eqx.filter_shard((x, y), sharding)\n"
            "    model, opt_state = train_step(model, opt_state, x, y, sharding)");
  CALL(spmd_sharding_named_text(mesh, "PartitionSpec('x')", &sharding));
  tour_c("for (int step = 0; step < 10; ++step) {  /* x, y: the rows batches[step] of xs, ys */");
  for (int step = 0; step < STEPS; ++step) {
    if (step == 1) tour_show_c = -tour_show_c; /* one step's lines are enough */
    batch_arrays(sharding, xs, ys, batches[step], &x, &y);
    SEED("one spmd_shard_map_text: each device's forward and backward pass on its 2 rows, "
         "spmd_ctx_psum of the gradients over 'x', the same Adam update everywhere "
         "(examples/c/seed_train.c)",
         seed_trainer_step(trainer, x, y, &losses[step]));
    VCALL(spmd_array_destroy(x));
    VCALL(spmd_array_destroy(y));
  }
  if (tour_show_c < 0) tour_show_c = -tour_show_c;
  tour_c("}");

  tour_cell("loss = 0\n"
            "num_batches = 0\n"
            "for x, y in eval_dataloader((xs, ys), batch_size):\n"
            "    loss = loss + evaluate(model, x, y, sharding).item()\n"
            "    num_batches = num_batches + 1\n"
            "print(f\"train loss={loss/num_batches}\")");
  double loss = 0;
  int num_batches = 0;
  tour_c("for (int b = 0; b < 4; ++b) {  /* x, y: rows 16 b to 16 b + 15 */");
  for (int b = 0; b < DATA / BATCH; ++b) {
    float batch_loss;
    if (b == 1) tour_show_c = -tour_show_c;
    batch_arrays(sharding, xs + b * BATCH, ys + b * BATCH, NULL, &x, &y);
    SEED("compute_loss with the current parameters, in one spmd_shard_map_text "
         "(examples/c/seed_train.c)",
         seed_trainer_loss(trainer, x, y, &batch_loss));
    loss += batch_loss;
    num_batches += 1;
    VCALL(spmd_array_destroy(x));
    VCALL(spmd_array_destroy(y));
  }
  if (tour_show_c < 0) tour_show_c = -tour_show_c;
  tour_c("}");
  char text[64], jax_line[128];
  py_float(loss / num_batches, text, sizeof text);
  show_line("printf(\"train loss=%s\\n\", text);  /* text: loss / num_batches as Python "
            "prints it */",
            "train loss=%s", text);

  /* What JAX printed, and how far the tour's numbers are from JAX's. */
  double want_losses[STEPS];
  for (int i = 0; i < STEPS; ++i) {
    char path[32];
    snprintf(path, sizeof path, "losses.%d", i);
    want_losses[i] = tour_ref_number("training", training, path);
  }
  const double want_eval = tour_ref_number("training", training, "eval_after.0.loss");
  const double steps_rel = max_relative(losses, want_losses, STEPS);
  const double eval_rel = fabs(loss / num_batches - want_eval) / want_eval;
  tour_agree(steps_rel <= 1e-4, "training",
             "training: the 10 batch losses within 1e-4 relative");
  tour_agree(eval_rel <= 1e-4 && tour_ref_number("training", training, "eval_after.0.steps") ==
                                     STEPS,
             "training", "training: the train loss after 10 steps within 1e-4 relative");
  snprintf(jax_line, sizeof jax_line, "?");
  const int have_jax_line = tour_transcript_line("train loss=", jax_line, sizeof jax_line);
  char line[128];
  snprintf(line, sizeof line, "train loss=%s", text);
  if (have_jax_line && strcmp(line, jax_line) != 0) {
    const double jax_value = strtod(jax_line + strlen("train loss="), NULL);
    char recorded[64];
    py_float(want_eval, recorded, sizeof recorded);
    tour_note("JAX printed %s (%.1g relative away): float32 sums grouped otherwise differ in "
              "the last digits. libspmd adds per-device partial sums with psum, XLA in an "
              "order of its own, which moves with the program: the same data and steps "
              "written as conformance/families/training.py writes them print "
              "train loss=%s under JAX",
              jax_line, fabs(loss / num_batches - jax_value) / jax_value, recorded);
  }

  /* The same steps written with global ops, checked against both. */
  SEED("the same model, loss and Adam written with global ops (examples/c/seed_train_ops.c)",
       seed_ops_trainer_create(mesh, params, 3e-4, &ops_trainer));
  for (int step = 0; step < STEPS; ++step) {
    batch_arrays(sharding, xs, ys, batches[step], &x, &y);
    tour_ok(seed_ops_trainer_step(ops_trainer, x, y, &ops_losses[step]),
            "seed_ops_trainer_step");
    spmd_array_destroy(x);
    spmd_array_destroy(y);
  }
  double ops_vs_step = 0;
  for (int i = 0; i < STEPS; ++i)
    ops_vs_step = fmax(ops_vs_step, fabs((double)ops_losses[i] - losses[i]) / losses[i]);
  const double ops_rel = max_relative(ops_losses, want_losses, STEPS);
  tour_agree(ops_rel <= 1e-4, "training",
             "training with global ops: the 10 batch losses within 1e-4");
  tour_note("batch losses of the 10 steps: within %.1g relative of JAX's; the same steps "
            "written with global ops (seed_ops_trainer: the gradient psum found by "
            "propagation) within %.1g of JAX's and %.1g of the shard_map run's, as float32 "
            "sums grouped otherwise differ (the suite allows 1e-4)",
            steps_rel, ops_rel, ops_vs_step);
  seed_ops_trainer_destroy(ops_trainer);
  seed_trainer_destroy(trainer);
  spmd_sharding_destroy(sharding);
  spmd_mesh_destroy(mesh);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--c") == 0) {
      tour_show_c = 1;
    } else {
      fprintf(stderr, "usage: %s [--c]\n"
              "  --c  show the C calls that ran each cell, where they ran (\"[C] \" lines)\n",
              argv[0]);
      return 2;
    }
  }
  spmd_runtime *rt;
  tour_ok(spmd_runtime_create(NULL, &rt), "spmd_runtime_create");
  printf("libspmd %s tour\n", spmd_version_string());
  tour_note("each cell: the Python it reproduces, then what JAX prints for it (JAX's own run: "
            "tests/conformance/tour/transcript.txt); \"# \" lines are the tour's remarks");
  tour_note("every cell runs after: import jax, jax.numpy as jnp, numpy as np, time; "
            "from functools import partial; from jax.sharding import Mesh, NamedSharding, "
            "PartitionSpec; P = PartitionSpec; from jax.experimental import mesh_utils; "
            "from jax.experimental.shard_map import shard_map; from jax.experimental.pjit "
            "import pjit; from flax import nnx; import equinox as eqx, jax.random as jr, "
            "optax");
  if (tour_show_c)
    tour_note("\"[C] \" lines: the libspmd calls that ran the cell, where they ran (rt: "
              "spmd_runtime_create(NULL, &rt), the 8 CPU devices)");
  device_parallelism(rt);
  sharded_computation(rt);
  fsdp_and_tensor_parallelism(rt);
  all_to_all_benchmark(rt);
  attention_mlp_layer(rt);
  data_parallel_training(rt);
  const int status = tour_end();
  spmd_runtime_destroy(rt);
  return status;
}
