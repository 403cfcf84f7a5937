/* The seed notebooks' programs over several processes, each beside the same
 * program in one process with as many devices (examples/c/seed_*.c):
 *
 *   mpirun -np P test_mpi_seeds P L     (SPMD_CPU_DEVICES=L, P*L = 8)
 *
 * The introduction's jit cells (elementwise, the contraction and its
 * sharding constraint), the shard_map cells (shard sums and their psum, the
 * sharded layer, FSDP, tensor parallelism, both together, and the four
 * benchmarked collectives), the same models written with global ops, and
 * the data-parallel training loops both ways. Results compare byte for
 * byte under SPMD_EXACT_REDUCTIONS=1, else within the summation bound. */
#include "mpi_compare.h"
#include "seed_cells.h"
#include "seed_train.h"
#include "seed_train_ops.h"
#include "spmd_test.h"

#include <math.h>
#include <stdlib.h>

static int processes, local, me, exact;
static spmd_runtime *rt[2]; /* over the processes, and in this one */

static int setup(void **state) {
  (void)state;
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  if (spmd_runtime_create(&o, &rt[0]) != SPMD_OK) {
    fprintf(stderr, "spmd_runtime_create: %s\n", spmd_last_error());
    return -1;
  }
  o.distributed = SPMD_DISTRIBUTED_NONE;
  o.cpu_device_count = processes * local;
  if (spmd_runtime_create(&o, &rt[1]) != SPMD_OK) return -1;
  return spmd_runtime_process_index(rt[0], &me) == SPMD_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  spmd_runtime_destroy(rt[1]);
  spmd_runtime_destroy(rt[0]);
  return 0;
}

/* A mesh of the given axes over every device of runtime r, in order. */
static spmd_mesh *mesh_of(int r, size_t ndim, const int64_t *shape, const char *const *names) {
  spmd_mesh *m = NULL;
  assert_ok(spmd_mesh_create(rt[r], ndim, shape, names, NULL, &m));
  return m;
}

static void fill(float *p, size_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = (float)((s >> 8) & 0xffff) / 16384.0f - 2.0f;
  }
}

static spmd_array *put(spmd_mesh *mesh, const char *spec, spmd_dtype dtype, size_t ndim,
                       const int64_t *shape, const void *data) {
  return test_put(mesh, spec, dtype, ndim, shape, data);
}

static void assert_same(spmd_array *dist, spmd_array *single, const char *what) {
  assert_same_as_one_process(dist, single, exact, what);
}

static void jit_cells_agree(void **state) {
  (void)state;
  const int64_t shape2[2] = {4, 2};
  const char *xy[2] = {"x", "y"}, *x1[1] = {"x"};
  const int64_t eight[1] = {8};
  const int64_t shape[2] = {16, 8};
  float v[128];
  fill(v, 128, 1);
  spmd_array *out[2][3];
  for (int r = 0; r < 2; ++r) {
    spmd_mesh *mesh = mesh_of(r, 2, shape2, xy), *mesh8 = mesh_of(r, 1, eight, x1);
    spmd_array *x = put(mesh, "x, y", SPMD_F32, 2, shape, v);
    assert_ok(seed_f_elementwise(x, &out[r][0]));
    assert_ok(seed_f_contract(mesh, x, &out[r][1]));
    assert_ok(seed_f_contract_2(mesh, mesh8, x, &out[r][2]));
    spmd_array_destroy(x);
    spmd_mesh_destroy(mesh8);
    spmd_mesh_destroy(mesh);
  }
  const char *names[3] = {"f_elementwise", "f_contract", "f_contract_2"};
  for (int k = 0; k < 3; ++k) {
    assert_same(out[0][k], out[1][k], names[k]);
    spmd_array_destroy(out[0][k]);
    spmd_array_destroy(out[1][k]);
  }
}

static void shard_map_cells_agree(void **state) {
  (void)state;
  const char *x1[1] = {"x"}, *data[1] = {"data"}, *model[1] = {"model"};
  const char *dm[2] = {"data", "model"};
  const int64_t eight[1] = {8}, two_by_four[2] = {2, 4};
  float x[16 * 16], w1[16 * 32], w2[32 * 16], bias[16];
  fill(x, 256, 2);
  fill(w1, 512, 3);
  fill(w2, 512, 4);
  fill(bias, 16, 5);
  int32_t ints[64];
  for (int i = 0; i < 64; ++i) ints[i] = i * 3 - 50;
  enum { kResults = 13 };
  spmd_array *out[2][kResults];
  for (int r = 0; r < 2; ++r) {
    spmd_mesh *mx = mesh_of(r, 1, eight, x1), *md = mesh_of(r, 1, eight, data);
    spmd_mesh *mm = mesh_of(r, 1, eight, model), *mdm = mesh_of(r, 2, two_by_four, dm);
    int k = 0;
    const int64_t n64[1] = {64};
    spmd_array *xi = put(mx, "x", SPMD_I32, 1, n64, ints);
    assert_ok(seed_shard_sums(mx, xi, &out[r][k++]));
    assert_ok(seed_psum_of_shard_sums(mx, xi, &out[r][k++]));
    assert_ok(seed_double(mx, xi, NULL, &out[r][k++]));
    spmd_array_destroy(xi);

    /* The layer: x (16,) P('x'), weights (16, 4) P('x', None), bias (4,). */
    const int64_t xs[2] = {16, 16}, ws[2] = {16, 16}, lxs[1] = {16}, lws[2] = {16, 4},
                  bs[1] = {4};
    spmd_array *lx = put(mx, "x", SPMD_F32, 1, lxs, x);
    spmd_array *lw = put(mx, "x, None", SPMD_F32, 2, lws, w1);
    spmd_array *lb = put(mx, "None", SPMD_F32, 1, bs, bias);
    assert_ok(seed_layer_sharded(mx, lx, lw, lb, &out[r][k++]));
    assert_ok(seed_layer_auto(mx, lx, lw, lb, &out[r][k++]));
    spmd_array_destroy(lx);
    spmd_array_destroy(lw);
    spmd_array_destroy(lb);

    /* FSDP over 'data': x (16, 16), A (16, 16). */
    spmd_array *fx = put(md, "data, None", SPMD_F32, 2, xs, x);
    spmd_array *fa = put(md, "data, None", SPMD_F32, 2, ws, w1);
    assert_ok(seed_fsdp_matmul(md, fx, fa, &out[r][k++]));
    assert_ok(seed_fsdp_auto(md, fx, fa, &out[r][k++]));
    spmd_array_destroy(fx);
    spmd_array_destroy(fa);

    /* Tensor parallelism over 'model': x (16, 16), W1 (16, 32), W2 (32, 16). */
    const int64_t s1[2] = {16, 32}, s2[2] = {32, 16};
    spmd_array *tx = put(mm, "None, model", SPMD_F32, 2, xs, x);
    spmd_array *t1 = put(mm, "None, model", SPMD_F32, 2, s1, w1);
    spmd_array *t2 = put(mm, "model, None", SPMD_F32, 2, s2, w2);
    assert_ok(seed_tp_mlp(mm, tx, t1, t2, &out[r][k++]));
    spmd_array_destroy(tx);
    spmd_array_destroy(t1);
    spmd_array_destroy(t2);

    /* Both on ('data', 'model') = (2, 4). */
    spmd_array *bx = put(mdm, "data, model", SPMD_F32, 2, xs, x);
    spmd_array *b1 = put(mdm, "data, model", SPMD_F32, 2, s1, w1);
    spmd_array *b2 = put(mdm, "model, data", SPMD_F32, 2, s2, w2);
    assert_ok(seed_fsdp_tp(mdm, bx, b1, b2, &out[r][k++]));
    spmd_array_destroy(bx);
    spmd_array_destroy(b1);
    spmd_array_destroy(b2);

    /* The benchmarked collectives over 'data' on (16, 16). */
    spmd_array *cx = put(md, "data, None", SPMD_F32, 2, xs, x);
    spmd_array *cr = put(md, "None, None", SPMD_F32, 2, xs, x);
    assert_ok(seed_all_gather(md, cx, &out[r][k++]));
    assert_ok(seed_all_reduce(md, cr, &out[r][k++]));
    assert_ok(seed_reduce_scatter(md, cr, &out[r][k++]));
    spmd_array_destroy(cx);
    spmd_array_destroy(cr);
    assert_int_equal(k, kResults - 1);
    /* all_to_all on its own input layout. */
    spmd_array *ax = put(md, "data, None", SPMD_F32, 2, xs, x);
    assert_ok(seed_all_to_all(md, ax, &out[r][k++]));
    spmd_array_destroy(ax);
    spmd_mesh_destroy(mx);
    spmd_mesh_destroy(md);
    spmd_mesh_destroy(mm);
    spmd_mesh_destroy(mdm);
  }
  for (int k = 0; k < kResults; ++k) {
    char what[32];
    snprintf(what, sizeof what, "shard_map cell %d", k);
    assert_same(out[0][k], out[1][k], what);
    spmd_array_destroy(out[0][k]);
    spmd_array_destroy(out[1][k]);
  }
}

/* The training loops, both ways: the same losses and parameters. */
static void training_agrees(void **state) {
  (void)state;
  const char *x1[1] = {"x"};
  const int64_t eight[1] = {8};
  const int64_t batch[2] = {32, SEED_MLP_IN};
  float xs[32 * SEED_MLP_IN], ys[32 * SEED_MLP_IN];
  fill(xs, sizeof xs / sizeof xs[0], 6);
  for (size_t i = 0; i < sizeof ys / sizeof ys[0]; ++i) ys[i] = sinf(xs[i]);
  float params[2][2][SEED_MLP_PARAMS], losses[2][2][3];
  for (int r = 0; r < 2; ++r) {
    spmd_mesh *mesh = mesh_of(r, 1, eight, x1);
    spmd_key key;
    assert_ok(spmd_random_key(0, &key));
    float init[SEED_MLP_PARAMS];
    assert_ok(seed_mlp_init(mesh, &key, init));
    spmd_array *x = put(mesh, "x", SPMD_F32, 2, batch, xs);
    spmd_array *y = put(mesh, "x", SPMD_F32, 2, batch, ys);
    seed_trainer *t = NULL;
    assert_ok(seed_trainer_create(mesh, "x", init, 1e-2, &t));
    seed_ops_trainer *o = NULL;
    assert_ok(seed_ops_trainer_create(mesh, init, 1e-2, &o));
    for (int step = 0; step < 3; ++step) {
      assert_ok(seed_trainer_step(t, x, y, &losses[r][0][step]));
      assert_ok(seed_ops_trainer_step(o, x, y, &losses[r][1][step]));
    }
    assert_ok(seed_trainer_params(t, params[r][0]));
    assert_ok(seed_ops_trainer_params(o, params[r][1]));
    seed_ops_trainer_destroy(o);
    seed_trainer_destroy(t);
    spmd_array_destroy(x);
    spmd_array_destroy(y);
    spmd_mesh_destroy(mesh);
  }
  for (int way = 0; way < 2; ++way) {
    for (int step = 0; step < 3; ++step)
      if (fabsf(losses[0][way][step] - losses[1][way][step]) >
          (exact ? 0.0f : 1e-5f * fmaxf(1.0f, fabsf(losses[1][way][step]))))
        fail_msg("training %d, step %d: loss %.9g over processes, %.9g in one", way, step,
                 (double)losses[0][way][step], (double)losses[1][way][step]);
    for (int i = 0; i < SEED_MLP_PARAMS; ++i)
      if (fabsf(params[0][way][i] - params[1][way][i]) > (exact ? 0.0f : 1e-4f))
        fail_msg("training %d: parameter %d: %.9g over processes, %.9g in one", way, i,
                 (double)params[0][way][i], (double)params[1][way][i]);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PROCESSES LOCAL_DEVICES (under mpirun; 8 devices in all)\n",
            argv[0]);
    return 2;
  }
  processes = atoi(argv[1]);
  local = atoi(argv[2]);
  if (processes * local != 8) return 2;
  const char *e = getenv("SPMD_EXACT_REDUCTIONS");
  exact = e != NULL && strcmp(e, "1") == 0;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(jit_cells_agree),
      cmocka_unit_test(shard_map_cells_agree),
      cmocka_unit_test(training_agrees),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
