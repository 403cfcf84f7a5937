/* The same program over several processes and in one: every process makes
 * a runtime over all of them (SPMD_DISTRIBUTED=mpi) and, beside it, a
 * runtime of one process with as many devices, runs the same calls on both
 * and compares what they give, bit for bit:
 *
 *   mpirun -np P test_mpi_compare P L     (SPMD_CPU_DEVICES=L)
 *
 * Arrays from host data, reshards between every pair of a set of
 * shardings, global ops whose operands cross processes (sums, products
 * over split dimensions, slices, concatenation, random), shard_map with
 * every collective over each mesh axis and both, and persistent
 * collectives. The distributed result is read with
 * spmd_array_process_allgather; the single one with spmd_array_to_host.
 * The global ops also run recorded as a program (spmd/experimental/program.h).
 * Under SPMD_EXACT_REDUCTIONS=1 every byte must agree; without it float
 * sums across processes (added by process, then by device) agree within
 * the summation bound. */
#define _XOPEN_SOURCE 700
#define SPMD_EXPERIMENTAL
#include "mpi_compare.h"
#include "spmd/experimental/program.h"
#include "spmd_test.h"

#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static int processes, local;
/* SPMD_EXACT_REDUCTIONS=1: sums across processes in one process's order,
 * so every result is compared byte for byte. */
static int exact;
/* A directory of this run for checkpoints (the third argument), shared by
 * the processes; NULL skips them. */
static const char *checkpoint_root;
static int me;
static spmd_runtime *dist_rt, *single_rt;
/* The meshes: ("a", "b") of shape (P, L) and (L, P), and ("x") of P*L,
 * over each runtime. */
static spmd_mesh *dist_mesh[3], *single_mesh[3];

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static spmd_mesh *make_mesh(spmd_runtime *rt, int which) {
  const int n = processes * local;
  int64_t shape[2] = {processes, local};
  if (which == 1) {
    shape[0] = local;
    shape[1] = processes;
  }
  const char *names2[2] = {"a", "b"}, *names1[1] = {"x"};
  int64_t flat[1] = {n};
  spmd_mesh *m = NULL;
  if (which == 2)
    assert_ok(spmd_mesh_create(rt, 1, flat, names1, NULL, &m));
  else
    assert_ok(spmd_mesh_create(rt, 2, shape, names2, NULL, &m));
  return m;
}

static int setup(void **state) {
  (void)state;
  if (spmd_runtime_create(NULL, &dist_rt) != SPMD_OK) {
    fprintf(stderr, "spmd_runtime_create: %s\n", spmd_last_error());
    return -1;
  }
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.distributed = SPMD_DISTRIBUTED_NONE;
  o.cpu_device_count = processes * local;
  if (spmd_runtime_create(&o, &single_rt) != SPMD_OK) {
    fprintf(stderr, "spmd_runtime_create (one process): %s\n", spmd_last_error());
    return -1;
  }
  if (spmd_runtime_process_index(dist_rt, &me) != SPMD_OK) return -1;
  for (int i = 0; i < 3; ++i) {
    dist_mesh[i] = make_mesh(dist_rt, i);
    single_mesh[i] = make_mesh(single_rt, i);
  }
  if (checkpoint_root != NULL) {
    /* Process 0 clears what an earlier run left; the others wait for it
     * (a gather that every process makes is a barrier). */
    if (me == 0) nftw(checkpoint_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    spmd_sharding *s = NULL;
    spmd_array *token = NULL;
    const float one = 1.0f;
    float got = 0;
    if (spmd_sharding_named_text(dist_mesh[2], "", &s) != SPMD_OK ||
        spmd_array_from_host(s, SPMD_F32, 0, NULL, &one, sizeof one, &token) != SPMD_OK ||
        spmd_array_process_allgather(token, &got, sizeof got) != SPMD_OK) {
      fprintf(stderr, "clearing %s: %s\n", checkpoint_root, spmd_last_error());
      return -1;
    }
    spmd_array_destroy(token);
    spmd_sharding_destroy(s);
    if (mkdir(checkpoint_root, 0777) != 0 && errno != EEXIST) {
      perror(checkpoint_root);
      return -1;
    }
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (int i = 0; i < 3; ++i) {
    spmd_mesh_destroy(dist_mesh[i]);
    spmd_mesh_destroy(single_mesh[i]);
  }
  spmd_runtime_destroy(single_rt);
  spmd_runtime_destroy(dist_rt);
  return 0;
}

static void assert_same(spmd_array *dist, spmd_array *single, const char *what) {
  assert_same_as_one_process(dist, single, exact, what);
}

/* Values that differ everywhere, float32 of shape (rows, cols). */
static float *values(int64_t rows, int64_t cols, float scale) {
  float *v = malloc((size_t)(rows * cols) * sizeof(float));
  for (int64_t i = 0; i < rows * cols; ++i) v[i] = scale * (float)((i * 37) % 101) - 7.25f;
  return v;
}

static const char *const kSpecs[3][6] = {
    {"", "a", "b", "a, b", "b, a", "None, (a, b)"},
    {"", "a", "b", "a, b", "(b, a)", "None, a"},
    {"", "x", "None, x", "", "x", "None, x"},
};

static void arrays_and_reshards_agree(void **state) {
  (void)state;
  const int64_t shape[2] = {2 * processes * local, 3 * processes * local};
  float *v = values(shape[0], shape[1], 1.0f);
  for (int m = 0; m < 3; ++m)
    for (int i = 0; i < 6; ++i) {
      spmd_array *d = test_put(dist_mesh[m], kSpecs[m][i], SPMD_F32, 2, shape, v);
      spmd_array *s = test_put(single_mesh[m], kSpecs[m][i], SPMD_F32, 2, shape, v);
      int full = -1;
      assert_ok(spmd_array_is_fully_addressable(d, &full));
      assert_int_equal(full, processes == 1 || kSpecs[m][i][0] == '\0' ? full : 0);
      for (int j = 0; j < 6; ++j) {
        spmd_sharding *td = test_sharding(dist_mesh[(m + 1) % 3], kSpecs[(m + 1) % 3][j]);
        spmd_sharding *ts = test_sharding(single_mesh[(m + 1) % 3], kSpecs[(m + 1) % 3][j]);
        spmd_array *rd = NULL, *rs = NULL;
        assert_ok(spmd_array_reshard(d, td, &rd));
        assert_ok(spmd_array_reshard(s, ts, &rs));
        char what[96];
        snprintf(what, sizeof what, "reshard mesh %d '%s' -> mesh %d '%s'", m, kSpecs[m][i],
                 (m + 1) % 3, kSpecs[(m + 1) % 3][j]);
        assert_same(rd, rs, what);
        spmd_array_destroy(rd);
        spmd_array_destroy(rs);
        spmd_sharding_destroy(td);
        spmd_sharding_destroy(ts);
      }
      spmd_array_destroy(d);
      spmd_array_destroy(s);
    }
  free(v);
}

static void arrays_of_other_processes_are_described_not_read(void **state) {
  (void)state;
  if (processes == 1) skip();
  const int64_t shape[2] = {2 * processes, 3 * local};
  float *v = values(shape[0], shape[1], 1.0f);
  spmd_array *a = test_put(dist_mesh[0], "a, b", SPMD_F32, 2, shape, v);
  size_t count = 0;
  assert_ok(spmd_array_shard_count(a, &count));
  assert_int_equal(count, (size_t)(processes * local));
  const size_t remote = (size_t)(me == 0 ? local : 0);
  spmd_shard_info info = SPMD_SHARD_INFO_INIT;
  assert_ok(spmd_array_shard_info(a, remote, &info));
  assert_int_equal(info.device, (int)remote);
  float block[6];
  assert_fails(spmd_array_shard_read(a, remote, block, sizeof block), SPMD_ERR_UNSUPPORTED,
               "of process");
  assert_ok(spmd_array_shard_read(a, (size_t)(me * local), block, sizeof block));
  assert_memory_equal(block, v + (size_t)me * 2 * (size_t)shape[1], 3 * sizeof(float));
  float *out = malloc((size_t)(shape[0] * shape[1]) * sizeof(float));
  assert_fails(spmd_array_to_host(a, out, (size_t)(shape[0] * shape[1]) * sizeof(float)),
               SPMD_ERR_UNSUPPORTED, "spmd_array_process_allgather");
  assert_ok(spmd_array_process_allgather(a, out, (size_t)(shape[0] * shape[1]) * sizeof(float)));
  assert_memory_equal(out, v, (size_t)(shape[0] * shape[1]) * sizeof(float));
  /* Replicated: this process holds every block. */
  spmd_array *r = test_put(dist_mesh[0], "", SPMD_F32, 2, shape, v);
  memset(out, 0, (size_t)(shape[0] * shape[1]) * sizeof(float));
  assert_ok(spmd_array_to_host(r, out, (size_t)(shape[0] * shape[1]) * sizeof(float)));
  assert_memory_equal(out, v, (size_t)(shape[0] * shape[1]) * sizeof(float));
  free(out);
  free(v);
  spmd_array_destroy(r);
  spmd_array_destroy(a);
}

/* Process q's blocks of `a`: their bounding box [start, stop) and whether
 * they fill it. */
static int local_box(spmd_array *a, int q, int64_t start[2], int64_t stop[2]) {
  spmd_shard_info info = SPMD_SHARD_INFO_INIT;
  int64_t seen[64][2], covered = 0;
  size_t count = 0, nseen = 0;
  start[0] = start[1] = INT64_MAX;
  stop[0] = stop[1] = 0;
  assert_ok(spmd_array_shard_count(a, &count));
  for (size_t k = 0; k < count; ++k) {
    assert_ok(spmd_array_shard_info(a, k, &info));
    if (info.device / local != q) continue;
    int dup = 0;
    for (size_t j = 0; j < nseen; ++j)
      dup |= seen[j][0] == info.start[0] && seen[j][1] == info.start[1];
    if (dup) continue;
    seen[nseen][0] = info.start[0];
    seen[nseen++][1] = info.start[1];
    covered += info.local_shape[0] * info.local_shape[1];
    for (int d = 0; d < 2; ++d) {
      if (info.start[d] < start[d]) start[d] = info.start[d];
      if (info.stop[d] > stop[d]) stop[d] = info.stop[d];
    }
  }
  return covered == (stop[0] - start[0]) * (stop[1] - start[1]);
}

/* Each process's own part (jax.make_array_from_process_local_data) gives
 * the array from_host gives from the whole. */
static void process_local_data_makes_the_same_array(void **state) {
  (void)state;
  const int64_t shape[2] = {2 * processes * local, 3 * processes * local};
  float *v = values(shape[0], shape[1], 1.0f);
  for (int m = 0; m < 3; ++m)
    for (int i = 0; i < 6; ++i) {
      spmd_sharding *sd = test_sharding(dist_mesh[m], kSpecs[m][i]);
      /* Each process's blocks, their bounding box and what they cover:
       * every process works out every process's, so all decide alike. */
      spmd_array *whole = test_put(dist_mesh[m], kSpecs[m][i], SPMD_F32, 2, shape, v);
      int64_t start[2] = {0, 0}, stop[2] = {0, 0};
      int every_fills = 1, mine_fills = 1;
      for (int q = 0; q < processes; ++q) {
        int64_t b0[2], b1[2];
        const int fills = local_box(whole, q, b0, b1);
        every_fills &= fills;
        if (q == me) {
          mine_fills = fills;
          memcpy(start, b0, sizeof start);
          memcpy(stop, b1, sizeof stop);
        }
      }
      int64_t part[2] = {0, 0};
      if (!mine_fills)
        assert_fails(spmd_array_process_local_shape(sd, 2, shape, part),
                     SPMD_ERR_INVALID_ARGUMENT, "do not fill a box");
      if (!every_fills) {
        spmd_array_destroy(whole);
        spmd_sharding_destroy(sd);
        continue;
      }
      assert_ok(spmd_array_process_local_shape(sd, 2, shape, part));
      assert_int_equal(part[0], stop[0] - start[0]);
      assert_int_equal(part[1], stop[1] - start[1]);
      float *mine = malloc((size_t)(part[0] * part[1]) * sizeof(float) + 1);
      for (int64_t r = 0; r < part[0]; ++r)
        memcpy(mine + r * part[1], v + (start[0] + r) * shape[1] + start[1],
               (size_t)part[1] * sizeof(float));
      spmd_array *a = NULL;
      assert_ok(spmd_array_from_process_local_data(sd, SPMD_F32, 2, shape, mine,
                                                   (size_t)(part[0] * part[1]) * sizeof(float), &a));
      char what[80];
      snprintf(what, sizeof what, "process-local data on mesh %d '%s'", m, kSpecs[m][i]);
      spmd_array *s1 = test_put(single_mesh[m], kSpecs[m][i], SPMD_F32, 2, shape, v);
      assert_same(a, s1, what);
      assert_fails(spmd_array_from_process_local_data(sd, SPMD_F32, 2, shape, mine, 4, &a),
                   SPMD_ERR_INVALID_ARGUMENT, "this process's part");
      spmd_array_destroy(s1);
      spmd_array_destroy(a);
      spmd_array_destroy(whole);
      spmd_sharding_destroy(sd);
      free(mine);
    }
  free(v);
}

/* One single-device array per device of this process
 * (jax.make_array_from_single_device_arrays) gives the array from_host
 * gives from the whole. */
static void single_device_arrays_make_the_same_array(void **state) {
  (void)state;
  const int64_t shape[2] = {2 * processes * local, 3 * processes * local};
  float *v = values(shape[0], shape[1], 1.0f);
  for (int m = 0; m < 3; ++m)
    for (int i = 0; i < 6; ++i) {
      spmd_sharding *sd = test_sharding(dist_mesh[m], kSpecs[m][i]);
      spmd_array *blocks[64];
      size_t n = 0;
      for (int d = me * local; d < (me + 1) * local; ++d) {
        spmd_shard_info info = SPMD_SHARD_INFO_INIT;
        assert_ok(spmd_sharding_shard_info_of_device(sd, 2, shape, d, &info));
        const size_t count = (size_t)(info.local_shape[0] * info.local_shape[1]);
        float *block = malloc(count * sizeof(float) + 1);
        size_t k = 0;
        for (int64_t r = info.start[0]; r < info.stop[0]; ++r)
          for (int64_t c = info.start[1]; c < info.stop[1]; ++c) block[k++] = v[r * shape[1] + c];
        spmd_sharding *one = NULL;
        assert_ok(spmd_sharding_single_device(dist_rt, d, &one));
        assert_ok(spmd_array_from_host(one, SPMD_F32, 2, info.local_shape, block,
                                       count * sizeof(float), &blocks[n++]));
        spmd_sharding_destroy(one);
        free(block);
      }
      spmd_array *a = NULL;
      assert_ok(spmd_array_from_single_device_arrays(sd, SPMD_F32, 2, shape, n,
                                                     (const spmd_array *const *)blocks, &a));
      spmd_array *s1 = test_put(single_mesh[m], kSpecs[m][i], SPMD_F32, 2, shape, v);
      char what[80];
      snprintf(what, sizeof what, "single-device arrays on mesh %d '%s'", m, kSpecs[m][i]);
      assert_same(a, s1, what);
      spmd_array_destroy(s1);
      spmd_array_destroy(a);
      for (size_t k = 0; k < n; ++k) spmd_array_destroy(blocks[k]);
      spmd_sharding_destroy(sd);
    }
  free(v);
}

/* A mesh whose order puts this process's devices apart: no box holds its
 * blocks, and the process-local way in says so. */
static void scattered_blocks_have_no_local_part(void **state) {
  (void)state;
  if (processes == 1) skip();
  const int n = processes * local;
  int ids[64];
  /* Device order by local index first: process p's devices sit n/P apart. */
  for (int k = 0; k < n; ++k) ids[k] = (k % processes) * local + k / processes;
  const int64_t mesh_shape[1] = {n};
  const char *names[1] = {"x"};
  spmd_mesh *mesh = NULL;
  assert_ok(spmd_mesh_create(dist_rt, 1, mesh_shape, names, ids, &mesh));
  spmd_sharding *s = test_sharding(mesh, "x");
  const int64_t shape[1] = {2 * (int64_t)n};
  int64_t part[1];
  if (local > 1)
    assert_fails(spmd_array_process_local_shape(s, 1, shape, part), SPMD_ERR_INVALID_ARGUMENT,
                 "do not fill a box");
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
}

/* A checkpoint written by every process, restored over all of them under
 * other shardings, and in this process alone (another process count); and
 * one written by a runtime of one process, restored over all of them. */
static void checkpoints_cross_process_counts(void **state) {
  (void)state;
  if (checkpoint_root == NULL) skip();
  const int64_t shape[2] = {2 * processes * local, 3 * processes * local};
  float *v = values(shape[0], shape[1], 1.0f);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/across", checkpoint_root);
  spmd_array *a = test_put(dist_mesh[0], "a, b", SPMD_F32, 2, shape, v);
  assert_ok(spmd_array_save(a, dir));
  for (int m = 0; m < 3; ++m)
    for (int i = 0; i < 6; ++i) {
      spmd_sharding *sd = test_sharding(dist_mesh[m], kSpecs[m][i]);
      spmd_array *d = NULL;
      assert_ok(spmd_array_load(sd, dir, &d));
      spmd_array *s = test_put(single_mesh[m], kSpecs[m][i], SPMD_F32, 2, shape, v);
      char what[96];
      snprintf(what, sizeof what, "restored on mesh %d '%s'", m, kSpecs[m][i]);
      assert_same(d, s, what);
      spmd_array_destroy(s);
      spmd_array_destroy(d);
      spmd_sharding_destroy(sd);
    }
  /* In this process alone: a runtime of one process and other devices. */
  spmd_sharding *s1 = test_sharding(single_mesh[1], "(b, a)");
  spmd_array *back = NULL;
  assert_ok(spmd_array_load(s1, dir, &back));
  float *out = malloc((size_t)(shape[0] * shape[1]) * sizeof(float));
  assert_ok(spmd_array_to_host(back, out, (size_t)(shape[0] * shape[1]) * sizeof(float)));
  assert_memory_equal(out, v, (size_t)(shape[0] * shape[1]) * sizeof(float));
  spmd_array_destroy(back);
  spmd_sharding_destroy(s1);

  /* Written by one process's runtime (each process its own directory),
   * read over all processes. */
  char own[512];
  snprintf(own, sizeof own, "%s/single-%d", checkpoint_root, me);
  spmd_array *s = test_put(single_mesh[2], "x", SPMD_F32, 2, shape, v);
  assert_ok(spmd_array_save(s, own));
  spmd_sharding *sd = test_sharding(dist_mesh[0], "b, a");
  spmd_array *d = NULL;
  assert_ok(spmd_array_load(sd, own, &d));
  memset(out, 0, (size_t)(shape[0] * shape[1]) * sizeof(float));
  assert_ok(spmd_array_process_allgather(d, out, (size_t)(shape[0] * shape[1]) * sizeof(float)));
  assert_memory_equal(out, v, (size_t)(shape[0] * shape[1]) * sizeof(float));
  spmd_array_destroy(d);
  spmd_sharding_destroy(sd);
  spmd_array_destroy(s);
  spmd_array_destroy(a);
  free(out);
  free(v);
}

/* One global-op program on one runtime's mesh m; results in out[]: the
 * deterministic ops of two inputs (op_results), then a random array. */
enum { kOpResults = 9, kDeterministicResults = 8 };

static void op_shapes(int64_t shape[2], int64_t wshape[2]) {
  const int64_t n = processes * local;
  shape[0] = wshape[1] = 2 * n;
  shape[1] = wshape[0] = 3 * n;
}

static void op_results(spmd_array *a, spmd_array *b, spmd_array **out) {
  const int64_t n = processes * local;
  const int64_t axis0 = 0, axis1 = 1;
  int k = 0;
  assert_ok(spmd_binary(SPMD_BINARY_MUL, a, a, NULL, &out[k++]));
  assert_ok(spmd_reduce(SPMD_REDUCE_SUM, a, 1, &axis0, 0, NULL, &out[k++]));
  assert_ok(spmd_reduce(SPMD_REDUCE_MAX, a, 1, &axis1, 0, NULL, &out[k++]));
  assert_ok(spmd_matmul(a, b, NULL, &out[k++]));
  const int64_t start[2] = {1, 2}, stop[2] = {2 * n - 1, 3 * n};
  assert_ok(spmd_slice(a, 2, start, stop, NULL, &out[k++]));
  const spmd_array *parts[2] = {a, out[0]};
  assert_ok(spmd_concatenate(2, parts, 1, NULL, &out[k++]));
  spmd_array *t = NULL;
  assert_ok(spmd_transpose(b, 0, NULL, NULL, &t));
  assert_ok(spmd_binary(SPMD_BINARY_ADD, a, t, NULL, &out[k++]));
  spmd_array_destroy(t);
  assert_ok(spmd_reduce(SPMD_REDUCE_MEAN, out[3], 0, NULL, 0, NULL, &out[k++]));
  assert_int_equal(k, kDeterministicResults);
}

static void op_program(spmd_mesh *const *mesh, spmd_array **out) {
  int64_t shape[2], wshape[2];
  op_shapes(shape, wshape);
  float *v = values(shape[0], shape[1], 0.5f), *w = values(shape[1], shape[0], 0.25f);
  spmd_array *a = test_put(mesh[0], "a, b", SPMD_F32, 2, shape, v);
  spmd_array *b = test_put(mesh[0], "b, a", SPMD_F32, 2, wshape, w);
  op_results(a, b, out);
  int k = kDeterministicResults;
  spmd_sharding *s = test_sharding(mesh[2], "x");
  spmd_key key;
  assert_ok(spmd_random_key(1234, &key));
  spmd_array *u = NULL;
  assert_ok(spmd_random_uniform(s, &key, SPMD_F32, 2, shape, 0.0, 1.0, &u));
  out[k++] = u;
  spmd_sharding_destroy(s);
  assert_int_equal(k, kOpResults);
  spmd_array_destroy(a);
  spmd_array_destroy(b);
  free(v);
  free(w);
}

/* The same ops recorded once as a program over the processes' mesh and run
 * twice (the second run relaunches the kernels and runs again the psums
 * the first learnt), against the ops run eagerly in one process. */
static void recorded_programs_agree(void **state) {
  (void)state;
  int64_t shape[2], wshape[2];
  op_shapes(shape, wshape);
  spmd_x_program *p = NULL;
  assert_ok(spmd_x_program_create(dist_rt, &p));
  spmd_sharding *sa = test_sharding(dist_mesh[0], "a, b"), *sb = test_sharding(dist_mesh[0], "b, a");
  spmd_array *in[2] = {NULL, NULL}, *rec[kDeterministicResults] = {0};
  assert_ok(spmd_x_program_input(p, sa, SPMD_F32, 2, shape, &in[0]));
  assert_ok(spmd_x_program_input(p, sb, SPMD_F32, 2, wshape, &in[1]));
  op_results(in[0], in[1], rec);
  for (int k = 0; k < kDeterministicResults; ++k) assert_ok(spmd_x_program_output(p, rec[k], NULL));
  assert_ok(spmd_x_program_compile(p));
  for (int k = 0; k < kDeterministicResults; ++k) spmd_array_destroy(rec[k]);
  spmd_array_destroy(in[0]);
  spmd_array_destroy(in[1]);

  float *v = values(shape[0], shape[1], 0.5f), *w = values(shape[1], shape[0], 0.25f);
  spmd_array *da = test_put(dist_mesh[0], "a, b", SPMD_F32, 2, shape, v);
  spmd_array *db = test_put(dist_mesh[0], "b, a", SPMD_F32, 2, wshape, w);
  spmd_array *sa1 = test_put(single_mesh[0], "a, b", SPMD_F32, 2, shape, v);
  spmd_array *sb1 = test_put(single_mesh[0], "b, a", SPMD_F32, 2, wshape, w);
  spmd_array *want[kDeterministicResults] = {0};
  op_results(sa1, sb1, want);
  for (int run = 1; run <= 2; ++run) {
    const spmd_array *args[2] = {da, db};
    spmd_array *got[kDeterministicResults] = {0};
    assert_ok(spmd_x_program_run(p, 2, args, kDeterministicResults, got));
    for (int k = 0; k < kDeterministicResults; ++k) {
      char what[48];
      snprintf(what, sizeof what, "program output %d, run %d", k, run);
      assert_same(got[k], want[k], what);
      spmd_array_destroy(got[k]);
    }
  }
  for (int k = 0; k < kDeterministicResults; ++k) spmd_array_destroy(want[k]);
  spmd_array_destroy(da);
  spmd_array_destroy(db);
  spmd_array_destroy(sa1);
  spmd_array_destroy(sb1);
  spmd_sharding_destroy(sa);
  spmd_sharding_destroy(sb);
  spmd_x_program_destroy(p);
  free(v);
  free(w);
}

static void global_ops_agree(void **state) {
  (void)state;
  spmd_array *d[kOpResults] = {0}, *s[kOpResults] = {0};
  op_program(dist_mesh, d);
  op_program(single_mesh, s);
  for (int k = 0; k < kOpResults; ++k) {
    char what[32];
    snprintf(what, sizeof what, "op result %d", k);
    assert_same(d[k], s[k], what);
    spmd_array_destroy(d[k]);
    spmd_array_destroy(s[k]);
  }
}

/* shard_map: every collective over one axis spec, one result each. */
typedef struct {
  const char *axes;
  int axis_size;
  int kind;
} collective_case;

static spmd_status run_collective(spmd_ctx *ctx, void *ud) {
  const collective_case *c = ud;
  spmd_block in = SPMD_BLOCK_INIT, out = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 0, &in);
  if (st != SPMD_OK) return st;
  switch (c->kind) {
    case 0: st = spmd_ctx_psum(ctx, &in, c->axes, &out); break;
    case 1: st = spmd_ctx_pmean(ctx, &in, c->axes, &out); break;
    case 2: st = spmd_ctx_pmax(ctx, &in, c->axes, &out); break;
    case 3: st = spmd_ctx_pmin(ctx, &in, c->axes, &out); break;
    case 4: st = spmd_ctx_all_gather(ctx, &in, c->axes, 0, 1, &out); break;
    case 5: st = spmd_ctx_all_gather(ctx, &in, c->axes, 1, 0, &out); break;
    case 6: st = spmd_ctx_psum_scatter(ctx, &in, c->axes, 0, 1, &out); break;
    case 7: st = spmd_ctx_all_to_all(ctx, &in, c->axes, 0, 1, 1, &out); break;
    default: {
      /* A shift by one along the axes. */
      int64_t pairs[2 * 64];
      for (int i = 0; i < c->axis_size; ++i) {
        pairs[2 * i] = i;
        pairs[2 * i + 1] = (i + 1) % c->axis_size;
      }
      st = spmd_ctx_ppermute(ctx, &in, c->axes, (size_t)c->axis_size, pairs, &out);
    }
  }
  if (st == SPMD_OK) st = spmd_ctx_set_output(ctx, 0, &out);
  return st;
}

static spmd_array *shard_mapped(spmd_mesh *mesh, spmd_array *x, collective_case *c) {
  const char *in_spec = "a, b", *out_spec = "a, b";
  spmd_shard_map_options o = SPMD_SHARD_MAP_OPTIONS_INIT;
  o.check_rep = 0;
  spmd_array *out = NULL;
  assert_ok(spmd_shard_map_text(mesh, run_collective, c, 1, &x, &in_spec, 1, &out_spec, &o, &out));
  return out;
}

static void shard_map_collectives_agree(void **state) {
  (void)state;
  const int64_t n = processes * local;
  /* Blocks of (2n, 2n): every collective's split divides them. */
  const int64_t shape[2] = {2 * n * processes, 2 * n * local};
  float *v = values(shape[0], shape[1], 0.125f);
  spmd_array *xd = test_put(dist_mesh[0], "a, b", SPMD_F32, 2, shape, v);
  spmd_array *xs = test_put(single_mesh[0], "a, b", SPMD_F32, 2, shape, v);
  const char *axes[3] = {"a", "b", "a, b"};
  const int sizes[3] = {processes, local, processes * local};
  for (int ax = 0; ax < 3; ++ax)
    for (int kind = 0; kind < 9; ++kind) {
      collective_case c = {axes[ax], sizes[ax], kind};
      spmd_array *d = shard_mapped(dist_mesh[0], xd, &c);
      spmd_array *s = shard_mapped(single_mesh[0], xs, &c);
      char what[64];
      snprintf(what, sizeof what, "collective %d over '%s'", kind, axes[ax]);
      assert_same(d, s, what);
      spmd_array_destroy(d);
      spmd_array_destroy(s);
    }
  spmd_array_destroy(xd);
  spmd_array_destroy(xs);
  free(v);
}

static void persistent_collectives_agree(void **state) {
  (void)state;
  const int64_t shape[2] = {4 * processes, 4 * local};
  int32_t *v = malloc((size_t)(shape[0] * shape[1]) * sizeof(int32_t));
  for (int64_t i = 0; i < shape[0] * shape[1]; ++i) v[i] = (int32_t)((i * 13) % 29) - 9;
  const spmd_collective_kind kinds[4] = {SPMD_COLLECTIVE_PSUM, SPMD_COLLECTIVE_PMEAN,
                                         SPMD_COLLECTIVE_ALL_GATHER, SPMD_COLLECTIVE_PMAX};
  for (int k = 0; k < 4; ++k) {
    spmd_array *x[2];
    spmd_collective *c[2];
    spmd_array *y[2];
    spmd_mesh *meshes[2] = {dist_mesh[0], single_mesh[0]};
    for (int r = 0; r < 2; ++r) {
      x[r] = test_put(meshes[r], "a, b", SPMD_I32, 2, shape, v);
      spmd_sharding *s = test_sharding(meshes[r], "a, b");
      assert_ok(spmd_collective_create(s, kinds[k], "a", SPMD_I32, 2, shape, NULL, &c[r]));
      spmd_sharding_destroy(s);
      assert_ok(spmd_collective_execute(c[r], x[r], &y[r]));
    }
    char what[32];
    snprintf(what, sizeof what, "persistent collective %d", (int)kinds[k]);
    assert_same(y[0], y[1], what);
    for (int r = 0; r < 2; ++r) {
      spmd_array_destroy(y[r]);
      spmd_collective_destroy(c[r]);
      spmd_array_destroy(x[r]);
    }
  }
  free(v);
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: %s PROCESSES LOCAL_DEVICES [CHECKPOINT_DIR] (under mpirun)\n", argv[0]);
    return 2;
  }
  if (argc == 4) checkpoint_root = argv[3];
  processes = atoi(argv[1]);
  local = atoi(argv[2]);
  const char *e = getenv("SPMD_EXACT_REDUCTIONS");
  exact = e != NULL && strcmp(e, "1") == 0;
  if (processes < 1 || local < 1 || processes * local > 32) return 2;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(arrays_and_reshards_agree),
      cmocka_unit_test(arrays_of_other_processes_are_described_not_read),
      cmocka_unit_test(process_local_data_makes_the_same_array),
      cmocka_unit_test(scattered_blocks_have_no_local_part),
      cmocka_unit_test(single_device_arrays_make_the_same_array),
      cmocka_unit_test(checkpoints_cross_process_counts),
      cmocka_unit_test(global_ops_agree),
      cmocka_unit_test(recorded_programs_agree),
      cmocka_unit_test(shard_map_collectives_agree),
      cmocka_unit_test(persistent_collectives_agree),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
