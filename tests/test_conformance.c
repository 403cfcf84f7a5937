/* The conformance suite: libspmd against reference results JAX itself
 * produced on 8 CPU devices (tests/conformance/, written by
 * conformance/generate.py; see conformance/README.md).
 *
 * Each family lives in conformance_<family>.c and defines
 *     void conformance_<family>(conformance_tally *tally);
 * which records every case with conformance_record. The families are
 * listed once, in tests/CMakeLists.txt (SPMD_CONFORMANCE_FAMILIES), which
 * generates conformance_families.h: one CONFORMANCE_FAMILY(name) line per
 * family. Adding a family is adding its name there and its source file.
 *
 * Each family is one CMocka test; it prints its tally (cases, agreed, the
 * names of differing cases) and fails when any case differs. A summary
 * table of all families follows the run. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

#include "conformance.h"
#include "conformance_cases.h"
#include "json.h"
#include "spmd_test.h"

#define CONFORMANCE_FAMILY(name) void conformance_##name(conformance_tally *tally);
#include "conformance_families.h"
#undef CONFORMANCE_FAMILY

/* ---- the tally interface (conformance.h) ---- */

void conformance_record(conformance_tally *tally, const char *case_name, int agreed,
                        const char *detail) {
  ++tally->cases;
  if (agreed) {
    ++tally->agreed;
    return;
  }
  const size_t used = strlen(tally->differing);
  const size_t room = sizeof tally->differing - used;
  const size_t need = strlen(case_name) + (used ? 1 : 0) + 1;
  if (need <= room) {
    snprintf(tally->differing + used, room, "%s%s", used ? " " : "", case_name);
  } else if (room > 4 && strcmp(tally->differing + used - 3, "...") != 0) {
    snprintf(tally->differing + used, room, " ...");
  }
  printf("[%s] %s differs%s%s\n", tally->family, case_name, detail ? ":\n" : "",
         detail ? detail : "");
}

const char *conformance_dir(void) {
  static char path[4096];
  const char *base = getenv("SPMD_TEST_DATA_DIR");
#ifdef SPMD_TEST_SOURCE_DIR
  if (base == NULL || base[0] == '\0') base = SPMD_TEST_SOURCE_DIR;
#endif
  if (base == NULL) base = ".";
  snprintf(path, sizeof path, "%s/conformance", base);
  return path;
}

/* ---- helpers shared by the families (conformance_cases.h) ---- */

json_value *conformance_load(const char *family, const char *file) {
  char path[8192], err[1024];
  snprintf(path, sizeof path, "%s/%s/%s", conformance_dir(), family, file);
  json_value *v = json_parse_file(path, err, sizeof err);
  if (v == NULL) fail_msg("conformance references: %s", err);
  return v;
}

const json_value *conformance_member(const json_value *object, const char *key,
                                     const char *where) {
  const json_value *v = json_get(object, key);
  if (v == NULL) fail_msg("%s: no \"%s\" in the reference", where, key);
  return v;
}

size_t conformance_ints(const json_value *array, int64_t *out, size_t max, const char *where) {
  if (array == NULL || array->type != JSON_ARRAY || array->count > max)
    fail_msg("%s: expected an array of at most %zu integers", where, max);
  for (size_t i = 0; i < array->count; ++i) {
    const json_value *item = json_at(array, i);
    if (item->type != JSON_NUMBER || !item->is_integer)
      fail_msg("%s: item %zu is not an integer", where, i);
    out[i] = item->integer;
  }
  return array->count;
}

spmd_mesh *conformance_mesh(spmd_runtime *runtime, const json_value *mesh, const char *where) {
  int64_t shape[SPMD_MAX_NDIM], devices64[512];
  int devices[512];
  const char *names[SPMD_MAX_NDIM];
  const size_t ndim =
      conformance_ints(conformance_member(mesh, "shape", where), shape, SPMD_MAX_NDIM, where);
  const json_value *axis_names = conformance_member(mesh, "axis_names", where);
  if (json_count(axis_names) != ndim) fail_msg("%s: axis_names and shape differ in length", where);
  for (size_t i = 0; i < ndim; ++i) {
    names[i] = json_string(json_at(axis_names, i));
    if (names[i] == NULL) fail_msg("%s: axis name %zu is not a string", where, i);
  }
  const size_t n = conformance_ints(conformance_member(mesh, "devices", where), devices64, 512, where);
  for (size_t i = 0; i < n; ++i) devices[i] = (int)devices64[i];
  spmd_mesh *m = NULL;
  spmd_status st = spmd_mesh_create(runtime, ndim, shape, names, devices, &m);
  if (st != SPMD_OK) fail_msg("%s: spmd_mesh_create: %s", where, spmd_last_error());
  return m;
}

spmd_spec *conformance_spec(const json_value *spec, const char *where) {
  if (spec == NULL || spec->type != JSON_ARRAY) fail_msg("%s: spec is not an array", where);
  spmd_spec *s = NULL;
  assert_ok(spmd_spec_create(&s));
  for (size_t d = 0; d < spec->count; ++d) {
    const json_value *dim = json_at(spec, d);
    const char *axes[SPMD_MAX_NDIM];
    if (dim->type != JSON_ARRAY || dim->count > SPMD_MAX_NDIM)
      fail_msg("%s: spec dimension %zu is not an array of axis names", where, d);
    for (size_t i = 0; i < dim->count; ++i) {
      axes[i] = json_string(json_at(dim, i));
      if (axes[i] == NULL) fail_msg("%s: spec dimension %zu: axis %zu is not a string", where, d, i);
    }
    if (spmd_spec_append(s, axes, dim->count) != SPMD_OK)
      fail_msg("%s: spmd_spec_append: %s", where, spmd_last_error());
  }
  return s;
}

spmd_sharding *conformance_sharding(spmd_mesh *mesh, const json_value *spec, const char *where) {
  spmd_spec *s = conformance_spec(spec, where);
  spmd_sharding *sh = NULL;
  assert_ok(spmd_sharding_named(mesh, s, &sh));
  spmd_spec_destroy(s);
  return sh;
}

int conformance_sharding_agrees(spmd_array *array, spmd_mesh *mesh, const json_value *spec,
                                const char *label, char *detail, size_t size, const char *where) {
  spmd_sharding *want = conformance_sharding(mesh, spec, where);
  spmd_sharding *got = NULL;
  int eq = 0;
  assert_ok(spmd_array_sharding(array, &got));
  assert_ok(spmd_sharding_equal(got, want, &eq));
  if (!eq) {
    char *g = NULL, *w = NULL;
    assert_ok(spmd_sharding_to_string(got, &g));
    assert_ok(spmd_sharding_to_string(want, &w));
    conformance_detail(detail, size, "  %s%ssharding %s\n  JAX:     %s\n", label ? label : "",
                       label ? ": " : "", g, w);
    spmd_string_free(g);
    spmd_string_free(w);
  }
  spmd_sharding_destroy(got);
  spmd_sharding_destroy(want);
  return eq;
}

void conformance_meshes_open(conformance_meshes *out, spmd_runtime *runtime,
                             const json_value *table) {
  memset(out, 0, sizeof *out);
  if (table == NULL || table->type != JSON_OBJECT || table->count > 64)
    fail_msg("meshes: expected an object of at most 64 meshes");
  for (size_t i = 0; i < table->count; ++i) {
    char where[256];
    snprintf(where, sizeof where, "mesh '%s'", table->keys[i]);
    out->names[i] = table->keys[i];
    out->meshes[i] = conformance_mesh(runtime, &table->items[i], where);
    out->count = i + 1;
  }
}

spmd_mesh *conformance_meshes_find(const conformance_meshes *meshes, const char *name,
                                   const char *where) {
  for (size_t i = 0; name != NULL && i < meshes->count; ++i)
    if (strcmp(meshes->names[i], name) == 0) return meshes->meshes[i];
  fail_msg("%s: unknown mesh '%s'", where, name ? name : "(not a string)");
  return NULL;
}

void conformance_meshes_close(conformance_meshes *meshes) {
  for (size_t i = 0; i < meshes->count; ++i) spmd_mesh_destroy(meshes->meshes[i]);
  meshes->count = 0;
}

void conformance_file_open(conformance_file *file, const char *family) {
  file->root = conformance_load(family, "cases.json");
  file->runtime = test_runtime(8);
  conformance_meshes_open(&file->meshes, file->runtime,
                          conformance_member(file->root, "meshes", family));
  file->cases = conformance_member(file->root, "cases", family);
}

void conformance_file_close(conformance_file *file) {
  conformance_meshes_close(&file->meshes);
  spmd_runtime_destroy(file->runtime);
  json_free(file->root);
}

unsigned char *conformance_hex(const json_value *ref, size_t *len, const char *where) {
  const char *hex = json_string(conformance_member(ref, "hex", where));
  if (hex == NULL) fail_msg("%s: hex is not a string", where);
  const size_t n = strlen(hex);
  if (n % 2) fail_msg("%s: odd hex length", where);
  unsigned char *out = malloc(n / 2 + 1);
  assert_non_null(out);
  for (size_t i = 0; i < n / 2; ++i) {
    unsigned v = 0;
    for (int k = 0; k < 2; ++k) {
      const char c = hex[2 * i + (size_t)k];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
      else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
      else fail_msg("%s: bad hex digit", where);
    }
    out[i] = (unsigned char)v;
  }
  *len = n / 2;
  return out;
}

int conformance_f32_agree(const float *have, int64_t n, const json_value *ref, double tol,
                          char *detail, size_t size, const char *name) {
  if (json_get(ref, "hex") != NULL) {
    size_t len;
    float *want = (float *)conformance_hex(ref, &len, name);
    int ok = len == (size_t)n * sizeof(float);
    if (!ok)
      conformance_detail(detail, size, "  %s: %lld elements, JAX has %zu\n", name, (long long)n,
                         len / sizeof(float));
    for (int64_t i = 0; ok && i < n; ++i)
      if (!(fabs((double)have[i] - (double)want[i]) <= tol)) {
        conformance_detail(detail, size, "  %s[%lld]: libspmd %.9g, JAX %.9g\n", name,
                           (long long)i, have[i], want[i]);
        ok = 0;
      }
    free(want);
    return ok;
  }
  double sum = 0, abs_sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += have[i];
    abs_sum += fabs(have[i]);
  }
  const double want_sum = conformance_member(ref, "sum", name)->number;
  const double want_abs = conformance_member(ref, "abs_sum", name)->number;
  const double sum_tol = 1e-6 * want_abs + tol * sqrt((double)n) + 1e-3;
  if (!(fabs(sum - want_sum) <= sum_tol && fabs(abs_sum - want_abs) <= sum_tol)) {
    conformance_detail(detail, size, "  %s: sum %.9g abs_sum %.9g, JAX %.9g %.9g\n", name, sum,
                       abs_sum, want_sum, want_abs);
    return 0;
  }
  const json_value *samples = conformance_member(ref, "samples", name);
  for (size_t i = 0; i < json_count(samples); ++i) {
    const json_value *s = json_at(samples, i);
    const int64_t at = json_int(json_at(s, 0), -1);
    const double want = json_at(s, 1)->number;
    if (at < 0 || at >= n || !(fabs(have[at] - want) <= tol + 4e-7 * fabs(want))) {
      conformance_detail(detail, size, "  %s[%lld]: libspmd %.9g, JAX %.9g\n", name,
                         (long long)at, at >= 0 && at < n ? have[at] : NAN, want);
      return 0;
    }
  }
  return 1;
}

void conformance_detail(char *buffer, size_t size, const char *fmt, ...) {
  const size_t used = strlen(buffer);
  if (used + 1 >= size) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buffer + used, size - used, fmt, ap);
  va_end(ap);
}

/* ---- the JSON reader the references depend on ---- */

static void json_reads_objects_arrays_and_scalars(void **state) {
  (void)state;
  const char *text =
      " {\"a\": [1, -2, 9223372036854775807, -9223372036854775808, 1.5e3, 0.25],\n"
      "  \"s\": \"x\\n\\\"\\\\\\/\\t\\u00e9\\u2500\\u2502\\ud83d\\ude00\", \"t\": true,"
      "  \"f\": false, \"z\": null, \"o\": {}, \"e\": [], \"u\": \"\xe2\x94\x8c\"} ";
  char err[256];
  json_value *v = json_parse(text, strlen(text), err, sizeof err);
  if (v == NULL) fail_msg("%s", err);
  const json_value *a = json_get(v, "a");
  assert_int_equal(json_count(a), 6);
  assert_int_equal(json_int(json_at(a, 0), 0), 1);
  assert_int_equal(json_int(json_at(a, 1), 0), -2);
  assert_true(json_int(json_at(a, 2), 0) == INT64_MAX);
  assert_true(json_int(json_at(a, 3), 0) == INT64_MIN);
  assert_false(json_at(a, 4)->is_integer);
  assert_true(json_at(a, 4)->number == 1500.0);
  assert_true(json_at(a, 5)->number == 0.25);
  assert_string_equal(json_string(json_get(v, "s")),
                      "x\n\"\\/\t\xc3\xa9\xe2\x94\x80\xe2\x94\x82\xf0\x9f\x98\x80");
  assert_string_equal(json_string(json_get(v, "u")), "\xe2\x94\x8c");
  assert_int_equal(json_get(v, "t")->boolean, 1);
  assert_int_equal(json_get(v, "f")->type, JSON_BOOL);
  assert_int_equal(json_get(v, "f")->boolean, 0);
  assert_int_equal(json_get(v, "z")->type, JSON_NULL);
  assert_int_equal(json_get(v, "o")->type, JSON_OBJECT);
  assert_int_equal(json_count(json_get(v, "e")), 0);
  assert_null(json_get(v, "missing"));
  json_free(v);
}

static void json_refuses_what_is_not_strict_json(void **state) {
  (void)state;
  static const char *const bad[] = {
      "",        "[1,]",       "{\"a\":1,}",     "[01]",          "[1.]",    "[.5]",
      "{'a':1}", "[1] [2]",    "\"\\x\"",        "\"\\ud800\"",   "\"\\udc00\"",
      "[tru]",   "{\"a\" 1}",  "{\"a\":1,\"a\":2}", "\"a\tb\"",   "\"\xff\"", "[1 2]",
      "nul",     "[\"\\u12g4\"]", "{1:2}",      "\"\xed\xa0\x80\""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    char err[256];
    json_value *v = json_parse(bad[i], strlen(bad[i]), err, sizeof err);
    if (v != NULL) fail_msg("accepted invalid JSON %s", bad[i]);
    assert_true(strstr(err, "line 1, column") != NULL);
  }
  /* A big integer beyond int64 stays a double, not an exact integer. */
  char err[256];
  json_value *v = json_parse("18446744073709551616", 20, err, sizeof err);
  assert_non_null(v);
  assert_false(v->is_integer);
  json_free(v);
}

/* ---- libspmd's own rules where JAX answers differently (docs/differences.md) ---- */

/* Seed 0, In [73]: with_sharding_constraint(x.sum(axis=0), P('x')) on
 * Mesh('x': 3), an (8,) result. JAX 0.10 replaces the uneven constraint by
 * a replicated sharding; libspmd keeps P('x') with ceil(8/3) = 3 long
 * shards, the last one shorter, and draws them in proportion. */
static void uneven_constraint_keeps_ceil_shards(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(8);
  const int64_t mesh_shape[1] = {3};
  spmd_mesh *mesh = test_mesh(rt, 1, mesh_shape);
  spmd_sharding *replicated = test_sharding(mesh, "");
  spmd_sharding *rows = test_sharding(mesh, "P('x')");
  const int64_t shape[1] = {8};
  spmd_array *sum = NULL, *constrained = NULL;
  assert_ok(spmd_array_arange(replicated, SPMD_F32, 1, shape, 84.0, 3.0, &sum));
  assert_ok(spmd_array_reshard(sum, rows, &constrained));
  const int64_t starts[3] = {0, 3, 6}, stops[3] = {3, 6, 8};
  for (size_t i = 0; i < 3; ++i) {
    spmd_shard_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_ok(spmd_array_shard_info(constrained, i, &info));
    assert_int_equal(info.device, (int)i);
    assert_int_equal(info.start[0], starts[i]);
    assert_int_equal(info.stop[0], stops[i]);
    float block[3] = {0};
    assert_ok(spmd_array_shard_read(constrained, i, block, sizeof(float) * (size_t)(stops[i] - starts[i])));
    for (int64_t k = 0; k < stops[i] - starts[i]; ++k)
      assert_true(block[k] == (float)(84 + 3 * (starts[i] + k)));
  }
  char *text = NULL;
  assert_ok(spmd_array_visualize(constrained, NULL, &text));
  assert_string_result(text,
                       "┌───────┬───────┬───────┐\n"
                       "│ CPU 0 │ CPU 1 │ CPU 2 │\n"
                       "└───────┴───────┴───────┘\n");
  assert_ok(spmd_array_str(constrained, &text));
  assert_string_result(text, "[ 84.  87.  90.  93.  96.  99. 102. 105.]");
  spmd_array_destroy(constrained);
  spmd_array_destroy(sum);
  spmd_sharding_destroy(rows);
  spmd_sharding_destroy(replicated);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* JAX >= 0.5 prints Mesh('x': 3, axis_types=(Auto,)) and P('x',);
 * libspmd prints the seeds' Mesh('x': 3) and PartitionSpec('x',), and
 * parses both. */
static void prints_the_seeds_forms(void **state) {
  (void)state;
  spmd_runtime *rt = test_runtime(8);
  const int64_t mesh_shape[1] = {3};
  spmd_mesh *mesh = test_mesh(rt, 1, mesh_shape);
  char *text = NULL;
  assert_ok(spmd_mesh_to_string(mesh, &text));
  assert_string_result(text, "Mesh('x': 3)");
  spmd_spec *newer = NULL, *older = NULL;
  assert_ok(spmd_spec_parse("P('x',)", &newer));
  assert_ok(spmd_spec_parse("PartitionSpec('x',)", &older));
  int equal = 0;
  assert_ok(spmd_spec_equal(newer, older, &equal));
  assert_true(equal);
  assert_ok(spmd_spec_to_string(newer, &text));
  assert_string_result(text, "PartitionSpec('x',)");
  spmd_sharding *s = NULL;
  assert_ok(spmd_sharding_named(mesh, newer, &s));
  assert_ok(spmd_sharding_to_string(s, &text));
  assert_string_result(text, "NamedSharding(mesh=Mesh('x': 3), spec=PartitionSpec('x',), memory_kind=device)");
  spmd_sharding_destroy(s);
  spmd_spec_destroy(newer);
  spmd_spec_destroy(older);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
}

/* ---- running the families ---- */

typedef struct family_result {
  const char *name;
  int cases, agreed;
} family_result;

static family_result results[64];
static size_t result_count;

static void run_family(const char *name, void (*run)(conformance_tally *)) {
  conformance_tally *tally = calloc(1, sizeof *tally);
  assert_non_null(tally);
  tally->family = name;
  run(tally);
  printf("conformance %-10s cases %5d  agreed %5d  differing: %s\n", name, tally->cases,
         tally->agreed, tally->cases == tally->agreed ? "none" : tally->differing);
  if (result_count < 64) results[result_count++] = (family_result){name, tally->cases, tally->agreed};
  const int cases = tally->cases, agreed = tally->agreed;
  free(tally);
  assert_true(cases > 0);
  if (agreed != cases) fail_msg("family %s: %d of %d cases differ from JAX", name, cases - agreed, cases);
}

#define CONFORMANCE_FAMILY(name) \
  static void family_##name(void **state) { (void)state; run_family(#name, conformance_##name); }
#include "conformance_families.h"
#undef CONFORMANCE_FAMILY

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(json_reads_objects_arrays_and_scalars),
      cmocka_unit_test(json_refuses_what_is_not_strict_json),
      cmocka_unit_test(uneven_constraint_keeps_ceil_shards),
      cmocka_unit_test(prints_the_seeds_forms),
#define CONFORMANCE_FAMILY(name) cmocka_unit_test(family_##name),
#include "conformance_families.h"
#undef CONFORMANCE_FAMILY
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  printf("\n%-12s %6s %6s %9s\n", "family", "cases", "agreed", "differing");
  for (size_t i = 0; i < result_count; ++i)
    printf("%-12s %6d %6d %9d\n", results[i].name, results[i].cases, results[i].agreed,
           results[i].cases - results[i].agreed);
  return failed;
}
