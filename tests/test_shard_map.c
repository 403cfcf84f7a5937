/* shard_map: per-device callbacks, local blocks, outputs assembled by
 * out_specs, axis_index/axis_size, printing, check_rep and argument errors. */
#include "spmd_test.h"

#include <math.h>
#include <stdlib.h>

static void read_f32(spmd_array *a, float *out, size_t n) {
  assert_ok(spmd_array_to_host(a, out, n * sizeof(float)));
}

/* ---- identity: inputs arrive as local blocks, outputs are reassembled ---- */

static spmd_status identity(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_block in = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 0, &in);
  if (st) return st;
  return spmd_ctx_set_output(ctx, 0, &in);
}

static void identity_round_trips_every_spec(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(8);
  const int64_t ms[2] = {2, 4};
  spmd_mesh *mesh = test_mesh(rt, 2, ms);
  const int64_t shape[2] = {8, 12};
  float data[96], out[96];
  for (int i = 0; i < 96; ++i) data[i] = (float)i * 0.5f;
  const char *specs[] = {"x, y", "y, x", "(x,y), None", "None, (y,x)", "x", "None, y"};
  for (size_t k = 0; k < sizeof specs / sizeof *specs; ++k) {
    spmd_array *a = test_put(mesh, "", SPMD_F32, 2, shape, data);
    spmd_array *o = NULL;
    assert_ok(spmd_shard_map_text(mesh, identity, NULL, 1, &a, &specs[k], 1,
                                  &specs[k], NULL, &o));
    memset(out, 0, sizeof out);
    read_f32(o, out, 96);
    assert_memory_equal(out, data, sizeof data);
    spmd_sharding *s = NULL, *want = test_sharding(mesh, specs[k]);
    int eq = 0;
    assert_ok(spmd_array_sharding(o, &s));
    assert_ok(spmd_sharding_equal(s, want, &eq));
    assert_true(eq);
    spmd_sharding_destroy(s);
    spmd_sharding_destroy(want);
    spmd_array_destroy(o);
    spmd_array_destroy(a);
  }
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* ---- per-device shapes and values: the callback sees only its block ---- */

typedef struct {
  int64_t shape0[8];
  int64_t index[8];
  int64_t size[8];
  int devices_seen[8];
} probe;

static spmd_status probe_fn(spmd_ctx *ctx, void *ud) {
  probe *p = ud;
  int dev = -1;
  spmd_status st = spmd_ctx_device_id(ctx, &dev);
  if (st) return st;
  spmd_block in = SPMD_BLOCK_INIT;
  if ((st = spmd_ctx_input(ctx, 0, &in))) return st;
  p->shape0[dev] = in.shape[0];
  p->devices_seen[dev] = 1;
  if ((st = spmd_ctx_axis_index(ctx, "x", &p->index[dev]))) return st;
  if ((st = spmd_ctx_axis_size(ctx, "x", &p->size[dev]))) return st;
  /* out = 2 * x + device */
  spmd_block out = SPMD_BLOCK_INIT;
  if ((st = spmd_ctx_alloc(ctx, SPMD_F32, in.ndim, in.shape, &out))) return st;
  const float *x = in.data;
  float *y = out.data;
  for (int64_t i = 0; i < in.shape[0]; ++i) y[i] = 2.0f * x[i];
  return spmd_ctx_set_output(ctx, 0, &out);
}

static void callback_sees_local_blocks_uneven(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  const int64_t ms[1] = {4};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  const int64_t shape[1] = {10};
  float data[10], out[10];
  for (int i = 0; i < 10; ++i) data[i] = (float)i;
  spmd_array *a = test_put(mesh, "x", SPMD_F32, 1, shape, data);
  probe p;
  memset(&p, 0, sizeof p);
  const char *spec = "x";
  spmd_array *o = NULL;
  assert_ok(spmd_shard_map_text(mesh, probe_fn, &p, 1, &a, &spec, 1, &spec, NULL, &o));
  /* ceil(10/4) = 3: blocks 3, 3, 3, 1 */
  assert_int_equal(p.shape0[0], 3);
  assert_int_equal(p.shape0[1], 3);
  assert_int_equal(p.shape0[2], 3);
  assert_int_equal(p.shape0[3], 1);
  for (int d = 0; d < 4; ++d) {
    assert_int_equal(p.devices_seen[d], 1);
    assert_int_equal(p.index[d], d);
    assert_int_equal(p.size[d], 4);
  }
  int64_t oshape[1];
  assert_ok(spmd_array_shape(o, sizeof oshape / sizeof oshape[0], oshape, NULL));
  assert_int_equal(oshape[0], 10);
  read_f32(o, out, 10);
  for (int i = 0; i < 10; ++i) assert_float_equal(out[i], 2.0f * (float)i, 0);
  spmd_array_destroy(o);
  spmd_array_destroy(a);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* ---- axis_index / axis_size over tuples, on a 2x2x2 mesh ---- */

typedef struct {
  int64_t idx_xy[8], idx_zx[8], idx_y[8], size_zx[8];
} axes_probe;

static spmd_status axes_fn(spmd_ctx *ctx, void *ud) {
  axes_probe *p = ud;
  int dev;
  spmd_status st;
  if ((st = spmd_ctx_device_id(ctx, &dev))) return st;
  if ((st = spmd_ctx_axis_index(ctx, "(x, y)", &p->idx_xy[dev]))) return st;
  if ((st = spmd_ctx_axis_index(ctx, "z,x", &p->idx_zx[dev]))) return st;
  if ((st = spmd_ctx_axis_index(ctx, "('y',)", &p->idx_y[dev]))) return st;
  if ((st = spmd_ctx_axis_size(ctx, "(z, x)", &p->size_zx[dev]))) return st;
  return SPMD_OK;
}

static void axis_index_is_row_major_over_the_tuple(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(8);
  const int64_t ms[3] = {2, 2, 2};
  spmd_mesh *mesh = test_mesh(rt, 3, ms);
  axes_probe p;
  memset(&p, 0, sizeof p);
  assert_ok(spmd_shard_map_text(mesh, axes_fn, &p, 0, NULL, NULL, 0, NULL, NULL, NULL));
  for (int d = 0; d < 8; ++d) {
    const int x = d / 4, y = (d / 2) % 2, z = d % 2;
    assert_int_equal(p.idx_xy[d], x * 2 + y);
    assert_int_equal(p.idx_zx[d], z * 2 + x);
    assert_int_equal(p.idx_y[d], y);
    assert_int_equal(p.size_zx[d], 4);
  }
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* ---- print goes to the sink, tagged with the device ---- */

typedef struct {
  int count[8];
  char text[8][32];
} sink;

static void sink_fn(int device, const char *text, void *ud) {
  sink *s = ud;
  s->count[device]++;
  snprintf(s->text[device], sizeof s->text[device], "%s", text);
}

static spmd_status print_fn(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_block in = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 0, &in);
  if (st) return st;
  int64_t i;
  if ((st = spmd_ctx_axis_index(ctx, "x", &i))) return st;
  return spmd_ctx_printf(ctx, "(%lld,) at %lld", (long long)in.shape[0], (long long)i);
}

static void print_reaches_the_sink_with_the_device(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  const int64_t ms[1] = {4};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  const int64_t shape[1] = {16};
  float data[16] = {0};
  spmd_array *a = test_put(mesh, "", SPMD_F32, 1, shape, data);
  sink s;
  memset(&s, 0, sizeof s);
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.print_fn = sink_fn;
  o.print_user_data = &s;
  const char *spec = "x";
  assert_ok(spmd_shard_map_text(mesh, print_fn, NULL, 1, &a, &spec, 0, NULL, &o, NULL));
  for (int d = 0; d < 4; ++d) {
    char want[32];
    snprintf(want, sizeof want, "(4,) at %d", d);
    assert_int_equal(s.count[d], 1);
    assert_string_equal(s.text[d], want);
  }
  spmd_array_destroy(a);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* ---- check_rep ---- */

static spmd_status device_valued(spmd_ctx *ctx, void *ud) {
  const int differ = *(const int *)ud;
  int dev;
  spmd_status st;
  if ((st = spmd_ctx_device_id(ctx, &dev))) return st;
  const int64_t shape[1] = {3};
  spmd_block out = SPMD_BLOCK_INIT;
  if ((st = spmd_ctx_alloc(ctx, SPMD_F32, 1, shape, &out))) return st;
  float *y = out.data;
  y[0] = 1.0f;
  y[1] = 2.0f;
  y[2] = (differ && dev == 2) ? 7.0f : 3.0f;
  return spmd_ctx_set_output(ctx, 0, &out);
}

static void check_rep_names_devices_and_first_index(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  const int64_t ms[1] = {4};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.check_rep = 1;
  const char *spec = "";
  spmd_array *out = NULL;
  int differ = 0;
  assert_ok(spmd_shard_map_text(mesh, device_valued, &differ, 0, NULL, NULL, 1, &spec, &o, &out));
  float v[3];
  read_f32(out, v, 3);
  assert_float_equal(v[2], 3.0f, 0);
  spmd_array_destroy(out);
  differ = 1;
  out = NULL;
  assert_fails(spmd_shard_map_text(mesh, device_valued, &differ, 0, NULL, NULL, 1, &spec, &o, &out),
               SPMD_ERR_INVALID_ARGUMENT, "devices 0 and 2 differ, first at local index (2,)");
  assert_null(out);
  /* Without the check the first replica is taken as is. */
  o.check_rep = 0;
  assert_ok(spmd_shard_map_text(mesh, device_valued, &differ, 0, NULL, NULL, 1, &spec, &o, &out));
  spmd_array_destroy(out);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* ---- errors ---- */

static spmd_status no_output(spmd_ctx *ctx, void *ud) {
  (void)ctx;
  (void)ud;
  return SPMD_OK;
}

static spmd_status wrong_shape_on_device_1(spmd_ctx *ctx, void *ud) {
  (void)ud;
  int dev;
  spmd_status st;
  if ((st = spmd_ctx_device_id(ctx, &dev))) return st;
  const int64_t shape[1] = {dev == 1 ? 3 : 2};
  spmd_block out = SPMD_BLOCK_INIT;
  if ((st = spmd_ctx_alloc(ctx, SPMD_F32, 1, shape, &out))) return st;
  return spmd_ctx_set_output(ctx, 0, &out);
}

static spmd_status bad_ctx_use(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_block b = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 5, &b);
  if (st != SPMD_ERR_OUT_OF_RANGE || !strstr(spmd_last_error(), "input 5 does not exist"))
    return spmd_ctx_error(ctx, SPMD_ERR_INTERNAL, "input index not checked");
  int64_t v;
  st = spmd_ctx_axis_index(ctx, "x, w", &v);
  if (st != SPMD_ERR_INVALID_ARGUMENT || !strstr(spmd_last_error(), "mesh has no axis 'w'"))
    return spmd_ctx_error(ctx, SPMD_ERR_INTERNAL, "axis name not checked");
  st = spmd_ctx_axis_index(ctx, "x,x", &v);
  if (st != SPMD_ERR_INVALID_ARGUMENT || !strstr(spmd_last_error(), "appears twice"))
    return spmd_ctx_error(ctx, SPMD_ERR_INTERNAL, "repeated axis not checked");
  spmd_block bad = SPMD_BLOCK_INIT; /* dtype invalid */
  st = spmd_ctx_set_output(ctx, 0, &bad);
  if (st != SPMD_ERR_INVALID_ARGUMENT || !strstr(spmd_last_error(), "block->dtype: unknown dtype 0"))
    return spmd_ctx_error(ctx, SPMD_ERR_INTERNAL, "block dtype not checked");
  bad.dtype = SPMD_F32;
  bad.ndim = 1;
  bad.shape[0] = -2;
  st = spmd_ctx_set_output(ctx, 0, &bad);
  if (st != SPMD_ERR_INVALID_ARGUMENT || !strstr(spmd_last_error(), "block->shape (-2,): dimension 0"))
    return spmd_ctx_error(ctx, SPMD_ERR_INTERNAL, "block shape not checked");
  bad.ndim = SPMD_MAX_NDIM + 1;
  st = spmd_ctx_set_output(ctx, 0, &bad);
  if (st != SPMD_ERR_INVALID_ARGUMENT || !strstr(spmd_last_error(), "block->shape: 9 dimensions"))
    return spmd_ctx_error(ctx, SPMD_ERR_INTERNAL, "block rank not checked");
  return SPMD_OK;
}

static void errors_name_the_argument(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  const int64_t ms[1] = {4};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  const int64_t shape[1] = {8};
  float data[8] = {0};
  spmd_array *a = test_put(mesh, "", SPMD_F32, 1, shape, data);
  spmd_array *out = NULL;
  const char *x = "x", *bad = "w", *two = "x, None";
  assert_fails(spmd_shard_map_text(NULL, identity, NULL, 1, &a, &x, 1, &x, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "mesh: NULL");
  assert_fails(spmd_shard_map_text(mesh, NULL, NULL, 1, &a, &x, 1, &x, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "fn: NULL callback");
  assert_fails(spmd_shard_map_text(mesh, identity, NULL, 1, &a, &bad, 1, &x, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "in_specs[0]: spec 'w': mesh has no axis 'w'");
  assert_fails(spmd_shard_map_text(mesh, identity, NULL, 1, &a, &two, 1, &x, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "in_specs[0]");
  assert_fails(spmd_shard_map_text(mesh, identity, NULL, 1, &a, &x, 1, &bad, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "out_specs[0]: spec 'w'");
  assert_fails(spmd_shard_map_text(mesh, identity, NULL, 1, &a, &x, 1, &x, NULL, NULL),
               SPMD_ERR_INVALID_ARGUMENT, "outputs: NULL");
  spmd_array *dead = NULL;
  assert_fails(spmd_shard_map_text(mesh, identity, NULL, 1, &dead, &x, 1, &x, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "inputs[0]: NULL spmd_array");
  assert_fails(spmd_shard_map_text(mesh, no_output, NULL, 1, &a, &x, 1, &x, NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "output 0 was never set");
  assert_fails(spmd_shard_map_text(mesh, wrong_shape_on_device_1, NULL, 0, NULL, NULL, 1, &x,
                                   NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT, "blocks must tile the global array");
  const char *rep = "";
  assert_fails(spmd_shard_map_text(mesh, wrong_shape_on_device_1, NULL, 0, NULL, NULL, 1, &rep,
                                   NULL, &out),
               SPMD_ERR_INVALID_ARGUMENT,
               "output 0: device 1 gives a block of shape (3,) but out_spec '' puts a block of "
               "shape (2,) there");
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.timeout_ms = -5;
  assert_fails(spmd_shard_map_text(mesh, identity, NULL, 1, &a, &x, 1, &x, &o, &out),
               SPMD_ERR_INVALID_ARGUMENT, "options->timeout_ms: -5 ms is negative");
  o.timeout_ms = 0;
  o.struct_size = 3;
  assert_fails(spmd_shard_map_text(mesh, identity, NULL, 1, &a, &x, 1, &x, &o, &out),
               SPMD_ERR_INVALID_ARGUMENT, "options->struct_size");
  assert_null(out);
  assert_ok(spmd_shard_map_text(mesh, bad_ctx_use, NULL, 1, &a, &x, 0, NULL, NULL, NULL));
  int dev;
  assert_fails(spmd_ctx_device_id(NULL, &dev), SPMD_ERR_INVALID_ARGUMENT, "ctx: NULL context");
  spmd_array_destroy(a);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* ---- collectives on the callback's own memory ---- */

/* Each device psums and all_gathers a block on its own stack (which dies
 * when the callback returns, so the collective must not let peers read it
 * in place), and a view into the middle of an allocated block. */
static spmd_status own_memory(spmd_ctx *ctx, void *ud) {
  (void)ud;
  int64_t me = 0;
  spmd_status st = spmd_ctx_axis_index(ctx, "x", &me);
  float local[3] = {(float)me, 10.0f * (float)me, 100.0f};
  spmd_block x = SPMD_BLOCK_INIT, sum = SPMD_BLOCK_INIT, all = SPMD_BLOCK_INIT;
  spmd_block big = SPMD_BLOCK_INIT, mid = SPMD_BLOCK_INIT, mid_sum = SPMD_BLOCK_INIT;
  x.data = local;
  x.dtype = SPMD_F32;
  x.ndim = 1;
  x.shape[0] = 3;
  if (!st) st = spmd_ctx_psum(ctx, &x, "x", &sum);
  local[0] = -1.0f; /* psum's result is memory of its own: this does not change it */
  if (!st) st = spmd_ctx_all_gather(ctx, &x, "x", 0, 1, &all);
  const int64_t five[1] = {5};
  if (!st) st = spmd_ctx_alloc(ctx, SPMD_F32, 1, five, &big);
  if (st) return st;
  for (int i = 0; i < 5; ++i) ((float *)big.data)[i] = (float)(i + me);
  mid = big;
  mid.data = (float *)big.data + 1;
  mid.shape[0] = 3;
  if (!st) st = spmd_ctx_psum(ctx, &mid, "x", &mid_sum);
  if (st) return st;
  const float *s = sum.data, *a = all.data, *m = mid_sum.data;
  /* 4 devices: sum of me is 6 */
  int bad = !(s[0] == 6.0f && s[1] == 60.0f && s[2] == 400.0f);
  for (int64_t d = 0; d < 4; ++d)
    bad |= !(a[3 * d] == -1.0f && a[3 * d + 1] == 10.0f * (float)d && a[3 * d + 2] == 100.0f);
  for (int i = 0; i < 3; ++i) bad |= m[i] != (float)(4 * (i + 1) + 6);
  if (bad) return spmd_ctx_error(ctx, SPMD_ERR_CALLBACK, "wrong collective result");
  return SPMD_OK;
}

static void collectives_take_the_callbacks_own_memory(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  const int64_t ms[1] = {4};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  assert_ok(spmd_shard_map_text(mesh, own_memory, NULL, 0, NULL, NULL, 0, NULL, NULL, NULL));
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* ---- the ops of spmd/ops.h on a body's blocks ---- */

typedef struct {
  spmd_array *global; /* an array on the whole mesh: not a block's */
  spmd_status refused[4];
  char message[256];
} block_ops;

/* y = x @ w on each device's rows (the device's own GEMM), and the psum of
 * the blocks' sums of y. */
static spmd_status matmul_and_sum(spmd_ctx *ctx, void *ud) {
  block_ops *b = ud;
  int dev = -1;
  spmd_status st = spmd_ctx_device_id(ctx, &dev);
  if (st) return st;
  spmd_block xb = SPMD_BLOCK_INIT, wb = SPMD_BLOCK_INIT, yb = SPMD_BLOCK_INIT,
             sb = SPMD_BLOCK_INIT, total = SPMD_BLOCK_INIT;
  if ((st = spmd_ctx_input(ctx, 0, &xb)) || (st = spmd_ctx_input(ctx, 1, &wb))) return st;
  spmd_array *x = NULL, *w = NULL, *y = NULL, *sum = NULL;
  if ((st = spmd_ctx_array(ctx, &xb, &x)) || (st = spmd_ctx_array(ctx, &wb, &w)) ||
      (st = spmd_matmul(x, w, NULL, &y)) || (st = spmd_reduce(SPMD_REDUCE_SUM, y, 0, NULL, 0, NULL, &sum)) ||
      (st = spmd_ctx_block(ctx, y, &yb)) || (st = spmd_ctx_block(ctx, sum, &sb)))
    goto done;
  /* An array of the whole mesh is no block of this device. */
  spmd_block bad = SPMD_BLOCK_INIT;
  b->refused[dev] = spmd_ctx_block(ctx, b->global, &bad);
  if (dev == 0) snprintf(b->message, sizeof b->message, "%s", spmd_last_error());
  if ((st = spmd_ctx_psum(ctx, &sb, "x", &total)) || (st = spmd_ctx_set_output(ctx, 0, &yb)))
    goto done;
  st = spmd_ctx_set_output(ctx, 1, &total);
done:
  spmd_array_destroy(sum);
  spmd_array_destroy(y);
  spmd_array_destroy(w);
  spmd_array_destroy(x);
  return st;
}

static void ops_apply_to_the_blocks_of_a_body(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  const int64_t ms[1] = {4};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  const int64_t xs[2] = {8, 16}, ws[2] = {16, 4};
  float xd[128], wd[64];
  for (int i = 0; i < 128; ++i) xd[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < 64; ++i) wd[i] = (float)(i % 5) * 0.5f;
  spmd_array *ins[2] = {test_put(mesh, "x", SPMD_F32, 2, xs, xd), test_put(mesh, "", SPMD_F32, 2, ws, wd)};
  block_ops b = {.global = ins[1]};
  const char *in_specs[2] = {"x", ""}, *out_specs[2] = {"x", ""};
  spmd_array *outs[2] = {NULL, NULL};
  assert_ok(spmd_shard_map_text(mesh, matmul_and_sum, &b, 2, ins, in_specs, 2, out_specs, NULL, outs));
  /* The global ops' answer, bit for bit: the same GEMM on the same rows. */
  spmd_array *want = NULL, *want_sum = NULL;
  assert_ok(spmd_matmul(ins[0], ins[1], NULL, &want));
  float got[32], expect[32], total = 0, expect_total = 0;
  read_f32(outs[0], got, 32);
  read_f32(want, expect, 32);
  assert_memory_equal(got, expect, sizeof got);
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, want, 0, NULL, 0, NULL, &want_sum));
  read_f32(outs[1], &total, 1);
  read_f32(want_sum, &expect_total, 1);
  assert_true(fabsf(total - expect_total) <= 1e-4f * fabsf(expect_total) + 1e-4f);
  for (int d = 0; d < 4; ++d) assert_int_equal(b.refused[d], SPMD_ERR_INVALID_ARGUMENT);
  if (strstr(b.message, "spmd_ctx_block: array:") == NULL || strstr(b.message, "device 0 alone") == NULL)
    fail_msg("message: %s", b.message);
  spmd_array_destroy(want_sum);
  spmd_array_destroy(want);
  spmd_array_destroy(outs[1]);
  spmd_array_destroy(outs[0]);
  spmd_array_destroy(ins[1]);
  spmd_array_destroy(ins[0]);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* A block made into an array is a copy unless it is an input's: changing
 * the block afterwards leaves the array as it was. */
/* The callback's own two floats {1, 2} as a block. */
static spmd_block two_floats(float mine[2]) {
  mine[0] = 1.0f;
  mine[1] = 2.0f;
  spmd_block b = SPMD_BLOCK_INIT;
  b.data = mine;
  b.dtype = SPMD_F32;
  b.ndim = 1;
  b.shape[0] = 2;
  return b;
}

static spmd_status copy_then_change(spmd_ctx *ctx, void *ud) {
  float *seen = ud;
  int dev = -1;
  spmd_status st = spmd_ctx_device_id(ctx, &dev);
  if (st) return st;
  float mine[2];
  const spmd_block b = two_floats(mine);
  spmd_array *a = NULL;
  if ((st = spmd_ctx_array(ctx, &b, &a))) return st;
  mine[0] = 100.0f;
  st = spmd_array_to_host(a, &seen[2 * dev], 2 * sizeof(float));
  spmd_array_destroy(a);
  return st;
}

/* A block of an array whose memory another array shares (a reshape's
 * view) is a copy, as an input's is: the callback writing it leaves the
 * other array as it was. */
static spmd_status view_block_then_change(spmd_ctx *ctx, void *ud) {
  float *seen = ud;
  int dev = -1;
  spmd_status st = spmd_ctx_device_id(ctx, &dev);
  if (st) return st;
  float mine[2];
  const spmd_block b = two_floats(mine);
  const int64_t shape[2] = {2, 1};
  spmd_array *a = NULL, *v = NULL;
  spmd_block vb = SPMD_BLOCK_INIT;
  if (!(st = spmd_ctx_array(ctx, &b, &a)) && !(st = spmd_reshape(a, 2, shape, NULL, &v)) &&
      !(st = spmd_ctx_block(ctx, v, &vb))) {
    ((float *)vb.data)[0] = 100.0f;
    st = spmd_array_to_host(a, &seen[2 * dev], 2 * sizeof(float));
  }
  spmd_array_destroy(v);
  spmd_array_destroy(a);
  return st;
}

static void blocks_made_arrays_are_copies_of_the_callers_memory(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  spmd_platform platform;
  assert_ok(spmd_runtime_platform(rt, &platform));
  if (platform == SPMD_PLATFORM_CUDA) {
    /* The callback's own memory there is device memory this test cannot write. */
    spmd_runtime_destroy(rt);
    skip();
  }
  const int64_t ms[1] = {4};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  float seen[8] = {0};
  assert_ok(spmd_shard_map_text(mesh, copy_then_change, seen, 0, NULL, NULL, 0, NULL, NULL, NULL));
  for (int d = 0; d < 4; ++d) {
    assert_true(seen[2 * d] == 1.0f);
    assert_true(seen[2 * d + 1] == 2.0f);
  }
  memset(seen, 0, sizeof seen);
  assert_ok(spmd_shard_map_text(mesh, view_block_then_change, seen, 0, NULL, NULL, 0, NULL, NULL, NULL));
  for (int d = 0; d < 4; ++d) {
    assert_true(seen[2 * d] == 1.0f);
    assert_true(seen[2 * d + 1] == 2.0f);
  }
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* ---- nesting is refused, not a deadlock ---- */

typedef struct {
  spmd_mesh *mesh;
  spmd_status inner;
  char message[256];
} nest;

static spmd_status nested(spmd_ctx *ctx, void *ud) {
  nest *n = ud;
  int dev;
  spmd_status st = spmd_ctx_device_id(ctx, &dev);
  if (st) return st;
  if (dev == 0) {
    n->inner = spmd_shard_map_text(n->mesh, no_output, NULL, 0, NULL, NULL, 0, NULL, NULL, NULL);
    snprintf(n->message, sizeof n->message, "%s", spmd_last_error());
  }
  return SPMD_OK;
}

static void nested_shard_map_is_refused(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(2);
  const int64_t ms[1] = {2};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  nest n = {mesh, SPMD_OK, ""};
  assert_ok(spmd_shard_map_text(mesh, nested, &n, 0, NULL, NULL, 0, NULL, NULL, NULL));
  assert_int_equal(n.inner, SPMD_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(n.message, "cannot be nested"));
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* ---- where blocks lie (spmd_block.memory_kind) and the device's queue ---- */

typedef struct {
  spmd_memory_kind input[4], alloc[4], collective[4];
  void *stream[4];
  int old_block_kept_its_tail[4];
} where_probe;

/* A block as 1.2 callers lay it out (it ended before memory_kind), inside
 * bytes the library must leave alone. */
typedef union {
  spmd_block block;
  unsigned char bytes[sizeof(spmd_block)];
} old_block;

static const unsigned char kUntouched = 0xA5;

/* Never touches the blocks' elements, so it runs with device memory too. */
static spmd_status where_fn(spmd_ctx *ctx, void *ud) {
  where_probe *p = ud;
  int dev = -1;
  spmd_status st = spmd_ctx_device_id(ctx, &dev);
  if (st) return st;
  spmd_block in = SPMD_BLOCK_INIT, mine = SPMD_BLOCK_INIT, sum = SPMD_BLOCK_INIT;
  if ((st = spmd_ctx_input(ctx, 0, &in))) return st;
  if ((st = spmd_ctx_alloc(ctx, SPMD_F32, in.ndim, in.shape, &mine))) return st;
  if ((st = spmd_ctx_psum(ctx, &in, "x", &sum))) return st;
  if ((st = spmd_ctx_stream(ctx, &p->stream[dev]))) return st;
  p->input[dev] = in.memory_kind;
  p->alloc[dev] = mine.memory_kind;
  p->collective[dev] = sum.memory_kind;
  old_block old;
  memset(old.bytes, kUntouched, sizeof old.bytes);
  old.block.struct_size = offsetof(spmd_block, memory_kind);
  if ((st = spmd_ctx_input(ctx, 0, &old.block))) return st;
  int kept = old.block.data == in.data && old.block.ndim == in.ndim;
  for (size_t i = offsetof(spmd_block, memory_kind); i < sizeof old.bytes; ++i)
    kept &= old.bytes[i] == kUntouched;
  p->old_block_kept_its_tail[dev] = kept;
  /* ... and one is taken as an output. */
  return spmd_ctx_set_output(ctx, 0, &old.block);
}

/* What the platform under test gives callbacks: host memory on cpu, mapped
 * on sim, on cuda device memory unless $SPMD_CALLBACK_MEMORY asks mapped. */
static spmd_memory_kind callback_memory_of(spmd_platform platform) {
  if (platform == SPMD_PLATFORM_CPU) return SPMD_MEMORY_HOST;
  if (platform == SPMD_PLATFORM_SIM) return SPMD_MEMORY_HOST_MAPPED;
  const char *env = getenv("SPMD_CALLBACK_MEMORY");
  return env != NULL && strcmp(env, "mapped") == 0 ? SPMD_MEMORY_HOST_MAPPED : SPMD_MEMORY_DEVICE;
}

static void blocks_say_where_they_lie_and_only_cuda_has_a_stream(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(4);
  spmd_platform platform;
  assert_ok(spmd_runtime_platform(rt, &platform));
  const int64_t ms[1] = {4}, shape[1] = {8};
  spmd_mesh *mesh = test_mesh(rt, 1, ms);
  const float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  spmd_array *a = test_put(mesh, "", SPMD_F32, 1, shape, data), *o = NULL;
  where_probe p;
  memset(&p, 0, sizeof p);
  const char *spec = "x";
  assert_ok(spmd_shard_map_text(mesh, where_fn, &p, 1, &a, &spec, 1, &spec, NULL, &o));
  float out[8];
  read_f32(o, out, 8);
  assert_memory_equal(out, data, sizeof data);
  const spmd_memory_kind want = callback_memory_of(platform);
  for (int d = 0; d < 4; ++d) {
    assert_int_equal(p.input[d], want);
    assert_int_equal(p.alloc[d], want);
    assert_int_equal(p.collective[d], want);
    assert_true(p.old_block_kept_its_tail[d]);
    if (platform != SPMD_PLATFORM_CUDA) {
      assert_null(p.stream[d]);
    } else { /* each logical device has a stream of its own */
      assert_non_null(p.stream[d]);
      for (int e = 0; e < d; ++e) assert_true(p.stream[e] != p.stream[d]);
    }
  }
  spmd_array_destroy(o);
  spmd_array_destroy(a);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(identity_round_trips_every_spec),
      cmocka_unit_test(callback_sees_local_blocks_uneven),
      cmocka_unit_test(axis_index_is_row_major_over_the_tuple),
      cmocka_unit_test(print_reaches_the_sink_with_the_device),
      cmocka_unit_test(check_rep_names_devices_and_first_index),
      cmocka_unit_test(errors_name_the_argument),
      cmocka_unit_test(nested_shard_map_is_refused),
      cmocka_unit_test(collectives_take_the_callbacks_own_memory),
      cmocka_unit_test(blocks_say_where_they_lie_and_only_cuda_has_a_stream),
      cmocka_unit_test(ops_apply_to_the_blocks_of_a_body),
      cmocka_unit_test(blocks_made_arrays_are_copies_of_the_callers_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
