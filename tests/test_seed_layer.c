/* The tensor-parallel Attention + MLP layer example (examples/c/seed_layer.c):
 * its result does not depend on how the mesh splits the work, and it
 * refuses bad arguments with a status and a message (seed_last_error). Its
 * values are checked against JAX by the conformance family "layer". */
#include "seed_assert.h"
#include "seed_layer.h"
#include "spmd_test.h"

#include <math.h>
#include <stdlib.h>

enum { HIDDEN = 32, HEADS = 4, SEQ = 8 };

static spmd_mesh *data_model_mesh(spmd_runtime *rt, int64_t data, int64_t model) {
  const int64_t shape[2] = {data, model};
  const char *names[2] = {"data", "model"};
  spmd_mesh *mesh = NULL;
  assert_ok(spmd_mesh_create(rt, 2, shape, names, NULL, &mesh));
  return mesh;
}

/* The layer of X = normal(PRNGKey(0), (2, SEQ, HIDDEN)) on `mesh`, to host. */
static void layer_on(spmd_mesh *mesh, float *out) {
  seed_layer layer;
  assert_seed_ok(seed_layer_init(mesh, HIDDEN, HEADS, &layer));
  spmd_key key;
  assert_ok(spmd_random_key(0, &key));
  spmd_sharding *rep = NULL;
  assert_ok(spmd_sharding_replicated(mesh, &rep));
  const int64_t shape[3] = {2, SEQ, HIDDEN};
  spmd_array *x = NULL, *y = NULL;
  assert_ok(spmd_random_normal(rep, &key, SPMD_F32, 3, shape, &x));
  assert_seed_ok(seed_layer_apply(mesh, &layer, x, &y));
  assert_ok(spmd_array_to_host(y, out, sizeof(float) * 2 * SEQ * HIDDEN));
  spmd_array_destroy(y);
  spmd_array_destroy(x);
  spmd_sharding_destroy(rep);
  seed_layer_destroy(&layer);
}

/* 2x2, 1x4 (heads split four ways), 2x1 and 1x1 meshes give the same layer
 * within float32 rounding of the regrouped sums. */
static void same_layer_on_every_mesh(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(8);
  const int64_t meshes[4][2] = {{2, 2}, {1, 4}, {2, 1}, {1, 1}};
  static float ref[2 * SEQ * HIDDEN], got[2 * SEQ * HIDDEN];
  for (int m = 0; m < 4; ++m) {
    spmd_mesh *mesh = data_model_mesh(rt, meshes[m][0], meshes[m][1]);
    layer_on(mesh, m == 0 ? ref : got);
    for (int i = 0; m > 0 && i < 2 * SEQ * HIDDEN; ++i)
      if (!(fabsf(got[i] - ref[i]) <= 1e-5f * (1.0f + fabsf(ref[i]))))
        fail_msg("mesh %lldx%lld: y[%d] = %.9g, on 2x2 %.9g", (long long)meshes[m][0],
                 (long long)meshes[m][1], i, got[i], ref[i]);
    spmd_mesh_destroy(mesh);
  }
  spmd_runtime_destroy(rt);
}

static void bad_arguments_fail_with_a_message(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(8);
  spmd_mesh *mesh = data_model_mesh(rt, 2, 2);
  seed_layer layer;
  assert_seed_fails(seed_layer_init(mesh, HIDDEN, HEADS, NULL), SPMD_ERR_INVALID_ARGUMENT,
                    "layer: NULL");
  assert_seed_fails(seed_layer_init(mesh, 30, 4, &layer), SPMD_ERR_INVALID_ARGUMENT,
                    "heads must divide hidden");
  assert_seed_fails(seed_layer_init(mesh, 32, 1, &layer), SPMD_ERR_INVALID_ARGUMENT,
                    "the 'model' axis (2 devices) must divide heads");
  assert_seed_fails(seed_layer_init(mesh, 0, 4, &layer), SPMD_ERR_INVALID_ARGUMENT, "hidden 0");
  const int64_t eight[1] = {8};
  const char *x_name[1] = {"x"};
  spmd_mesh *no_model = NULL;
  assert_ok(spmd_mesh_create(rt, 1, eight, x_name, NULL, &no_model));
  assert_seed_fails(seed_layer_init(no_model, HIDDEN, HEADS, &layer), SPMD_ERR_INVALID_ARGUMENT,
                    "mesh: needs a 'model' axis");

  assert_seed_ok(seed_layer_init(mesh, HIDDEN, HEADS, &layer));
  spmd_sharding *rep = NULL;
  assert_ok(spmd_sharding_replicated(mesh, &rep));
  const int64_t wrong_width[3] = {2, SEQ, HIDDEN + 1}, flat[2] = {2 * SEQ, HIDDEN};
  spmd_array *x = NULL, *y = NULL;
  assert_ok(spmd_array_zeros(rep, SPMD_F32, 3, wrong_width, &x));
  assert_seed_fails(seed_layer_apply(mesh, &layer, x, &y), SPMD_ERR_INVALID_ARGUMENT,
                    "x must be float32 (batch, seq, 32)");
  spmd_array_destroy(x);
  assert_ok(spmd_array_zeros(rep, SPMD_F32, 2, flat, &x));
  assert_seed_fails(seed_layer_apply(mesh, &layer, x, &y), SPMD_ERR_INVALID_ARGUMENT,
                    "x must be float32");
  spmd_array_destroy(x);
  const int64_t good[3] = {2, SEQ, HIDDEN};
  assert_ok(spmd_array_zeros(rep, SPMD_F64, 3, good, &x));
  assert_seed_fails(seed_layer_apply(mesh, &layer, x, &y), SPMD_ERR_INVALID_ARGUMENT,
                    "x must be float32");
  spmd_array_destroy(x);
  assert_true(y == NULL);
  assert_seed_fails(seed_layer_apply(mesh, NULL, x, &y), SPMD_ERR_INVALID_ARGUMENT,
                    "layer: NULL or not initialised");

  /* A refused call leaves the layer usable. */
  assert_ok(spmd_array_zeros(rep, SPMD_F32, 3, good, &x));
  assert_seed_ok(seed_layer_apply(mesh, &layer, x, &y));
  spmd_array_destroy(y);
  spmd_array_destroy(x);
  spmd_sharding_destroy(rep);
  seed_layer_destroy(&layer);
  seed_layer_destroy(&layer); /* twice is harmless */
  spmd_mesh_destroy(no_model);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(same_layer_on_every_mesh),
      cmocka_unit_test(bad_arguments_fail_with_a_message),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
