/* The layering of src/, kept true by reading the code: every #include
 * under src/ must point down the table below (or stay inside its own
 * folder). A new folder, an upward arrow or a sideways one between two
 * backends fails here with the file, the line and the rule it breaks.
 * docs/design.md draws the same table. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

/* A layer is a folder under src/; the order is bottom to top. */
typedef struct layer_rule {
  const char *layer;
  const char *may_include; /* space-separated layers below it */
} layer_rule;

static const layer_rule kRules[] = {
    {"base", ""},
    {"core", "base"},
    {"kernels", "base"},
    {"backend", "base kernels"},
    {"backend/host", "base kernels backend"},
    {"backend/cpu", "base kernels backend backend/host"},
    {"backend/sim", "base kernels backend backend/host"},
    {"backend/cuda", "base kernels backend backend/host"},
    {"dist", "base core"},
    {"dist/mpi", "base core dist"},
    /* Over several processes the runtime and exec work on blocks in host
     * memory with the host algorithms (backend/host) and move them through
     * the transport (dist). */
    {"runtime", "base core kernels backend backend/host dist"},
    {"exec", "base core kernels backend backend/host dist runtime"},
    {"capi", "base core kernels backend runtime exec"},
};

/* The backends themselves are chosen in one place: only this file may
 * include a backend implementation's headers from above. The MPI transport
 * is loaded as a plugin, so nothing above includes it. */
static const char *kPlatformChooser = "runtime/platforms.cpp";
static const char *kImplementations[] = {"backend/cpu", "backend/sim", "backend/cuda",
                                         "dist/mpi"};

enum { kRuleCount = sizeof kRules / sizeof kRules[0] };

/* The longest layer that `path` (relative to src/) lies in, or NULL. */
static const char *layer_of(const char *path) {
  const char *best = NULL;
  size_t best_len = 0;
  for (size_t i = 0; i < kRuleCount; ++i) {
    const size_t n = strlen(kRules[i].layer);
    if (strncmp(path, kRules[i].layer, n) == 0 && path[n] == '/' && n > best_len) {
      best = kRules[i].layer;
      best_len = n;
    }
  }
  return best;
}

static int word_in(const char *word, const char *list) {
  const size_t n = strlen(word);
  for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
  return 0;
}

static int is_implementation(const char *layer) {
  for (size_t i = 0; i < sizeof kImplementations / sizeof kImplementations[0]; ++i)
    if (strcmp(layer, kImplementations[i]) == 0) return 1;
  return 0;
}

/* Whether a file in `from_path` may include `target` (an include path as
 * written, relative to src/ or a public "spmd/" header). Writes the reason
 * of a refusal into why. */
static int include_allowed(const char *from_path, const char *target, char *why, size_t n) {
  if (strncmp(target, "spmd/", 5) == 0) return 1; /* the public C headers */
  const char *from = layer_of(from_path);
  const char *to = layer_of(target);
  if (from == NULL) {
    snprintf(why, n, "%s lies in no layer of the table", from_path);
    return 0;
  }
  if (to == NULL) {
    snprintf(why, n, "\"%s\" is in no layer of the table", target);
    return 0;
  }
  if (strcmp(from, to) == 0) return 1;
  for (size_t i = 0; i < kRuleCount; ++i) {
    if (strcmp(kRules[i].layer, from) != 0) continue;
    if (word_in(to, kRules[i].may_include)) return 1;
  }
  if (is_implementation(to) && strcmp(from_path, kPlatformChooser) == 0) return 1;
  snprintf(why, n, "%s may not include %s (%s points %s)", from, to, target,
           is_implementation(to) && is_implementation(from) ? "sideways" : "up or sideways");
  return 0;
}

/* ---- walking src/ ---- */

typedef struct findings {
  char text[16384];
  size_t used;
  int count;
  int files;
} findings;

static void note(findings *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (f->used < sizeof f->text) {
    const int w = vsnprintf(f->text + f->used, sizeof f->text - f->used, fmt, ap);
    if (w > 0) f->used += (size_t)w;
  }
  va_end(ap);
  f->count++;
}

static int is_source(const char *name) {
  static const char *exts[] = {".cpp", ".hpp", ".h", ".c", ".cu", ".cuh"};
  const char *dot = strrchr(name, '.');
  if (dot == NULL) return 0;
  for (size_t i = 0; i < sizeof exts / sizeof exts[0]; ++i)
    if (strcmp(dot, exts[i]) == 0) return 1;
  return 0;
}

static void check_file(const char *root, const char *rel, findings *f) {
  char path[8192];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  FILE *in = fopen(path, "r");
  if (in == NULL) {
    note(f, "  %s: cannot be read\n", rel);
    return;
  }
  f->files++;
  char line[1024];
  int lineno = 0;
  while (fgets(line, sizeof line, in) != NULL) {
    ++lineno;
    const char *p = line;
    while (*p == ' ' || *p == '\t') ++p;
    if (*p != '#') continue;
    ++p;
    while (*p == ' ' || *p == '\t') ++p;
    if (strncmp(p, "include", 7) != 0) continue;
    p += 7;
    while (*p == ' ' || *p == '\t') ++p;
    if (*p != '"') continue; /* <system> headers are not ours */
    const char *end = strchr(p + 1, '"');
    if (end == NULL) continue;
    char target[512];
    snprintf(target, sizeof target, "%.*s", (int)(end - p - 1), p + 1);
    char why[512];
    if (!include_allowed(rel, target, why, sizeof why))
      note(f, "  %s:%d: #include \"%s\": %s\n", rel, lineno, target, why);
  }
  fclose(in);
}

static void walk(const char *root, const char *rel, findings *f) {
  char path[4096];
  snprintf(path, sizeof path, "%s%s%s", root, rel[0] ? "/" : "", rel);
  DIR *dir = opendir(path);
  if (dir == NULL) {
    note(f, "  %s: cannot be listed\n", path);
    return;
  }
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char child[4096], full[8192];
    snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
    snprintf(full, sizeof full, "%s/%s", root, child);
    struct stat st;
    if (stat(full, &st) != 0) continue;
    if (S_ISDIR(st.st_mode))
      walk(root, child, f);
    else if (is_source(e->d_name))
      check_file(root, child, f);
  }
  closedir(dir);
}

static const char *src_root(void) {
#ifdef SPMD_SOURCE_DIR
  return SPMD_SOURCE_DIR "/src";
#else
  return "src";
#endif
}

/* ---- the tests ---- */

static void every_include_under_src_points_down(void **state) {
  (void)state;
  static findings f;
  memset(&f, 0, sizeof f);
  walk(src_root(), "", &f);
  if (f.files < 20) fail_msg("read only %d source files under %s", f.files, src_root());
  if (f.count != 0)
    fail_msg("%d include(s) break the layering of src/ (see docs/design.md):\n%s", f.count,
             f.text);
}

static void an_upward_include_is_refused(void **state) {
  (void)state;
  char why[512];
  assert_false(include_allowed("core/mesh.hpp", "runtime/runtime.hpp", why, sizeof why));
  assert_non_null(strstr(why, "core may not include runtime"));
  assert_false(include_allowed("backend/backend.hpp", "core/shape.hpp", why, sizeof why));
  assert_false(include_allowed("kernels/random.cpp", "core/sharding.hpp", why, sizeof why));
  assert_false(include_allowed("runtime/array.cpp", "exec/shard_map.hpp", why, sizeof why));
  assert_false(include_allowed("exec/shard_map.cpp", "capi/handles.hpp", why, sizeof why));
  /* The transport between processes sits below the runtime, beside the
   * backends: it sees neither. */
  assert_false(include_allowed("dist/transport.hpp", "runtime/runtime.hpp", why, sizeof why));
  assert_false(include_allowed("dist/mpi/communicator.cpp", "backend/backend.hpp", why,
                               sizeof why));
  assert_false(include_allowed("runtime/processes.cpp", "dist/mpi/transport.hpp", why,
                               sizeof why));
}

static void a_sideways_include_between_backends_is_refused(void **state) {
  (void)state;
  char why[512];
  assert_false(include_allowed("backend/cpu/cpu_backend.cpp", "backend/sim/sim_backend.hpp",
                               why, sizeof why));
  assert_non_null(strstr(why, "sideways"));
  assert_false(include_allowed("backend/backend.hpp", "backend/cpu/cpu_backend.hpp", why,
                               sizeof why));
  /* Only the platform chooser sees implementations from above. */
  assert_false(include_allowed("runtime/array.cpp", "backend/cpu/cpu_backend.hpp", why,
                               sizeof why));
  assert_true(include_allowed("runtime/platforms.cpp", "backend/cpu/cpu_backend.hpp", why,
                              sizeof why));
}

static void downward_and_public_includes_are_allowed(void **state) {
  (void)state;
  char why[512];
  assert_true(include_allowed("capi/array.cpp", "runtime/array.hpp", why, sizeof why));
  assert_true(include_allowed("backend/cpu/reduce.cpp", "backend/host/reduce.hpp", why,
                              sizeof why));
  assert_true(include_allowed("backend/sim/sim_backend.cpp", "kernels/random.hpp", why,
                              sizeof why));
  assert_true(include_allowed("core/sharding.cpp", "core/mesh.hpp", why, sizeof why));
  assert_true(include_allowed("base/shape.cpp", "spmd/sharding.h", why, sizeof why));
  assert_true(include_allowed("runtime/processes.cpp", "dist/transport.hpp", why, sizeof why));
  assert_true(include_allowed("dist/mpi/transport.hpp", "dist/plugin.hpp", why, sizeof why));
}

static void a_folder_outside_the_table_is_refused(void **state) {
  (void)state;
  char why[512];
  assert_false(include_allowed("misc/helper.cpp", "base/shape.hpp", why, sizeof why));
  assert_non_null(strstr(why, "no layer"));
  assert_false(include_allowed("core/mesh.cpp", "../include/spmd/mesh.h", why, sizeof why));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_include_under_src_points_down),
      cmocka_unit_test(an_upward_include_is_refused),
      cmocka_unit_test(a_sideways_include_between_backends_is_refused),
      cmocka_unit_test(downward_and_public_includes_are_allowed),
      cmocka_unit_test(a_folder_outside_the_table_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
