/* The data-parallel training example's trainer (examples/c/seed_train.c)
 * refuses bad arguments with a status and a message naming the problem
 * (seed_last_error), leaves the trainer usable after a refusal, and
 * leaks nothing on any of these paths (run under ASan). */
#include "seed_assert.h"
#include "seed_train.h"
#include "seed_train_ops.h"
#include "spmd_test.h"

#include <math.h>
#include <stdlib.h>

typedef struct fixture {
  spmd_runtime *rt;
  spmd_mesh *mesh;
  spmd_sharding *rows;
  float params[SEED_MLP_PARAMS];
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  f->rt = test_runtime(8);
  const int64_t shape[1] = {8};
  const char *names[1] = {"x"};
  assert_ok(spmd_mesh_create(f->rt, 1, shape, names, NULL, &f->mesh));
  assert_ok(spmd_sharding_named_text(f->mesh, "x", &f->rows));
  spmd_key key;
  assert_ok(spmd_random_key(6789, &key));
  assert_seed_ok(seed_mlp_init(f->mesh, &key, f->params));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  spmd_sharding_destroy(f->rows);
  spmd_mesh_destroy(f->mesh);
  spmd_runtime_destroy(f->rt);
  free(f);
  return 0;
}

static spmd_array *filled(const fixture *f, spmd_dtype dtype, size_t ndim, int64_t d0,
                          int64_t d1) {
  const int64_t shape[2] = {d0, d1};
  spmd_array *a = NULL;
  assert_ok(spmd_array_full(f->rows, dtype, ndim, shape, 0.5, &a));
  return a;
}

/* The global-ops trainer whose steps run as one recorded program gives the
 * eager trainer's losses and parameters bit for bit, step after step (its
 * first step records; later ones relaunch learnt kernels). */
static void recorded_steps_match_eager_ones(void **state) {
  fixture *f = *state;
  seed_ops_trainer *eager = NULL, *recorded = NULL;
  assert_seed_ok(seed_ops_trainer_create(f->mesh, f->params, 3e-3, &eager));
  assert_seed_ok(seed_ops_trainer_create_recorded(f->rt, f->mesh, f->params, 3e-3, &recorded));
  float xs[16][SEED_MLP_IN], ys[16][SEED_MLP_OUT];
  for (int step = 0; step < 4; ++step) {
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < SEED_MLP_IN; ++j) {
        xs[i][j] = sinf((float)(i * 7 + j * 3 + step));
        ys[i][j] = sinf(xs[i][j]);
      }
    const int64_t shape[2] = {16, SEED_MLP_IN};
    spmd_array *x = NULL, *y = NULL;
    assert_ok(spmd_array_from_host(f->rows, SPMD_F32, 2, shape, xs, sizeof xs, &x));
    assert_ok(spmd_array_from_host(f->rows, SPMD_F32, 2, shape, ys, sizeof ys, &y));
    float le = 0, lr = 0;
    assert_seed_ok(seed_ops_trainer_step(eager, x, y, &le));
    assert_seed_ok(seed_ops_trainer_step(recorded, x, y, &lr));
    assert_memory_equal(&le, &lr, sizeof le);
    spmd_array_destroy(x);
    spmd_array_destroy(y);
  }
  float pe[SEED_MLP_PARAMS], pr[SEED_MLP_PARAMS];
  assert_seed_ok(seed_ops_trainer_params(eager, pe));
  assert_seed_ok(seed_ops_trainer_params(recorded, pr));
  assert_memory_equal(pe, pr, sizeof pe);
  assert_false(memcmp(pe, f->params, sizeof pe) == 0);
  seed_ops_trainer_destroy(eager);
  seed_ops_trainer_destroy(recorded);
}

static void init_refuses_bad_arguments(void **state) {
  fixture *f = *state;
  spmd_key key = {{0, 1}};
  float params[SEED_MLP_PARAMS];
  assert_seed_fails(seed_mlp_init(f->mesh, NULL, params), SPMD_ERR_INVALID_ARGUMENT,
                    "seed_mlp_init: key is NULL");
  assert_seed_fails(seed_mlp_init(f->mesh, &key, NULL), SPMD_ERR_INVALID_ARGUMENT,
                    "params is NULL");
  assert_seed_fails(seed_mlp_init(NULL, &key, params), SPMD_ERR_INVALID_ARGUMENT, "mesh");
}

static void create_refuses_bad_arguments(void **state) {
  fixture *f = *state;
  seed_trainer *t = (seed_trainer *)&t; /* must stay untouched */
  seed_trainer *const sentinel = t;
  assert_seed_fails(seed_trainer_create(f->mesh, "x", f->params, 3e-4, NULL),
                    SPMD_ERR_INVALID_ARGUMENT, "out is NULL");
  assert_seed_fails(seed_trainer_create(NULL, "x", f->params, 3e-4, &t),
                    SPMD_ERR_INVALID_ARGUMENT, "seed_trainer_create: mesh");
  assert_seed_fails(seed_trainer_create(f->mesh, NULL, f->params, 3e-4, &t),
                    SPMD_ERR_INVALID_ARGUMENT, "batch_axes is NULL");
  assert_seed_fails(seed_trainer_create(f->mesh, "x", NULL, 3e-4, &t),
                    SPMD_ERR_INVALID_ARGUMENT, "params is NULL");
  assert_seed_fails(seed_trainer_create(f->mesh, "x", f->params, 0.0, &t),
                    SPMD_ERR_INVALID_ARGUMENT, "learning_rate");
  assert_seed_fails(seed_trainer_create(f->mesh, "y", f->params, 3e-4, &t),
                    SPMD_ERR_INVALID_ARGUMENT, "batch_axes");
  assert_seed_fails(seed_trainer_create(f->mesh, "x, x", f->params, 3e-4, &t),
                    SPMD_ERR_INVALID_ARGUMENT, "batch_axes");
  assert_seed_fails(seed_trainer_create(f->mesh, "", f->params, 3e-4, &t),
                    SPMD_ERR_INVALID_ARGUMENT, "batch_axes");
  assert_ptr_equal(t, sentinel);
}

static void step_refuses_bad_batches(void **state) {
  fixture *f = *state;
  seed_trainer *t = NULL;
  assert_seed_ok(seed_trainer_create(f->mesh, "(x)", f->params, 3e-4, &t));
  spmd_array *x = filled(f, SPMD_F32, 2, 16, 4), *y = filled(f, SPMD_F32, 2, 16, 4);
  spmd_array *odd = filled(f, SPMD_F32, 2, 12, 4), *wide = filled(f, SPMD_F32, 2, 16, 5);
  spmd_array *ints = filled(f, SPMD_I32, 2, 16, 4), *flat = filled(f, SPMD_F32, 1, 64, 0);
  spmd_array *short_y = filled(f, SPMD_F32, 2, 8, 4);
  float loss = -1;
  assert_seed_fails(seed_trainer_step(NULL, x, y, &loss), SPMD_ERR_INVALID_ARGUMENT,
                    "trainer is NULL");
  assert_seed_fails(seed_trainer_step(t, NULL, y, &loss), SPMD_ERR_INVALID_ARGUMENT,
                    "x is NULL");
  assert_seed_fails(seed_trainer_step(t, x, NULL, &loss), SPMD_ERR_INVALID_ARGUMENT,
                    "y is NULL");
  assert_seed_fails(seed_trainer_step(t, x, y, NULL), SPMD_ERR_INVALID_ARGUMENT,
                    "loss is NULL");
  assert_seed_fails(seed_trainer_step(t, odd, odd, &loss), SPMD_ERR_INVALID_ARGUMENT,
                    "batch of 12 rows: must be a positive multiple of the 8 devices along 'x'");
  assert_seed_fails(seed_trainer_step(t, wide, y, &loss), SPMD_ERR_INVALID_ARGUMENT,
                    "x: expected shape (batch, 4), got (16, 5)");
  assert_seed_fails(seed_trainer_step(t, x, flat, &loss), SPMD_ERR_INVALID_ARGUMENT,
                    "y: expected shape (batch, 4), got (64,)");
  assert_seed_fails(seed_trainer_step(t, ints, y, &loss), SPMD_ERR_INVALID_ARGUMENT,
                    "x: expected float32, got int32");
  assert_seed_fails(seed_trainer_step(t, x, short_y, &loss), SPMD_ERR_INVALID_ARGUMENT,
                    "x has 16 rows but y has 8");
  assert_seed_fails(seed_trainer_loss(t, odd, odd, &loss), SPMD_ERR_INVALID_ARGUMENT,
                    "seed_trainer_loss: batch of 12 rows");
  spmd_array *dead = filled(f, SPMD_F32, 2, 16, 4);
  spmd_array_destroy(dead);
  assert_seed_fails(seed_trainer_step(t, dead, y, &loss), SPMD_ERR_INVALID_ARGUMENT,
                    "seed_trainer_step: x: ");
  assert_true(loss == -1.0f); /* untouched by every refusal */

  /* A refusal leaves the trainer as it was: the next good step is step 1. */
  float before[SEED_MLP_PARAMS], after[SEED_MLP_PARAMS];
  assert_seed_ok(seed_trainer_params(t, before));
  assert_memory_equal(before, f->params, sizeof before);
  assert_seed_ok(seed_trainer_step(t, x, y, &loss));
  assert_seed_ok(seed_trainer_params(t, after));
  /* Adam's first step moves every parameter with a gradient by about lr. */
  for (int i = 0; i < SEED_MLP_PARAMS; ++i) assert_true(fabsf(after[i] - before[i]) <= 3.1e-4f);
  assert_seed_fails(seed_trainer_params(NULL, after), SPMD_ERR_INVALID_ARGUMENT,
                    "trainer is NULL");
  assert_seed_fails(seed_trainer_params(t, NULL), SPMD_ERR_INVALID_ARGUMENT, "params is NULL");

  seed_trainer_destroy(NULL);
  seed_trainer_destroy(t);
  spmd_array *all[] = {x, y, odd, wide, ints, flat, short_y};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) spmd_array_destroy(all[i]);
}

/* A tuple of batch axes, and a batch laid out otherwise (replicated) is
 * resharded: the same step as with P(('a', 'b')). */
static void tuple_axes_and_resharding(void **state) {
  fixture *f = *state;
  const int64_t shape[2] = {2, 4};
  const char *names[2] = {"a", "b"};
  spmd_mesh *mesh = NULL;
  assert_ok(spmd_mesh_create(f->rt, 2, shape, names, NULL, &mesh));
  spmd_sharding *rep = NULL;
  assert_ok(spmd_sharding_replicated(mesh, &rep));
  float host[16][4];
  for (int i = 0; i < 64; ++i) host[i / 4][i % 4] = (float)(i % 7) / 7.0f - 0.5f;
  const int64_t xs[2] = {16, 4};
  spmd_array *x = NULL;
  assert_ok(spmd_array_from_host(rep, SPMD_F32, 2, xs, host, sizeof host, &x));
  seed_trainer *t1 = NULL, *t2 = NULL;
  assert_seed_ok(seed_trainer_create(mesh, "(a, b)", f->params, 3e-4, &t1));
  assert_seed_ok(seed_trainer_create(f->mesh, "x", f->params, 3e-4, &t2));
  spmd_array *x8 = NULL;
  assert_ok(spmd_array_from_host(f->rows, SPMD_F32, 2, xs, host, sizeof host, &x8));
  float l1, l2;
  assert_seed_ok(seed_trainer_step(t1, x, x, &l1));
  assert_seed_ok(seed_trainer_step(t2, x8, x8, &l2));
  assert_true(l1 == l2);
  /* Over 'a' alone (2 devices, replicated over 'b'), 6 rows divide. */
  seed_trainer *ta = NULL;
  assert_seed_ok(seed_trainer_create(mesh, "a", f->params, 3e-4, &ta));
  const int64_t s6[2] = {6, 4}, s3[2] = {3, 4};
  spmd_array *x6 = NULL, *x3 = NULL;
  assert_ok(spmd_array_from_host(rep, SPMD_F32, 2, s6, host, 6 * sizeof host[0], &x6));
  assert_ok(spmd_array_from_host(rep, SPMD_F32, 2, s3, host, 3 * sizeof host[0], &x3));
  assert_seed_ok(seed_trainer_step(ta, x6, x6, &l1));
  assert_seed_fails(seed_trainer_step(ta, x3, x3, &l1), SPMD_ERR_INVALID_ARGUMENT,
                    "batch of 3 rows: must be a positive multiple of the 2 devices along 'a'");
  assert_seed_fails(seed_trainer_step(t1, x6, x6, &l1), SPMD_ERR_INVALID_ARGUMENT,
                    "multiple of the 8 devices along 'a,b'");
  seed_trainer_destroy(ta);
  spmd_array_destroy(x6);
  spmd_array_destroy(x3);
  seed_trainer_destroy(t2);
  seed_trainer_destroy(t1);
  spmd_array_destroy(x);
  spmd_array_destroy(x8);
  spmd_sharding_destroy(rep);
  spmd_mesh_destroy(mesh);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(init_refuses_bad_arguments),
      cmocka_unit_test(recorded_steps_match_eager_ones),
      cmocka_unit_test(create_refuses_bad_arguments),
      cmocka_unit_test(step_refuses_bad_batches),
      cmocka_unit_test(tuple_axes_and_resharding),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
