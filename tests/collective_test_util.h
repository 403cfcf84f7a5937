/* Helpers shared by the collective suites: typed host buffers, conversions
 * of the 16-bit float formats, and a shard_map that applies one collective
 * to its single input. */
#ifndef SPMD_COLLECTIVE_TEST_UTIL_H
#define SPMD_COLLECTIVE_TEST_UTIL_H

#include "spmd_test.h"

#include <math.h>
#include <stdlib.h>

enum { OP_PSUM, OP_PMEAN, OP_PMAX, OP_PMIN, OP_ALL_GATHER, OP_PSUM_SCATTER, OP_ALL_TO_ALL,
       OP_PPERMUTE };

typedef struct {
  int kind;
  const char *axes;
  int64_t axis;
  int64_t concat;
  int tiled;
  size_t npairs;
  const int64_t *pairs;
  int insert_unit_dim; /* k+1: view the block with a 1 inserted at dim k */
} op_t;

static inline float f16_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h >> 15) << 31;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  float v;
  if (exp == 0) v = ldexpf((float)man, -24);
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = ldexpf((float)(man | 0x400), exp - 25);
  return sign ? -v : v;
}

static inline uint16_t float_to_f16_exact(float f) {
  /* Only for values exactly representable in f16 (test inputs). */
  if (f == 0) return signbit(f) ? 0x8000 : 0;
  const uint16_t sign = f < 0 ? 0x8000 : 0;
  float a = fabsf(f);
  int e;
  float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  int exp = e - 1 + 15;
  if (exp <= 0) return (uint16_t)(sign | (uint16_t)lrintf(ldexpf(a, 24)));
  return (uint16_t)(sign | (exp << 10) | ((uint16_t)lrintf((m * 2 - 1) * 1024) & 0x3ff));
}

static inline float bf16_to_float(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t float_to_bf16_exact(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

/* Element i of a typed buffer, as a double. */
static inline double elem(spmd_dtype t, const void *p, size_t i) {
  switch (t) {
    case SPMD_F32: return ((const float *)p)[i];
    case SPMD_F64: return ((const double *)p)[i];
    case SPMD_F16: return f16_to_float(((const uint16_t *)p)[i]);
    case SPMD_BF16: return bf16_to_float(((const uint16_t *)p)[i]);
    case SPMD_I32: return ((const int32_t *)p)[i];
    case SPMD_I64: return (double)((const int64_t *)p)[i];
    case SPMD_U8: return ((const uint8_t *)p)[i];
    case SPMD_BOOL: return ((const uint8_t *)p)[i];
    case SPMD_I8: return ((const int8_t *)p)[i];
    case SPMD_I16: return ((const int16_t *)p)[i];
    case SPMD_U16: return ((const uint16_t *)p)[i];
    case SPMD_U32: return ((const uint32_t *)p)[i];
    default: return NAN;
  }
}

/* Stores v (exactly representable) as element i. */
static inline void set_elem(spmd_dtype t, void *p, size_t i, double v) {
  switch (t) {
    case SPMD_F32: ((float *)p)[i] = (float)v; break;
    case SPMD_F64: ((double *)p)[i] = v; break;
    case SPMD_F16: ((uint16_t *)p)[i] = float_to_f16_exact((float)v); break;
    case SPMD_BF16: ((uint16_t *)p)[i] = float_to_bf16_exact((float)v); break;
    case SPMD_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case SPMD_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case SPMD_U8: ((uint8_t *)p)[i] = (uint8_t)(int64_t)v; break;
    case SPMD_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case SPMD_I8: ((int8_t *)p)[i] = (int8_t)(int64_t)v; break;
    case SPMD_I16: ((int16_t *)p)[i] = (int16_t)(int64_t)v; break;
    case SPMD_U16: ((uint16_t *)p)[i] = (uint16_t)(int64_t)v; break;
    case SPMD_U32: ((uint32_t *)p)[i] = (uint32_t)(int64_t)v; break;
    default: break;
  }
}

static spmd_status apply_op(spmd_ctx *ctx, void *ud) {
  const op_t *op = ud;
  spmd_block in = SPMD_BLOCK_INIT, out = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 0, &in);
  if (st) return st;
  if (op->insert_unit_dim) {
    const size_t k = (size_t)(op->insert_unit_dim - 1);
    for (size_t d = in.ndim; d > k; --d) in.shape[d] = in.shape[d - 1];
    in.shape[k] = 1;
    in.ndim++;
  }
  switch (op->kind) {
    case OP_PSUM: st = spmd_ctx_psum(ctx, &in, op->axes, &out); break;
    case OP_PMEAN: st = spmd_ctx_pmean(ctx, &in, op->axes, &out); break;
    case OP_PMAX: st = spmd_ctx_pmax(ctx, &in, op->axes, &out); break;
    case OP_PMIN: st = spmd_ctx_pmin(ctx, &in, op->axes, &out); break;
    case OP_ALL_GATHER: st = spmd_ctx_all_gather(ctx, &in, op->axes, op->axis, op->tiled, &out); break;
    case OP_PSUM_SCATTER:
      st = spmd_ctx_psum_scatter(ctx, &in, op->axes, op->axis, op->tiled, &out);
      break;
    case OP_ALL_TO_ALL:
      st = spmd_ctx_all_to_all(ctx, &in, op->axes, op->axis, op->concat, op->tiled, &out);
      break;
    case OP_PPERMUTE: st = spmd_ctx_ppermute(ctx, &in, op->axes, op->npairs, op->pairs, &out); break;
    default: return SPMD_ERR_INTERNAL;
  }
  if (st) return st;
  return spmd_ctx_set_output(ctx, 0, &out);
}

/* Runs apply_op over a host array; returns the status and, on success, the
 * output array in *out. */
static inline spmd_status run_op(spmd_mesh *mesh, spmd_dtype dtype, size_t ndim,
                                 const int64_t *shape, const void *data, const char *in_spec,
                                 const char *out_spec, const op_t *op,
                                 const spmd_shard_map_options *options, spmd_array **out) {
  spmd_sharding *s = test_sharding(mesh, in_spec);
  int64_t n = 1;
  for (size_t i = 0; i < ndim; ++i) n *= shape[i];
  spmd_array *a = NULL;
  assert_ok(spmd_array_from_host(s, dtype, ndim, shape, data, (size_t)n * spmd_dtype_size(dtype),
                                 &a));
  spmd_sharding_destroy(s);
  spmd_status st = spmd_shard_map_text(mesh, apply_op, (void *)op, 1, &a, &in_spec, 1, &out_spec,
                                       options, out);
  spmd_array_destroy(a);
  return st;
}

/* The whole array on the host, malloc'd; shape and dtype checked. */
static inline void *fetch(spmd_array *a, spmd_dtype dtype, size_t ndim, const int64_t *shape) {
  spmd_dtype t;
  size_t nd;
  int64_t got[SPMD_MAX_NDIM];
  assert_ok(spmd_array_dtype(a, &t));
  assert_int_equal(t, dtype);
  assert_ok(spmd_array_ndim(a, &nd));
  assert_int_equal(nd, ndim);
  assert_ok(spmd_array_shape(a, sizeof got / sizeof got[0], got, NULL));
  for (size_t i = 0; i < ndim; ++i)
    if (got[i] != shape[i]) fail_msg("dim %zu: got %lld, expected %lld", i, (long long)got[i],
                                     (long long)shape[i]);
  size_t bytes;
  assert_ok(spmd_array_nbytes(a, &bytes));
  void *p = malloc(bytes ? bytes : 1);
  assert_ok(spmd_array_to_host(a, p, bytes));
  return p;
}

#endif /* SPMD_COLLECTIVE_TEST_UTIL_H */
