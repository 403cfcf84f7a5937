/* Conformance family 6, random numbers (tests/conformance/random/): keys,
 * split and fold_in words equal JAX's; jax.random.bits and uniform arrays
 * are bit-identical, and normals and truncated normals within
 * RANDOM_NORMAL_ULP_TOLERANCE ulp (2), for each of several shardings of the
 * output (a case agrees only if every sharding does); the seeds' 1000x1000
 * normal input matches JAX's sum and sampled elements. */
#include <math.h>

#include "conformance.h"
#include "conformance_cases.h"
#include "random_refs.h"
#include "spmd_test.h"

typedef struct layouts {
  spmd_mesh *line8, *grid2x4;
  spmd_sharding *replicated, *x8, *xy, *xy_flat, *single;
} layouts;

static void layouts_open(layouts *l, spmd_runtime *rt) {
  const int64_t eight = 8, grid[2] = {2, 4};
  l->line8 = test_mesh(rt, 1, &eight);
  l->grid2x4 = test_mesh(rt, 2, grid);
  l->replicated = test_sharding(l->line8, "");
  l->x8 = test_sharding(l->line8, "x");
  l->xy = test_sharding(l->grid2x4, "x, y");
  l->xy_flat = test_sharding(l->grid2x4, "(x, y)");
  assert_ok(spmd_sharding_single_device(rt, 3, &l->single));
}

static void layouts_close(layouts *l) {
  spmd_sharding_destroy(l->replicated);
  spmd_sharding_destroy(l->x8);
  spmd_sharding_destroy(l->xy);
  spmd_sharding_destroy(l->xy_flat);
  spmd_sharding_destroy(l->single);
  spmd_mesh_destroy(l->line8);
  spmd_mesh_destroy(l->grid2x4);
}

static int keys_equal(spmd_key a, spmd_key b) {
  return a.words[0] == b.words[0] && a.words[1] == b.words[1];
}

static void check_key_record(conformance_tally *t, const random_record *r) {
  char detail[512] = "";
  int ok = 1;
  spmd_key got[8];
  if (r->kind == RANDOM_SEED) {
    ok = spmd_random_key(r->seed, &got[0]) == SPMD_OK && keys_equal(got[0], r->result);
    if (!ok)
      conformance_detail(detail, sizeof detail, "  libspmd [%u, %u], JAX [%u, %u]\n",
                         got[0].words[0], got[0].words[1], r->result.words[0], r->result.words[1]);
  } else if (r->kind == RANDOM_FOLD) {
    ok = spmd_random_fold_in(&r->key, r->data, &got[0]) == SPMD_OK &&
         keys_equal(got[0], r->result);
  } else {
    ok = spmd_random_split(&r->key, r->n, got) == SPMD_OK;
    for (size_t i = 0; ok && i < r->n; ++i) ok = keys_equal(got[i], r->keys[i]);
  }
  conformance_record(t, r->name, ok, detail[0] ? detail : NULL);
}

/* One array drawn under `sharding`; appends to detail and returns 0 when it
 * is not JAX's. */
static int check_layout(const random_record *r, const void *want, size_t n,
                        const spmd_sharding *sharding, const char *layout, char *detail,
                        size_t size) {
  spmd_array *a = NULL;
  if (random_draw(r, sharding, &a) != SPMD_OK) {
    conformance_detail(detail, size, "  %s: %s\n", layout, spmd_last_error());
    return 0;
  }
  const size_t nbytes = n * spmd_dtype_size(r->dtype);
  void *got = malloc(nbytes ? nbytes : 1);
  assert_non_null(got);
  assert_ok(spmd_array_to_host(a, got, nbytes));
  spmd_array_destroy(a);
  uint64_t max_ulp;
  size_t bad;
  const int ok = random_compare(r, got, want, n, &max_ulp, &bad);
  if (!ok)
    conformance_detail(detail, size, "  %s: element %zu is 0x%" PRIx64 ", JAX 0x%" PRIx64 "\n",
                       layout, bad, random_host_bits(got, spmd_dtype_size(r->dtype), bad),
                       random_load_bits(want, spmd_dtype_size(r->dtype), bad));
  free(got);
  return ok;
}

static void check_array_record(conformance_tally *t, const layouts *l, const random_record *r) {
  char detail[2048] = "", err[512];
  const size_t n = random_elements(r);
  void *want = random_read_file(r->file, n * spmd_dtype_size(r->dtype), err, sizeof err);
  if (want == NULL) {
    conformance_detail(detail, sizeof detail, "  %s\n", err);
    conformance_record(t, r->name, 0, detail);
    return;
  }
  int ok = check_layout(r, want, n, l->replicated, "replicated", detail, sizeof detail);
  ok &= check_layout(r, want, n, l->single, "single device 3", detail, sizeof detail);
  if (r->ndim >= 1) {
    ok &= check_layout(r, want, n, l->x8, "P('x') on 8", detail, sizeof detail);
    ok &= check_layout(r, want, n, l->xy_flat, "P(('x','y')) on 2x4", detail, sizeof detail);
  }
  if (r->ndim >= 2) ok &= check_layout(r, want, n, l->xy, "P('x','y') on 2x4", detail, sizeof detail);
  free(want);
  conformance_record(t, r->name, ok, detail[0] ? detail : NULL);
}

static void check_summary_record(conformance_tally *t, const layouts *l, const random_record *r) {
  char detail[1024] = "", err[512];
  const size_t n = random_elements(r), size = spmd_dtype_size(r->dtype);
  const size_t samples = (n + (size_t)r->stride - 1) / (size_t)r->stride;
  void *want = random_read_file(r->file, samples * size, err, sizeof err);
  spmd_array *a = NULL;
  int ok = want != NULL && r->dtype == SPMD_F32 && random_draw(r, l->xy, &a) == SPMD_OK;
  if (!ok) {
    conformance_detail(detail, sizeof detail, "  %s\n", want ? spmd_last_error() : err);
  } else {
    float *got = malloc(n * size);
    float *picked = malloc(samples * size);
    assert_non_null(got);
    assert_non_null(picked);
    assert_ok(spmd_array_to_host(a, got, n * size));
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += got[i];
    for (size_t k = 0; k < samples; ++k) picked[k] = got[k * (size_t)r->stride];
    uint64_t max_ulp;
    size_t bad;
    ok = random_compare(r, picked, want, samples, &max_ulp, &bad);
    if (!ok) conformance_detail(detail, sizeof detail, "  sample %zu differs\n", bad);
    /* Each element within the tolerance moves the sum by at most that many
     * ulp of the largest normal float32 draws (|x| < 8). */
    const double bound = (double)n * RANDOM_NORMAL_ULP_TOLERANCE * ldexp(1.0, 3 - 23);
    if (fabs(sum - r->sum) > bound) {
      ok = 0;
      conformance_detail(detail, sizeof detail, "  sum %.17g, JAX %.17g\n", sum, r->sum);
    }
    free(got);
    free(picked);
  }
  spmd_array_destroy(a);
  free(want);
  conformance_record(t, r->name, ok, detail[0] ? detail : NULL);
}

void conformance_random(conformance_tally *t) {
  random_record *recs = NULL;
  char err[1024];
  const long count = random_read_manifest(&recs, err, sizeof err);
  if (count < 0) fail_msg("random references: %s", err);
  spmd_runtime *rt = test_runtime(8);
  layouts l;
  layouts_open(&l, rt);
  for (long i = 0; i < count; ++i) {
    const random_record *r = &recs[i];
    if (r->kind == RANDOM_ARRAY)
      check_array_record(t, &l, r);
    else if (r->kind == RANDOM_SUMMARY)
      check_summary_record(t, &l, r);
    else
      check_key_record(t, r);
  }
  layouts_close(&l);
  spmd_runtime_destroy(rt);
  free(recs);
}
