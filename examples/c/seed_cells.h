/* The seed notebooks' shard_map programs written with libspmd: each takes
 * sharded inputs and returns sharded outputs, as the notebook's function
 * does. The tour prints them; the conformance suite checks them against the
 * answers JAX gave for the same inputs. */
#ifndef SPMD_SEED_CELLS_H
#define SPMD_SEED_CELLS_H

#include <spmd/spmd.h>

/* shard_map(lambda x: 2 * jnp.sin(x) + 1, in_specs=P('x'), out_specs=P('x'))
 * for an int32 or float32 x; prints each device's local shape, as the
 * notebook's jax.debug.print(str(x.shape)) does, through `options`. */
spmd_status seed_elementwise_sin(const spmd_mesh *mesh, spmd_array *x,
                                 const spmd_shard_map_options *options, spmd_array **y);

/* The same without the print: the introduction notebook's f_elementwise,
 * shard_map(f_elementwise, in_specs=P('x'), out_specs=P('x')). */
spmd_status seed_elementwise_sin_quiet(const spmd_mesh *mesh, spmd_array *x, spmd_array **y);

/* The introduction notebook's jit cells, written with the global ops
 * (spmd/ops.h), whose shardings follow the data as under jax.jit:
 *
 * f_elementwise: jax.jit(lambda x: 2 * jnp.sin(x) + 1)(x) for a float32 or
 * int32 x with a named sharding: the result has x's sharding. */
spmd_status seed_f_elementwise(spmd_array *x, spmd_array **y);

/* f_contract: jax.jit(lambda x: x.sum(axis=0))(x) for a float32 (rows,
 * cols) x laid out P('x', 'y') on an ('x', 'y') mesh: each device sums its
 * rows, a psum over 'x' completes the sums, and the result is P('y'),
 * replicated over 'x' (what GSPMD chooses). `mesh` is x's (unused: the
 * op reads it from x). */
spmd_status seed_f_contract(const spmd_mesh *mesh, spmd_array *x, spmd_array **out);

/* f_contract_2: f_contract with jax.lax.with_sharding_constraint(out,
 * NamedSharding(mesh8, P('x'))): the sums resharded over the 1-D mesh
 * mesh8 (axis 'x'). */
spmd_status seed_f_contract_2(const spmd_mesh *mesh, const spmd_mesh *mesh8, spmd_array *x,
                              spmd_array **out);

/* shard_map(lambda x: jax.lax.psum(x.sum(), 'x'), in_specs=P('x'),
 * out_specs=P()): a float32 or int32 scalar, checked to be replicated (the
 * check_rep JAX does by default). */
spmd_status seed_psum_of_shard_sums(const spmd_mesh *mesh, spmd_array *x, spmd_array **total);

/* shard_map(f, in_specs=P('x'), out_specs=P('x')) with f doubling an int32
 * x and printing "device local shape: x.shape=(n,)" once, through
 * `options` (the notebook's Python print runs once, at trace time). */
spmd_status seed_double(const spmd_mesh *mesh, spmd_array *x,
                        const spmd_shard_map_options *options, spmd_array **y);

/* shard_map(lambda x: jnp.sum(x, keepdims=True), P('x'), P('x')): one
 * partial sum per device (int32 x). */
spmd_status seed_shard_sums(const spmd_mesh *mesh, spmd_array *x, spmd_array **sums);

/* layer_sharded: sigmoid(psum(x @ weights, 'x') + bias) with in_specs
 * (P('x'), P('x', None), P(None)) and out_specs P(None). float32. The
 * shard_map computes psum(x @ weights, 'x') + bias; the sigmoid of that
 * replicated result is spmd_unary's (see seed_cells.c). */
spmd_status seed_layer_sharded(const spmd_mesh *mesh, spmd_array *x, spmd_array *weights,
                               spmd_array *bias, spmd_array **out);

/* FSDP: all_gather A over 'data' (axis 0, tiled), then x @ A; in_specs
 * (P('data', None), P('data', None)), out_specs P('data', None). */
spmd_status seed_fsdp_matmul(const spmd_mesh *mesh, spmd_array *x, spmd_array *a,
                             spmd_array **b);

/* Tensor-parallel MLP: all_gather x over 'model' (axis 1), x @ W1 @ W2,
 * psum_scatter over 'model' (dimension 1, tiled); in_specs (P(None,
 * 'model'), P(None, 'model'), P('model', None)), out_specs P(None, 'model'). */
spmd_status seed_tp_mlp(const spmd_mesh *mesh, spmd_array *x, spmd_array *w1, spmd_array *w2,
                        spmd_array **b);

/* FSDP + TP: gathers of x over 'model', W1 over 'data' (axis 0) and W2
 * over 'data' (axis 1), then the TP MLP; in_specs (P('data', 'model'),
 * P('data', 'model'), P('model', 'data')), out_specs P('data', 'model'). */
spmd_status seed_fsdp_tp(const spmd_mesh *mesh, spmd_array *x, spmd_array *w1, spmd_array *w2,
                         spmd_array **b);

/* The same four programs written the automatic way, as jax.jit over
 * sharded inputs: the operands are placed (device_put) as the shard_map
 * versions' in_specs say, the model is written with global ops
 * (spmd/ops.h), and the collectives appear by propagation: the layer's
 * psum over 'x', FSDP's gather of the weights over 'data', the tensor-
 * parallel gather of x and the psum_scatter the output sharding asks for.
 *   layer_auto:  sigmoid(x @ weights + bias), x P('x'), weights P('x', None)
 *   fsdp_auto:   x @ A, both P('data', None), out P('data', None)
 *   tp_mlp_auto: x @ W1 @ W2 with W1 column- and W2 row-parallel,
 *                out P(None, 'model')
 *   fsdp_tp_auto: as seed_fsdp_tp's specs, out P('data', 'model') */
spmd_status seed_layer_auto(const spmd_mesh *mesh, spmd_array *x, spmd_array *weights,
                            spmd_array *bias, spmd_array **out);
spmd_status seed_fsdp_auto(const spmd_mesh *mesh, spmd_array *x, spmd_array *a, spmd_array **b);
spmd_status seed_tp_mlp_auto(const spmd_mesh *mesh, spmd_array *x, spmd_array *w1,
                             spmd_array *w2, spmd_array **b);
spmd_status seed_fsdp_tp_auto(const spmd_mesh *mesh, spmd_array *x, spmd_array *w1,
                              spmd_array *w2, spmd_array **b);

/* The benchmarking section's collectives over 'data', with its specs and
 * check_rep=False:
 *   all_gather(x, 'data', axis=0, tiled=True): P('data', None) -> P(None, None)
 *   psum(x, 'data'):                            P(None, None) -> P(None, None)
 *   psum_scatter(x, 'data', scatter_dimension=0, tiled=True):
 *                                               P(None, None) -> P('data', None)
 *   all_to_all(x, 'data', split_axis=1, concat_axis=0, tiled=True):
 *                                               P('data', None) -> P(None, 'data') */
spmd_status seed_all_gather(const spmd_mesh *mesh, spmd_array *x, spmd_array **out);
spmd_status seed_all_reduce(const spmd_mesh *mesh, spmd_array *x, spmd_array **out);
spmd_status seed_reduce_scatter(const spmd_mesh *mesh, spmd_array *x, spmd_array **out);
spmd_status seed_all_to_all(const spmd_mesh *mesh, spmd_array *x, spmd_array **out);

#endif /* SPMD_SEED_CELLS_H */
