#include "dist/mpi/communicator.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include "base/error.hpp"
#include "dist/mpi/errors.hpp"
#include "dist/mpi/polling.hpp"
#include "dist/mpi/startup.hpp"
#include "dist/mpi/transfer.hpp"

namespace spmd::dist::mpi {

namespace {

// Tags of the control communicator: each purpose its own, so that the
// messages of one never match the receives of another.
constexpr int kExchangeTag = 1;
constexpr int kGroupMeetingTag = 2;
constexpr int kGroupMakingTag = 3;

int message_size(const char *what, size_t bytes) {
  if (bytes > static_cast<size_t>(INT_MAX))
    invalid(what, ": ", bytes, " bytes are more than one MPI message holds (", INT_MAX, ")");
  return static_cast<int>(bytes);
}

long long milliseconds_since(Deadline start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

}  // namespace

std::string name_processes(const std::vector<int> &processes) {
  if (processes.size() == 1) return cat("process ", processes[0]);
  std::string text = "processes ";
  for (size_t i = 0; i < processes.size(); ++i) {
    if (i > 0) text += i + 1 == processes.size() ? " and " : ", ";
    text += std::to_string(processes[i]);
  }
  return text;
}

MpiCommunicator::MpiCommunicator(MPI_Comm control, MPI_Comm data, std::vector<int> processes)
    : control_(control), data_(data), processes_(std::move(processes)) {
  check(MPI_Comm_rank(control_, &rank_), "MPI_Comm_rank");
  void *tag_bound = nullptr;
  int present = 0;
  check(MPI_Comm_get_attr(data_, MPI_TAG_UB, &tag_bound, &present), "MPI_Comm_get_attr");
  if (present && tag_bound != nullptr) max_tag_ = *static_cast<int *>(tag_bound);
}

MpiCommunicator::~MpiCommunicator() {
  if (mpi_finished()) return;
  MPI_Comm_free(&data_);
  MPI_Comm_free(&control_);
}

void MpiCommunicator::check_usable(const std::string &what) const {
  if (!unusable_.empty())
    fail(SPMD_ERR_TIMEOUT, what, ": the communicator is unusable since ", unusable_,
         " (messages of it may still be on their way)");
}

void MpiCommunicator::check_member(const char *what, int rank) const {
  if (rank < 0 || rank >= size())
    invalid(what, ": ", rank, " is no member (the communicator has ", size(), ", 0 to ",
            size() - 1, ")");
}

std::vector<int> MpiCommunicator::all_ranks() const {
  std::vector<int> ranks(processes_.size());
  for (size_t i = 0; i < ranks.size(); ++i) ranks[i] = static_cast<int>(i);
  return ranks;
}

void MpiCommunicator::barrier(Deadline deadline) {
  std::lock_guard<std::mutex> lock(mu_);
  exchange({}, all_ranks(), kExchangeTag, deadline, "barrier");
}

std::vector<std::byte> MpiCommunicator::all_gather(std::span<const std::byte> mine,
                                                   Deadline deadline) {
  std::lock_guard<std::mutex> lock(mu_);
  return exchange(mine, all_ranks(), kExchangeTag, deadline, "all_gather");
}

std::vector<std::byte> MpiCommunicator::exchange(std::span<const std::byte> mine,
                                                 const std::vector<int> &members, int tag,
                                                 Deadline deadline, const std::string &what) {
  check_usable(what);
  const size_t n = mine.size();
  const int count = message_size(what.c_str(), n);
  const size_t members_count = members.size();
  const size_t self =
      static_cast<size_t>(std::find(members.begin(), members.end(), rank_) - members.begin());
  std::vector<std::byte> gathered(members_count * n);
  if (n) std::memcpy(gathered.data() + self * n, mine.data(), n);
  // What the sends read stays alive while a late peer may still want it.
  auto message = std::make_shared<const std::vector<std::byte>>(mine.begin(), mine.end());

  // Receives first, then sends: [0, members) receives, [members, 2 members) sends.
  std::vector<MPI_Request> requests(2 * members_count, MPI_REQUEST_NULL);
  std::vector<MPI_Status> statuses(2 * members_count);
  const std::span<MPI_Request> receives(requests.data(), members_count);
  const std::span<MPI_Request> sends(requests.data() + members_count, members_count);
  const Deadline start = Clock::now();
  try {
    for (size_t i = 0; i < members_count; ++i)
      if (i != self)
        check(MPI_Irecv(gathered.data() + i * n, count, MPI_BYTE, members[i], tag, control_,
                        &receives[i]),
              "MPI_Irecv");
    for (size_t i = 0; i < members_count; ++i)
      if (i != self)
        check(MPI_Isend(message->data(), count, MPI_BYTE, members[i], tag, control_, &sends[i]),
              "MPI_Isend");
    if (!poll_until(requests, statuses, deadline, "MPI_Test")) {
      std::vector<int> missing;
      for (size_t i = 0; i < members_count; ++i)
        if (receives[i] != MPI_REQUEST_NULL || sends[i] != MPI_REQUEST_NULL)
          missing.push_back(processes_[static_cast<size_t>(members[i])]);
      fail(SPMD_ERR_TIMEOUT, what, ": ", name_processes(missing),
           " did not arrive before the deadline (waited ", milliseconds_since(start), " ms)");
    }
  } catch (...) {
    abandon(receives, sends);
    keep_until_exit(message);  // a late peer may still read it
    unusable_ = cat("a ", what, " failed");
    throw;
  }
  for (size_t i = 0; i < members_count; ++i) {
    if (i == self) continue;
    int got = 0;
    check(MPI_Get_count(&statuses[i], MPI_BYTE, &got), "MPI_Get_count");
    if (got != count)
      invalid(what, ": process ", processes_[static_cast<size_t>(members[i])], " gave ", got,
              " bytes where this process gave ", count);
  }
  return gathered;
}

std::unique_ptr<Transfer> MpiCommunicator::send(const void *data, size_t bytes, int to,
                                                int tag) {
  check_member("send: to", to);
  if (tag < 0 || tag > max_tag_) invalid("send: tag ", tag, " is outside 0 to ", max_tag_);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Isend(data, message_size("send", bytes), MPI_BYTE, to, tag, data_, &request),
        "MPI_Isend");
  return std::make_unique<MpiTransfer>(request, false, processes_[static_cast<size_t>(to)], bytes,
                                       tag);
}

std::unique_ptr<Transfer> MpiCommunicator::receive(void *data, size_t bytes, int from,
                                                   int tag) {
  check_member("receive: from", from);
  if (tag < 0 || tag > max_tag_) invalid("receive: tag ", tag, " is outside 0 to ", max_tag_);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Irecv(data, message_size("receive", bytes), MPI_BYTE, from, tag, data_, &request),
        "MPI_Irecv");
  return std::make_unique<MpiTransfer>(request, true, processes_[static_cast<size_t>(from)],
                                       bytes, tag);
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::make_group(const std::vector<int> &members,
                                                             Deadline deadline) {
  if (members.empty()) invalid("group: no members");
  for (size_t i = 0; i < members.size(); ++i) {
    check_member("group: member", members[i]);
    if (i > 0 && members[i] <= members[i - 1])
      invalid("group: members must be ascending and distinct (", members[i - 1], " then ",
              members[i], ")");
  }
  if (!std::binary_search(members.begin(), members.end(), rank_))
    invalid("group: this process (", processes_[static_cast<size_t>(rank_)],
            ") is not among the members");
  std::vector<int> processes;
  for (int m : members) processes.push_back(processes_[static_cast<size_t>(m)]);
  const std::string what = cat("making the communicator of ", name_processes(processes));

  std::lock_guard<std::mutex> lock(mu_);
  // Once every member has come, the blocking MPI_Comm_create_group below
  // finishes at once.
  exchange({}, members, kGroupMeetingTag, deadline, what);
  MPI_Group everyone = MPI_GROUP_NULL, part = MPI_GROUP_NULL;
  check(MPI_Comm_group(control_, &everyone), "MPI_Comm_group");
  const int included = MPI_Group_incl(everyone, static_cast<int>(members.size()), members.data(),
                                      &part);
  MPI_Group_free(&everyone);
  check(included, "MPI_Group_incl");
  MPI_Comm control = MPI_COMM_NULL;
  const int made = MPI_Comm_create_group(control_, part, kGroupMakingTag, &control);
  MPI_Group_free(&part);
  check(made, "MPI_Comm_create_group");
  MPI_Comm_set_errhandler(control, MPI_ERRORS_RETURN);
  MPI_Comm data = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Status status;
  const int duplicated = MPI_Comm_idup(control, &data, &request);
  if (duplicated != MPI_SUCCESS) MPI_Comm_free(&control);
  check(duplicated, "MPI_Comm_idup");
  if (!poll_until({&request, 1}, {&status, 1}, deadline, "MPI_Test (MPI_Comm_idup)"))
    // Not cancellable: the request and both communicators are left to MPI.
    fail(SPMD_ERR_TIMEOUT, what, ": MPI_Comm_idup did not finish before the deadline");
  MPI_Comm_set_errhandler(data, MPI_ERRORS_RETURN);
  return std::make_unique<MpiCommunicator>(control, data, std::move(processes));
}

}  // namespace spmd::dist::mpi
