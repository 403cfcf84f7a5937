/* Donation while other threads read: an op that consumes an array
 * (spmd_op_options.donate) leaves the calls that started before it to
 * finish with the array's old values, and every call that starts after it
 * fails naming the op. No use after free (the ASan build), no race (the
 * TSan build), no leak, no hang. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "spmd_test.h"

enum { kDevices = 8, kPerShard = 4096, kElems = kDevices * kPerShard };

static const char *const kConsumed = "was donated to spmd_binary_scalar";

typedef struct {
  spmd_runtime *rt;
  spmd_mesh *mesh;
  spmd_sharding *split, *replicated;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_ok(spmd_runtime_create(NULL, &f->rt));
  int64_t shape[1] = {kDevices};
  const char *axes[1] = {"x"};
  assert_ok(spmd_mesh_create(f->rt, 1, shape, axes, NULL, &f->mesh));
  assert_ok(spmd_sharding_named_text(f->mesh, "P('x')", &f->split));
  assert_ok(spmd_sharding_named_text(f->mesh, "P()", &f->replicated));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  spmd_sharding_destroy(f->split);
  spmd_sharding_destroy(f->replicated);
  spmd_mesh_destroy(f->mesh);
  spmd_runtime_destroy(f->rt);
  free(f);
  return 0;
}

static void pause_briefly(void) {
  struct timespec t = {0, 20000};
  nanosleep(&t, NULL);
}

static spmd_array *arange(const fixture *f) {
  int64_t shape[1] = {kElems};
  spmd_array *x = NULL;
  assert_ok(spmd_array_arange(f->split, SPMD_F32, 1, shape, 0.0, 1.0, &x));
  return x;
}

/* Whether v[i] == scale * (first + i) for every i < n. */
static int holds_arange(const float *v, size_t n, int64_t first, float scale) {
  for (size_t i = 0; i < n; ++i)
    if (v[i] != scale * (float)(first + (int64_t)i)) return 0;
  return 1;
}

/* ---- one thread reads in a loop, another donates ---- */

typedef struct {
  const fixture *f;
  spmd_array *x;
  atomic_int donated; /* set once the donating op has returned */
  atomic_int reads;   /* calls that succeeded */
  /* What the reader saw; checked on the test's thread. */
  int wrong_values, late_successes, bad_failures, refusals;
  char bad_message[512];
} race;

/* One read of r->x of kind k; SPMD_OK only with the old values. */
static spmd_status read_once(race *r, int k, float *host, int *values_ok) {
  spmd_status st = SPMD_OK;
  spmd_array *y = NULL;
  *values_ok = 1;
  switch (k) {
    case 0:
      st = spmd_array_to_host(r->x, host, kElems * sizeof *host);
      if (st == SPMD_OK) *values_ok = holds_arange(host, kElems, 0, 1.0f);
      break;
    case 1: {
      const size_t shard = (size_t)atomic_load(&r->reads) % kDevices;
      st = spmd_array_shard_read(r->x, shard, host, kPerShard * sizeof *host);
      if (st == SPMD_OK) *values_ok = holds_arange(host, kPerShard, (int64_t)shard * kPerShard, 1.0f);
      break;
    }
    case 2:
      st = spmd_array_reshard(r->x, r->f->replicated, &y);
      if (st == SPMD_OK) {
        *values_ok = spmd_array_to_host(y, host, kElems * sizeof *host) == SPMD_OK &&
                     holds_arange(host, kElems, 0, 1.0f);
        spmd_array_destroy(y);
      }
      break;
    case 3: /* an operand of another op */
      st = spmd_binary_scalar(SPMD_BINARY_MUL, r->x, 2.0, NULL, &y);
      if (st == SPMD_OK) {
        *values_ok = spmd_array_to_host(y, host, kElems * sizeof *host) == SPMD_OK &&
                     holds_arange(host, kElems, 0, 2.0f);
        spmd_array_destroy(y);
      }
      break;
    case 4: {
      spmd_shard_info info = SPMD_SHARD_INFO_INIT;
      st = spmd_array_shard_info(r->x, 3, &info);
      if (st == SPMD_OK) *values_ok = info.device == 3;
      break;
    }
    case 5:
      st = spmd_array_block_until_ready(r->x);
      break;
    default: {
      char *text = NULL;
      st = k == 6 ? spmd_array_visualize(r->x, NULL, &text) : spmd_array_str(r->x, &text);
      spmd_string_free(text);
      break;
    }
  }
  return st;
}
enum { kReadKinds = 8 };

static void *reader(void *arg) {
  race *r = arg;
  float *host = malloc(kElems * sizeof *host);
  int after = 0;
  for (int i = 0; after < 2 * kReadKinds; ++i) {
    const int late = atomic_load(&r->donated);
    int values_ok = 1;
    const spmd_status st = read_once(r, i % kReadKinds, host, &values_ok);
    if (st == SPMD_OK) {
      if (!values_ok) ++r->wrong_values;
      if (late) ++r->late_successes;
      atomic_fetch_add(&r->reads, 1);
    } else {
      ++r->refusals;
      if ((st != SPMD_ERR_INVALID_ARGUMENT || strstr(spmd_last_error(), kConsumed) == NULL) &&
          r->bad_failures++ == 0)
        snprintf(r->bad_message, sizeof r->bad_message, "kind %d: %s: %s", i % kReadKinds,
                 spmd_status_string(st), spmd_last_error());
    }
    if (late) ++after;
  }
  free(host);
  return NULL;
}

static void reads_racing_a_donation_see_old_values_or_fail_naming_the_op(void **state) {
  const fixture *f = *state;
  size_t live_before = 0, live_after = 0;
  assert_ok(spmd_live_handles(&live_before));
  float *host = malloc(kElems * sizeof *host);
  spmd_op_options donate = SPMD_OP_OPTIONS_INIT;
  donate.donate = 1u;
  for (int round = 0; round < 48; ++round) {
    race r = {.f = f, .x = arange(f)};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, reader, &r), 0);
    /* Let the reader get going, by a different number of reads each round,
     * so the donation meets each kind of read (at most ten seconds). */
    for (int i = 0; atomic_load(&r.reads) < round % kReadKinds + 1 && i < 500000; ++i)
      pause_briefly();
    spmd_array *y = NULL;
    const spmd_status st = spmd_binary_scalar(SPMD_BINARY_ADD, r.x, 1.0, &donate, &y);
    char message[512];
    snprintf(message, sizeof message, "%s", spmd_last_error());
    atomic_store(&r.donated, 1); /* whatever happened: the reader stops */
    assert_int_equal(pthread_join(t, NULL), 0);
    if (st != SPMD_OK) fail_msg("round %d: the donating op failed: %s", round, message);
    assert_ok(spmd_array_to_host(y, host, kElems * sizeof *host));
    if (!holds_arange(host, kElems, 1, 1.0f)) fail_msg("round %d: the result is not x + 1", round);
    if (r.bad_failures) fail_msg("round %d: %d reads failed otherwise than refused: %s", round,
                                 r.bad_failures, r.bad_message);
    if (r.wrong_values) fail_msg("round %d: %d reads saw other values than x's", round, r.wrong_values);
    if (r.late_successes)
      fail_msg("round %d: %d reads that started after the donation succeeded", round,
               r.late_successes);
    assert_true(r.refusals >= 2 * kReadKinds);
    assert_fails(spmd_array_to_host(r.x, host, kElems * sizeof *host), SPMD_ERR_INVALID_ARGUMENT,
                 "array: was donated to spmd_binary_scalar and can no longer be used");
    spmd_array_destroy(r.x);
    spmd_array_destroy(y);
  }
  free(host);
  assert_ok(spmd_live_handles(&live_after));
  assert_int_equal(live_after, live_before);
}

/* ---- a shard_map still reading an array's own memory ---- */

typedef struct {
  atomic_int entered, donated;
  atomic_int wrong, timed_out;
} held_open;

static spmd_status read_after_the_donation(spmd_ctx *ctx, void *ud) {
  held_open *h = ud;
  int device = -1;
  spmd_block in = SPMD_BLOCK_INIT;
  if (spmd_ctx_device_id(ctx, &device) != SPMD_OK || spmd_ctx_input(ctx, 0, &in) != SPMD_OK)
    return SPMD_ERR_CALLBACK;
  atomic_fetch_add(&h->entered, 1);
  /* Hold the input open until the op that consumes it has returned (at
   * most ten seconds: a hang is a failure, not a stuck suite). */
  for (int i = 0; !atomic_load(&h->donated); ++i) {
    if (i == 500000) {
      atomic_store(&h->timed_out, 1);
      return SPMD_ERR_CALLBACK;
    }
    pause_briefly();
  }
  if (in.memory_kind != SPMD_MEMORY_DEVICE &&
      !holds_arange(in.data, (size_t)in.shape[0], (int64_t)device * kPerShard, 1.0f))
    atomic_fetch_add(&h->wrong, 1);
  return SPMD_OK;
}

typedef struct {
  const fixture *f;
  spmd_array *x;
  held_open *h;
  spmd_status status;
  char message[512];
} shard_map_call;

static void *run_shard_map(void *arg) {
  shard_map_call *c = arg;
  const char *spec = "P('x')";
  c->status = spmd_shard_map_text(c->f->mesh, read_after_the_donation, c->h, 1, &c->x, &spec, 0,
                                  NULL, NULL, NULL);
  snprintf(c->message, sizeof c->message, "%s", spmd_last_error());
  return NULL;
}

static void a_shard_map_reading_an_array_keeps_its_values_through_a_donation(void **state) {
  const fixture *f = *state;
  held_open h = {0};
  shard_map_call c = {.f = f, .x = arange(f), .h = &h};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, run_shard_map, &c), 0);
  for (int i = 0; atomic_load(&h.entered) < kDevices && i < 500000; ++i) pause_briefly();
  /* The op cannot take x's buffers while the callbacks read them: its
   * result gets memory of its own, and x is consumed all the same. */
  spmd_op_options donate = SPMD_OP_OPTIONS_INIT;
  donate.donate = 1u;
  spmd_array *y = NULL;
  const spmd_status st = spmd_binary_scalar(SPMD_BINARY_ADD, c.x, 1.0, &donate, &y);
  char message[512];
  snprintf(message, sizeof message, "%s", spmd_last_error());
  float *host = malloc(kElems * sizeof *host);
  const spmd_status late = spmd_array_to_host(c.x, host, kElems * sizeof *host);
  char late_message[512];
  snprintf(late_message, sizeof late_message, "%s", spmd_last_error());
  atomic_store(&h.donated, 1);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(atomic_load(&h.entered), kDevices);
  if (st != SPMD_OK) fail_msg("the donating op failed: %s", message);
  assert_int_equal(late, SPMD_ERR_INVALID_ARGUMENT);
  if (strstr(late_message, kConsumed) == NULL) fail_msg("to_host after the donation: %s", late_message);
  if (c.status != SPMD_OK) fail_msg("the shard_map failed: %s", c.message);
  assert_int_equal(atomic_load(&h.timed_out), 0);
  assert_int_equal(atomic_load(&h.wrong), 0);
  assert_ok(spmd_array_to_host(y, host, kElems * sizeof *host));
  assert_true(holds_arange(host, kElems, 1, 1.0f));
  free(host);
  spmd_array_destroy(c.x);
  spmd_array_destroy(y);
}

/* ---- two ops donating one array at once ---- */

typedef struct {
  spmd_array *x;
  atomic_int *go;
  spmd_status status;
  spmd_array *y;
  char message[512];
} donor;

static void *donate_it(void *arg) {
  donor *d = arg;
  spmd_op_options donate = SPMD_OP_OPTIONS_INIT;
  donate.donate = 1u;
  atomic_fetch_add(d->go, 1);
  while (atomic_load(d->go) < 2) sched_yield();
  d->status = spmd_binary_scalar(SPMD_BINARY_ADD, d->x, 1.0, &donate, &d->y);
  snprintf(d->message, sizeof d->message, "%s", spmd_last_error());
  return NULL;
}

static void two_ops_donating_one_array_at_once_both_see_its_values_or_are_refused(void **state) {
  const fixture *f = *state;
  float *host = malloc(kElems * sizeof *host);
  for (int round = 0; round < 16; ++round) {
    atomic_int go = 0;
    spmd_array *x = arange(f);
    donor d[2] = {{.x = x, .go = &go}, {.x = x, .go = &go}};
    pthread_t t[2];
    for (int i = 0; i < 2; ++i) assert_int_equal(pthread_create(&t[i], NULL, donate_it, &d[i]), 0);
    for (int i = 0; i < 2; ++i) assert_int_equal(pthread_join(t[i], NULL), 0);
    int done = 0;
    for (int i = 0; i < 2; ++i) {
      if (d[i].status != SPMD_OK) {
        if (d[i].status != SPMD_ERR_INVALID_ARGUMENT || strstr(d[i].message, kConsumed) == NULL)
          fail_msg("round %d: %s: %s", round, spmd_status_string(d[i].status), d[i].message);
        continue;
      }
      ++done;
      assert_ok(spmd_array_to_host(d[i].y, host, kElems * sizeof *host));
      if (!holds_arange(host, kElems, 1, 1.0f)) fail_msg("round %d: donor %d's result is not x + 1", round, i);
      spmd_array_destroy(d[i].y);
    }
    assert_true(done >= 1);
    assert_fails(spmd_array_to_host(x, host, kElems * sizeof *host), SPMD_ERR_INVALID_ARGUMENT,
                 kConsumed);
    spmd_array_destroy(x);
  }
  free(host);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reads_racing_a_donation_see_old_values_or_fail_naming_the_op),
      cmocka_unit_test(a_shard_map_reading_an_array_keeps_its_values_through_a_donation),
      cmocka_unit_test(two_ops_donating_one_array_at_once_both_see_its_values_or_are_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
