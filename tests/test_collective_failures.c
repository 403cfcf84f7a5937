/* Failure inside shard_map is loud and never a hang: a peer that never
 * arrives times out (or fails the group at once when it has already left),
 * a callback's error is returned, mismatched calls fail every participant,
 * and after all of it the runtime's threads are free for the next call. */
#define _POSIX_C_SOURCE 200809L
#include "spmd_test.h"

#include <stdlib.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

typedef struct {
  int mode;
  int odd_device;
  int ignore; /* return SPMD_OK whatever the collective said */
  const char *axes;     /* of the psum; NULL = "x" */
  const char *odd_axes; /* the odd device's, when it differs */
  spmd_status seen[8];   /* what the collective returned on each device */
  char message[8][512];
} plan;

/* AXES_ONLY: every device makes the same call but for its axes. */
enum { LATE, LEAVE_EARLY, FAIL_EARLY, OTHER_SHAPE, OTHER_DTYPE, OTHER_OP, OWN_CALL_WRONG,
       AXES_ONLY };

static spmd_status scenario(spmd_ctx *ctx, void *ud) {
  plan *p = ud;
  int dev;
  spmd_status st = spmd_ctx_device_id(ctx, &dev);
  if (st) return st;
  const int odd = dev == p->odd_device;
  if (odd && p->mode == LATE) sleep_ms(600);
  if (odd && p->mode == LEAVE_EARLY) return SPMD_OK;
  if (odd && p->mode == FAIL_EARLY)
    return spmd_ctx_error(ctx, SPMD_ERR_CALLBACK, "bad input on this device");
  const int64_t shape[1] = {odd && p->mode == OTHER_SHAPE ? 3 : 4};
  const spmd_dtype t = odd && p->mode == OTHER_DTYPE ? SPMD_I32 : SPMD_F32;
  spmd_block x = SPMD_BLOCK_INIT, y = SPMD_BLOCK_INIT;
  if ((st = spmd_ctx_alloc(ctx, t, 1, shape, &x))) return st;
  if (odd && p->mode == OTHER_OP) {
    st = spmd_ctx_all_gather(ctx, &x, "x", 0, 1, &y);
  } else if (p->mode == OWN_CALL_WRONG) {
    /* The odd device asks for an axis its block does not have, then
     * carries on with the call its peers made. */
    st = spmd_ctx_all_gather(ctx, &x, "x", odd ? 5 : 0, 1, &y);
    if (odd) {
      p->seen[dev] = st;
      st = spmd_ctx_all_gather(ctx, &x, "x", 0, 1, &y);
      snprintf(p->message[dev], sizeof p->message[dev], "%s", spmd_last_error());
      return st;
    }
  } else {
    const char *axes = odd && p->odd_axes ? p->odd_axes : p->axes ? p->axes : "x";
    st = spmd_ctx_psum(ctx, &x, axes, &y);
  }
  p->seen[dev] = st;
  snprintf(p->message[dev], sizeof p->message[dev], "%s", spmd_last_error());
  if (p->ignore) return SPMD_OK;
  return st;
}

static spmd_status run(spmd_mesh *mesh, plan *p, int64_t timeout_ms) {
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.timeout_ms = timeout_ms;
  return spmd_shard_map_text(mesh, scenario, p, 0, NULL, NULL, 0, NULL, &o, NULL);
}

typedef struct {
  spmd_runtime *rt;
  spmd_mesh *mesh;
  spmd_mesh *square; /* ('x', 'y') of 2x2 on the same devices */
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  f->rt = test_runtime(4);
  const int64_t s[1] = {4}, sq[2] = {2, 2};
  f->mesh = test_mesh(f->rt, 1, s);
  f->square = test_mesh(f->rt, 2, sq);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  spmd_mesh_destroy(f->square);
  spmd_mesh_destroy(f->mesh);
  spmd_runtime_destroy(f->rt);
  free(f);
  return 0;
}

/* A healthy shard_map right after a failure: no thread stayed blocked. */
static void still_healthy(spmd_mesh *mesh) {
  plan ok;
  memset(&ok, 0, sizeof ok);
  ok.odd_device = -1;
  ok.mode = OTHER_SHAPE;
  assert_ok(run(mesh, &ok, 0));
  for (int d = 0; d < 4; ++d) assert_int_equal(ok.seen[d], SPMD_OK);
}

static void late_device_times_out_naming_op_axis_and_device(void **state) {
  fixture *f = *state;
  plan p;
  memset(&p, 0, sizeof p);
  p.mode = LATE;
  p.odd_device = 3;
  const double t0 = now_s();
  assert_fails(run(f->mesh, &p, 150), SPMD_ERR_TIMEOUT,
               "psum over 'x': timed out after 150 ms waiting for device(s) 3 (group: devices 0, "
               "1, 2, 3); they never reached it");
  assert_true(now_s() - t0 < 10.0);
  for (int d = 0; d < 4; ++d) {
    assert_int_equal(p.seen[d], SPMD_ERR_TIMEOUT);
    assert_non_null(strstr(p.message[d], "timed out after 150 ms"));
  }
  still_healthy(f->mesh);
}

static void device_that_returns_early_fails_peers_at_once(void **state) {
  fixture *f = *state;
  plan p;
  memset(&p, 0, sizeof p);
  p.mode = LEAVE_EARLY;
  p.odd_device = 2;
  const double t0 = now_s();
  /* The default 60 s timeout is never waited for. */
  assert_fails(run(f->mesh, &p, 0), SPMD_ERR_TIMEOUT,
               "psum over 'x': device 2 returned from its callback without reaching it");
  assert_true(now_s() - t0 < 10.0);
  for (int d = 0; d < 4; ++d)
    if (d != 2) assert_int_equal(p.seen[d], SPMD_ERR_TIMEOUT);
  still_healthy(f->mesh);
}

static void callback_error_is_returned_and_releases_peers(void **state) {
  fixture *f = *state;
  plan p;
  memset(&p, 0, sizeof p);
  p.mode = FAIL_EARLY;
  p.odd_device = 1;
  const double t0 = now_s();
  assert_fails(run(f->mesh, &p, 0), SPMD_ERR_CALLBACK, "device 1: bad input on this device");
  assert_true(now_s() - t0 < 10.0);
  for (int d = 0; d < 4; ++d) {
    if (d == 1) continue;
    /* Peers fail with the callback's own error, naming it. */
    assert_int_equal(p.seen[d], SPMD_ERR_CALLBACK);
    assert_non_null(strstr(p.message[d], "device 1 failed before reaching it: bad input"));
  }
  still_healthy(f->mesh);
}

static void mismatched_shapes_fail_every_participant(void **state) {
  fixture *f = *state;
  plan p;
  memset(&p, 0, sizeof p);
  p.mode = OTHER_SHAPE;
  p.odd_device = 0;
  assert_fails(run(f->mesh, &p, 0), SPMD_ERR_INVALID_ARGUMENT,
               "psum over 'x': the devices of the group disagree: device 0 calls "
               "psum(float32[3]) but device 1 calls psum(float32[4])");
  for (int d = 0; d < 4; ++d) assert_int_equal(p.seen[d], SPMD_ERR_INVALID_ARGUMENT);
  still_healthy(f->mesh);
}

static void mismatched_dtypes_fail_every_participant(void **state) {
  fixture *f = *state;
  plan p;
  memset(&p, 0, sizeof p);
  p.mode = OTHER_DTYPE;
  p.odd_device = 2;
  assert_fails(run(f->mesh, &p, 0), SPMD_ERR_INVALID_ARGUMENT,
               "device 0 calls psum(float32[4]) but device 2 calls psum(int32[4])");
  for (int d = 0; d < 4; ++d) assert_int_equal(p.seen[d], SPMD_ERR_INVALID_ARGUMENT);
  still_healthy(f->mesh);
}

static void different_collectives_fail_every_participant(void **state) {
  fixture *f = *state;
  plan p;
  memset(&p, 0, sizeof p);
  p.mode = OTHER_OP;
  p.odd_device = 3;
  assert_fails(run(f->mesh, &p, 0), SPMD_ERR_INVALID_ARGUMENT,
               "but device 3 calls all_gather(float32[*], axis=0, tiled=True)");
  for (int d = 0; d < 4; ++d) assert_int_equal(p.seen[d], SPMD_ERR_INVALID_ARGUMENT);
  still_healthy(f->mesh);
}

/* A device whose own call is wrong breaks its group at once: the peers fail
 * naming it (without waiting for the 60 s timeout), and its next call,
 * which matches theirs, is not paired with their first. */
static void own_wrong_call_fails_peers_at_once(void **state) {
  fixture *f = *state;
  plan p;
  memset(&p, 0, sizeof p);
  p.mode = OWN_CALL_WRONG;
  p.odd_device = 1;
  const double t0 = now_s();
  assert_fails(run(f->mesh, &p, 0), SPMD_ERR_INVALID_ARGUMENT, "all_gather over 'x'");
  assert_true(now_s() - t0 < 10.0);
  assert_int_equal(p.seen[1], SPMD_ERR_INVALID_ARGUMENT);
  for (int d = 0; d < 4; ++d) {
    if (d == 1) continue;
    assert_int_equal(p.seen[d], SPMD_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(p.message[d], "device 1 failed before reaching it"));
  }
  still_healthy(f->mesh);
}

static void ignored_collective_error_still_fails_the_shard_map(void **state) {
  fixture *f = *state;
  plan p;
  memset(&p, 0, sizeof p);
  p.mode = OTHER_SHAPE;
  p.odd_device = 1;
  p.ignore = 1;
  assert_fails(run(f->mesh, &p, 0), SPMD_ERR_INVALID_ARGUMENT, "disagree");
  still_healthy(f->mesh);
}

/* "Never" is a timeout of INT64_MAX ms (SPMD_TIMEOUT_FOREVER): a late peer
 * is waited for, not reported at once because the deadline wrapped. */
static void a_timeout_of_forever_waits_for_a_late_peer(void **state) {
  fixture *f = *state;
  plan p;
  memset(&p, 0, sizeof p);
  p.mode = LATE;
  p.odd_device = 2;
  assert_ok(run(f->mesh, &p, SPMD_TIMEOUT_FOREVER));
  for (int d = 0; d < 4; ++d) assert_int_equal(p.seen[d], SPMD_OK);

  memset(&p, 0, sizeof p);
  p.mode = LATE;
  p.odd_device = 0;
  setenv("SPMD_COLLECTIVE_TIMEOUT_MS", "9223372036854775807", 1);
  spmd_status st = run(f->mesh, &p, 0);
  unsetenv("SPMD_COLLECTIVE_TIMEOUT_MS");
  assert_int_equal(st, SPMD_OK);
  for (int d = 0; d < 4; ++d) assert_int_equal(p.seen[d], SPMD_OK);
}

/* Devices calling a collective over the same axes in another order, or
 * over other axes, wait for each other in different groups: that is
 * reported at once, naming both calls, not after the 60 s timeout. */
static void axes_in_another_order_fail_at_once_naming_both_calls(void **state) {
  fixture *f = *state;
  plan p;
  memset(&p, 0, sizeof p);
  p.mode = AXES_ONLY;
  p.odd_device = -1;
  p.axes = "x,y";
  assert_ok(run(f->square, &p, 0));
  memset(&p, 0, sizeof p);
  p.mode = AXES_ONLY;
  p.axes = "x,y";
  p.odd_axes = "y,x";
  p.odd_device = 0;
  const double t0 = now_s();
  spmd_status st = run(f->square, &p, 0);
  assert_true(now_s() - t0 < 10.0);
  assert_int_equal(st, SPMD_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(spmd_last_error(), "wait for each other in different collectives"));
  assert_non_null(strstr(spmd_last_error(), "psum over ('y', 'x')"));
  assert_non_null(strstr(spmd_last_error(), "psum over ('x', 'y')"));
  for (int d = 0; d < 4; ++d) assert_int_equal(p.seen[d], SPMD_ERR_INVALID_ARGUMENT);
  still_healthy(f->mesh);
}

static void a_device_on_other_axes_fails_at_once(void **state) {
  fixture *f = *state;
  plan p;
  memset(&p, 0, sizeof p);
  p.mode = AXES_ONLY;
  p.axes = "(x, y)";
  p.odd_axes = "x";
  p.odd_device = 3;
  const double t0 = now_s();
  assert_fails(run(f->square, &p, 0), SPMD_ERR_INVALID_ARGUMENT,
               "wait for each other in different collectives");
  assert_true(now_s() - t0 < 10.0);
  assert_non_null(strstr(spmd_last_error(), "psum over 'x'"));
  still_healthy(f->mesh);
}

/* Every device's collective fails (an axis the mesh lacks) and every
 * callback ignores it: the shard_map still fails. */
static void a_failed_collective_fails_the_shard_map_whatever_the_callback_returns(void **state) {
  fixture *f = *state;
  plan p;
  memset(&p, 0, sizeof p);
  p.mode = AXES_ONLY;
  p.odd_device = -1;
  p.axes = "z";
  p.ignore = 1;
  assert_fails(run(f->mesh, &p, 0), SPMD_ERR_INVALID_ARGUMENT, "mesh has no axis 'z'");
  for (int d = 0; d < 4; ++d) assert_int_equal(p.seen[d], SPMD_ERR_INVALID_ARGUMENT);
  still_healthy(f->mesh);
}

/* A failing group on one row of a 2x4 mesh while the other row succeeds;
 * the failure is reported and nothing hangs. */
static spmd_status row_fails(spmd_ctx *ctx, void *ud) {
  (void)ud;
  int dev;
  spmd_status st = spmd_ctx_device_id(ctx, &dev);
  if (st) return st;
  if (dev == 6) return spmd_ctx_error(ctx, SPMD_ERR_CALLBACK, "row 1 gives up");
  const int64_t shape[1] = {2};
  spmd_block x = SPMD_BLOCK_INIT, y = SPMD_BLOCK_INIT;
  if ((st = spmd_ctx_alloc(ctx, SPMD_F64, 1, shape, &x))) return st;
  return spmd_ctx_psum(ctx, &x, "y", &y);
}

static void failure_in_one_group_leaves_other_groups_alone(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(8);
  const int64_t s[2] = {2, 4};
  spmd_mesh *mesh = test_mesh(rt, 2, s);
  assert_fails(spmd_shard_map_text(mesh, row_fails, NULL, 0, NULL, NULL, 0, NULL, NULL, NULL),
               SPMD_ERR_CALLBACK, "device 6: row 1 gives up");
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* Many failing runs in a row: no thread or buffer is left behind (the
 * sanitizer builds check the leaks), and the runtime tears down cleanly. */
static void repeated_failures_leave_nothing_behind(void **state) {
  (void)state;
  for (int i = 0; i < 10; ++i) {
    spmd_runtime *rt = test_runtime(4);
    const int64_t s[1] = {4};
    spmd_mesh *mesh = test_mesh(rt, 1, s);
    plan p;
    memset(&p, 0, sizeof p);
    p.mode = i % 2 ? FAIL_EARLY : OTHER_DTYPE;
    p.odd_device = i % 4;
    assert_int_not_equal(run(mesh, &p, 0), SPMD_OK);
    spmd_mesh_destroy(mesh);
    spmd_runtime_destroy(rt);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(late_device_times_out_naming_op_axis_and_device),
      cmocka_unit_test(device_that_returns_early_fails_peers_at_once),
      cmocka_unit_test(callback_error_is_returned_and_releases_peers),
      cmocka_unit_test(mismatched_shapes_fail_every_participant),
      cmocka_unit_test(mismatched_dtypes_fail_every_participant),
      cmocka_unit_test(different_collectives_fail_every_participant),
      cmocka_unit_test(own_wrong_call_fails_peers_at_once),
      cmocka_unit_test(ignored_collective_error_still_fails_the_shard_map),
      cmocka_unit_test(a_timeout_of_forever_waits_for_a_late_peer),
      cmocka_unit_test(axes_in_another_order_fail_at_once_naming_both_calls),
      cmocka_unit_test(a_device_on_other_axes_fails_at_once),
      cmocka_unit_test(a_failed_collective_fails_the_shard_map_whatever_the_callback_returns),
      cmocka_unit_test(failure_in_one_group_leaves_other_groups_alone),
      cmocka_unit_test(repeated_failures_leave_nothing_behind),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
