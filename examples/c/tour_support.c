/* The tour's printing, its --c lines and its checks against JAX's recorded
 * answers; see tour_support.h. */
#include "tour_support.h"

#include "json.h"
#include "seed_error.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SPMD_TOUR_REFERENCES
#define SPMD_TOUR_REFERENCES "tests/conformance"
#endif

int tour_show_c = 0;

/* ---- the current section's tally ---- */

static struct {
  int open;
  int checked, agreed;
  char families[128];  /* the families consulted, space-separated */
  char differing[1024];
} tally;
static int any_differed = 0;

static void append(char *buffer, size_t size, const char *word) {
  const size_t used = strlen(buffer);
  if (used + strlen(word) + 2 < size)
    snprintf(buffer + used, size - used, "%s%s", used ? ", " : "", word);
  else if (used + 5 < size && strcmp(buffer + used - 3, "...") != 0)
    snprintf(buffer + used, size - used, ", ...");
}

static void note_family(const char *family) {
  char padded[64];
  snprintf(padded, sizeof padded, ", %s,", family);
  char have[sizeof tally.families + 4];
  snprintf(have, sizeof have, ", %s,", tally.families);
  if (strstr(have, padded) == NULL) append(tally.families, sizeof tally.families, family);
}

static void end_section(void) {
  if (!tally.open) return;
  tally.open = 0;
  if (!tour_have_references()) {
    tour_note("not checked: JAX's recorded answers are not in %s (SPMD_TOUR_REFERENCES names "
              "their directory)", tour_references());
  } else if (tally.checked == tally.agreed) {
    tour_note("agrees with JAX's recorded answers: %d of %d checks (tests/conformance/: %s)",
              tally.agreed, tally.checked, tally.families);
  } else {
    any_differed = 1;
    tour_note("DIFFERS from JAX's recorded answers: %d of %d checks agree; differing: %s",
              tally.agreed, tally.checked, tally.differing);
  }
}

void tour_section(const char *title) {
  end_section();
  memset(&tally, 0, sizeof tally);
  tally.open = 1;
  printf("\n=== %s ===\n", title);
}

int tour_end(void) {
  end_section();
  fflush(stdout);
  return any_differed;
}

static void count(int agreed, const char *what) {
  ++tally.checked;
  if (agreed) {
    ++tally.agreed;
  } else {
    append(tally.differing, sizeof tally.differing, what);
  }
}

/* ---- printing ---- */

void tour_cell(const char *python) {
  printf("\n>>> ");
  for (const char *p = python; *p; ++p) {
    putchar(*p);
    if (*p == '\n') fputs("... ", stdout);
  }
  putchar('\n');
}

void tour_note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("# ", stdout);
  vprintf(fmt, ap);
  putchar('\n');
  va_end(ap);
}

void tour_c(const char *fmt, ...) {
  if (tour_show_c <= 0) return; /* negative: paused for a loop's later rounds */
  va_list ap;
  va_start(ap, fmt);
  fputs("[C] ", stdout);
  vprintf(fmt, ap);
  putchar('\n');
  va_end(ap);
  fflush(stdout);
}

void tour_ok(spmd_status st, const char *call) {
  if (st == SPMD_OK) return;
  fflush(stdout);
  fprintf(stderr, "tour: %s failed: %s: %s\n", call, spmd_status_string(st),
          seed_or_spmd_last_error());
  exit(1);
}

void tour_agree(int agreed, const char *family, const char *what) {
  note_family(family);
  count(agreed, what);
}

static char *last_printed = NULL;

/* Prints an owned string as Python's print does (one final newline), keeps
 * a copy for tour_agree_text and frees it. */
static void print_owned(char *s) {
  fputs(s, stdout);
  if (s[0] && s[strlen(s) - 1] != '\n') putchar('\n');
  fflush(stdout);
  free(last_printed);
  last_printed = malloc(strlen(s) + 1);
  if (last_printed) strcpy(last_printed, s);
  spmd_string_free(s);
}

void show_repr(const spmd_array *a, const char *name) {
  char *text;
  tour_c("spmd_array_repr(%s, &text); puts(text); spmd_string_free(text);", name);
  tour_ok(spmd_array_repr(a, &text), "spmd_array_repr");
  print_owned(text);
}

void show_str(const spmd_array *a, const char *name) {
  char *text;
  tour_c("spmd_array_str(%s, &text); puts(text); spmd_string_free(text);", name);
  tour_ok(spmd_array_str(a, &text), "spmd_array_str");
  print_owned(text);
}

void show_picture(const spmd_array *a, const char *name) {
  char *text;
  tour_c("spmd_array_visualize(%s, NULL, &text); fputs(text, stdout); spmd_string_free(text);",
         name);
  tour_ok(spmd_array_visualize(a, NULL, &text), "spmd_array_visualize");
  print_owned(text);
}

void show_sharding(const spmd_sharding *s, const char *name) {
  char *text;
  tour_c("spmd_sharding_to_string(%s, &text); puts(text); spmd_string_free(text);", name);
  tour_ok(spmd_sharding_to_string(s, &text), "spmd_sharding_to_string");
  print_owned(text);
}

void show_device(spmd_runtime *rt, int device) {
  char *text;
  tour_c("spmd_runtime_device_to_string(rt, device, &text); puts(text); "
         "spmd_string_free(text);");
  tour_ok(spmd_runtime_device_to_string(rt, device, &text), "spmd_runtime_device_to_string");
  print_owned(text);
}

void show_line(const char *c_code, const char *fmt, ...) {
  char line[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (c_code) tour_c("%s", c_code);
  puts(line);
  fflush(stdout);
  free(last_printed);
  last_printed = malloc(strlen(line) + 1);
  if (last_printed) strcpy(last_printed, line);
}

void py_float(double v, char *buf, size_t size) {
  if (isnan(v)) {
    snprintf(buf, size, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, size, v < 0 ? "-inf" : "inf");
    return;
  }
  for (int digits = 1; digits <= 17; ++digits) {
    snprintf(buf, size, "%.*g", digits, v);
    if (strtod(buf, NULL) == v) break;
  }
  /* %g writes 1e+16 where Python writes 1e+16 too, but 3 where Python
   * writes 3.0, and switches to exponents at 1e16 where %g switches at
   * the precision: rewrite the plain cases in Python's form. */
  const double mag = fabs(v);
  if (strchr(buf, 'e') != NULL && mag >= 1e-4 && mag < 1e16) {
    snprintf(buf, size, "%.1f", v);
    for (int decimals = 1; decimals <= 20; ++decimals) {
      snprintf(buf, size, "%.*f", decimals, v);
      if (strtod(buf, NULL) == v) break;
    }
  }
  if (strpbrk(buf, ".e") == NULL && strlen(buf) + 2 < size) strcat(buf, ".0");
}

/* ---- references ---- */

const char *tour_references(void) {
  const char *dir = getenv("SPMD_TOUR_REFERENCES");
  return dir && dir[0] ? dir : SPMD_TOUR_REFERENCES;
}

enum { MAX_FAMILIES = 8 };
static struct {
  char name[32];
  json_value *value; /* NULL: not found */
} loaded[MAX_FAMILIES];

static const json_value *family_json(const char *family) {
  for (int i = 0; i < MAX_FAMILIES; ++i) {
    if (loaded[i].name[0] == '\0') {
      char path[4096], err[512];
      snprintf(loaded[i].name, sizeof loaded[i].name, "%s", family);
      snprintf(path, sizeof path, "%s/%s/cases.json", tour_references(), family);
      loaded[i].value = json_parse_file(path, err, sizeof err);
      return loaded[i].value;
    }
    if (strcmp(loaded[i].name, family) == 0) return loaded[i].value;
  }
  return NULL;
}

int tour_have_references(void) { return family_json("seeds") != NULL; }

static const json_value *find_case(const char *family, const char *case_name) {
  const json_value *root = family_json(family);
  if (root == NULL) return NULL;
  const json_value *cases = json_get(root, "cases");
  if (cases == NULL) {
    const char *name = json_string(json_get(root, "name"));
    return name && strcmp(name, case_name) == 0 ? root : NULL;
  }
  for (size_t i = 0; i < json_count(cases); ++i) {
    const json_value *c = json_at(cases, i);
    const char *name = json_string(json_get(c, "name"));
    if (name && strcmp(name, case_name) == 0) return c;
  }
  return NULL;
}

/* The value at a dot-separated path ("text.repr", "eval_after.0.loss"). */
static const json_value *at_path(const char *family, const char *case_name, const char *path) {
  const json_value *v = find_case(family, case_name);
  char key[128];
  while (v != NULL && path != NULL && *path) {
    const char *dot = strchr(path, '.');
    const size_t len = dot ? (size_t)(dot - path) : strlen(path);
    if (len >= sizeof key) return NULL;
    memcpy(key, path, len);
    key[len] = '\0';
    if (v->type == JSON_ARRAY) {
      char *end;
      const unsigned long i = strtoul(key, &end, 10);
      v = *end == '\0' ? json_at(v, i) : NULL;
    } else {
      v = json_get(v, key);
    }
    path = dot ? dot + 1 : NULL;
  }
  return v;
}

/* The bytes of a {"dtype", "hex"} value; NULL unless the dtype is `dtype`. */
static unsigned char *hex_bytes(const json_value *v, const char *dtype, size_t *len) {
  const char *have = json_string(json_get(v, "dtype"));
  const char *hex = json_string(json_get(v, "hex"));
  if (have == NULL || hex == NULL || strcmp(have, dtype) != 0 || strlen(hex) % 2) return NULL;
  const size_t n = strlen(hex) / 2;
  unsigned char *out = malloc(n + 1);
  if (out == NULL) return NULL;
  for (size_t i = 0; i < n; ++i) {
    unsigned byte = 0;
    for (int k = 0; k < 2; ++k) {
      const char c = hex[2 * i + (size_t)k];
      byte <<= 4;
      if (c >= '0' && c <= '9') byte |= (unsigned)(c - '0');
      else if (c >= 'a' && c <= 'f') byte |= (unsigned)(c - 'a' + 10);
      else {
        free(out);
        return NULL;
      }
    }
    out[i] = (unsigned char)byte;
  }
  *len = n;
  return out;
}

/* Exactly `bytes` bytes, or with `prefix` the first `bytes` of more. */
static int ref_bytes(const char *family, const char *case_name, const char *path,
                     const char *dtype, void *out, size_t bytes, int prefix) {
  size_t len = 0;
  unsigned char *data = hex_bytes(at_path(family, case_name, path), dtype, &len);
  const int ok = data != NULL && (prefix ? len >= bytes : len == bytes);
  if (ok) memcpy(out, data, bytes);
  free(data);
  return ok;
}

int tour_ref_f32(const char *family, const char *case_name, const char *path, float *out,
                 size_t n) {
  return ref_bytes(family, case_name, path, "float32", out, n * sizeof *out, 0);
}

int tour_ref_u8(const char *family, const char *case_name, const char *path, uint8_t *out,
                size_t n) {
  return ref_bytes(family, case_name, path, "uint8", out, n, 1);
}

double tour_ref_number(const char *family, const char *case_name, const char *path) {
  const json_value *v = at_path(family, case_name, path);
  return v && v->type == JSON_NUMBER ? v->number : NAN;
}

const char *tour_ref_text(const char *family, const char *case_name, const char *path) {
  return json_string(at_path(family, case_name, path));
}

int tour_transcript_line(const char *prefix, char *buf, size_t size) {
  char path[4096], line[4096];
  snprintf(path, sizeof path, "%s/tour/transcript.txt", tour_references());
  FILE *f = fopen(path, "r");
  int found = 0;
  while (f != NULL && !found && fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, prefix, strlen(prefix)) != 0) continue;
    line[strcspn(line, "\n")] = '\0';
    snprintf(buf, size, "%s", line);
    found = 1;
  }
  if (f != NULL) fclose(f);
  return found;
}

static void name_check(char *buf, size_t size, const char *family, const char *case_name,
                       const char *path) {
  snprintf(buf, size, "%s %s%s%s", family, case_name, path && *path ? ":" : "",
           path ? path : "");
}

void tour_agree_text(const char *family, const char *case_name, const char *path) {
  char what[256];
  name_check(what, sizeof what, family, case_name, path);
  note_family(family);
  const char *want = json_string(at_path(family, case_name, path));
  count(want != NULL && last_printed != NULL && strcmp(want, last_printed) == 0, what);
}

void tour_agree_f32(const char *family, const char *case_name, const char *path,
                    const float *have, int64_t n, double tol) {
  char what[256];
  name_check(what, sizeof what, family, case_name, path);
  note_family(family);
  const json_value *ref = at_path(family, case_name, path);
  if (ref == NULL) {
    count(0, what);
    return;
  }
  if (json_get(ref, "hex") != NULL) {
    size_t len = 0;
    float *want = (float *)hex_bytes(ref, "float32", &len);
    int ok = want != NULL && len == (size_t)n * sizeof(float);
    for (int64_t i = 0; ok && i < n; ++i) ok = fabs((double)have[i] - (double)want[i]) <= tol;
    free(want);
    count(ok, what);
    return;
  }
  /* A summary: float64 sums, then samples (as tests/test_conformance.c). */
  double sum = 0, abs_sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += have[i];
    abs_sum += fabs(have[i]);
  }
  const json_value *s = json_get(ref, "sum"), *a = json_get(ref, "abs_sum");
  const json_value *samples = json_get(ref, "samples");
  int ok = s != NULL && a != NULL && samples != NULL;
  if (ok) {
    const double sum_tol = 1e-6 * a->number + tol * sqrt((double)n) + 1e-3;
    ok = fabs(sum - s->number) <= sum_tol && fabs(abs_sum - a->number) <= sum_tol;
  }
  for (size_t i = 0; ok && i < json_count(samples); ++i) {
    const json_value *sample = json_at(samples, i);
    const int64_t at = json_int(json_at(sample, 0), -1);
    const json_value *want = json_at(sample, 1);
    ok = at >= 0 && at < n && want != NULL &&
         fabs(have[at] - want->number) <= tol + 4e-7 * fabs(want->number);
  }
  count(ok, what);
}

void tour_agree_array(const char *family, const char *case_name, const char *path,
                      const spmd_array *a, double tol) {
  int64_t n = 0;
  spmd_dtype dtype;
  tour_ok(spmd_array_size(a, &n), "spmd_array_size");
  tour_ok(spmd_array_dtype(a, &dtype), "spmd_array_dtype");
  if (dtype == SPMD_I32) {
    char what[256];
    name_check(what, sizeof what, family, case_name, path);
    note_family(family);
    int32_t *have = malloc((size_t)(n ? n : 1) * sizeof *have);
    size_t len = 0;
    unsigned char *want = hex_bytes(at_path(family, case_name, path), "int32", &len);
    int ok = have != NULL && want != NULL && len == (size_t)n * sizeof *have;
    if (ok) {
      tour_ok(spmd_array_to_host(a, have, len), "spmd_array_to_host");
      ok = memcmp(have, want, len) == 0;
    }
    free(want);
    free(have);
    count(ok, what);
    return;
  }
  float *have = malloc((size_t)(n ? n : 1) * sizeof *have);
  if (have == NULL) {
    tour_ok(SPMD_ERR_OUT_OF_MEMORY, "malloc");
    return;
  }
  tour_ok(spmd_array_to_host(a, have, (size_t)n * sizeof *have), "spmd_array_to_host");
  tour_agree_f32(family, case_name, path, have, n, tol);
  free(have);
}
