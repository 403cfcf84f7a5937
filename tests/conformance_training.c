/* Conformance family `training` (tests/conformance/training/cases.json,
 * written by conformance/families/training.py): the Equinox data-parallel
 * training run of the autoparallelism notebook, computed by JAX, against
 * libspmd's version (examples/c/seed_train.c). The committed data, initial
 * parameters and per-step batches drive libspmd's trainer; the cases are
 *
 *   initial_params          seed_mlp_init(PRNGKey(6789)) regenerates JAX's
 *                           initial parameters (within 1 ulp; bit-exact is
 *                           expected, the detail counts the exact ones)
 *   losses_<mesh>           each of the 300 steps' batch losses within
 *                           tolerance.loss_rel of JAX's
 *   train_loss_<n>_<mesh>   the notebook's "train loss" evaluation after
 *                           n steps (10 and 300), within loss_rel
 *   final_params_<mesh>     the parameters after 300 steps, within
 *                           tolerance.param_abs
 *
 * on JAX's mesh (8 devices, axis 'x'), and again on a 2x4 mesh splitting
 * the batch over the tuple ('a', 'b') and on one device (unsharded): the
 * numbers must not depend on how the batch is split. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "conformance_cases.h"
#include "seed_error.h"
#include "seed_train.h"
#include "seed_train_ops.h"
#include "spmd_test.h"

enum { MAX_STEPS = 300, BATCH_MAX = 64, DATA_MAX = 64 };

/* The reference's {"dtype", "hex", "shape"} array: its bytes into out
 * (exactly `bytes` of them). */
static void hex_array(const json_value *ref, const char *dtype, void *out, size_t bytes,
                      const char *where) {
  const char *have = json_string(conformance_member(ref, "dtype", where));
  if (have == NULL || strcmp(have, dtype) != 0) fail_msg("%s: expected %s data", where, dtype);
  size_t len = 0;
  unsigned char *data = conformance_hex(ref, &len, where);
  if (len != bytes) fail_msg("%s: expected %zu bytes, the reference has %zu", where, bytes, len);
  memcpy(out, data, bytes);
  free(data);
}

/* The four tensors of a params object, flattened in seed_train.h's order. */
static void load_params(const json_value *ref, float *params, const char *where) {
  static const char *const names[4] = {"layer0_weight", "layer0_bias", "layer1_weight",
                                       "layer1_bias"};
  static const size_t counts[4] = {SEED_MLP_HIDDEN * SEED_MLP_IN, SEED_MLP_HIDDEN,
                                   SEED_MLP_OUT * SEED_MLP_HIDDEN, SEED_MLP_OUT};
  size_t at = 0;
  for (int k = 0; k < 4; ++k) {
    hex_array(conformance_member(ref, names[k], where), "float32", params + at,
              counts[k] * sizeof(float), names[k]);
    at += counts[k];
  }
}

static const char *param_name(int i, int *local) {
  static const char *const names[4] = {"layer0_weight", "layer0_bias", "layer1_weight",
                                       "layer1_bias"};
  static const int starts[5] = {0, SEED_MLP_HIDDEN * SEED_MLP_IN,
                                SEED_MLP_HIDDEN * SEED_MLP_IN + SEED_MLP_HIDDEN,
                                SEED_MLP_PARAMS - SEED_MLP_OUT, SEED_MLP_PARAMS};
  int k = 0;
  while (i >= starts[k + 1]) ++k;
  *local = i - starts[k];
  return names[k];
}

/* Distance in units in the last place between two finite floats. */
static int64_t ulps(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, sizeof ia);
  memcpy(&ib, &b, sizeof ib);
  const int64_t la = ia < 0 ? (int64_t)INT32_MIN - ia : ia;
  const int64_t lb = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
  return la > lb ? la - lb : lb - la;
}

typedef struct reference {
  float xs[DATA_MAX][SEED_MLP_IN], ys[DATA_MAX][SEED_MLP_OUT];
  int64_t data_rows, batch, steps;
  unsigned char batches[MAX_STEPS][BATCH_MAX];
  double losses[MAX_STEPS];
  double learning_rate, loss_rel, param_abs;
  float params[SEED_MLP_PARAMS], final_params[SEED_MLP_PARAMS];
  size_t n_evals;
  int64_t eval_steps[4];
  double eval_loss[4];
} reference;

static void load_reference(const json_value *root, reference *r) {
  const char *w = "training/cases.json";
  int64_t shape[2];
  const json_value *data = conformance_member(root, "data", w);
  const json_value *xs = conformance_member(data, "xs", w);
  if (conformance_ints(conformance_member(xs, "shape", w), shape, 2, w) != 2 ||
      shape[0] > DATA_MAX || shape[1] != SEED_MLP_IN)
    fail_msg("%s: data.xs: expected (<= %d, %d)", w, DATA_MAX, SEED_MLP_IN);
  r->data_rows = shape[0];
  hex_array(xs, "float32", r->xs, (size_t)r->data_rows * sizeof r->xs[0], "data.xs");
  hex_array(conformance_member(data, "ys", w), "float32", r->ys,
            (size_t)r->data_rows * sizeof r->ys[0], "data.ys");
  const json_value *batches = conformance_member(root, "batches", w);
  if (conformance_ints(conformance_member(batches, "shape", w), shape, 2, w) != 2 ||
      shape[0] > MAX_STEPS || shape[1] > BATCH_MAX || shape[1] < 1)
    fail_msg("%s: batches: unexpected shape", w);
  r->steps = shape[0];
  r->batch = shape[1];
  if (json_int(conformance_member(root, "batch_size", w), -1) != r->batch)
    fail_msg("%s: batch_size differs from the batches' width", w);
  unsigned char *flat = malloc((size_t)(r->steps * r->batch));
  hex_array(batches, "uint8", flat, (size_t)(r->steps * r->batch), "batches");
  for (int64_t s = 0; s < r->steps; ++s)
    for (int64_t i = 0; i < r->batch; ++i) {
      r->batches[s][i] = flat[s * r->batch + i];
      if (r->batches[s][i] >= r->data_rows) fail_msg("%s: batch row out of range", w);
    }
  free(flat);
  const json_value *losses = conformance_member(root, "losses", w);
  if ((int64_t)json_count(losses) != r->steps) fail_msg("%s: one loss per step expected", w);
  for (int64_t s = 0; s < r->steps; ++s) r->losses[s] = json_at(losses, (size_t)s)->number;
  r->learning_rate = conformance_member(root, "learning_rate", w)->number;
  const json_value *tol = conformance_member(root, "tolerance", w);
  r->loss_rel = conformance_member(tol, "loss_rel", w)->number;
  r->param_abs = conformance_member(tol, "param_abs", w)->number;
  const json_value *adam = conformance_member(root, "adam", w);
  if (conformance_member(adam, "b1", w)->number != 0.9 ||
      conformance_member(adam, "b2", w)->number != 0.999 ||
      conformance_member(adam, "eps", w)->number != 1e-8)
    fail_msg("%s: adam hyperparameters differ from optax.adam's defaults", w);
  load_params(conformance_member(root, "params", w), r->params, "params");
  load_params(conformance_member(root, "final_params", w), r->final_params, "final_params");
  const json_value *evals = conformance_member(root, "eval_after", w);
  r->n_evals = json_count(evals);
  if (r->n_evals > 4) fail_msg("%s: too many eval_after entries", w);
  for (size_t i = 0; i < r->n_evals; ++i) {
    r->eval_steps[i] = json_int(conformance_member(json_at(evals, i), "steps", w), -1);
    r->eval_loss[i] = conformance_member(json_at(evals, i), "loss", w)->number;
    if (r->eval_steps[i] < 1 || r->eval_steps[i] > r->steps) fail_msg("%s: bad eval_after", w);
  }
}

static void check_seed(spmd_status st, const char *what) {
  if (st != SPMD_OK)
    fail_msg("%s: %s: %s", what, spmd_status_string(st), seed_last_error());
}

/* Rows `rows` (n of them) of the data as x, y laid out by `sharding`. */
static void put_rows(const spmd_sharding *sharding, const reference *r,
                     const unsigned char *rows, const int *rows_int, int64_t n, spmd_array **x,
                     spmd_array **y) {
  float xb[BATCH_MAX][SEED_MLP_IN], yb[BATCH_MAX][SEED_MLP_OUT];
  for (int64_t i = 0; i < n; ++i) {
    const int row = rows ? rows[i] : rows_int[i];
    memcpy(xb[i], r->xs[row], sizeof xb[i]);
    memcpy(yb[i], r->ys[row], sizeof yb[i]);
  }
  const int64_t shape[2] = {n, SEED_MLP_IN};
  const size_t bytes = (size_t)n * sizeof xb[0];
  assert_ok(spmd_array_from_host(sharding, SPMD_F32, 2, shape, xb, bytes, x));
  assert_ok(spmd_array_from_host(sharding, SPMD_F32, 2, shape, yb, bytes, y));
}

/* A trainer of either kind: one shard_map per step (seed_train.h), or
 * global ops whose gradient sums appear by propagation (seed_train_ops.h),
 * run as they are called (use_ops 1) or recorded as one program per step
 * (use_ops 2). */
typedef struct trainer {
  seed_trainer *map;
  seed_ops_trainer *ops;
} trainer;

static void trainer_create(trainer *t, spmd_runtime *rt, const spmd_mesh *mesh, const char *axes,
                           const reference *r, int use_ops) {
  t->map = NULL;
  t->ops = NULL;
  if (use_ops == 2)
    check_seed(seed_ops_trainer_create_recorded(rt, mesh, r->params, r->learning_rate, &t->ops),
               "seed_ops_trainer_create_recorded");
  else if (use_ops)
    check_seed(seed_ops_trainer_create(mesh, r->params, r->learning_rate, &t->ops),
               "seed_ops_trainer_create");
  else
    check_seed(seed_trainer_create(mesh, axes, r->params, r->learning_rate, &t->map),
               "seed_trainer_create");
}

static void trainer_step(trainer *t, spmd_array *x, spmd_array *y, float *loss) {
  if (t->ops) check_seed(seed_ops_trainer_step(t->ops, x, y, loss), "seed_ops_trainer_step");
  else check_seed(seed_trainer_step(t->map, x, y, loss), "seed_trainer_step");
}

static void trainer_loss(trainer *t, spmd_array *x, spmd_array *y, float *loss) {
  if (t->ops) check_seed(seed_ops_trainer_loss(t->ops, x, y, loss), "seed_ops_trainer_loss");
  else check_seed(seed_trainer_loss(t->map, x, y, loss), "seed_trainer_loss");
}

static void trainer_params(trainer *t, float *params) {
  if (t->ops) check_seed(seed_ops_trainer_params(t->ops, params), "seed_ops_trainer_params");
  else check_seed(seed_trainer_params(t->map, params), "seed_trainer_params");
}

static void trainer_destroy(trainer *t) {
  seed_ops_trainer_destroy(t->ops);
  seed_trainer_destroy(t->map);
}

/* The notebook's evaluation: compute_loss over consecutive batches, summed
 * as Python floats, over the number of batches. */
static double train_loss(trainer *t, const spmd_sharding *sharding, const reference *r) {
  double sum = 0;
  int batches = 0;
  for (int64_t start = 0; start < r->data_rows; start += r->batch) {
    int rows[BATCH_MAX];
    const int64_t n = start + r->batch <= r->data_rows ? r->batch : r->data_rows - start;
    for (int64_t i = 0; i < n; ++i) rows[i] = (int)(start + i);
    spmd_array *x = NULL, *y = NULL;
    put_rows(sharding, r, NULL, rows, n, &x, &y);
    float loss;
    trainer_loss(t, x, y, &loss);
    spmd_array_destroy(x);
    spmd_array_destroy(y);
    sum += loss;
    ++batches;
  }
  return sum / batches;
}

/* The steps run: all of the reference's, or the first
 * SPMD_CONFORMANCE_TRAINING_STEPS of them (the sanitizer builds' runs,
 * where every step takes the same paths and 300 of them take minutes). */
static int64_t steps_to_run(const reference *r) {
  const char *v = getenv("SPMD_CONFORMANCE_TRAINING_STEPS");
  if (v == NULL || *v == '\0') return r->steps;
  char *end = NULL;
  const long long n = strtoll(v, &end, 10);
  if (*end != '\0' || n < 1)
    fail_msg("SPMD_CONFORMANCE_TRAINING_STEPS='%s': expected a count of steps from 1", v);
  return n < r->steps ? n : r->steps;
}

/* The parameters after every step against JAX's final ones, and the run's
 * summary line. */
static void compare_final_params(conformance_tally *t, const reference *r, trainer *tr,
                                 const char *label, double max_rel, int64_t worst,
                                 double max_eval_rel) {
  char name[96], detail[2048] = "";
  float params[SEED_MLP_PARAMS];
  trainer_params(tr, params);
  double max_abs = 0;
  int worst_param = 0;
  for (int i = 0; i < SEED_MLP_PARAMS; ++i) {
    const double d = fabs((double)params[i] - r->final_params[i]);
    if (!(d <= max_abs)) max_abs = d, worst_param = i;
  }
  int local;
  const char *pname = param_name(worst_param, &local);
  if (!(max_abs <= r->param_abs))
    conformance_detail(detail, sizeof detail,
                       "  max |difference| %.3g at %s[%d]: libspmd %.9g, JAX %.9g "
                       "(param_abs %g)\n",
                       max_abs, pname, local, params[worst_param], r->final_params[worst_param],
                       r->param_abs);
  snprintf(name, sizeof name, "final_params_%s", label);
  conformance_record(t, name, max_abs <= r->param_abs, detail[0] ? detail : NULL);
  printf("training %-16s max loss rel diff %.3g (step %lld), max train-loss rel diff %.3g, "
         "max param diff %.3g (%s[%d])\n",
         label, max_rel, (long long)worst + 1, max_eval_rel, max_abs, pname, local);
}

/* The whole run on `mesh`, batches split over `axes`, against JAX. */
static void training_run(conformance_tally *t, const reference *r, spmd_runtime *rt,
                         const spmd_mesh *mesh, const char *axes, const char *label, int use_ops) {
  spmd_sharding *sharding = NULL;
  char spec[64];
  snprintf(spec, sizeof spec, "(%s)", axes);
  assert_ok(spmd_sharding_named_text(mesh, spec, &sharding));
  trainer tr;
  trainer_create(&tr, rt, mesh, axes, r, use_ops);

  char name[96], detail[2048] = "";
  double max_rel = 0, evals[4] = {0};
  int64_t worst = 0, bad = 0;
  const int64_t steps = steps_to_run(r);
  for (int64_t s = 0; s < steps; ++s) {
    spmd_array *x = NULL, *y = NULL;
    put_rows(sharding, r, r->batches[s], NULL, r->batch, &x, &y);
    float loss;
    trainer_step(&tr, x, y, &loss);
    spmd_array_destroy(x);
    spmd_array_destroy(y);
    const double rel = fabs(loss - r->losses[s]) / fabs(r->losses[s]);
    if (!(rel <= max_rel)) max_rel = rel, worst = s;
    if (!(rel <= r->loss_rel) && bad++ < 5)
      conformance_detail(detail, sizeof detail, "  step %lld: libspmd %.9g, JAX %.9g (rel %.3g)\n",
                         (long long)s + 1, loss, r->losses[s], rel);
    for (size_t e = 0; e < r->n_evals; ++e)
      if (r->eval_steps[e] == s + 1) evals[e] = train_loss(&tr, sharding, r);
  }
  if (bad)
    conformance_detail(detail, sizeof detail,
                       "  %lld of %lld steps beyond loss_rel %g; max rel %.3g at step %lld\n",
                       (long long)bad, (long long)steps, r->loss_rel, max_rel,
                       (long long)worst + 1);
  snprintf(name, sizeof name, "losses_%s", label);
  conformance_record(t, name, bad == 0, detail[0] ? detail : NULL);

  double max_eval_rel = 0;
  for (size_t e = 0; e < r->n_evals; ++e) {
    if (r->eval_steps[e] > steps) continue;
    const double rel = fabs(evals[e] - r->eval_loss[e]) / fabs(r->eval_loss[e]);
    if (rel > max_eval_rel) max_eval_rel = rel;
    detail[0] = '\0';
    if (!(rel <= r->loss_rel))
      conformance_detail(detail, sizeof detail,
                         "  train loss after %lld steps: libspmd %.9g, JAX %.9g (rel %.3g)\n",
                         (long long)r->eval_steps[e], evals[e], r->eval_loss[e], rel);
    snprintf(name, sizeof name, "train_loss_%lld_%s", (long long)r->eval_steps[e], label);
    conformance_record(t, name, rel <= r->loss_rel, detail[0] ? detail : NULL);
  }

  if (steps == r->steps)
    compare_final_params(t, r, &tr, label, max_rel, worst, max_eval_rel);
  else  /* the final parameters are those after every step */
    printf("training %-16s max loss rel diff %.3g (step %lld) over the first %lld of %lld "
           "steps\n",
           label, max_rel, (long long)worst + 1, (long long)steps, (long long)r->steps);
  trainer_destroy(&tr);
  spmd_sharding_destroy(sharding);
}

static void initial_params(conformance_tally *t, const reference *r, const spmd_mesh *mesh) {
  spmd_key key;
  assert_ok(spmd_random_key(6789, &key));
  float params[SEED_MLP_PARAMS];
  check_seed(seed_mlp_init(mesh, &key, params), "seed_mlp_init");
  int64_t max_ulps = 0;
  int exact = 0, worst = 0;
  for (int i = 0; i < SEED_MLP_PARAMS; ++i) {
    const int64_t u = ulps(params[i], r->params[i]);
    exact += u == 0;
    if (u > max_ulps) max_ulps = u, worst = i;
  }
  char detail[512] = "";
  int local;
  const char *pname = param_name(worst, &local);
  if (max_ulps > 1)
    conformance_detail(detail, sizeof detail,
                       "  %d of %d bit-exact; max %lld ulps at %s[%d]: libspmd %.9g, JAX %.9g\n",
                       exact, SEED_MLP_PARAMS, (long long)max_ulps, pname, local, params[worst],
                       r->params[worst]);
  conformance_record(t, "initial_params", max_ulps <= 1, detail[0] ? detail : NULL);
  printf("training initial params: %d of %d bit-exact, max %lld ulp\n", exact, SEED_MLP_PARAMS,
         (long long)max_ulps);
}

void conformance_training(conformance_tally *tally) {
  json_value *root = conformance_load("training", "cases.json");
  reference *r = calloc(1, sizeof *r);
  assert_non_null(r);
  load_reference(root, r);
  spmd_runtime *rt = test_runtime(8);
  const json_value *mesh_json = conformance_member(root, "mesh", "training/cases.json");
  spmd_mesh *mesh = conformance_mesh(rt, mesh_json, "training mesh");
  const char *axis = json_string(json_at(conformance_member(mesh_json, "axis_names", "mesh"), 0));

  initial_params(tally, r, mesh);
  training_run(tally, r, rt, mesh, axis, "8dev", 0);
  /* The same run written with global ops: no psum in the program. */
  training_run(tally, r, rt, mesh, axis, "8dev_global_ops", 1);
  /* The same ops recorded once as a program and run each step. */
  training_run(tally, r, rt, mesh, axis, "8dev_program", 2);

  /* The same numbers whichever way the batch is split. */
  const int64_t shape24[2] = {2, 4}, shape1[1] = {1};
  const char *ab[2] = {"a", "b"}, *x[1] = {"x"};
  const int device0[1] = {0};
  spmd_mesh *mesh24 = NULL, *mesh1 = NULL;
  assert_ok(spmd_mesh_create(rt, 2, shape24, ab, NULL, &mesh24));
  assert_ok(spmd_mesh_create(rt, 1, shape1, x, device0, &mesh1));
  training_run(tally, r, rt, mesh24, "a, b", "2x4_tuple", 0);
  training_run(tally, r, rt, mesh1, "x", "1dev", 0);

  spmd_mesh_destroy(mesh1);
  spmd_mesh_destroy(mesh24);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
  free(r);
  json_free(root);
}
