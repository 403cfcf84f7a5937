/* second: a sum, a matmul and a shard_map over a 2 x 4 mesh, each printed
 * with its sharding, as docs/second-program/second.py prints them in JAX.
 *
 *   cc second.c $(pkg-config --cflags --libs spmd) -o second
 */
#include <stdio.h>

#include <spmd/spmd.h>

/* On failure: print the call and libspmd's message, then clean up. */
#define CHECK(call)                                                       \
  do {                                                                    \
    if ((st = (call)) != SPMD_OK) {                                       \
      fprintf(stderr, "%s: %s: %s\n", #call, spmd_status_string(st),      \
              spmd_last_error());                                         \
      goto done;                                                          \
    }                                                                     \
  } while (0)

/* print(*text) when st is SPMD_OK; frees the text. */
static spmd_status put(spmd_status st, char **text) {
  if (st == SPMD_OK) puts(*text);
  spmd_string_free(*text);
  *text = NULL;
  return st;
}

/* print(a); print(a.sharding) */
static spmd_status show(const spmd_array *a) {
  char *text = NULL;
  spmd_sharding *sharding = NULL;
  spmd_status st = put(spmd_array_str(a, &text), &text);
  if (st == SPMD_OK) st = spmd_array_sharding(a, &sharding);
  if (st == SPMD_OK) st = put(spmd_sharding_to_string(sharding, &text), &text);
  spmd_sharding_destroy(sharding);
  return st;
}

/* def block_sum(block): return jax.lax.psum(block.sum(), ('x', 'y')) */
static spmd_status block_sum(spmd_ctx *ctx, void *user_data) {
  (void)user_data;
  spmd_block in = SPMD_BLOCK_INIT, local = SPMD_BLOCK_INIT, total = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 0, &in);
  if (st == SPMD_OK) st = spmd_ctx_alloc(ctx, SPMD_F32, 0, NULL, &local);
  if (st != SPMD_OK) return st;
  float sum = 0.0f;
  for (int64_t i = 0; i < in.shape[0] * in.shape[1]; ++i) sum += ((const float *)in.data)[i];
  *(float *)local.data = sum;
  st = spmd_ctx_psum(ctx, &local, "('x', 'y')", &total);
  return st == SPMD_OK ? spmd_ctx_set_output(ctx, 0, &total) : st;
}

int main(void) {
  spmd_status st = SPMD_OK;
  spmd_runtime *rt = NULL;
  spmd_mesh *mesh = NULL;
  spmd_sharding *sharding = NULL;
  spmd_array *a = NULL, *s = NULL, *at = NULL, *m = NULL, *t = NULL;
  char *text = NULL;

  /* mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ('x', 'y')) */
  CHECK(spmd_runtime_create(NULL, &rt));
  const int64_t mesh_shape[2] = {2, 4};
  const char *const axes[2] = {"x", "y"};
  CHECK(spmd_mesh_create(rt, 2, mesh_shape, axes, NULL, &mesh));

  /* a = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P('x', 'y'))) */
  CHECK(spmd_sharding_named_text(mesh, "P('x', 'y')", &sharding));
  const int64_t shape[2] = {4, 8};
  CHECK(spmd_array_arange(sharding, SPMD_F32, 2, shape, 0.0, 1.0, &a));
  CHECK(put(spmd_sharding_to_string(sharding, &text), &text));

  /* s = a.sum(axis=1) */
  const int64_t axis1[1] = {1};
  CHECK(spmd_reduce(SPMD_REDUCE_SUM, a, 1, axis1, 0, NULL, &s));
  CHECK(show(s));

  /* m = a @ a.T */
  CHECK(spmd_transpose(a, 0, NULL, NULL, &at));
  CHECK(spmd_matmul(a, at, NULL, &m));
  CHECK(show(m));

  /* t = jax.shard_map(block_sum, mesh=mesh, in_specs=P('x', 'y'), out_specs=P())(a) */
  const char *in_specs[1] = {"P('x', 'y')"}, *out_specs[1] = {"P()"};
  CHECK(spmd_shard_map_text(mesh, block_sum, NULL, 1, &a, in_specs, 1, out_specs, NULL, &t));
  CHECK(show(t));

done:
  spmd_array_destroy(t);
  spmd_array_destroy(m);
  spmd_array_destroy(at);
  spmd_array_destroy(s);
  spmd_array_destroy(a);
  spmd_sharding_destroy(sharding);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
  return st == SPMD_OK ? 0 : 1;
}
