/* The autoparallelism notebook's data-parallel training written the
 * automatic way: the same MLP, loss and Adam as seed_train.h, but every
 * step is a sequence of global ops (spmd/ops.h) over a batch split P(axes)
 * and replicated parameters. Nothing asks for a collective: the gradient
 * sums across devices appear by propagation, as the contractions and
 * reductions over the split batch dimension. Adam's updates donate the old
 * parameters and moments to the new ones. float32; a failing call says why
 * in seed_last_error() (seed_error.h). */
#ifndef SPMD_SEED_TRAIN_OPS_H
#define SPMD_SEED_TRAIN_OPS_H

#include <spmd/spmd.h>

typedef struct seed_ops_trainer seed_ops_trainer;

/* A trainer starting from `params` (seed_train.h's flat layout), its
 * parameters and Adam moments replicated on `mesh`. */
spmd_status seed_ops_trainer_create(const spmd_mesh *mesh, const float *params,
                                    double learning_rate, seed_ops_trainer **out);
/* The same, but each step runs as one program (spmd/experimental/program.h)
 * recorded at the first step from the same ops, for x and y laid out as
 * that step's: the ops fused where they can be and launched without their
 * checks. Results are bit for bit the eager trainer's. */
spmd_status seed_ops_trainer_create_recorded(spmd_runtime *runtime, const spmd_mesh *mesh,
                                             const float *params, double learning_rate,
                                             seed_ops_trainer **out);
void seed_ops_trainer_destroy(seed_ops_trainer *trainer);

/* One step on x, y (float32, (batch, 4), laid out as the caller placed
 * them, P(axes) for data parallelism): *loss receives the loss before the
 * update. */
spmd_status seed_ops_trainer_step(seed_ops_trainer *trainer, spmd_array *x, spmd_array *y,
                                  float *loss);
/* The loss on x, y with the current parameters. */
spmd_status seed_ops_trainer_loss(seed_ops_trainer *trainer, spmd_array *x, spmd_array *y,
                                  float *loss);
/* Copies the current parameters (SEED_MLP_PARAMS floats) to params. */
spmd_status seed_ops_trainer_params(const seed_ops_trainer *trainer, float *params);

#endif /* SPMD_SEED_TRAIN_OPS_H */
