// The transport between processes (src/dist/transport.hpp) over MPI, driven
// directly through the plugin loader:
//
//   mpirun -np P test_mpi_transport P
//
// Ranks, barrier and all-gather, groups made once and kept, transfers in a
// ring with tags, and deadlines: a wait that times out names the process
// that did not come, and a process that comes late finds the others' part
// done.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "runtime/plugin_loader.hpp"

// Last: cmocka's macros (fail, ...) would clash with the C++ headers.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>
}

using namespace spmd;
using dist::Clock;

namespace {

int processes;
std::shared_ptr<dist::Transport> transport;

dist::Deadline in(int milliseconds) { return Clock::now() + std::chrono::milliseconds(milliseconds); }

std::shared_ptr<dist::Transport> make_transport() {
  dist::TransportConfig config;
  config.deadline = in(60000);
  return load_plugin_transport("mpi", config);
}

// Runs `call`, which must throw `status` with `needle` in its message.
template <typename Call>
void expect_error(Call &&call, spmd_status status, const std::string &needle) {
  try {
    call();
  } catch (const Error &e) {
    if (e.status() != status || std::string(e.what()).find(needle) == std::string::npos)
      fail_msg("got status %d \"%s\", expected %d with \"%s\"", e.status(), e.what(), status,
               needle.c_str());
    return;
  }
  fail_msg("no error, expected \"%s\"", needle.c_str());
}

// Runs `call`, which must time out naming `process` among those that did
// not arrive (a busy machine may make others late too).
template <typename Call>
void expect_missing(Call &&call, const std::string &what, int process) {
  try {
    call();
  } catch (const Error &e) {
    const std::string m = e.what();
    const size_t from = m.find(what + ": process"), to = m.find(" did not arrive");
    if (e.status() != SPMD_ERR_TIMEOUT || from == std::string::npos || to == std::string::npos)
      fail_msg("got status %d \"%s\", expected a timeout of %s", e.status(), m.c_str(),
               what.c_str());
    std::string named = " " + m.substr(from, to - from) + " ";
    for (char &c : named)
      if (c == ',') c = ' ';
    if (named.find(" " + std::to_string(process) + " ") == std::string::npos)
      fail_msg("\"%s\" does not name process %d", m.c_str(), process);
    return;
  }
  fail_msg("no error, expected %s to time out", what.c_str());
}

void ranks_and_the_all_gather(void **) {
  assert_int_equal(transport->size(), processes);
  const int me = transport->rank();
  assert_true(me >= 0 && me < processes);
  transport->barrier(in(30000));
  const int64_t mine[2] = {me, 1000 + me};
  const auto all = transport->all_gather(std::as_bytes(std::span(mine)), in(30000));
  assert_int_equal(all.size(), sizeof mine * static_cast<size_t>(processes));
  for (int p = 0; p < processes; ++p) {
    int64_t theirs[2];
    std::memcpy(theirs, all.data() + sizeof mine * static_cast<size_t>(p), sizeof theirs);
    assert_int_equal(theirs[0], p);
    assert_int_equal(theirs[1], 1000 + p);
  }
  // Nothing to give is a barrier.
  assert_int_equal(transport->all_gather({}, in(30000)).size(), 0);
}

void groups_are_made_once_and_kept(void **) {
  const int me = transport->rank();
  std::vector<int> same_parity;
  for (int p = me % 2; p < processes; p += 2) same_parity.push_back(p);
  dist::Communicator &group = transport->group(same_parity, in(30000));
  assert_ptr_equal(&transport->group(same_parity, in(30000)), &group);
  assert_int_equal(group.size(), static_cast<int>(same_parity.size()));
  assert_int_equal(group.rank(), me / 2);
  const int32_t mine = me;
  const auto all = group.all_gather(std::as_bytes(std::span(&mine, 1)), in(30000));
  for (size_t i = 0; i < same_parity.size(); ++i) {
    int32_t theirs;
    std::memcpy(&theirs, all.data() + i * sizeof theirs, sizeof theirs);
    assert_int_equal(theirs, same_parity[i]);
  }
  group.barrier(in(30000));

  expect_error([&] { transport->group({me, me}, in(1000)); }, SPMD_ERR_INVALID_ARGUMENT,
               "ascending and distinct");
  expect_error([&] { transport->group({processes}, in(1000)); }, SPMD_ERR_INVALID_ARGUMENT,
               "is no member");
  if (processes > 1)
    expect_error([&] { transport->group({(me + 1) % processes}, in(1000)); },
                 SPMD_ERR_INVALID_ARGUMENT, "is not among the members");
}

void transfers_go_round_a_ring(void **) {
  const int me = transport->rank();
  const int next = (me + 1) % processes, previous = (me + processes - 1) % processes;
  std::vector<uint32_t> out(1 << 18), got(1 << 18, 0);  // 1 MiB each
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint32_t>(i * 7 + me);
  auto receive = transport->receive(got.data(), got.size() * 4, previous, 7);
  auto send = transport->send(out.data(), out.size() * 4, next, 7);
  receive->wait(in(30000));
  send->wait(in(30000));
  assert_true(receive->done() && send->done());
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != static_cast<uint32_t>(i * 7 + previous))
      fail_msg("element %zu from process %d: %u", i, previous, got[i]);

  // A receive nobody answers times out naming its peer, and is cancelled
  // when dropped.
  uint32_t nothing = 0;
  auto unanswered = transport->receive(&nothing, sizeof nothing, previous, 99);
  expect_error([&] { unanswered->wait(in(100)); }, SPMD_ERR_TIMEOUT,
               "a receive from process " + std::to_string(previous));
  unanswered.reset();

  expect_error([&] { transport->send(&nothing, 4, processes, 1); }, SPMD_ERR_INVALID_ARGUMENT,
               "is no member");
  expect_error([&] { transport->send(&nothing, 4, next, -1); }, SPMD_ERR_INVALID_ARGUMENT,
               "tag -1");
  assert_true(transport->max_tag() >= 32767);
  transport->barrier(in(30000));
}

// The last process comes late to a barrier: the others give up at their
// deadline, naming it; it then finds their part done. A communicator whose
// barrier timed out refuses further calls.
void a_barrier_names_the_process_that_did_not_arrive(void **) {
  const int me = transport->rank(), late = processes - 1;
  std::vector<int> everyone;
  for (int p = 0; p < processes; ++p) everyone.push_back(p);
  dist::Communicator &group = transport->group(everyone, in(30000));
  if (me == late) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    group.barrier(in(30000));
  } else {
    expect_missing([&] { group.barrier(in(1000)); }, "barrier", late);
    expect_error([&] { group.barrier(in(1000)); }, SPMD_ERR_TIMEOUT, "unusable");
  }
  transport->barrier(in(30000));
}

// The same for an all-gather, on a transport of its own, with the first
// process late.
void an_all_gather_names_the_process_that_did_not_arrive(void **) {
  auto second = make_transport();
  const int me = second->rank(), late = 0;
  const int32_t mine = 10 + me;
  if (me == late) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    const auto all = second->all_gather(std::as_bytes(std::span(&mine, 1)), in(30000));
    assert_int_equal(all.size(), 4 * static_cast<size_t>(processes));
  } else {
    expect_missing([&] { second->all_gather(std::as_bytes(std::span(&mine, 1)), in(1000)); },
                   "all_gather", late);
  }
  transport->barrier(in(30000));
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PROCESSES (under mpirun)\n", argv[0]);
    return 2;
  }
  processes = std::atoi(argv[1]);
  try {
    transport = make_transport();
  } catch (const Error &e) {
    std::fprintf(stderr, "the MPI transport: %s\n", e.what());
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ranks_and_the_all_gather),
      cmocka_unit_test(groups_are_made_once_and_kept),
      cmocka_unit_test(transfers_go_round_a_ring),
      cmocka_unit_test(a_barrier_names_the_process_that_did_not_arrive),
      cmocka_unit_test(an_all_gather_names_the_process_that_did_not_arrive),
  };
  const int failed = cmocka_run_group_tests(tests, nullptr, nullptr);
  transport.reset();
  return failed;
}
