/* Sharding pictures: the seeds' cases, character for character as
 * jax.debug.visualize_array_sharding prints them, the ASCII fallback, and
 * bad input. (The conformance suite checks many more against JAX.) */
#include "spmd_test.h"

#include <math.h>

/* Captured from JAX without colour at width 80. */
static const char *const kSingleDevice5 =
    "┌───────┐\n"
    "│ CPU 0 │\n"
    "└───────┘\n";

static const char *const kRows3x8 =
    "┌───────────────────────────────────────────────────────────────┐\n"
    "│                             CPU 0                             │\n"
    "│                                                               │\n"
    "├───────────────────────────────────────────────────────────────┤\n"
    "│                             CPU 1                             │\n"
    "│                                                               │\n"
    "├───────────────────────────────────────────────────────────────┤\n"
    "│                             CPU 2                             │\n"
    "│                                                               │\n"
    "└───────────────────────────────────────────────────────────────┘\n";

static const char *const kGrid4x8 =
    "┌──────────┬──────────┬──────────┬──────────┐\n"
    "│          │          │          │          │\n"
    "│  CPU 0   │  CPU 1   │  CPU 2   │  CPU 3   │\n"
    "│          │          │          │          │\n"
    "│          │          │          │          │\n"
    "├──────────┼──────────┼──────────┼──────────┤\n"
    "│          │          │          │          │\n"
    "│  CPU 4   │  CPU 5   │  CPU 6   │  CPU 7   │\n"
    "│          │          │          │          │\n"
    "│          │          │          │          │\n"
    "└──────────┴──────────┴──────────┴──────────┘\n";

static const char *const kPartialReplica8 =
    "┌───────┬───────┬───────┬───────┐\n"
    "│CPU 0,4│CPU 1,5│CPU 2,6│CPU 3,7│\n"
    "└───────┴───────┴───────┴───────┘\n";

static const char *const kDataNone4x10 =
    "┌────────────────────────────────────────────────────────────┐\n"
    "│                                                            │\n"
    "│                          CPU 0,1                           │\n"
    "│                                                            │\n"
    "│                                                            │\n"
    "├────────────────────────────────────────────────────────────┤\n"
    "│                                                            │\n"
    "│                          CPU 2,3                           │\n"
    "│                                                            │\n"
    "│                                                            │\n"
    "└────────────────────────────────────────────────────────────┘\n";

static const char *const kDataNone1000 =
    "┌───────────────────────┐\n"
    "│         CPU 0         │\n"
    "├───────────────────────┤\n"
    "│         CPU 1         │\n"
    "├───────────────────────┤\n"
    "│         CPU 2         │\n"
    "├───────────────────────┤\n"
    "│         CPU 3         │\n"
    "└───────────────────────┘\n";

static const char *const kNoneData1000 =
    "┌───────┬───────┬───────┬───────┐\n"
    "│       │       │       │       │\n"
    "│       │       │       │       │\n"
    "│       │       │       │       │\n"
    "│       │       │       │       │\n"
    "│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │\n"
    "│       │       │       │       │\n"
    "│       │       │       │       │\n"
    "│       │       │       │       │\n"
    "│       │       │       │       │\n"
    "└───────┴───────┴───────┴───────┘\n";

static const char *const kReplicated =
    "┌────────────────────────────────────────────────┐\n"
    "│                                                │\n"
    "│                                                │\n"
    "│                                                │\n"
    "│                                                │\n"
    "│              CPU 0,1,2,3,4,5,6,7               │\n"
    "│                                                │\n"
    "│                                                │\n"
    "│                                                │\n"
    "│                                                │\n"
    "└────────────────────────────────────────────────┘\n";


static void check_picture(spmd_sharding *s, size_t ndim, const int64_t *shape,
                          const char *expected) {
  char *pic = NULL;
  assert_ok(spmd_sharding_visualize(s, ndim, shape, NULL, &pic));
  assert_string_result(pic, expected);
}

static spmd_mesh *named_mesh(size_t ndim, const int64_t *shape, const char *const *names) {
  spmd_mesh *m;
  assert_ok(spmd_mesh_create(suite_rt, ndim, shape, names, NULL, &m));
  return m;
}

static void single_device_array_is_one_box(void **state) {
  (void)state;
  spmd_sharding *s;
  assert_ok(spmd_sharding_single_device(suite_rt, 0, &s));
  int64_t shape[1] = {5};
  spmd_array *a;
  assert_ok(spmd_array_arange(s, SPMD_I32, 1, shape, 0, 1, &a));
  char *pic;
  assert_ok(spmd_array_visualize(a, NULL, &pic));
  assert_string_result(pic, kSingleDevice5);
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
}

static void rows_over_three_devices(void **state) {
  (void)state;
  int64_t ms[1] = {3};
  spmd_mesh *m = test_mesh(suite_rt, 1, ms);
  spmd_sharding *s = test_sharding(m, "x");
  int64_t shape[2] = {3, 8};
  check_picture(s, 2, shape, kRows3x8);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
}

static void grid_over_two_by_four(void **state) {
  (void)state;
  int64_t ms[2] = {2, 4};
  spmd_mesh *m = test_mesh(suite_rt, 2, ms);
  spmd_sharding *s = test_sharding(m, "x, y"), *y = test_sharding(m, "y"), *r = test_sharding(m, "");
  int64_t shape[2] = {4, 8}, row[1] = {8};
  check_picture(s, 2, shape, kGrid4x8);
  check_picture(y, 1, row, kPartialReplica8);
  check_picture(r, 2, shape, kReplicated);
  spmd_sharding_destroy(s);
  spmd_sharding_destroy(y);
  spmd_sharding_destroy(r);
  spmd_mesh_destroy(m);
}

static void data_parallel_meshes(void **state) {
  (void)state;
  const char *dm[2] = {"data", "model"}, *d[1] = {"data"};
  int64_t s22[2] = {2, 2}, s4[1] = {4};
  spmd_mesh *m22 = named_mesh(2, s22, dm), *m4 = named_mesh(1, s4, d);
  spmd_sharding *a = test_sharding(m22, "P('data', None)");
  spmd_sharding *b = test_sharding(m4, "data, None"), *c = test_sharding(m4, "None, data");
  int64_t small[2] = {4, 10}, big[2] = {1000, 1000};
  check_picture(a, 2, small, kDataNone4x10);
  check_picture(b, 2, big, kDataNone1000);
  check_picture(c, 2, big, kNoneData1000);
  spmd_sharding_destroy(a);
  spmd_sharding_destroy(b);
  spmd_sharding_destroy(c);
  spmd_mesh_destroy(m22);
  spmd_mesh_destroy(m4);
}

static void ascii_fallback_uses_plain_characters(void **state) {
  (void)state;
  int64_t ms[1] = {2};
  spmd_mesh *m = test_mesh(suite_rt, 1, ms);
  spmd_sharding *s = test_sharding(m, "x");
  int64_t shape[1] = {4};
  spmd_visualize_options o;
  spmd_visualize_options_init(&o, sizeof o);
  o.ascii = 1;
  char *pic;
  assert_ok(spmd_sharding_visualize(s, 1, shape, &o, &pic));
  assert_string_result(pic,
                       "+-------+-------+\n"
                       "| CPU 0 | CPU 1 |\n"
                       "+-------+-------+\n");
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
}

/* Widths of the boxes on the picture's top line, in characters. */
static int top_line_widths(const char *pic, int *widths, int max) {
  int n = 0, run = 0;
  for (const char *p = pic; *p && *p != '\n';) {
    if (strncmp(p, "─", 3) == 0) {
      ++run;
      p += 3;
    } else {
      if (strncmp(p, "┬", 3) == 0 || strncmp(p, "┐", 3) == 0) {
        if (n < max) widths[n] = run;
        ++n;
        run = 0;
      }
      p += (unsigned char)*p >= 0x80 ? 3 : 1;
    }
  }
  return n;
}

static void uneven_blocks_are_drawn_in_proportion(void **state) {
  (void)state;
  int64_t ms[1] = {4};
  spmd_mesh *m = test_mesh(suite_rt, 1, ms);
  spmd_sharding *s = test_sharding(m, "None, x");
  /* 10 columns over 4: blocks of 3, 3, 3 and 1 columns. */
  int64_t shape[2] = {4, 10};
  char *pic;
  assert_ok(spmd_sharding_visualize(s, 2, shape, NULL, &pic));
  int w[4];
  assert_int_equal(top_line_widths(pic, w, 4), 4);
  assert_int_equal(w[0], w[1]);
  assert_int_equal(w[1], w[2]);
  assert_true(w[2] > 2 * w[3]);
  assert_non_null(strstr(test_platform_text(pic), "CPU 3"));
  spmd_string_free(pic);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
}

static void bad_input_is_rejected(void **state) {
  (void)state;
  int64_t ms[1] = {2};
  spmd_mesh *m = test_mesh(suite_rt, 1, ms);
  spmd_sharding *s = test_sharding(m, "x");
  char *pic = NULL;
  int64_t three[3] = {2, 2, 2};
  assert_fails(spmd_sharding_visualize(s, 3, three, NULL, &pic), SPMD_ERR_INVALID_ARGUMENT,
               "shape (2, 2, 2): the picture is drawn for 1 and 2 dimensions only");
  int64_t empty[1] = {0};
  assert_fails(spmd_sharding_visualize(s, 1, empty, NULL, &pic), SPMD_ERR_INVALID_ARGUMENT,
               "cannot draw an array with no elements");
  spmd_visualize_options o = SPMD_VISUALIZE_OPTIONS_INIT;
  o.max_width = -1;
  int64_t shape[1] = {4};
  assert_fails(spmd_sharding_visualize(s, 1, shape, &o, &pic), SPMD_ERR_INVALID_ARGUMENT,
               "options->max_width: -1");
  assert_null(pic);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
}

/* Options and shapes at the edges: no undefined float-to-int conversion
 * (the UBSan build checks), no unbounded picture. */
static void extreme_options_are_bounded(void **state) {
  (void)state;
  int64_t ms[1] = {2};
  spmd_mesh *m = test_mesh(suite_rt, 1, ms);
  spmd_sharding *s = test_sharding(m, "None, x");
  char *pic = NULL;
  const int64_t shape[2] = {4, 4};
  spmd_visualize_options o = SPMD_VISUALIZE_OPTIONS_INIT;
  o.scale = INFINITY;
  assert_fails(spmd_sharding_visualize(s, 2, shape, &o, &pic), SPMD_ERR_INVALID_ARGUMENT,
               "options->scale: inf is larger than 100");
  o.scale = 1e300;
  assert_fails(spmd_sharding_visualize(s, 2, shape, &o, &pic), SPMD_ERR_INVALID_ARGUMENT,
               "options->scale");
  o.scale = NAN;
  assert_fails(spmd_sharding_visualize(s, 2, shape, &o, &pic), SPMD_ERR_INVALID_ARGUMENT,
               "options->scale");
  o = (spmd_visualize_options)SPMD_VISUALIZE_OPTIONS_INIT;
  o.min_width = o.max_width = 1 << 30;
  assert_fails(spmd_sharding_visualize(s, 2, shape, &o, &pic), SPMD_ERR_INVALID_ARGUMENT,
               "options->max_width: 1073741824 is wider than the 1000 characters");
  o.max_width = 0;
  assert_fails(spmd_sharding_visualize(s, 2, shape, &o, &pic), SPMD_ERR_INVALID_ARGUMENT,
               "options->min_width");
  assert_null(pic);
  /* An aspect of 2^62: the widths stay within max_width. */
  const int64_t wide[2] = {1, (int64_t)1 << 62};
  o = (spmd_visualize_options)SPMD_VISUALIZE_OPTIONS_INIT;
  o.ascii = 1;
  assert_ok(spmd_sharding_visualize(s, 2, wide, &o, &pic));
  for (const char *line = pic; *line;) {
    const char *end = strchr(line, '\n');
    assert_non_null(end);
    assert_true(end - line <= 80);
    line = end + 1;
  }
  spmd_string_free(pic);
  const int64_t tall[2] = {(int64_t)1 << 62, 1};
  assert_ok(spmd_sharding_visualize(s, 2, tall, NULL, &pic));
  spmd_string_free(pic);
  o = (spmd_visualize_options)SPMD_VISUALIZE_OPTIONS_INIT;
  o.scale = 100;
  o.max_width = 1000;
  assert_ok(spmd_sharding_visualize(s, 2, wide, &o, &pic));
  spmd_string_free(pic);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(extreme_options_are_bounded),
      cmocka_unit_test(single_device_array_is_one_box),
      cmocka_unit_test(rows_over_three_devices),
      cmocka_unit_test(grid_over_two_by_four),
      cmocka_unit_test(data_parallel_meshes),
      cmocka_unit_test(ascii_fallback_uses_plain_characters),
      cmocka_unit_test(uneven_blocks_are_drawn_in_proportion),
      cmocka_unit_test(bad_input_is_rejected),
  };
  return cmocka_run_group_tests(tests, suite_setup, suite_teardown);
}
