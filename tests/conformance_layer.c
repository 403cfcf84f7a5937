/* Conformance family 7, the seeds' Attention + MLP Layer
 * (tests/conformance/layer/): examples/c/seed_layer.c regenerates the
 * notebook's weights (nnx.Rngs(0), kaiming_normal) and input
 * (normal(PRNGKey(0))) with libspmd's JAX-identical generator and runs the
 * tensor-parallel layer on a 2x2 ('data', 'model') mesh. Per size, one case
 * checks the regenerated input and weights against JAX's summaries, one the
 * output (in full for the scaled-down copy, through sums and samples for
 * the notebook's (2, 128, 1024)), one the printed sharding and picture. */
#include <stdlib.h>

#include "conformance.h"
#include "conformance_cases.h"
#include "seed_layer.h"
#include "spmd_test.h"

static int array_agrees(spmd_array *a, const json_value *ref, double tol, char *detail,
                        size_t size, const char *name) {
  int64_t n = 0;
  assert_ok(spmd_array_size(a, &n));
  float *host = malloc((size_t)(n ? n : 1) * sizeof *host);
  assert_non_null(host);
  assert_ok(spmd_array_to_host(a, host, (size_t)n * sizeof *host));
  const int ok = conformance_f32_agree(host, n, ref, tol, detail, size, name);
  free(host);
  return ok;
}

static spmd_array *regenerate_x(spmd_mesh *mesh, const json_value *c, const char *name) {
  int64_t shape[3];
  if (conformance_ints(conformance_member(c, "x_shape", name), shape, 3, name) != 3)
    fail_msg("%s: x_shape must have 3 dimensions", name);
  const json_value *x = conformance_member(c, "x", name);
  spmd_key key;
  assert_ok(spmd_random_key((uint64_t)json_int(conformance_member(x, "normal_key", name), -1),
                            &key));
  spmd_sharding *sharding = NULL;
  assert_ok(spmd_sharding_named_text(mesh, "data, None", &sharding));
  spmd_array *out = NULL;
  assert_ok(spmd_random_normal(sharding, &key, SPMD_F32, 3, shape, &out));
  spmd_sharding_destroy(sharding);
  return out;
}

static void run_case(conformance_tally *t, spmd_runtime *rt, const json_value *c) {
  const char *name = json_string(conformance_member(c, "name", "layer case"));
  spmd_mesh *mesh = conformance_mesh(rt, conformance_member(c, "mesh", name), name);
  const int64_t hidden = json_int(conformance_member(c, "hidden", name), 0);
  const int64_t heads = json_int(conformance_member(c, "heads", name), 0);
  const double tol = conformance_member(c, "tolerance", name)->number;
  char case_name[128], detail[4096] = "";

  /* The inputs: what libspmd regenerates must be what JAX drew. */
  seed_layer layer;
  assert_ok(seed_layer_init(mesh, hidden, heads, &layer));
  spmd_array *x = regenerate_x(mesh, c, name);
  const json_value *weights = conformance_member(c, "weights", name);
  const char *wnames[6] = {"Wq", "Wk", "Wv", "Wo", "W1", "W2"};
  spmd_array *warrays[6] = {layer.wq, layer.wk, layer.wv, layer.wo, layer.w1, layer.w2};
  int ok = array_agrees(x, conformance_member(conformance_member(c, "x", name), "summary", name),
                        0.0, detail, sizeof detail, "x");
  for (int i = 0; i < 6; ++i) {
    const json_value *w = conformance_member(weights, wnames[i], name);
    ok &= array_agrees(warrays[i], conformance_member(w, "summary", name), 1e-6, detail,
                       sizeof detail, wnames[i]);
  }
  snprintf(case_name, sizeof case_name, "%s/inputs", name);
  conformance_record(t, case_name, ok, detail[0] ? detail : NULL);

  /* The output. */
  spmd_array *y = NULL;
  assert_ok(seed_layer_apply(mesh, &layer, x, &y));
  detail[0] = '\0';
  ok = array_agrees(y, conformance_member(c, "output", name), tol, detail, sizeof detail, "y");
  snprintf(case_name, sizeof case_name, "%s/output", name);
  conformance_record(t, case_name, ok, detail[0] ? detail : NULL);

  /* The Layer written with the global ops: the same answer and sharding. */
  spmd_array *y_auto = NULL;
  assert_ok(seed_layer_apply_auto(mesh, &layer, x, &y_auto));
  detail[0] = '\0';
  ok = array_agrees(y_auto, conformance_member(c, "output", name), tol, detail, sizeof detail,
                    "y (global ops)");
  {
    spmd_sharding *a = NULL, *b = NULL;
    int eq = 0;
    assert_ok(spmd_array_sharding(y, &a));
    assert_ok(spmd_array_sharding(y_auto, &b));
    assert_ok(spmd_sharding_equal(a, b, &eq));
    if (!eq) {
      conformance_detail(detail, sizeof detail, "  the global ops' result is laid out otherwise\n");
      ok = 0;
    }
    spmd_sharding_destroy(a);
    spmd_sharding_destroy(b);
  }
  snprintf(case_name, sizeof case_name, "%s/output_global_ops", name);
  conformance_record(t, case_name, ok, detail[0] ? detail : NULL);
  spmd_array_destroy(y_auto);

  /* What the notebook prints: y's sharding, and the picture of
   * y.reshape(2, -1) (a reshape that keeps the 'data' split of dimension 0). */
  const json_value *text = conformance_member(c, "text", name);
  detail[0] = '\0';
  spmd_sharding *ys = NULL;
  char *str = NULL, *picture = NULL;
  assert_ok(spmd_array_sharding(y, &ys));
  assert_ok(spmd_sharding_to_string(ys, &str));
  int64_t shape[3];
  assert_ok(spmd_array_shape(y, sizeof shape / sizeof shape[0], shape, NULL));
  const int64_t flat[2] = {shape[0], shape[1] * shape[2]};
  assert_ok(spmd_sharding_visualize(ys, 2, flat, NULL, &picture));
  const char *want_str = json_string(conformance_member(text, "sharding", name));
  const char *want_pic = json_string(conformance_member(text, "picture", name));
  test_platform_text(str);
  test_platform_text(picture);
  ok = strcmp(str, want_str) == 0;
  if (!ok) conformance_detail(detail, sizeof detail, "  sharding: %s\n  JAX: %s\n", str, want_str);
  if (strcmp(picture, want_pic) != 0) {
    conformance_detail(detail, sizeof detail, "  picture:\n%s  JAX:\n%s", picture, want_pic);
    ok = 0;
  }
  snprintf(case_name, sizeof case_name, "%s/text", name);
  conformance_record(t, case_name, ok, detail[0] ? detail : NULL);

  spmd_string_free(str);
  spmd_string_free(picture);
  spmd_sharding_destroy(ys);
  spmd_array_destroy(y);
  spmd_array_destroy(x);
  seed_layer_destroy(&layer);
  spmd_mesh_destroy(mesh);
}

void conformance_layer(conformance_tally *t) {
  json_value *root = conformance_load("layer", "cases.json");
  const json_value *cases = conformance_member(root, "cases", "layer/cases.json");
  spmd_runtime *rt = test_runtime(8);
  for (size_t i = 0; i < json_count(cases); ++i) run_case(t, rt, json_at(cases, i));
  spmd_runtime_destroy(rt);
  json_free(root);
}
