/* Processes that do not keep step, under mpirun with SPMD_DISTRIBUTED=mpi
 * and a short collective timeout:
 *
 *   mpirun -np 2 test_mpi_faults MODE
 *
 * Every device runs a shard_map with one psum over all devices, except
 * those of process 1, which, by MODE:
 *   skip   return without calling the psum;
 *   other  call pmax instead;
 *   sleep  sleep for twice the timeout first;
 *   exit   end the process before the psum (the job must end, the other
 *          process never waiting past the timeout: run with WILL_FAIL).
 * Every process checks that its shard_map failed with the expected status
 * and a message naming the other process, within a bounded time. */
#include <spmd/spmd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *mode;
static int me;
static long timeout_ms;

static spmd_status step(spmd_ctx *ctx, void *ud) {
  (void)ud;
  spmd_block in = SPMD_BLOCK_INIT, out = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 0, &in);
  if (st != SPMD_OK) return st;
  if (me == 1 && strcmp(mode, "skip") == 0) return spmd_ctx_set_output(ctx, 0, &in);
  if (me == 1 && strcmp(mode, "exit") == 0) _exit(3);
  if (me == 1 && strcmp(mode, "sleep") == 0) usleep((useconds_t)(2 * timeout_ms * 1000));
  if (me == 1 && strcmp(mode, "other") == 0)
    st = spmd_ctx_pmax(ctx, &in, "x", &out);
  else
    st = spmd_ctx_psum(ctx, &in, "x", &out);
  if (st == SPMD_OK) st = spmd_ctx_set_output(ctx, 0, &out);
  return st;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s skip|other|sleep|exit (under mpirun)\n", argv[0]);
    return 2;
  }
  mode = argv[1];
  const char *env = getenv("SPMD_COLLECTIVE_TIMEOUT_MS");
  timeout_ms = env ? atol(env) : 60000;
  spmd_runtime *rt = NULL;
  if (spmd_runtime_create(NULL, &rt) != SPMD_OK) {
    fprintf(stderr, "spmd_runtime_create: %s\n", spmd_last_error());
    return 1;
  }
  int count = 0, processes = 0;
  spmd_runtime_process_index(rt, &me);
  spmd_runtime_process_count(rt, &processes);
  spmd_runtime_device_count(rt, &count);
  if (processes != 2) {
    fprintf(stderr, "run it with 2 processes, not %d\n", processes);
    return 2;
  }
  const int64_t mesh_shape[1] = {count};
  const char *names[1] = {"x"};
  spmd_mesh *mesh = NULL;
  spmd_sharding *s = NULL;
  spmd_array *x = NULL, *y = NULL;
  const int64_t shape[1] = {2 * (int64_t)count};
  float *data = calloc((size_t)shape[0], sizeof(float));
  if (spmd_mesh_create(rt, 1, mesh_shape, names, NULL, &mesh) != SPMD_OK ||
      spmd_sharding_named_text(mesh, "x", &s) != SPMD_OK ||
      spmd_array_from_host(s, SPMD_F32, 1, shape, data, (size_t)shape[0] * sizeof(float), &x) !=
          SPMD_OK) {
    fprintf(stderr, "setup: %s\n", spmd_last_error());
    return 1;
  }
  const char *spec = "x";
  const double start = now();
  const spmd_status st = spmd_shard_map_text(mesh, step, NULL, 1, &x, &spec, 1, &spec, NULL, &y);
  const double took = now() - start;
  const char *message = st == SPMD_OK ? "" : spmd_last_error();
  printf("process %d: %s after %.1f s: %s\n", me, spmd_status_string(st), took, message);

  const int other = 1 - me;
  char naming[32];
  snprintf(naming, sizeof naming, "process %d", other);
  int ok = 1;
  if (strcmp(mode, "other") == 0) {
    ok = st == SPMD_ERR_INVALID_ARGUMENT && strstr(message, "disagree") != NULL &&
         strstr(message, naming) != NULL;
  } else {
    /* The process that waited for the other names it; the late one fails
     * with the first one's error, naming where it came from. */
    ok = st == SPMD_ERR_TIMEOUT && strstr(message, naming) != NULL;
  }
  /* Bounded: the skip and the mismatch are seen within the timeout (the
   * late process within two), never much later. */
  const double bound = 4.0 * (double)timeout_ms / 1000.0 + 10.0;
  if (took > bound) {
    fprintf(stderr, "process %d: took %.1f s, more than %.1f\n", me, took, bound);
    ok = 0;
  }
  if (!ok) fprintf(stderr, "process %d: unexpected outcome in mode %s\n", me, mode);
  spmd_array_destroy(y);
  spmd_array_destroy(x);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
  free(data);
  return ok ? 0 : 1;
}
