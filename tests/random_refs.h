/* Reading the jax.random references (tests/conformance/random/manifest.txt,
 * format in conformance/families/random.py) and comparing libspmd's arrays
 * with them. Shared by test_random.c and conformance_random.c. */
#ifndef SPMD_RANDOM_REFS_H
#define SPMD_RANDOM_REFS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spmd/spmd.h"

/* Normals and truncated normals may differ from JAX's by at most this many
 * ulp (docs/random.md); bits and uniforms must be identical. */
#define RANDOM_NORMAL_ULP_TOLERANCE 2

typedef enum random_record_kind {
  RANDOM_SEED,
  RANDOM_SPLIT,
  RANDOM_FOLD,
  RANDOM_ARRAY,
  RANDOM_SUMMARY
} random_record_kind;

typedef struct random_record {
  random_record_kind kind;
  char name[128];
  char op[24];
  char dtype_name[16];
  spmd_dtype dtype;
  size_t ndim;
  int64_t shape[SPMD_MAX_NDIM];
  spmd_key key;
  uint64_t seed;     /* seed */
  uint32_t data;     /* fold */
  spmd_key result;   /* seed, fold */
  size_t n;          /* split: number of keys */
  spmd_key keys[8];  /* split */
  double minval, maxval;
  char file[160];
  uint64_t bitsum;   /* summary */
  double sum;        /* summary */
  int64_t stride;    /* summary */
} random_record;

/* $SPMD_TEST_DATA_DIR/conformance/random, as ctest sets it; a suite run by
 * hand falls back to the source tree it was built from. */
static inline const char *random_refs_dir(void) {
  static char path[4096];
  const char *base = getenv("SPMD_TEST_DATA_DIR");
#ifdef SPMD_TEST_SOURCE_DIR
  if (base == NULL || base[0] == '\0') base = SPMD_TEST_SOURCE_DIR;
#endif
  snprintf(path, sizeof path, "%s/conformance/random", base && base[0] ? base : ".");
  return path;
}

static inline spmd_dtype random_dtype_of(const char *name) {
  if (strcmp(name, "uint8") == 0) return SPMD_U8;
  if (strcmp(name, "uint16") == 0) return SPMD_U16;
  if (strcmp(name, "uint32") == 0) return SPMD_U32;
  if (strcmp(name, "uint64") == 0) return SPMD_I64;
  if (strcmp(name, "float32") == 0) return SPMD_F32;
  if (strcmp(name, "float64") == 0) return SPMD_F64;
  if (strcmp(name, "float16") == 0) return SPMD_F16;
  if (strcmp(name, "bfloat16") == 0) return SPMD_BF16;
  return SPMD_DTYPE_INVALID;
}

static inline int random_parse_shape(const char *text, random_record *r) {
  r->ndim = 0;
  if (strcmp(text, "-") == 0) return 1;
  const char *p = text;
  while (*p) {
    if (r->ndim == SPMD_MAX_NDIM) return 0;
    char *end;
    r->shape[r->ndim++] = strtoll(p, &end, 10);
    if (end == p) return 0;
    p = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') return 0;
  }
  return 1;
}

/* Parses one manifest line; returns 1 for a record, 0 for a comment or blank
 * line, -1 for a malformed line. */
static inline int random_parse_line(const char *line, random_record *r) {
  memset(r, 0, sizeof *r);
  char kind[16], shape[128], minval[64], maxval[64];
  unsigned w0, w1, a, b;
  if (line[0] == '#' || line[0] == '\n' || line[0] == '\0') return 0;
  if (sscanf(line, "%15s", kind) != 1) return -1;
  if (strcmp(kind, "seed") == 0) {
    r->kind = RANDOM_SEED;
    if (sscanf(line, "seed %" SCNu64 " %u %u", &r->seed, &a, &b) != 3) return -1;
    r->result.words[0] = a;
    r->result.words[1] = b;
    snprintf(r->name, sizeof r->name, "key_seed_%" PRIu64, r->seed);
    return 1;
  }
  if (strcmp(kind, "fold") == 0) {
    r->kind = RANDOM_FOLD;
    if (sscanf(line, "fold %u %u %u %u %u", &w0, &w1, &r->data, &a, &b) != 5) return -1;
    r->key.words[0] = w0;
    r->key.words[1] = w1;
    r->result.words[0] = a;
    r->result.words[1] = b;
    snprintf(r->name, sizeof r->name, "fold_in_%u_%u_%u", w0, w1, r->data);
    return 1;
  }
  if (strcmp(kind, "split") == 0) {
    int used = 0;
    r->kind = RANDOM_SPLIT;
    if (sscanf(line, "split %u %u %zu%n", &w0, &w1, &r->n, &used) != 3 || r->n > 8) return -1;
    r->key.words[0] = w0;
    r->key.words[1] = w1;
    const char *p = line + used;
    for (size_t i = 0; i < 2 * r->n; ++i) {
      char *end;
      unsigned long v = strtoul(p, &end, 10);
      if (end == p) return -1;
      r->keys[i / 2].words[i % 2] = (uint32_t)v;
      p = end;
    }
    snprintf(r->name, sizeof r->name, "split_%u_%u_%zu", w0, w1, r->n);
    return 1;
  }
  if (strcmp(kind, "array") == 0) {
    r->kind = RANDOM_ARRAY;
    if (sscanf(line, "array %127s %23s %15s %127s %u %u %63s %63s %159s", r->name, r->op,
               r->dtype_name, shape, &w0, &w1, minval, maxval, r->file) != 9)
      return -1;
    r->minval = strtod(minval, NULL);
    r->maxval = strtod(maxval, NULL);
  } else if (strcmp(kind, "summary") == 0) {
    char sum[64];
    r->kind = RANDOM_SUMMARY;
    if (sscanf(line, "summary %127s %23s %15s %127s %u %u %" SCNu64 " %63s %" SCNd64 " %159s",
               r->name, r->op, r->dtype_name, shape, &w0, &w1, &r->bitsum, sum, &r->stride,
               r->file) != 10)
      return -1;
    r->sum = strtod(sum, NULL);
    r->minval = 0.0;
    r->maxval = 1.0;
  } else {
    return -1;
  }
  r->key.words[0] = w0;
  r->key.words[1] = w1;
  r->dtype = random_dtype_of(r->dtype_name);
  if (r->dtype == SPMD_DTYPE_INVALID || !random_parse_shape(shape, r)) return -1;
  return 1;
}

/* Reads the whole manifest; the caller frees *out. Returns the record
 * count, or -1 (with a message in err) when it cannot be read. */
static inline long random_read_manifest(random_record **out, char *err, size_t errsize) {
  char path[4200];
  snprintf(path, sizeof path, "%s/manifest.txt", random_refs_dir());
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    snprintf(err, errsize, "cannot open %.400s", path);
    return -1;
  }
  size_t cap = 64, count = 0;
  random_record *recs = malloc(cap * sizeof *recs);
  char line[1024];
  long lineno = 0;
  while (recs != NULL && fgets(line, sizeof line, f)) {
    ++lineno;
    if (count == cap) {
      random_record *grown = realloc(recs, 2 * cap * sizeof *recs);
      if (grown == NULL) break;
      recs = grown;
      cap *= 2;
    }
    const int got = random_parse_line(line, &recs[count]);
    if (got < 0) {
      snprintf(err, errsize, "%.400s:%ld: malformed line: %.200s", path, lineno, line);
      free(recs);
      fclose(f);
      return -1;
    }
    count += (size_t)got;
  }
  fclose(f);
  if (recs == NULL) {
    snprintf(err, errsize, "out of memory reading %.400s", path);
    return -1;
  }
  *out = recs;
  return (long)count;
}

/* Reads a reference file of exactly nbytes; returns a malloc'd buffer or
 * NULL (message in err). */
static inline void *random_read_file(const char *file, size_t nbytes, char *err, size_t errsize) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", random_refs_dir(), file);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    snprintf(err, errsize, "cannot open %.400s", path);
    return NULL;
  }
  void *buf = malloc(nbytes ? nbytes : 1);
  const size_t got = buf ? fread(buf, 1, nbytes, f) : 0;
  const int extra = fgetc(f) != EOF;
  fclose(f);
  if (buf == NULL || got != nbytes || extra) {
    snprintf(err, errsize, "%.400s: expected exactly %zu bytes", path, nbytes);
    free(buf);
    return NULL;
  }
  return buf;
}

static inline size_t random_elements(const random_record *r) {
  size_t n = 1;
  for (size_t d = 0; d < r->ndim; ++d) n *= (size_t)r->shape[d];
  return n;
}

/* Distance in ulp between two floats of `dtype` given as bit patterns
 * (adjacent representable values are 1 apart, +0 and -0 are 0 apart). */
static inline uint64_t random_ulp_distance(spmd_dtype dtype, uint64_t a, uint64_t b) {
  const int width = dtype == SPMD_F64 ? 64 : dtype == SPMD_F32 ? 32 : 16;
  const uint64_t sign = (uint64_t)1 << (width - 1);
  const uint64_t mag = sign - 1;
  /* Map sign-magnitude onto a line: negative values below zero. */
  const int64_t ka = (a & sign) ? -(int64_t)(a & mag) : (int64_t)(a & mag);
  const int64_t kb = (b & sign) ? -(int64_t)(b & mag) : (int64_t)(b & mag);
  return ka > kb ? (uint64_t)(ka - kb) : (uint64_t)(kb - ka);
}

static inline uint64_t random_load_bits(const void *base, size_t size, size_t i) {
  const unsigned char *p = (const unsigned char *)base + i * size;
  uint64_t v = 0;
  for (size_t k = 0; k < size; ++k) v |= (uint64_t)p[k] << (8 * k); /* little-endian files */
  return v;
}

static inline uint64_t random_host_bits(const void *base, size_t size, size_t i) {
  const unsigned char *p = (const unsigned char *)base + i * size;
  switch (size) {
    case 1: return p[0];
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
  }
}

static inline int random_is_float(spmd_dtype d) {
  return d == SPMD_F32 || d == SPMD_F64 || d == SPMD_F16 || d == SPMD_BF16;
}

/* Compares `got` (host order) with the reference `want` (little-endian),
 * n elements. Bits and uniforms must be identical; normals and truncated
 * normals may be off by RANDOM_NORMAL_ULP_TOLERANCE. Writes the worst ulp distance and the index
 * of the first disagreement (or n) and returns 1 when they agree. */
static inline int random_compare(const random_record *r, const void *got, const void *want,
                                 size_t n, uint64_t *max_ulp, size_t *first_bad) {
  const size_t size = spmd_dtype_size(r->dtype);
  const int normal = strcmp(r->op, "normal") == 0 || strcmp(r->op, "truncated_normal") == 0;
  uint64_t worst = 0;
  *first_bad = n;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t g = random_host_bits(got, size, i), w = random_load_bits(want, size, i);
    if (g == w) continue;
    const uint64_t d = random_is_float(r->dtype) ? random_ulp_distance(r->dtype, g, w) : UINT64_MAX;
    if (d > worst) worst = d;
    if (*first_bad == n && (!normal || d > RANDOM_NORMAL_ULP_TOLERANCE)) *first_bad = i;
  }
  *max_ulp = worst;
  return *first_bad == n;
}

/* Draws the record's array with libspmd. */
static inline spmd_status random_draw(const random_record *r, const spmd_sharding *sharding,
                                      spmd_array **out) {
  if (strcmp(r->op, "bits") == 0)
    return spmd_random_bits(sharding, &r->key, r->dtype, r->ndim, r->shape, out);
  if (strcmp(r->op, "uniform") == 0)
    return spmd_random_uniform(sharding, &r->key, r->dtype, r->ndim, r->shape, r->minval,
                               r->maxval, out);
  if (strcmp(r->op, "truncated_normal") == 0)
    return spmd_random_truncated_normal(sharding, &r->key, r->dtype, r->ndim, r->shape, r->minval,
                                        r->maxval, out);
  return spmd_random_normal(sharding, &r->key, r->dtype, r->ndim, r->shape, out);
}

#endif /* SPMD_RANDOM_REFS_H */
