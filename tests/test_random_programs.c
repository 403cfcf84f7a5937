/* Keys as arrays (spmd/experimental/random.h): key data holds a key's
 * words; a draw from key data, in any layout, is the draw from the key
 * itself, bit for bit; a program whose input is key data draws from each
 * run's key, as a function under jax.jit draws from the key it is passed;
 * key data splits and folds in as keys do, in programs too; and bad keys
 * fail naming `key`. */
#define SPMD_EXPERIMENTAL
#include "spmd_test.h"

#include "spmd/experimental/program.h"
#include "spmd/experimental/random.h"

static const int64_t shape[2] = {8, 4};

static spmd_mesh *mesh42(void) {
  const int64_t ms[2] = {4, 2};
  return test_mesh(suite_rt, 2, ms);
}

static spmd_array *key_data(spmd_sharding *s, const spmd_key *key) {
  spmd_array *a = NULL;
  assert_ok(spmd_x_random_key_data(s, key, &a));
  return a;
}

static void assert_same_values(const spmd_array *a, const spmd_array *b, size_t nbytes) {
  unsigned char *x = malloc(nbytes), *y = malloc(nbytes);
  assert_ok(spmd_array_to_host(a, x, nbytes));
  assert_ok(spmd_array_to_host(b, y, nbytes));
  assert_memory_equal(x, y, nbytes);
  free(x);
  free(y);
}

static int values_differ(const spmd_array *a, const spmd_array *b, size_t nbytes) {
  unsigned char *x = malloc(nbytes), *y = malloc(nbytes);
  assert_ok(spmd_array_to_host(a, x, nbytes));
  assert_ok(spmd_array_to_host(b, y, nbytes));
  const int differ = memcmp(x, y, nbytes) != 0;
  free(x);
  free(y);
  return differ;
}

static void key_data_holds_the_keys_words(void **state) {
  (void)state;
  spmd_mesh *m = mesh42();
  spmd_key key;
  assert_ok(spmd_random_key(0x123456789abcULL, &key));
  const char *specs[] = {"", "y"}; /* replicated; one word per device of y */
  for (size_t k = 0; k < 2; ++k) {
    spmd_sharding *s = test_sharding(m, specs[k]);
    spmd_array *a = key_data(s, &key);
    spmd_dtype dt;
    assert_ok(spmd_array_dtype(a, &dt));
    assert_int_equal(dt, SPMD_U32);
    uint32_t words[2] = {0, 0};
    assert_ok(spmd_array_to_host(a, words, sizeof words));
    assert_int_equal(words[0], key.words[0]);
    assert_int_equal(words[1], key.words[1]);
    spmd_array_destroy(a);
    spmd_sharding_destroy(s);
  }
  spmd_mesh_destroy(m);
}

/* Every distribution, from key data laid out two ways. */
static void draws_from_key_data_are_draws_from_the_key(void **state) {
  (void)state;
  spmd_mesh *m = mesh42();
  spmd_sharding *out = test_sharding(m, "x, y"), *rep = test_sharding(m, ""),
                *split = test_sharding(m, "y");
  spmd_key key;
  assert_ok(spmd_random_key(42, &key));
  spmd_array *datas[2] = {key_data(rep, &key), key_data(split, &key)};
  for (size_t k = 0; k < 2; ++k) {
    spmd_array *host = NULL, *from = NULL;
    assert_ok(spmd_random_bits(out, &key, SPMD_U32, 2, shape, &host));
    assert_ok(spmd_x_random_bits_from(out, datas[k], SPMD_U32, 2, shape, &from));
    assert_same_values(host, from, 32 * 4);
    spmd_array_destroy(host);
    spmd_array_destroy(from);
    assert_ok(spmd_random_uniform(out, &key, SPMD_F32, 2, shape, -1.0, 3.0, &host));
    assert_ok(spmd_x_random_uniform_from(out, datas[k], SPMD_F32, 2, shape, -1.0, 3.0, &from));
    assert_same_values(host, from, 32 * 4);
    spmd_array_destroy(host);
    spmd_array_destroy(from);
    assert_ok(spmd_random_normal(out, &key, SPMD_F64, 2, shape, &host));
    assert_ok(spmd_x_random_normal_from(out, datas[k], SPMD_F64, 2, shape, &from));
    assert_same_values(host, from, 32 * 8);
    spmd_array_destroy(host);
    spmd_array_destroy(from);
    assert_ok(spmd_random_truncated_normal(out, &key, SPMD_F32, 2, shape, -1.5, 2.0, &host));
    assert_ok(
        spmd_x_random_truncated_normal_from(out, datas[k], SPMD_F32, 2, shape, -1.5, 2.0, &from));
    assert_same_values(host, from, 32 * 4);
    spmd_array_destroy(host);
    spmd_array_destroy(from);
    spmd_array_destroy(datas[k]);
  }
  spmd_sharding_destroy(out);
  spmd_sharding_destroy(rep);
  spmd_sharding_destroy(split);
  spmd_mesh_destroy(m);
}

/* y = x + 0.5 * normal(key) and the draw itself, eagerly from a host key. */
static void noisy_eagerly(spmd_sharding *out, const spmd_key *key, spmd_array *x, spmd_array **y,
                          spmd_array **noise) {
  spmd_array *scaled = NULL;
  assert_ok(spmd_random_normal(out, key, SPMD_F32, 2, shape, noise));
  assert_ok(spmd_binary_scalar(SPMD_BINARY_MUL, *noise, 0.5, NULL, &scaled));
  assert_ok(spmd_binary(SPMD_BINARY_ADD, x, scaled, NULL, y));
  spmd_array_destroy(scaled);
}

static void programs_draw_from_each_runs_key(void **state) {
  (void)state;
  spmd_mesh *m = mesh42();
  spmd_sharding *out = test_sharding(m, "x, y"), *rep = test_sharding(m, "");
  const int64_t two = 2;

  spmd_x_program *p = NULL;
  spmd_array *key_in = NULL, *x_in = NULL, *noise = NULL, *scaled = NULL, *y = NULL;
  assert_ok(spmd_x_program_create(suite_rt, &p));
  assert_ok(spmd_x_program_input(p, rep, SPMD_U32, 1, &two, &key_in));
  assert_ok(spmd_x_program_input(p, out, SPMD_F32, 2, shape, &x_in));
  assert_ok(spmd_x_random_normal_from(out, key_in, SPMD_F32, 2, shape, &noise));
  assert_ok(spmd_binary_scalar(SPMD_BINARY_MUL, noise, 0.5, NULL, &scaled));
  assert_ok(spmd_binary(SPMD_BINARY_ADD, x_in, scaled, NULL, &y));
  assert_ok(spmd_x_program_output(p, y, NULL));
  assert_ok(spmd_x_program_output(p, noise, NULL));
  assert_ok(spmd_x_program_compile(p));
  char *text = NULL;
  assert_ok(spmd_x_program_text(p, &text));
  assert_non_null(strstr(text, "random_normal"));
  spmd_string_free(text);

  float xs[32];
  for (int i = 0; i < 32; ++i) xs[i] = (float)i * 0.25f - 3.0f;
  spmd_array *x = test_put(m, "x, y", SPMD_F32, 2, shape, xs);
  spmd_key base, keys[2];
  assert_ok(spmd_random_key(7, &base));
  spmd_array *noises[2];
  for (uint32_t step = 0; step < 2; ++step) {
    assert_ok(spmd_random_fold_in(&base, step, &keys[step]));
    spmd_array *inputs[2] = {key_data(rep, &keys[step]), x}, *outputs[2] = {NULL, NULL};
    assert_ok(spmd_x_program_run(p, 2, (const spmd_array *const *)inputs, 2, outputs));
    spmd_array *want_y = NULL, *want_noise = NULL;
    noisy_eagerly(out, &keys[step], x, &want_y, &want_noise);
    assert_same_values(outputs[0], want_y, sizeof xs);
    assert_same_values(outputs[1], want_noise, sizeof xs);
    noises[step] = outputs[1];
    spmd_array_destroy(outputs[0]);
    spmd_array_destroy(want_y);
    spmd_array_destroy(want_noise);
    spmd_array_destroy(inputs[0]);
  }
  assert_true(values_differ(noises[0], noises[1], sizeof xs)); /* a new key, new numbers */
  spmd_array_destroy(noises[0]);
  spmd_array_destroy(noises[1]);

  /* A run's key is checked as any input is. */
  spmd_array *wrong = test_put(m, "", SPMD_F32, 1, &two, xs), *outputs[2] = {NULL, NULL};
  spmd_array *inputs[2] = {wrong, x};
  assert_fails(spmd_x_program_run(p, 2, (const spmd_array *const *)inputs, 2, outputs),
               SPMD_ERR_INVALID_ARGUMENT, "inputs[0]");
  spmd_array_destroy(wrong);

  spmd_array_destroy(x);
  spmd_array_destroy(key_in);
  spmd_array_destroy(x_in);
  spmd_array_destroy(noise);
  spmd_array_destroy(scaled);
  spmd_array_destroy(y);
  spmd_x_program_destroy(p);
  spmd_sharding_destroy(out);
  spmd_sharding_destroy(rep);
  spmd_mesh_destroy(m);
}


static void assert_key_data_is(const spmd_array *a, const spmd_key *want) {
  uint32_t words[2] = {0, 0};
  assert_ok(spmd_array_to_host(a, words, sizeof words));
  assert_int_equal(words[0], want->words[0]);
  assert_int_equal(words[1], want->words[1]);
}

static void key_data_splits_and_folds_in_as_keys_do(void **state) {
  (void)state;
  spmd_mesh *m = mesh42();
  spmd_sharding *rep = test_sharding(m, "");
  spmd_key key, want[3], folded;
  assert_ok(spmd_random_key(99, &key));
  assert_ok(spmd_random_split(&key, 3, want));
  assert_ok(spmd_random_fold_in(&key, 12345, &folded));
  spmd_array *data = key_data(rep, &key), *keys[3] = {NULL, NULL, NULL}, *f = NULL;
  assert_ok(spmd_x_random_split_from(data, 3, keys));
  for (int i = 0; i < 3; ++i) {
    assert_key_data_is(keys[i], &want[i]);
    spmd_array_destroy(keys[i]);
  }
  assert_ok(spmd_x_random_fold_in_from(data, 12345, &f));
  assert_key_data_is(f, &folded);
  spmd_array_destroy(f);
  assert_ok(spmd_x_random_split_from(data, 0, NULL)); /* none asked, none made */
  spmd_array_destroy(data);
  spmd_sharding_destroy(rep);
  spmd_mesh_destroy(m);
}

/* key -> split into two; draw from the first, fold 3 into the second and
 * draw from that: the step's keys derived inside the program. */
static void programs_derive_keys_from_their_input(void **state) {
  (void)state;
  spmd_mesh *m = mesh42();
  spmd_sharding *out = test_sharding(m, "x, y"), *rep = test_sharding(m, "");
  const int64_t two = 2;
  spmd_x_program *p = NULL;
  spmd_array *key_in = NULL, *halves[2] = {NULL, NULL}, *folded = NULL, *a = NULL, *b = NULL;
  assert_ok(spmd_x_program_create(suite_rt, &p));
  assert_ok(spmd_x_program_input(p, rep, SPMD_U32, 1, &two, &key_in));
  assert_ok(spmd_x_random_split_from(key_in, 2, halves));
  assert_ok(spmd_x_random_fold_in_from(halves[1], 3, &folded));
  assert_ok(spmd_x_random_normal_from(out, halves[0], SPMD_F32, 2, shape, &a));
  assert_ok(spmd_x_random_uniform_from(out, folded, SPMD_F32, 2, shape, 0.0, 1.0, &b));
  assert_ok(spmd_x_program_output(p, a, NULL));
  assert_ok(spmd_x_program_output(p, b, NULL));
  assert_ok(spmd_x_program_output(p, folded, NULL));
  assert_ok(spmd_x_program_compile(p));
  char *text = NULL;
  assert_ok(spmd_x_program_text(p, &text));
  assert_non_null(strstr(text, "random_split(%0)"));
  assert_non_null(strstr(text, "random_fold_in(%2)"));
  spmd_string_free(text);
  for (uint64_t seed = 5; seed < 7; ++seed) {
    spmd_key k, parts[2], k3;
    assert_ok(spmd_random_key(seed, &k));
    assert_ok(spmd_random_split(&k, 2, parts));
    assert_ok(spmd_random_fold_in(&parts[1], 3, &k3));
    spmd_array *in = key_data(rep, &k), *outputs[3] = {NULL, NULL, NULL};
    assert_ok(spmd_x_program_run(p, 1, (const spmd_array *const *)&in, 3, outputs));
    spmd_array *want_a = NULL, *want_b = NULL;
    assert_ok(spmd_random_normal(out, &parts[0], SPMD_F32, 2, shape, &want_a));
    assert_ok(spmd_random_uniform(out, &k3, SPMD_F32, 2, shape, 0.0, 1.0, &want_b));
    assert_same_values(outputs[0], want_a, 32 * 4);
    assert_same_values(outputs[1], want_b, 32 * 4);
    assert_key_data_is(outputs[2], &k3);
    for (int i = 0; i < 3; ++i) spmd_array_destroy(outputs[i]);
    spmd_array_destroy(want_a);
    spmd_array_destroy(want_b);
    spmd_array_destroy(in);
  }
  spmd_array *values[6] = {key_in, halves[0], halves[1], folded, a, b};
  for (int i = 0; i < 6; ++i) spmd_array_destroy(values[i]);
  spmd_x_program_destroy(p);
  spmd_sharding_destroy(out);
  spmd_sharding_destroy(rep);
  spmd_mesh_destroy(m);
}

static void bad_keys_fail_naming_the_key(void **state) {
  (void)state;
  spmd_mesh *m = mesh42();
  spmd_sharding *out = test_sharding(m, "x, y"), *rep = test_sharding(m, ""),
                *two_dims = test_sharding(m, "x, y");
  const int64_t two = 2, three = 3;
  const float f[3] = {1, 2, 3};
  const uint32_t u[3] = {1, 2, 3};
  spmd_array *sentinel = (spmd_array *)&f, *a = sentinel;
  spmd_array *floats = test_put(m, "", SPMD_F32, 1, &two, f);
  spmd_array *long_key = test_put(m, "", SPMD_U32, 1, &three, u);
  spmd_key key;
  assert_ok(spmd_random_key(1, &key));

  assert_fails(spmd_x_random_normal_from(out, floats, SPMD_F32, 2, shape, &a),
               SPMD_ERR_INVALID_ARGUMENT, "key: float32[2] where key data is uint32[2]");
  assert_fails(spmd_x_random_bits_from(out, long_key, SPMD_U32, 2, shape, &a),
               SPMD_ERR_INVALID_ARGUMENT, "key: uint32[3] where key data is uint32[2]");
  assert_fails(spmd_x_random_uniform_from(out, NULL, SPMD_F32, 2, shape, 0.0, 1.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "key: NULL");
  spmd_array *data = key_data(rep, &key);
  assert_fails(spmd_x_random_normal_from(out, data, SPMD_U8, 2, shape, &a),
               SPMD_ERR_INVALID_ARGUMENT, "dtype: uint8 is not a floating-point type");
  assert_fails(spmd_x_random_normal_from(NULL, data, SPMD_F32, 2, shape, &a),
               SPMD_ERR_INVALID_ARGUMENT, "sharding: NULL spmd_sharding handle");
  assert_fails(spmd_x_random_normal_from(out, data, SPMD_F32, 2, shape, NULL),
               SPMD_ERR_INVALID_ARGUMENT, "out: NULL output pointer");
  assert_fails(spmd_x_random_truncated_normal_from(out, data, SPMD_F32, 2, shape, 2.0, 1.0, &a),
               SPMD_ERR_INVALID_ARGUMENT, "lower");
  assert_fails(spmd_x_random_fold_in_from(floats, 1, &a), SPMD_ERR_INVALID_ARGUMENT,
               "key: float32[2] where key data is uint32[2]");
  assert_fails(spmd_x_random_fold_in_from(NULL, 1, &a), SPMD_ERR_INVALID_ARGUMENT, "key: NULL");
  assert_fails(spmd_x_random_fold_in_from(data, 1, NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  spmd_array *pair[2] = {sentinel, sentinel};
  assert_fails(spmd_x_random_split_from(long_key, 2, pair), SPMD_ERR_INVALID_ARGUMENT,
               "key: uint32[3] where key data is uint32[2]");
  assert_fails(spmd_x_random_split_from(NULL, 2, pair), SPMD_ERR_INVALID_ARGUMENT, "key: NULL");
  assert_fails(spmd_x_random_split_from(data, 2, NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");
  assert_ptr_equal(pair[0], sentinel);
  assert_ptr_equal(pair[1], sentinel);
  assert_fails(spmd_x_random_key_data(rep, NULL, &a), SPMD_ERR_INVALID_ARGUMENT,
               "key: NULL spmd_key pointer");
  assert_fails(spmd_x_random_key_data(two_dims, &key, &a), SPMD_ERR_INVALID_ARGUMENT, "names 2");
  assert_fails(spmd_x_random_key_data(rep, &key, NULL), SPMD_ERR_INVALID_ARGUMENT, "out: NULL");

  /* Key data of another runtime. */
  spmd_runtime *other_rt = test_runtime(8);
  const int64_t ms[2] = {4, 2};
  spmd_mesh *other_mesh = test_mesh(other_rt, 2, ms);
  spmd_sharding *other = test_sharding(other_mesh, "");
  spmd_array *foreign = key_data(other, &key);
  assert_fails(spmd_x_random_normal_from(out, foreign, SPMD_F32, 2, shape, &a),
               SPMD_ERR_INVALID_ARGUMENT, "key: on another runtime than sharding");
  spmd_array_destroy(foreign);
  spmd_sharding_destroy(other);
  spmd_mesh_destroy(other_mesh);
  spmd_runtime_destroy(other_rt);

  /* While recording: the same checks, at the call that records. */
  spmd_x_program *p = NULL;
  spmd_array *bad_in = NULL, *key_in = NULL;
  assert_ok(spmd_x_program_create(suite_rt, &p));
  assert_ok(spmd_x_program_input(p, rep, SPMD_F32, 1, &two, &bad_in));
  assert_ok(spmd_x_program_input(p, rep, SPMD_U32, 1, &two, &key_in));
  assert_fails(spmd_x_random_normal_from(out, bad_in, SPMD_F32, 2, shape, &a),
               SPMD_ERR_INVALID_ARGUMENT, "key: float32[2] where key data is uint32[2]");
  assert_fails(spmd_x_random_normal_from(out, key_in, SPMD_I32, 2, shape, &a),
               SPMD_ERR_INVALID_ARGUMENT, "dtype: int32 is not a floating-point type");
  assert_fails(spmd_x_random_split_from(bad_in, 2, pair), SPMD_ERR_INVALID_ARGUMENT,
               "key: float32[2] where key data is uint32[2]");
  assert_fails(spmd_x_random_fold_in_from(bad_in, 2, &a), SPMD_ERR_INVALID_ARGUMENT,
               "key: float32[2] where key data is uint32[2]");
  assert_ptr_equal(a, sentinel); /* outputs untouched on failure */
  spmd_array_destroy(bad_in);
  spmd_array_destroy(key_in);
  spmd_x_program_destroy(p);

  spmd_array_destroy(data);
  spmd_array_destroy(floats);
  spmd_array_destroy(long_key);
  spmd_sharding_destroy(out);
  spmd_sharding_destroy(rep);
  spmd_sharding_destroy(two_dims);
  spmd_mesh_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(key_data_holds_the_keys_words),
      cmocka_unit_test(draws_from_key_data_are_draws_from_the_key),
      cmocka_unit_test(programs_draw_from_each_runs_key),
      cmocka_unit_test(key_data_splits_and_folds_in_as_keys_do),
      cmocka_unit_test(programs_derive_keys_from_their_input),
      cmocka_unit_test(bad_keys_fail_naming_the_key),
  };
  return cmocka_run_group_tests(tests, suite_setup, suite_teardown);
}
