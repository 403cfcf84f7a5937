// Allocation failure, SQLite-style: each scenario below (the README's first
// program, a reshard, a shard_map with collectives, a persistent
// collective, random arrays) is run once counting its allocations, then
// once per allocation with exactly that one failing. Every call must end
// with SPMD_OK or SPMD_ERR_OUT_OF_MEMORY, nothing may crash or hang, the
// runtime must work afterwards, and nothing may leak (LeakSanitizer checks
// the last, in the sanitizer build). The suite replaces operator new, which
// libspmd uses for all of its memory, host and device alike.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <cstddef>
#include <cmath>
#include <new>
#include <string>
#include <vector>

#include "spmd/spmd.h"

extern "C" {
#include <cmocka.h>
}

// ---- the allocator: counts, and fails the n-th allocation when armed ----

namespace {

std::atomic<long> g_countdown{-1};  // allocations before the one that fails; -1: none
std::atomic<long> g_count{0};       // allocations while counting
std::atomic<bool> g_counting{false};
std::atomic<long> g_failed{0};      // allocations failed on purpose

bool fail_this_one() {
  if (g_counting.load(std::memory_order_relaxed)) g_count.fetch_add(1, std::memory_order_relaxed);
  long left = g_countdown.load(std::memory_order_relaxed);
  while (left >= 0) {
    if (g_countdown.compare_exchange_weak(left, left - 1)) {
      if (left == 0) {
        g_failed.fetch_add(1);
        return true;
      }
      return false;
    }
  }
  return false;
}

void *allocate(size_t size, size_t align, bool nothrow) {
  void *p = nullptr;
  if (!fail_this_one()) {
    if (align <= alignof(std::max_align_t))
      p = malloc(size ? size : 1);
    else if (posix_memalign(&p, align, size ? size : 1) != 0)
      p = nullptr;
  }
  if (p == nullptr && !nothrow) throw std::bad_alloc();
  return p;
}

}  // namespace

void *operator new(size_t n) { return allocate(n, 0, false); }
void *operator new[](size_t n) { return allocate(n, 0, false); }
void *operator new(size_t n, const std::nothrow_t &) noexcept { return allocate(n, 0, true); }
void *operator new[](size_t n, const std::nothrow_t &) noexcept { return allocate(n, 0, true); }
void *operator new(size_t n, std::align_val_t a) { return allocate(n, size_t(a), false); }
void *operator new[](size_t n, std::align_val_t a) { return allocate(n, size_t(a), false); }
void *operator new(size_t n, std::align_val_t a, const std::nothrow_t &) noexcept {
  return allocate(n, size_t(a), true);
}
void *operator new[](size_t n, std::align_val_t a, const std::nothrow_t &) noexcept {
  return allocate(n, size_t(a), true);
}
void operator delete(void *p) noexcept { free(p); }
void operator delete[](void *p) noexcept { free(p); }
void operator delete(void *p, size_t) noexcept { free(p); }
void operator delete[](void *p, size_t) noexcept { free(p); }
void operator delete(void *p, std::align_val_t) noexcept { free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { free(p); }
void operator delete(void *p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete[](void *p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { free(p); }
void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { free(p); }
void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { free(p); }

// ---- scenarios: each runs calls in order and stops at the first failure ----

namespace {

// What a scenario reports: the first status that was not SPMD_OK, the call
// that gave it and its message; and, when all went well, whether the
// results were right.
struct Outcome {
  spmd_status status = SPMD_OK;
  std::string call;
  std::string message;
  bool results_right = true;
};

#define STEP(o, expr)                                    \
  do {                                                   \
    if ((o).status == SPMD_OK) {                         \
      const spmd_status st_ = (expr);                    \
      if (st_ != SPMD_OK) {                              \
        (o).status = st_;                                \
        (o).call = #expr;                                \
        (o).message = spmd_last_error();                 \
      }                                                  \
    }                                                    \
  } while (0)

spmd_runtime *g_rt = nullptr;  // the long-lived runtime the scenarios share

spmd_runtime *make_runtime(Outcome &o) {
  spmd_runtime_options opts = SPMD_RUNTIME_OPTIONS_INIT;
  opts.cpu_device_count = 4;
  opts.devices_per_gpu = 4;
  opts.worker_threads = 2;
  spmd_runtime *rt = nullptr;
  STEP(o, spmd_runtime_create(&opts, &rt));
  return rt;
}

// The README's first program, runtime and all.
Outcome first_program() {
  Outcome o;
  spmd_runtime *rt = make_runtime(o);
  const int64_t mesh_shape[2] = {2, 2};
  const char *axes[2] = {"x", "y"};
  spmd_mesh *mesh = nullptr;
  spmd_sharding *sharding = nullptr;
  spmd_array *arr = nullptr;
  char *picture = nullptr;
  STEP(o, spmd_mesh_create(rt, 2, mesh_shape, axes, nullptr, &mesh));
  STEP(o, spmd_sharding_named_text(mesh, "P('x', 'y')", &sharding));
  const int64_t shape[2] = {4, 8};
  STEP(o, spmd_array_arange(sharding, SPMD_F32, 2, shape, 0.0, 1.0, &arr));
  STEP(o, spmd_array_visualize(arr, nullptr, &picture));
  if (o.status == SPMD_OK) o.results_right = strstr(picture, "CPU 3") != nullptr;
  spmd_string_free(picture);
  spmd_array_destroy(arr);
  spmd_sharding_destroy(sharding);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(rt);
  return o;
}

Outcome reshard() {
  Outcome o;
  const int64_t ms[1] = {4};
  const char *axes[1] = {"x"};
  spmd_mesh *mesh = nullptr;
  spmd_sharding *rows = nullptr, *cols = nullptr;
  spmd_array *a = nullptr, *b = nullptr;
  STEP(o, spmd_mesh_create(g_rt, 1, ms, axes, nullptr, &mesh));
  STEP(o, spmd_sharding_named_text(mesh, "x", &rows));
  STEP(o, spmd_sharding_named_text(mesh, "None, x", &cols));
  float in[6 * 8], out[6 * 8];
  for (int i = 0; i < 48; ++i) in[i] = static_cast<float>(i);
  const int64_t shape[2] = {6, 8};
  STEP(o, spmd_array_from_host(rows, SPMD_F32, 2, shape, in, sizeof in, &a));
  STEP(o, spmd_array_reshard(a, cols, &b));
  STEP(o, spmd_array_to_host(b, out, sizeof out));
  if (o.status == SPMD_OK) o.results_right = memcmp(in, out, sizeof in) == 0;
  spmd_array_destroy(b);
  spmd_array_destroy(a);
  spmd_sharding_destroy(cols);
  spmd_sharding_destroy(rows);
  spmd_mesh_destroy(mesh);
  return o;
}

spmd_status sum_and_gather(spmd_ctx *ctx, void *) {
  spmd_block in = SPMD_BLOCK_INIT, s = SPMD_BLOCK_INIT, g = SPMD_BLOCK_INIT;
  spmd_status st = spmd_ctx_input(ctx, 0, &in);
  if (st == SPMD_OK) st = spmd_ctx_psum(ctx, &in, "y", &s);
  if (st == SPMD_OK) st = spmd_ctx_all_gather(ctx, &s, "x", 0, 1, &g);
  if (st == SPMD_OK) st = spmd_ctx_set_output(ctx, 0, &g);
  return st;
}

Outcome shard_map_with_collectives() {
  Outcome o;
  const int64_t ms[2] = {2, 2};
  const char *axes[2] = {"x", "y"};
  spmd_mesh *mesh = nullptr;
  spmd_sharding *s = nullptr;
  spmd_array *a = nullptr, *r = nullptr;
  STEP(o, spmd_mesh_create(g_rt, 2, ms, axes, nullptr, &mesh));
  STEP(o, spmd_sharding_named_text(mesh, "x, y", &s));
  const int64_t shape[2] = {4, 4};
  STEP(o, spmd_array_arange(s, SPMD_F32, 2, shape, 0, 1, &a));
  const char *in_spec = "x, y", *out_spec = "None, y";
  spmd_shard_map_options opts = SPMD_SHARD_MAP_OPTIONS_INIT;
  opts.timeout_ms = 20000;  // a failure is reported at once; this only bounds a bug
  STEP(o, spmd_shard_map_text(mesh, sum_and_gather, nullptr, 1, &a, &in_spec, 1, &out_spec,
                              &opts, &r));
  float out[16];
  STEP(o, spmd_array_to_host(r, out, sizeof out));
  if (o.status == SPMD_OK) {
    // Columns 0-1 and 2-3 added over 'y', the rows gathered over 'x'; each
    // 'y' device holds the same sums, placed side by side by the out spec.
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        if (out[i * 4 + j] != static_cast<float>((i * 4 + j % 2) + (i * 4 + j % 2 + 2)))
          o.results_right = false;
  }
  spmd_array_destroy(r);
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
  return o;
}

Outcome persistent_collective() {
  Outcome o;
  const int64_t ms[1] = {4};
  const char *axes[1] = {"x"};
  spmd_mesh *mesh = nullptr;
  spmd_sharding *s = nullptr;
  spmd_array *a = nullptr, *r = nullptr;
  spmd_collective *c = nullptr;
  STEP(o, spmd_mesh_create(g_rt, 1, ms, axes, nullptr, &mesh));
  STEP(o, spmd_sharding_named_text(mesh, "x", &s));
  const int64_t shape[1] = {8};
  STEP(o, spmd_array_arange(s, SPMD_I32, 1, shape, 0, 1, &a));
  spmd_collective_options co = SPMD_COLLECTIVE_OPTIONS_INIT;
  co.timeout_ms = 20000;
  STEP(o, spmd_collective_create(s, SPMD_COLLECTIVE_PMEAN, "x", SPMD_I32, 1, shape, &co, &c));
  STEP(o, spmd_collective_execute(c, a, &r));
  STEP(o, spmd_collective_execute_into(c, a, r));
  float out[2];
  STEP(o, spmd_array_to_host(r, out, sizeof out));
  if (o.status == SPMD_OK) o.results_right = out[0] == 3.0f && out[1] == 4.0f;
  spmd_collective_destroy(c);
  spmd_array_destroy(r);
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
  return o;
}

Outcome random_arrays() {
  Outcome o;
  const int64_t ms[1] = {4};
  const char *axes[1] = {"x"};
  spmd_mesh *mesh = nullptr;
  spmd_sharding *s = nullptr;
  spmd_array *n = nullptr, *u = nullptr;
  spmd_key key, keys[2];
  STEP(o, spmd_random_key(42, &key));
  STEP(o, spmd_random_split(&key, 2, keys));
  STEP(o, spmd_mesh_create(g_rt, 1, ms, axes, nullptr, &mesh));
  STEP(o, spmd_sharding_named_text(mesh, "x", &s));
  const int64_t shape[1] = {16};
  STEP(o, spmd_random_normal(s, &keys[0], SPMD_F32, 1, shape, &n));
  STEP(o, spmd_random_uniform(s, &keys[1], SPMD_F64, 1, shape, -1, 1, &u));
  double v[16];
  STEP(o, spmd_array_to_host(u, v, sizeof v));
  if (o.status == SPMD_OK)
    for (double x : v)
      if (!(x >= -1 && x < 1)) o.results_right = false;
  spmd_array_destroy(u);
  spmd_array_destroy(n);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
  return o;
}

// Global ops on a 2x2 mesh: an elementwise op with broadcasting, a sum over
// a split dimension (a psum by propagation), a contraction-sharded matmul,
// a donated add and a softmax.
Outcome global_ops() {
  Outcome o;
  const int64_t ms[2] = {2, 2};
  const char *axes[2] = {"x", "y"};
  spmd_mesh *mesh = nullptr;
  spmd_sharding *s = nullptr, *v = nullptr;
  spmd_array *a = nullptr, *b = nullptr, *c = nullptr, *sum = nullptr, *p = nullptr,
             *d = nullptr, *sm = nullptr;
  STEP(o, spmd_mesh_create(g_rt, 2, ms, axes, nullptr, &mesh));
  STEP(o, spmd_sharding_named_text(mesh, "x, y", &s));
  STEP(o, spmd_sharding_named_text(mesh, "y", &v));
  const int64_t shape[2] = {4, 4}, vs[1] = {4};
  STEP(o, spmd_array_arange(s, SPMD_F32, 2, shape, 0, 1, &a));
  STEP(o, spmd_array_arange(v, SPMD_F32, 1, vs, 0, 1, &b));
  STEP(o, spmd_binary(SPMD_BINARY_ADD, a, b, nullptr, &c));
  const int64_t axis0[1] = {0};
  STEP(o, spmd_reduce(SPMD_REDUCE_SUM, c, 1, axis0, 0, nullptr, &sum));
  STEP(o, spmd_matmul(a, a, nullptr, &p));
  spmd_op_options donate = SPMD_OP_OPTIONS_INIT;
  donate.donate = 1u;
  if (o.status == SPMD_OK && c != nullptr) {
    STEP(o, spmd_binary(SPMD_BINARY_MUL, c, a, &donate, &d));
  }
  STEP(o, spmd_softmax(a, 1, 0, nullptr, &sm));
  float got[4], pr[16];
  STEP(o, spmd_array_to_host(sum, got, sizeof got));
  STEP(o, spmd_array_to_host(p, pr, sizeof pr));
  if (o.status == SPMD_OK) {
    // sum over rows of (a + b): column j is 4*j + 24 + 4*j
    for (int j = 0; j < 4; ++j) o.results_right = o.results_right && got[j] == 24.0f + 8.0f * j;
    o.results_right = o.results_right && pr[0] == 56.0f;  // row 0 of a times column 0
  }
  spmd_array_destroy(sm);
  spmd_array_destroy(d);
  spmd_array_destroy(p);
  spmd_array_destroy(sum);
  spmd_array_destroy(c);
  spmd_array_destroy(b);
  spmd_array_destroy(a);
  spmd_sharding_destroy(v);
  spmd_sharding_destroy(s);
  spmd_mesh_destroy(mesh);
  return o;
}

// On cuda, device memory comes from the CUDA runtime, not operator new
// (test_cuda_platform checks running out of it there), and thousands of
// runs per scenario would outlast a GPU machine's time: the host side is
// checked here on cpu and sim.
bool platform_is_cuda() {
  const char *p = getenv("SPMD_PLATFORM");
  return p != nullptr && strcmp(p, "cuda") == 0;
}

// Counts the scenario's allocations, then fails each in turn.
void fail_each_allocation(const char *name, Outcome (*scenario)()) {
  if (platform_is_cuda()) {
    print_message("skipped on cuda: %s: allocation failures are injected on cpu and sim "
                  "(CUDA memory does not come from operator new)\n", name);
    skip();
  }
  g_count = 0;
  g_counting = true;
  const Outcome clean = scenario();
  g_counting = false;
  const long total = g_count.load();
  if (clean.status != SPMD_OK || !clean.results_right)
    fail_msg("%s without failures: %s -> %s: %s", name, clean.call.c_str(),
             spmd_status_string(clean.status), clean.message.c_str());
  long failed_calls = 0;
  for (long n = 0; n < total; ++n) {
    g_failed = 0;
    g_countdown = n;
    const Outcome o = scenario();
    g_countdown = -1;
    if (o.status != SPMD_OK && o.status != SPMD_ERR_OUT_OF_MEMORY)
      fail_msg("%s, allocation %ld of %ld failing: %s -> %s (expected ok or out of memory): %s",
               name, n, total, o.call.c_str(), spmd_status_string(o.status), o.message.c_str());
    if (o.status == SPMD_OK && !o.results_right)
      fail_msg("%s, allocation %ld of %ld failing: every call succeeded with wrong results", name,
               n, total);
    if (o.status != SPMD_OK) ++failed_calls;
    // Usable afterwards.
    const Outcome after = scenario();
    if (after.status != SPMD_OK || !after.results_right)
      fail_msg("%s after allocation %ld failed: %s -> %s: %s", name, n, after.call.c_str(),
               spmd_status_string(after.status), after.message.c_str());
  }
  print_message("%s: %ld allocations, each failed in turn; %ld runs reported out of memory\n",
                name, total, failed_calls);
}

}  // namespace

static void the_first_program_survives_every_failed_allocation(void **) {
  fail_each_allocation("first program", first_program);
}
static void a_reshard_survives_every_failed_allocation(void **) {
  fail_each_allocation("reshard", reshard);
}
static void a_shard_map_with_collectives_survives_every_failed_allocation(void **) {
  fail_each_allocation("shard_map", shard_map_with_collectives);
}
static void a_persistent_collective_survives_every_failed_allocation(void **) {
  fail_each_allocation("persistent collective", persistent_collective);
}
static void random_arrays_survive_every_failed_allocation(void **) {
  fail_each_allocation("random arrays", random_arrays);
}

static void global_ops_survive_every_failed_allocation(void **) {
  fail_each_allocation("global ops", global_ops);
}

static int setup(void **) {
  Outcome o;
  g_rt = make_runtime(o);
  return o.status == SPMD_OK ? 0 : -1;
}

static int teardown(void **) {
  spmd_runtime_destroy(g_rt);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_first_program_survives_every_failed_allocation),
      cmocka_unit_test(a_reshard_survives_every_failed_allocation),
      cmocka_unit_test(a_shard_map_with_collectives_survives_every_failed_allocation),
      cmocka_unit_test(a_persistent_collective_survives_every_failed_allocation),
      cmocka_unit_test(random_arrays_survive_every_failed_allocation),
      cmocka_unit_test(global_ops_survive_every_failed_allocation),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
