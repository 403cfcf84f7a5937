// The sim platform holds the code above the backends to the contract: it
// must fail loudly when that code dereferences device memory, uses memory
// after freeing it, names memory of one device as another's, or reads a
// result before its work has finished. These checks drive the backend
// directly (the public API never hands out device addresses); each one
// runs in a child process, since a violation ends the process.
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "backend/sim/sim_backend.hpp"

// Last: cmocka's macros (fail, ...) would clash with the C++ headers.
extern "C" {
#include <cmocka.h>
}

using namespace spmd;

namespace {

struct ChildResult {
  bool exited_cleanly = false;  // exit status 0
  int signal = 0;
  std::string stderr_text;
};

// The threads of this process (/proc/self/task).
int thread_count() {
  DIR *d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int n = 0;
  while (const dirent *e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

// The threads the process had before any case ran (main sets it).
int g_threads_at_start = 1;

// Runs `body` in a child process and collects how it ended and what it
// wrote to stderr. Forks once the previous case's threads have all ended:
// a thread still ending at the fork may hold a lock (a sanitizer's thread
// registry, the allocator's) that the child, which starts threads of its
// own, would then wait for forever.
ChildResult in_child(const std::function<void()> &body) {
  for (int waited_ms = 0; thread_count() > g_threads_at_start && waited_ms < 5000; ++waited_ms)
    usleep(1000);
  int pipefd[2];
  if (pipe(pipefd) != 0) fail_msg("pipe failed");
  fflush(stdout);
  fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) fail_msg("fork failed");
  if (pid == 0) {
    // A fault ends the child: cmocka's handlers, inherited, would catch it
    // and run the remaining cases in the child, each waiting out the
    // threads its first case left.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) signal(sig, SIG_DFL);
    close(pipefd[0]);
    dup2(pipefd[1], 2);
    body();
    fflush(stderr);
    _exit(0);
  }
  close(pipefd[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) r.stderr_text.append(buf, static_cast<size_t>(n));
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exited_cleanly = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

void expect_violation(const ChildResult &r, const char *needle) {
  if (r.exited_cleanly) fail_msg("the child ended normally; stderr:\n%s", r.stderr_text.c_str());
  if (r.stderr_text.find(needle) == std::string::npos)
    fail_msg("stderr lacks \"%s\":\n%s", needle, r.stderr_text.c_str());
}

BoxCopy flat_copy(Place src, Place dst, size_t bytes) {
  const Shape flat{static_cast<int64_t>(bytes)};
  return {{src, flat, Shape{0}}, {dst, flat, Shape{0}}, flat, 1};
}

}  // namespace

static void device_addresses_fault_on_the_host(void **) {
  const ChildResult r = in_child([] {
    sim::SimBackend sim(2);
    const DevicePtr p = sim.allocate(0, 64, MemoryKind::Device);
    if ((p.bits >> 48) != 0x5151) {
      std::fprintf(stderr, "untagged address\n");
      std::exit(3);
    }
    volatile unsigned char *host = reinterpret_cast<unsigned char *>(p.bits);
    const unsigned char v = host[0];  // must fault
    std::fprintf(stderr, "survived reading %d\n", v);
  });
  if (r.exited_cleanly || r.stderr_text.find("survived") != std::string::npos ||
      r.stderr_text.find("untagged") != std::string::npos)
    fail_msg("reading device memory on the host did not fault: %s", r.stderr_text.c_str());
}

static void memory_used_after_its_free_stops_the_process(void **) {
  const ChildResult r = in_child([] {
    sim::SimBackend sim(2);
    const DevicePtr p = sim.allocate(0, 64, MemoryKind::Device);
    sim.deallocate(0, p, 64, MemoryKind::Device, {});
    unsigned char host[64];
    const BoxCopy c = flat_copy({MemoryKind::Device, 0, p}, Place::host(host), 64);
    sim.copy_boxes({&c, 1}, {})->wait();
  });
  expect_violation(r, "after it was freed");
}

static void a_copy_queued_before_a_free_but_run_after_it_is_caught(void **) {
  // The copy runs on device 1's queue and is held back by an event; the
  // free on device 0's queue is not told about it, so it runs first.
  const ChildResult r = in_child([] {
    sim::SimBackend sim(2);
    const DevicePtr src = sim.allocate(0, 64, MemoryKind::Device);
    const DevicePtr dst = sim.allocate(1, 64, MemoryKind::Device);
    auto hold = std::make_shared<Event>();
    const BoxCopy c = flat_copy({MemoryKind::Device, 0, src}, {MemoryKind::Device, 1, dst}, 64);
    const EventPtr copied = sim.copy_boxes({&c, 1}, EventList{hold});
    sim.deallocate(0, src, 64, MemoryKind::Device, {});
    usleep(20000);  // the free has run
    hold->complete();
    copied->wait();
  });
  expect_violation(r, "after it was freed");
}

static void memory_named_on_the_wrong_device_stops_the_process(void **) {
  const ChildResult r = in_child([] {
    sim::SimBackend sim(2);
    const DevicePtr p = sim.allocate(0, 64, MemoryKind::Device);
    unsigned char host[64];
    const BoxCopy c = flat_copy({MemoryKind::Device, 1, p}, Place::host(host), 64);
    sim.copy_boxes({&c, 1}, {})->wait();
  });
  expect_violation(r, "names memory of device 0 as memory of device 1");
}

static void an_address_outside_every_allocation_stops_the_process(void **) {
  const ChildResult r = in_child([] {
    sim::SimBackend sim(1);
    const DevicePtr p = sim.allocate(0, 64, MemoryKind::Device);
    unsigned char host[64];
    const BoxCopy c = flat_copy({MemoryKind::Device, 0, p.offset(32)}, Place::host(host), 64);
    sim.copy_boxes({&c, 1}, {})->wait();
  });
  expect_violation(r, "run past the allocation");
}

static void work_completes_on_the_device_queues_in_order(void **) {
  // A fill then a copy to the host, queued back to back: the copy waits
  // for nothing but the fill before it on the same queue, and the host
  // sees the data only after waiting for the copy.
  const ChildResult r = in_child([] {
    setenv("SPMD_SIM_DELAY_US", "2000", 1);
    sim::SimBackend sim(1);
    const DevicePtr p = sim.allocate(0, 400, MemoryKind::Device);
    const float value = 2.5f;
    const Kernel fill = Kernel::fill({MemoryKind::Device, 0, p}, SPMD_F32, 100, &value);
    const EventPtr filled = sim.launch({&fill, 1}, {});
    if (!filled) {
      std::fprintf(stderr, "the fill finished before launch returned\n");
      std::exit(3);
    }
    std::vector<float> host(100, 0.0f);
    const BoxCopy c = flat_copy({MemoryKind::Device, 0, p}, Place::host(host.data()), 400);
    const EventPtr copied = sim.copy_boxes({&c, 1}, {});
    copied->wait();
    for (float v : host)
      if (v != 2.5f) {
        std::fprintf(stderr, "read %g instead of 2.5\n", static_cast<double>(v));
        std::exit(4);
      }
    sim.deallocate(0, p, 400, MemoryKind::Device, EventList{copied});
  });
  if (!r.exited_cleanly) fail_msg("%s", r.stderr_text.c_str());
}

static void a_failed_kernel_fails_what_depends_on_it(void **) {
  const ChildResult r = in_child([] {
    setenv("SPMD_SIM_FAIL_KERNEL", "fill", 1);
    sim::SimBackend sim(2);
    const DevicePtr p = sim.allocate(0, 64, MemoryKind::Device);
    const int32_t zero = 0;
    const Kernel fill = Kernel::fill({MemoryKind::Device, 0, p}, SPMD_I32, 16, &zero);
    const EventPtr filled = sim.launch({&fill, 1}, {});
    unsigned char host[64];
    const BoxCopy c = flat_copy({MemoryKind::Device, 0, p}, Place::host(host), 64);
    const EventPtr copied = sim.copy_boxes({&c, 1}, EventList{filled});
    std::string message;
    const spmd_status st = copied->wait_status(&message);
    if (st != SPMD_ERR_INTERNAL || message.find("injected failure of a fill") == std::string::npos) {
      std::fprintf(stderr, "copy after a failed fill: status %d, \"%s\"\n", st, message.c_str());
      std::exit(3);
    }
    sim.deallocate(0, p, 64, MemoryKind::Device, EventList{copied});
  });
  if (!r.exited_cleanly) fail_msg("%s", r.stderr_text.c_str());
}

int main(void) {
  g_threads_at_start = thread_count();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(device_addresses_fault_on_the_host),
      cmocka_unit_test(memory_used_after_its_free_stops_the_process),
      cmocka_unit_test(a_copy_queued_before_a_free_but_run_after_it_is_caught),
      cmocka_unit_test(memory_named_on_the_wrong_device_stops_the_process),
      cmocka_unit_test(an_address_outside_every_allocation_stops_the_process),
      cmocka_unit_test(work_completes_on_the_device_queues_in_order),
      cmocka_unit_test(a_failed_kernel_fails_what_depends_on_it),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
