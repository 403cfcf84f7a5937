/* spmd-train: the autoparallelism notebook's data-parallel training run
 * (eqx.nn.MLP(4, 4, 32, depth=1) fitted to y = sin(x) with Adam), written
 * with libspmd on the default runtime's 8 CPU devices, and checked against
 * the identical training on a one-device mesh.
 *
 *   data    xs = jax.random.normal(PRNGKey(0), (64, 4)) from libspmd's
 *           JAX-identical generator, ys = sin(xs)
 *   model   seed_mlp_init(PRNGKey(6789)): the notebook's initial parameters
 *   batches 16 rows, split over the mesh axis 'x' (2 rows per device);
 *           each epoch visits the 64 samples in a new order: epoch e's
 *           order sorts the sample indices by the 64 uint32 values
 *           jax.random.bits(fold_in(PRNGKey(1), e), (64,), uint32) (ties,
 *           which are rare, by index), and its 4 batches are consecutive
 *           slices of that order, as the notebook's train_dataloader cuts
 *           its np.random.permutation
 *   steps   300 (75 epochs), Adam with learning rate 3e-4
 *
 * Prints the batch loss every 25 steps and the notebook's evaluation,
 * `train loss=...` (the mean of compute_loss over the 4 consecutive batches
 * of 16), after 10 steps (the notebook's num_steps) and after 300. Then the
 * same training runs on a one-device mesh, an unsharded computation of the
 * same batches; the program exits non-zero, naming what differs, when a
 * step's loss differs from the unsharded one by more than LOSS_REL_TOL
 * (relative) or a final parameter by more than PARAM_ABS_TOL, or when the
 * loss does not fall. The two runs differ only in how the gradient sums
 * are split (8 partial sums added by psum, or one), so they agree to a few
 * float32 roundings. */
#include <spmd/spmd.h>

#include "seed_error.h"
#include "seed_train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DATASET = 64, BATCH = 16, STEPS = 300, PRINT_EVERY = 25, NOTEBOOK_STEPS = 10 };
static const double LEARNING_RATE = 3e-4;
/* Sharded against unsharded: the differences observed are at most 4e-7
 * relative for the losses and 3e-8 for the parameters (float32 rounding of
 * the regrouped sums, carried through 300 Adam steps); the tolerances leave
 * a factor of 25 to 30 for other compilers and kernels. */
static const double LOSS_REL_TOL = 1e-5;
static const double PARAM_ABS_TOL = 1e-6;

#define CHECK(call)                                                                   \
  do {                                                                                \
    spmd_status st_ = (call);                                                         \
    if (st_ != SPMD_OK) {                                                             \
      fprintf(stderr, "spmd-train: %s failed: %s: %s\n", #call, spmd_status_string(st_), \
              seed_or_spmd_last_error());                                             \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

typedef struct dataset {
  float xs[DATASET][SEED_MLP_IN], ys[DATASET][SEED_MLP_OUT];
  int order[STEPS][BATCH]; /* the sample indices of every step's batch */
} dataset;

typedef struct run_result {
  float losses[STEPS];
  double eval_notebook, eval_final; /* train loss after 10 and 300 steps */
  float params[SEED_MLP_PARAMS];
} run_result;

static int by_bits_then_index(const void *a, const void *b) {
  const uint32_t *x = a, *y = b; /* {bits, index} pairs */
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return x[1] < y[1] ? -1 : x[1] > y[1];
}

static void make_dataset(const spmd_mesh *mesh, dataset *d) {
  spmd_sharding *rep = NULL;
  CHECK(spmd_sharding_replicated(mesh, &rep));
  spmd_key key;
  CHECK(spmd_random_key(0, &key));
  const int64_t shape[2] = {DATASET, SEED_MLP_IN};
  spmd_array *xs = NULL;
  CHECK(spmd_random_normal(rep, &key, SPMD_F32, 2, shape, &xs));
  CHECK(spmd_array_to_host(xs, d->xs, sizeof d->xs));
  spmd_array_destroy(xs);
  for (int i = 0; i < DATASET; ++i)
    for (int j = 0; j < SEED_MLP_IN; ++j) d->ys[i][j] = sinf(d->xs[i][j]);

  spmd_key shuffle;
  CHECK(spmd_random_key(1, &shuffle));
  const int64_t n[1] = {DATASET};
  for (int step = 0; step < STEPS; step += DATASET / BATCH) {
    const int epoch = step / (DATASET / BATCH);
    spmd_key k;
    CHECK(spmd_random_fold_in(&shuffle, (uint32_t)epoch, &k));
    spmd_array *bits = NULL;
    CHECK(spmd_random_bits(rep, &k, SPMD_I32, 1, n, &bits));
    uint32_t raw[DATASET], pairs[DATASET][2];
    CHECK(spmd_array_to_host(bits, raw, sizeof raw));
    spmd_array_destroy(bits);
    for (int i = 0; i < DATASET; ++i) pairs[i][0] = raw[i], pairs[i][1] = (uint32_t)i;
    qsort(pairs, DATASET, sizeof pairs[0], by_bits_then_index);
    for (int b = 0; b < DATASET / BATCH && step + b < STEPS; ++b)
      for (int r = 0; r < BATCH; ++r) d->order[step + b][r] = (int)pairs[b * BATCH + r][1];
  }
  spmd_sharding_destroy(rep);
}

/* Rows `rows` of the dataset as x and y, laid out P('x') on the mesh. */
static void put_batch(const spmd_sharding *sharding, const dataset *d, const int *rows,
                      spmd_array **x, spmd_array **y) {
  float xb[BATCH][SEED_MLP_IN], yb[BATCH][SEED_MLP_OUT];
  for (int r = 0; r < BATCH; ++r) {
    memcpy(xb[r], d->xs[rows[r]], sizeof xb[r]);
    memcpy(yb[r], d->ys[rows[r]], sizeof yb[r]);
  }
  const int64_t shape[2] = {BATCH, SEED_MLP_IN};
  CHECK(spmd_array_from_host(sharding, SPMD_F32, 2, shape, xb, sizeof xb, x));
  CHECK(spmd_array_from_host(sharding, SPMD_F32, 2, shape, yb, sizeof yb, y));
}

/* The notebook's evaluate loop: compute_loss on each consecutive batch,
 * added up in Python floats, divided by the number of batches. */
static double train_loss(seed_trainer *t, const spmd_sharding *sharding, const dataset *d) {
  double sum = 0;
  int batches = 0;
  for (int start = 0; start < DATASET; start += BATCH) {
    int rows[BATCH];
    for (int r = 0; r < BATCH; ++r) rows[r] = start + r;
    spmd_array *x = NULL, *y = NULL;
    put_batch(sharding, d, rows, &x, &y);
    float loss;
    CHECK(seed_trainer_loss(t, x, y, &loss));
    spmd_array_destroy(x);
    spmd_array_destroy(y);
    sum += loss;
    ++batches;
  }
  return sum / batches;
}

static void train(const spmd_mesh *mesh, const dataset *d, const float *init, int verbose,
                  run_result *out) {
  spmd_sharding *sharding = NULL;
  CHECK(spmd_sharding_named_text(mesh, "x", &sharding));
  seed_trainer *t = NULL;
  CHECK(seed_trainer_create(mesh, "x", init, LEARNING_RATE, &t));
  for (int step = 0; step < STEPS; ++step) {
    spmd_array *x = NULL, *y = NULL;
    put_batch(sharding, d, d->order[step], &x, &y);
    CHECK(seed_trainer_step(t, x, y, &out->losses[step]));
    spmd_array_destroy(x);
    spmd_array_destroy(y);
    if (verbose && (step + 1) % PRINT_EVERY == 0)
      printf("step %3d  loss %.6f\n", step + 1, out->losses[step]);
    if (step + 1 == NOTEBOOK_STEPS) out->eval_notebook = train_loss(t, sharding, d);
  }
  out->eval_final = train_loss(t, sharding, d);
  CHECK(seed_trainer_params(t, out->params));
  seed_trainer_destroy(t);
  spmd_sharding_destroy(sharding);
}

static double mean(const float *v, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += v[i];
  return s / n;
}

int main(void) {
  spmd_runtime *rt = NULL;
  CHECK(spmd_runtime_create(NULL, &rt));
  int devices = 0;
  CHECK(spmd_runtime_device_count(rt, &devices));
  if (devices < 8) {
    fprintf(stderr, "spmd-train: the default runtime has %d devices; 8 are needed\n", devices);
    spmd_runtime_destroy(rt);
    return 1;
  }
  const char *x_axis[1] = {"x"};
  const int64_t eight[1] = {8}, one[1] = {1};
  const int device0[1] = {0};
  spmd_mesh *mesh8 = NULL, *mesh1 = NULL;
  CHECK(spmd_mesh_create(rt, 1, eight, x_axis, NULL, &mesh8));
  CHECK(spmd_mesh_create(rt, 1, one, x_axis, device0, &mesh1));

  dataset *d = calloc(1, sizeof *d);
  run_result *sharded = calloc(1, sizeof *sharded), *single = calloc(1, sizeof *single);
  if (d == NULL || sharded == NULL || single == NULL) {
    fprintf(stderr, "spmd-train: out of memory\n");
    return 1;
  }
  make_dataset(mesh8, d);
  float init[SEED_MLP_PARAMS];
  spmd_key model_key;
  CHECK(spmd_random_key(6789, &model_key));
  CHECK(seed_mlp_init(mesh8, &model_key, init));

  printf("eqx.nn.MLP(4, 4, 32, depth=1), adam(%g), %d steps of batch %d over %d devices\n",
         LEARNING_RATE, STEPS, BATCH, 8);
  train(mesh8, d, init, 1, sharded);
  printf("train loss=%.9g  (after %d steps, the notebook's num_steps)\n",
         sharded->eval_notebook, NOTEBOOK_STEPS);
  printf("train loss=%.9g  (after %d steps)\n", sharded->eval_final, STEPS);

  train(mesh1, d, init, 0, single);
  int failed = 0;
  double max_loss_rel = 0, max_param = 0;
  int worst_step = 0, worst_param = 0;
  for (int s = 0; s < STEPS; ++s) {
    const double rel = fabs((double)sharded->losses[s] - single->losses[s]) /
                       fmax(fabs((double)single->losses[s]), 1e-30);
    if (!(rel <= max_loss_rel)) max_loss_rel = rel, worst_step = s;
    if (!(rel <= LOSS_REL_TOL)) {
      if (failed < 10)
        fprintf(stderr, "spmd-train: step %d: loss %.9g on 8 devices, %.9g on 1 (rel %.3g)\n",
                s + 1, sharded->losses[s], single->losses[s], rel);
      ++failed;
    }
  }
  for (int i = 0; i < SEED_MLP_PARAMS; ++i) {
    const double diff = fabs((double)sharded->params[i] - single->params[i]);
    if (!(diff <= max_param)) max_param = diff, worst_param = i;
    if (!(diff <= PARAM_ABS_TOL)) {
      if (failed < 10)
        fprintf(stderr, "spmd-train: final param %d: %.9g on 8 devices, %.9g on 1\n", i,
                sharded->params[i], single->params[i]);
      ++failed;
    }
  }
  const double evals_rel = fabs(sharded->eval_final - single->eval_final) / single->eval_final;
  if (!(evals_rel <= LOSS_REL_TOL)) {
    fprintf(stderr, "spmd-train: train loss %.9g on 8 devices, %.9g on 1\n",
            sharded->eval_final, single->eval_final);
    ++failed;
  }
  printf("8 devices vs 1 device: max loss rel diff %.3g (step %d, tolerance %g), "
         "max param diff %.3g (param %d, tolerance %g)\n",
         max_loss_rel, worst_step + 1, LOSS_REL_TOL, max_param, worst_param, PARAM_ABS_TOL);

  const double first = mean(sharded->losses, PRINT_EVERY),
               last = mean(sharded->losses + STEPS - PRINT_EVERY, PRINT_EVERY);
  if (!(last < first) || !(sharded->eval_final < sharded->eval_notebook)) {
    fprintf(stderr,
            "spmd-train: the loss did not fall: mean of the first %d steps %.6f, of the last "
            "%.6f; train loss %.6f after %d steps, %.6f after %d\n",
            PRINT_EVERY, first, last, sharded->eval_notebook, NOTEBOOK_STEPS,
            sharded->eval_final, STEPS);
    ++failed;
  }

  free(d);
  free(sharded);
  free(single);
  spmd_mesh_destroy(mesh1);
  spmd_mesh_destroy(mesh8);
  spmd_runtime_destroy(rt);
  if (failed) {
    fprintf(stderr, "spmd-train: FAILED: %d disagreements\n", failed);
    return 1;
  }
  printf("sharded and unsharded runs agree\n");
  return 0;
}
