/* The tensor-parallelism notebook's Attention + MLP `Layer`, written with
 * libspmd: x + attention(x), then x + mlp(x), on a ('data', 'model') mesh
 * with X sharded over 'data' and Megatron-style weights: Wq, Wk, Wv and W1
 * split by columns over 'model' (each device holds whole heads), Wo and W2
 * split by rows, so each half of the layer ends in one psum over 'model'.
 * One call is one shard_map. float32. A failing call says why in
 * seed_last_error() (seed_error.h). */
#ifndef SPMD_SEED_LAYER_H
#define SPMD_SEED_LAYER_H

#include <spmd/spmd.h>

typedef struct seed_layer {
  int64_t hidden, heads;
  /* (hidden, hidden) except w1 (hidden, 4 hidden) and w2 (4 hidden,
   * hidden), stored (in, out) as flax's nnx.Linear does. */
  spmd_array *wq, *wk, *wv, *wo, *w1, *w2;
} seed_layer;

/* The notebook's initial weights, as nnx.Rngs(0) draws them: kernel i (in
 * the order Wq, Wk, Wv, Wo, W1, W2) is kaiming_normal on
 * fold_in(PRNGKey(0), i), a normal truncated to (-2, 2) scaled by
 * sqrt(2 / fan_in) / 0.87962566103423978. Laid out with P(None, 'model') or
 * P('model', None) on `mesh` (axes 'data' and 'model'). `heads` must divide
 * hidden, and the 'model' axis size must divide heads. On failure nothing
 * is left allocated. */
spmd_status seed_layer_init(const spmd_mesh *mesh, int64_t hidden, int64_t heads,
                            seed_layer *layer);
void seed_layer_destroy(seed_layer *layer);

/* y = Layer(x) for x (batch, seq, hidden), float32, resharded to
 * P('data', None) if laid out otherwise; y has the same shape, sharded
 * P('data', None) and replicated over 'model'. */
spmd_status seed_layer_apply(const spmd_mesh *mesh, const seed_layer *layer, spmd_array *x,
                             spmd_array **y);

/* The same Layer written with the global ops (spmd/ops.h): einsums,
 * reshapes and transposes for the heads, softmax, relu and the residual
 * adds, each placed by propagation. The column-parallel projections need
 * no communication; the row-parallel ones (Wo, W2) end in the psum over
 * 'model' that propagation inserts. Same inputs, result and sharding as
 * seed_layer_apply. */
spmd_status seed_layer_apply_auto(const spmd_mesh *mesh, const seed_layer *layer, spmd_array *x,
                                  spmd_array **y);

#endif /* SPMD_SEED_LAYER_H */
