/* Helpers the conformance families share (tests/conformance.h is the tally
 * interface): loading a family's reference file, and building libspmd
 * meshes, specs and shardings from their JSON form. Each helper fails the
 * running CMocka test with a message naming the file or case on malformed
 * input, so a broken reference never passes silently. */
#ifndef SPMD_CONFORMANCE_CASES_H
#define SPMD_CONFORMANCE_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "conformance.h"
#include "json.h"
#include "spmd/spmd.h"

/* Parses $SPMD_TEST_DATA_DIR/conformance/<family>/<file>. The caller frees
 * the result with json_free. */
json_value *conformance_load(const char *family, const char *file);

/* The member `key` of `object`, failing the test when absent. */
const json_value *conformance_member(const json_value *object, const char *key,
                                     const char *where);

/* A mesh from {"shape": [...], "axis_names": [...], "devices": [...]}. */
spmd_mesh *conformance_mesh(spmd_runtime *runtime, const json_value *mesh,
                            const char *where);

/* A spec from its JSON form: one array of axis names per dimension ([] is
 * None). Built with the structured API (spmd_spec_create/append). */
spmd_spec *conformance_spec(const json_value *spec, const char *where);

/* Reads an array of integers into out (at most max); returns the count. */
size_t conformance_ints(const json_value *array, int64_t *out, size_t max,
                        const char *where);

/* The named mesh of a family file's "meshes" table, created once per call
 * of conformance_meshes_open and released by conformance_meshes_close. */
typedef struct conformance_meshes {
  size_t count;
  const char *names[64];
  spmd_mesh *meshes[64];
} conformance_meshes;

void conformance_meshes_open(conformance_meshes *out, spmd_runtime *runtime,
                             const json_value *table);
spmd_mesh *conformance_meshes_find(const conformance_meshes *meshes, const char *name,
                                   const char *where);
void conformance_meshes_close(conformance_meshes *meshes);

/* A family's cases.json opened with what every case needs: a runtime of 8
 * CPU devices, the file's "meshes" table built, and its "cases" array. */
typedef struct conformance_file {
  json_value *root;
  spmd_runtime *runtime;
  conformance_meshes meshes;
  const json_value *cases;
} conformance_file;

void conformance_file_open(conformance_file *file, const char *family);
void conformance_file_close(conformance_file *file);

/* The bytes of the member "hex" of `ref` (an array in full: raw
 * little-endian bytes in hex), decoded; *len receives their count. The
 * caller frees the result. */
unsigned char *conformance_hex(const json_value *ref, size_t *len, const char *where);

/* Whether n float32 values agree with a reference array: in full ("hex"),
 * each within `tol`; or as a summary ("sum", "abs_sum", "samples" of [flat
 * index, value]), the sums within 1e-6 of the magnitude sum plus
 * tol * sqrt(n) (summation orders differ) and each sample within tol plus
 * 4e-7 relative. Disagreements are described in detail under `name`. */
int conformance_f32_agree(const float *have, int64_t n, const json_value *ref, double tol,
                          char *detail, size_t size, const char *name);

/* The named sharding of `spec` (a list of dims) on `mesh`; the caller
 * destroys it. */
spmd_sharding *conformance_sharding(spmd_mesh *mesh, const json_value *spec, const char *where);

/* Whether `array` has the sharding of `spec` on `mesh`; the difference is
 * described in `detail` (prefixed by `label` when not NULL) otherwise. */
int conformance_sharding_agrees(spmd_array *array, spmd_mesh *mesh, const json_value *spec,
                                const char *label, char *detail, size_t size, const char *where);

/* Appends printf-style text to a bounded detail buffer. */
void conformance_detail(char *buffer, size_t size, const char *fmt, ...);

/* Runs every case of a family written as the propagation family writes
 * them (conformance/families/propagation.py: a global op on sharded inputs,
 * JAX's output sharding and values) and records each; the propagation
 * family and the dtypes family are such. With `report_ulps`, prints the
 * largest disagreement in ulps per op afterwards. */
void conformance_op_cases(conformance_tally *tally, const char *family, int report_ulps);
/* The same, each case's op recorded and run as a program of one op when
 * `as_programs`. */
void conformance_op_cases_run(conformance_tally *tally, const char *family, int report_ulps,
                              int as_programs);

#endif /* SPMD_CONFORMANCE_CASES_H */
