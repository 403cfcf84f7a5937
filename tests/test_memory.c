/* Device memory on the CPU platform: freed blocks are kept for reuse (up to
 * spmd_runtime_options.device_cache_bytes), and when an allocation fails
 * the cache is emptied and the allocation tried once more, so memory a
 * program has given back is never what makes it run out. Checked in a
 * child process whose address space is limited (RLIMIT_AS), which the
 * sanitizers' own reservations do not allow. */
#define _GNU_SOURCE
#include "spmd_test.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* GCC says so with macros, clang with __has_feature. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static const int64_t MiB = (int64_t)1 << 20;

/* Bytes of address space this process has mapped (/proc/self/statm). */
static int64_t mapped_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0;
  if (f == NULL || fscanf(f, "%ld", &pages) != 1) pages = 0;
  if (f) fclose(f);
  return (int64_t)pages * sysconf(_SC_PAGESIZE);
}

static spmd_status make_array(spmd_sharding *s, int64_t bytes, spmd_array **out) {
  const int64_t shape[1] = {bytes};
  return spmd_array_full(s, SPMD_U8, 1, shape, 1.0, out);
}

/* Runs in the child: 0 when every step went as expected. */
static int run_limited(int64_t cache_bytes) {
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = SPMD_PLATFORM_CPU;
  o.cpu_device_count = 1;
  o.devices_per_gpu = 1;
  o.worker_threads = 1;
  o.device_cache_bytes = cache_bytes;
  spmd_runtime *rt = NULL;
  if (spmd_runtime_create(&o, &rt) != SPMD_OK) return 1;
  spmd_sharding *s = NULL;
  if (spmd_sharding_single_device(rt, 0, &s) != SPMD_OK) return 2;
  /* Room for 1.5 GiB more than now. */
  struct rlimit lim;
  lim.rlim_cur = lim.rlim_max = (rlim_t)(mapped_bytes() + 1536 * MiB);
  if (setrlimit(RLIMIT_AS, &lim) != 0) return 3;

  spmd_array *a = NULL, *b = NULL;
  if (make_array(s, 1024 * MiB, &a) != SPMD_OK) return 4;
  spmd_array_destroy(a); /* kept in the cache */
  /* Another size: the cached gigabyte must go before this one fits. */
  if (make_array(s, 768 * MiB, &b) != SPMD_OK) {
    fprintf(stderr, "after freeing 1 GiB, 768 MiB failed: %s\n", spmd_last_error());
    return 5;
  }
  spmd_array_destroy(b);
  /* What never fits is reported, and what fits still works after it. */
  if (make_array(s, 4096 * MiB, &a) != SPMD_ERR_OUT_OF_MEMORY) return 6;
  if (strstr(spmd_last_error(), "cannot allocate") == NULL) return 7;
  if (make_array(s, 512 * MiB, &a) != SPMD_OK) return 8;
  spmd_array_destroy(a);
  spmd_sharding_destroy(s);
  spmd_runtime_destroy(rt);
  return 0;
}

static int in_child(int64_t cache_bytes) {
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) _exit(run_limited(cache_bytes));
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

static void freed_memory_is_given_back_before_out_of_memory(void **state) {
  (void)state;
  if (SANITIZED) skip(); /* the sanitizers reserve terabytes of address space */
  assert_int_equal(in_child(0), 0);
}

static void a_runtime_may_keep_no_freed_memory(void **state) {
  (void)state;
  if (SANITIZED) skip();
  assert_int_equal(in_child(-1), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(freed_memory_is_given_back_before_out_of_memory),
      cmocka_unit_test(a_runtime_may_keep_no_freed_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
