/* Partition specs: the short and the Python forms, structure and errors. */
#include "spmd_test.h"

static char *str_of(const char *text) {
  spmd_spec *s = NULL;
  assert_ok(spmd_spec_parse(text, &s));
  char *out = NULL;
  assert_ok(spmd_spec_to_string(s, &out));
  spmd_spec_destroy(s);
  return out;
}

static void short_form_parses(void **state) {
  (void)state;
  assert_string_result(str_of("data, None"), "PartitionSpec('data', None)");
  assert_string_result(str_of("(x,y), None"), "PartitionSpec(('x', 'y'), None)");
  assert_string_result(str_of("x"), "PartitionSpec('x',)");
  assert_string_result(str_of(""), "PartitionSpec()");
  assert_string_result(str_of("  None ,  y  "), "PartitionSpec(None, 'y')");
  assert_string_result(str_of("x,"), "PartitionSpec('x',)");
  assert_string_result(str_of("(), x"), "PartitionSpec(None, 'x')");
}

static void python_forms_parse(void **state) {
  (void)state;
  assert_string_result(str_of("P('data', None)"), "PartitionSpec('data', None)");
  assert_string_result(str_of("PartitionSpec(('x', 'y'),)"), "PartitionSpec(('x', 'y'),)");
  assert_string_result(str_of("P()"), "PartitionSpec()");
  assert_string_result(str_of("P(\"x\")"), "PartitionSpec('x',)");
  assert_string_result(str_of("PartitionSpec('x',)"), "PartitionSpec('x',)");
  assert_string_result(str_of("P(None, ('y', 'x'))"), "PartitionSpec(None, ('y', 'x'))");
}

static void structured_form_matches_text(void **state) {
  (void)state;
  spmd_spec *built = NULL, *parsed = NULL;
  assert_ok(spmd_spec_create(&built));
  const char *xy[2] = {"x", "y"};
  assert_ok(spmd_spec_append(built, xy, 2));
  assert_ok(spmd_spec_append(built, NULL, 0));
  assert_ok(spmd_spec_parse("(x, y), None", &parsed));
  int eq = 0;
  assert_ok(spmd_spec_equal(built, parsed, &eq));
  assert_true(eq);
  size_t ndim, n;
  const char *axis;
  assert_ok(spmd_spec_ndim(built, &ndim));
  assert_int_equal(ndim, 2);
  assert_ok(spmd_spec_dim_size(built, 0, &n));
  assert_int_equal(n, 2);
  assert_ok(spmd_spec_dim_axis(built, 0, 1, &axis));
  assert_string_equal(axis, "y");
  assert_ok(spmd_spec_dim_size(built, 1, &n));
  assert_int_equal(n, 0);
  assert_fails(spmd_spec_dim_axis(built, 1, 0, &axis), SPMD_ERR_OUT_OF_RANGE, "i: dimension 1");
  assert_fails(spmd_spec_dim_size(built, 2, &n), SPMD_ERR_OUT_OF_RANGE, "dim: 2");
  spmd_spec_destroy(built);
  spmd_spec_destroy(parsed);
}

static void trailing_none_does_not_change_equality(void **state) {
  (void)state;
  spmd_spec *a, *b, *c;
  assert_ok(spmd_spec_parse("x", &a));
  assert_ok(spmd_spec_parse("x, None, None", &b));
  assert_ok(spmd_spec_parse("None, x", &c));
  int eq;
  assert_ok(spmd_spec_equal(a, b, &eq));
  assert_true(eq);
  assert_ok(spmd_spec_equal(a, c, &eq));
  assert_false(eq);
  spmd_spec_destroy(a);
  spmd_spec_destroy(b);
  spmd_spec_destroy(c);
}

static void syntax_errors_give_the_column(void **state) {
  (void)state;
  spmd_spec *s = NULL;
  assert_fails(spmd_spec_parse("x,,y", &s), SPMD_ERR_INVALID_ARGUMENT,
               "spec 'x,,y': column 3: expected an axis name, None or '('");
  assert_fails(spmd_spec_parse("(x, y", &s), SPMD_ERR_INVALID_ARGUMENT,
               "spec '(x, y': column 6: expected ')' to close the tuple");
  assert_fails(spmd_spec_parse("P('x'", &s), SPMD_ERR_INVALID_ARGUMENT,
               "column 6: expected ')' before the end of the spec");
  assert_fails(spmd_spec_parse("P('x') extra", &s), SPMD_ERR_INVALID_ARGUMENT,
               "column 8: unexpected text after ')'");
  assert_fails(spmd_spec_parse("x y", &s), SPMD_ERR_INVALID_ARGUMENT,
               "column 3: expected ',' or the end of the spec");
  assert_fails(spmd_spec_parse("('x", &s), SPMD_ERR_INVALID_ARGUMENT,
               "unterminated quoted axis name");
  assert_fails(spmd_spec_parse("(x, None)", &s), SPMD_ERR_INVALID_ARGUMENT,
               "column 5: None cannot appear inside a tuple of axes");
  assert_fails(spmd_spec_parse("1x", &s), SPMD_ERR_INVALID_ARGUMENT,
               "column 1: '1x' is not a valid axis name");
  assert_fails(spmd_spec_parse(NULL, &s), SPMD_ERR_INVALID_ARGUMENT, "text: NULL");
  assert_null(s);
}

static void an_axis_used_twice_is_rejected(void **state) {
  (void)state;
  spmd_spec *s = NULL;
  assert_fails(spmd_spec_parse("x, x", &s), SPMD_ERR_INVALID_ARGUMENT,
               "spec 'x, x': axis 'x' is used twice (dimensions 0 and 1)");
  assert_fails(spmd_spec_parse("(y, y)", &s), SPMD_ERR_INVALID_ARGUMENT,
               "axis 'y' is used twice in dimension 0");
  assert_null(s);
  assert_ok(spmd_spec_create(&s));
  const char *x[1] = {"x"};
  assert_ok(spmd_spec_append(s, x, 1));
  assert_fails(spmd_spec_append(s, x, 1), SPMD_ERR_INVALID_ARGUMENT,
               "axis 'x' is used twice (dimensions 0 and 1)");
  const char *bad[1] = {"no spaces"};
  assert_fails(spmd_spec_append(s, bad, 1), SPMD_ERR_INVALID_ARGUMENT,
               "'no spaces' is not a valid axis name");
  assert_fails(spmd_spec_append(s, NULL, 2), SPMD_ERR_INVALID_ARGUMENT, "axes: NULL");
  size_t ndim;
  assert_ok(spmd_spec_ndim(s, &ndim));
  assert_int_equal(ndim, 1); /* failed appends left the spec as it was */
  spmd_spec_destroy(s);
}

/* A spec has at most SPMD_MAX_NDIM dimensions, as arrays do; appending
 * stays cheap (it once copied and re-checked the whole spec each time). */
static void a_spec_has_at_most_max_ndim_dimensions(void **state) {
  (void)state;
  spmd_spec *s = NULL;
  assert_ok(spmd_spec_create(&s));
  const char *names[9] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};
  for (int i = 0; i < SPMD_MAX_NDIM; ++i) assert_ok(spmd_spec_append(s, &names[i], 1));
  assert_fails(spmd_spec_append(s, &names[8], 1), SPMD_ERR_INVALID_ARGUMENT,
               "a spec has at most 8 dimensions");
  assert_fails(spmd_spec_append(s, NULL, 0), SPMD_ERR_INVALID_ARGUMENT, "at most 8");
  spmd_spec_destroy(s);
  spmd_spec *t = NULL;
  assert_fails(spmd_spec_parse("a, b, c, d, e, f, g, h, i", &t), SPMD_ERR_INVALID_ARGUMENT,
               "9 dimensions, but a spec has at most 8");
  assert_null(t);
  assert_ok(spmd_spec_parse("a, b, c, d, e, f, g, h", &t));
  spmd_spec_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_spec_has_at_most_max_ndim_dimensions),
      cmocka_unit_test(short_form_parses),
      cmocka_unit_test(python_forms_parse),
      cmocka_unit_test(structured_form_matches_text),
      cmocka_unit_test(trailing_none_does_not_change_equality),
      cmocka_unit_test(syntax_errors_give_the_column),
      cmocka_unit_test(an_axis_used_twice_is_rejected),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
