/* The autoparallelism notebook's data-parallel training, written with
 * libspmd: an MLP (eqx.nn.MLP(4, 4, 32, depth=1): Linear 4->32, relu,
 * Linear 32->4) trained on y = sin(x) with the mean squared error and Adam,
 * each batch split over the devices of a mesh axis, the parameters and the
 * optimizer state replicated. One training step is one shard_map: every
 * device runs the forward and backward pass on its rows of the batch, the
 * gradients are summed across devices with psum, and every device applies
 * the same Adam update (optax.adam's defaults: b1 0.9, b2 0.999, eps 1e-8).
 *
 * Parameters are one flat float32 vector of SEED_MLP_PARAMS values in the
 * order layer0 weight (32, 4), layer0 bias (32), layer1 weight (4, 32),
 * layer1 bias (4); weights are (out, in), row-major, as Equinox stores them.
 * A failing call says why in seed_last_error() (seed_error.h) and leaves the
 * trainer as it was. */
#ifndef SPMD_SEED_TRAIN_H
#define SPMD_SEED_TRAIN_H

#include <spmd/spmd.h>

enum {
  SEED_MLP_IN = 4,
  SEED_MLP_HIDDEN = 32,
  SEED_MLP_OUT = 4,
  SEED_MLP_PARAMS = SEED_MLP_HIDDEN * SEED_MLP_IN + SEED_MLP_HIDDEN +
                    SEED_MLP_OUT * SEED_MLP_HIDDEN + SEED_MLP_OUT
};

/* eqx.nn.MLP(4, 4, 32, depth=1, key=key)'s initial parameters, drawn with
 * libspmd's JAX-identical generator (each Linear: weight and bias uniform on
 * [-1/sqrt(in), 1/sqrt(in)) from split keys), written to params. `mesh`
 * supplies the device the numbers are generated on. */
spmd_status seed_mlp_init(const spmd_mesh *mesh, const spmd_key *key, float *params);

/* The model's parameters and Adam state, replicated over a mesh. */
typedef struct seed_trainer seed_trainer;

/* A trainer starting from `params`, splitting batches over `batch_axes`
 * (one axis or a tuple, as shard_map writes them) of `mesh`. */
spmd_status seed_trainer_create(const spmd_mesh *mesh, const char *batch_axes,
                                const float *params, double learning_rate,
                                seed_trainer **out);
void seed_trainer_destroy(seed_trainer *trainer);

/* One step on the batch x, y (float32, (batch, 4), batch divisible by the
 * number of devices along batch_axes; resharded to P(batch_axes) if laid
 * out otherwise): *loss receives the batch's loss before the update. The
 * step's outputs replace the trainer's parameters and Adam state, whose old
 * arrays are released at once (the buffers are donated to the step). */
spmd_status seed_trainer_step(seed_trainer *trainer, spmd_array *x, spmd_array *y,
                              float *loss);

/* The notebook's compute_loss on x, y with the current parameters, without
 * changing them. */
spmd_status seed_trainer_loss(seed_trainer *trainer, spmd_array *x, spmd_array *y,
                              float *loss);

/* Copies the current parameters (SEED_MLP_PARAMS floats) to params. */
spmd_status seed_trainer_params(const seed_trainer *trainer, float *params);

#endif /* SPMD_SEED_TRAIN_H */
